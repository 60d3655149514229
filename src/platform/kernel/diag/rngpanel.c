/*
 * rngpanel.c - the RNG panel (SPEC E3, hw.h's diag_rng_write): each noise
 * source found, 16 fresh bytes from each, a stuck/bias check over up to
 * RNG_PANEL_BYTES of each source's output (hwbits.h states the
 * thresholds), the jitter source's statistics and health tests, and the
 * pool and DRBG state.
 *
 * The pool's accounting is not disturbed: the panel reads every source
 * itself (the RDRAND/RDSEED instructions, the virtio-rng queue, raw
 * jitter samples) into its own buffer, which it wipes; nothing it reads is
 * added to the pool, credited or extracted, and the DRBG is not drawn
 * from. The pool's figures come from rng_get_stats (a copy). The 16 bytes
 * shown are spent: printed output is never used as a secret.
 */
#include "diag/hw.h"

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/cpufeat.h"
#include "clock.h"
#include "dev/virtio_rng.h"
#include "diag/hwbits.h"
#include "mm/kmalloc.h"
#include "rng/entropy.h"
#include "rng/health.h"
#include "rng/jitter.h"
#include "rng/sha256.h"

#include <stdio.h>
#include <string.h>

enum {
    RNG_PANEL_BYTES = 64 * 1024, /* output checked per source */
    RNG_PANEL_MS = 1000,         /* time bound per source (TCG is slow) */
    CHUNK = 4096,
    FRESH = 16,
    CPU_TRIES = 100,             /* RDRAND/RDSEED retries before a failure */
    VIRTIO_TIMEOUT_MS = 1000,    /* as entropy.c: a timeout gives the device up */
};

/* What a source gives: fill out[0..n) and return the bytes written, or -1
 * when the source failed. A source that waits (virtio-rng) stops at
 * deadline (clock_mono_ns) with what it has. */
typedef long (*source_fn)(uint8_t *out, size_t n, unsigned long *failures, uint64_t deadline);

static long cpu_fill(int seed, uint8_t *out, size_t n, unsigned long *failures)
{
    size_t got = 0;
    while (got < n) {
        uint64_t v = 0;
        uint8_t ok = 0;
        for (int t = 0; t < CPU_TRIES && !ok; t++) {
            if (seed)
                __asm__ volatile("rdseed %0; setc %1" : "=r"(v), "=qm"(ok));
            else
                __asm__ volatile("rdrand %0; setc %1" : "=r"(v), "=qm"(ok));
            if (!ok)
                cpu_relax();
        }
        if (!ok) {
            (*failures)++;
            return got ? (long)got : -1;
        }
        size_t take = n - got < 8 ? n - got : 8;
        memcpy(out + got, &v, take);
        got += take;
    }
    return (long)got;
}

static long rdseed_fill(uint8_t *out, size_t n, unsigned long *f, uint64_t deadline)
{
    (void)deadline;
    return cpu_fill(1, out, n, f);
}

static long rdrand_fill(uint8_t *out, size_t n, unsigned long *f, uint64_t deadline)
{
    (void)deadline;
    return cpu_fill(0, out, n, f);
}

/* A host may rate-limit virtio-rng: the deadline keeps the panel from
 * waiting on it (and from spending much of the host's quota). */
static long virtio_fill(uint8_t *out, size_t n, unsigned long *failures, uint64_t deadline)
{
    size_t got = 0;
    while (got < n && clock_mono_ns() < deadline) {
        int r = virtio_rng_read(out + got, n - got, VIRTIO_TIMEOUT_MS);
        if (r <= 0) {
            (*failures)++;
            return got ? (long)got : -1;
        }
        got += (size_t)r;
    }
    return (long)got;
}

/* The 8-bit samples entropy.c's health tests see: each walk's TSC delta,
 * low byte. */
static long jitter_fill(uint8_t *out, size_t n, unsigned long *failures, uint64_t deadline)
{
    (void)failures;
    (void)deadline;
    uint64_t d[64];
    for (size_t got = 0; got < n;) {
        size_t take = n - got < 64 ? n - got : 64;
        jitter_sample(d, take);
        for (size_t i = 0; i < take; i++)
            out[got + i] = (uint8_t)d[i];
        got += take;
    }
    secure_zero(d, sizeof d);
    return (long)n;
}

static void hex(char *out, const uint8_t *b, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = 0;
}

/* Fresh bytes and the stuck/bias check for one present source. For the
 * jitter source the samples also go through fresh health tests. */
static void check_source(jw *w, source_fn fill, uint8_t *buf, int jitter)
{
    unsigned long failures = 0;
    char hx[2 * FRESH + 1];
    uint64_t t0 = clock_mono_ns(), deadline = t0 + (uint64_t)RNG_PANEL_MS * 1000000;
    long n = fill(buf, FRESH, &failures, deadline);
    if (n == FRESH) {
        hex(hx, buf, FRESH);
        jw_str(w, "fresh_hex", hx);
    } else {
        jw_null(w, "fresh_hex");
        jw_str(w, "fresh_hex_why", "the source gave no bytes");
    }
    struct bitstat st;
    bitstat_init(&st);
    struct health h;
    health_init(&h, HEALTH_RCT_CUTOFF_H1, HEALTH_APT_CUTOFF_H1);
    unsigned mcv = 0;
    uint64_t tested = 0;
    const char *stop = NULL;
    while (tested < RNG_PANEL_BYTES) {
        if (clock_mono_ns() >= deadline) {
            stop = "time bound reached";
            break;
        }
        n = fill(buf, CHUNK, &failures, deadline);
        if (n <= 0) {
            stop = clock_mono_ns() >= deadline ? "time bound reached" : "the source failed";
            break;
        }
        bitstat_add(&st, buf, (size_t)n);
        if (jitter) {
            for (long i = 0; i < n; i++)
                (void)health_sample(&h, buf[i]);
            if (!mcv && n >= 2)
                mcv = health_mcv_estimate(buf, (size_t)n);
        }
        tested += (uint64_t)n;
    }
    secure_zero(buf, CHUNK);
    jw_u64(w, "tested_bytes", tested);
    if (stop)
        jw_str(w, "tested_stop", stop);
    if (failures)
        jw_u64(w, "read_failures", failures);
    if (tested < BITS_MIN_BYTES) {
        static const char few[] = "too few bytes for a verdict";
        jw_null(w, "ones_pct");
        jw_str(w, "ones_pct_why", few);
        jw_null(w, "stuck");
        jw_str(w, "stuck_why", few);
        jw_null(w, "biased");
        jw_str(w, "biased_why", few);
    } else {
        jw_fixed(w, "ones_pct", (int64_t)bitstat_ones_milli_pct(&st), 3);
        jw_u64(w, "longest_run_bits", st.longest);
        jw_bool(w, "stuck", bitstat_stuck(&st));
        jw_bool(w, "biased", bitstat_biased(&st));
    }
    if (jitter && tested) {
        jw_str(w, "tested_note", "raw timing samples (low byte) before conditioning: some "
                                 "bias is expected; the pool credits them by the MCV estimate");
        jw_obj(w, "fresh_health");
        jw_u64(w, "samples", h.samples);
        jw_bool(w, "passed", !h.failed);
        if (h.failed)
            jw_str(w, "failure", h.failure);
        jw_fixed(w, "mcv_bits_per_sample", (int64_t)mcv * 1000 / 256, 3);
        jw_end(w);
    }
}

static void write_source(jw *w, enum rng_source src, int present, const char *absent_why,
                         source_fn fill, uint8_t *buf, const struct rng_stats *rs)
{
    jw_obj(w, NULL);
    jw_str(w, "name", rng_source_name(src));
    jw_bool(w, "present", present);
    jw_u64(w, "credited_bits", rs->credited[src]);
    if (!present) {
        jw_null(w, "fresh_hex");
        jw_str(w, "fresh_hex_why", absent_why);
        jw_end(w);
        return;
    }
    if (src == RNG_SRC_JITTER) {
        jw_u64(w, "samples_taken", rs->jitter_samples);
        jw_u64(w, "estimated_bits", rs->jitter_estimated_bits);
        jw_fixed(w, "last_estimate_bits_per_sample",
                 (int64_t)rs->jitter_last_estimate * 1000 / 256, 3);
        jw_obj(w, "health");
        jw_u64(w, "rct_cutoff", rs->rct_cutoff);
        jw_u64(w, "apt_cutoff", rs->apt_cutoff);
        jw_u64(w, "apt_window", HEALTH_APT_WINDOW);
        jw_u64(w, "samples_tested", rs->health_samples);
        jw_bool(w, "failed", rs->health_failed);
        if (rs->health_failed)
            jw_str(w, "failure", rs->health_failure);
        jw_end(w);
    }
    if (buf)
        check_source(w, fill, buf, src == RNG_SRC_JITTER);
    else {
        jw_null(w, "fresh_hex");
        jw_str(w, "fresh_hex_why", "no memory for the panel's buffer");
    }
    jw_end(w);
}

void diag_rng_write(jw *w)
{
    struct cpu_features f;
    cpu_features_read(&f);
    struct rng_stats rs;
    rng_get_stats(&rs);
    uint8_t *buf = kmalloc(CHUNK);
    jw_obj(w, "rng");
    jw_arr(w, "sources");
    write_source(w, RNG_SRC_RDSEED, f.rdseed, "CPUID: no RDSEED", rdseed_fill, buf, &rs);
    write_source(w, RNG_SRC_RDRAND, f.rdrand, "CPUID: no RDRAND", rdrand_fill, buf, &rs);
    write_source(w, RNG_SRC_VIRTIO, virtio_rng_present(), "no virtio-rng device", virtio_fill,
                 buf, &rs);
    write_source(w, RNG_SRC_JITTER, rs.jitter_ok || rs.jitter_samples,
                 "no memory for the jitter source", jitter_fill, buf, &rs);
    jw_end(w);
    jw_obj(w, "thresholds");
    jw_u64(w, "sample_bytes", RNG_PANEL_BYTES);
    jw_u64(w, "stuck_if_run_at_least_bits", BITS_STUCK_RUN);
    jw_u64(w, "biased_if_sigmas_over", BITS_BIAS_SIGMAS);
    jw_str(w, "note", "a stuck/bias check, not a certification");
    jw_end(w);
    jw_obj(w, "pool");
    jw_bool(w, "seeded", rs.seeded);
    jw_u64(w, "reseeds", rs.reseeds);
    jw_u64(w, "extractions", rs.extractions);
    jw_u64(w, "pool_bits", rs.pool_bits);
    jw_u64(w, "drbg_generates_since_reseed", rs.drbg_generates);
    if (rs.problem)
        jw_str(w, "problem", rs.problem);
    jw_end(w);
    jw_end(w);
    kfree(buf);
}
