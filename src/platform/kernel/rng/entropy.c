/*
 * entropy.c - the entropy pool and its sources.
 *
 * Credit policy (bits credited per bit of output, all conservative):
 *   RDSEED     1/2  health-checked at boot (no repeats, not all 0 or all 1)
 *   RDRAND     1/8  a DRBG's output, not a seed source; same checks
 *   virtio-rng 1    the hypervisor supplies it, and the hypervisor can read
 *                   all guest memory anyway; bytes pass a repetition test
 *   jitter     1/4 of the MCV min-entropy estimate of each 1024-sample
 *                   block, only while both SP 800-90B health tests pass,
 *                   and only when the estimate is at least the 1 bit per
 *                   sample the tests' cutoffs assume
 * Every byte collected goes into the pool whatever its credit. The pool is
 * a running SHA-256; extracting finishes a copy of it under a label and
 * restarts the pool from a different label's digest, so an extracted seed
 * cannot be recomputed from a later pool state.
 *
 * The pool and the DRBG are CPU 0's alone (ADR-064): every entry point
 * that touches them checks the CPU, in every build, so a later caller on
 * the storage core (which has its own SQLite stream, store/ksqlite.c)
 * panics with the reason instead of racing CPU 0's TLS for the state.
 */
#include "rng/entropy.h"

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/cpufeat.h"
#include "arch/x86_64/smp.h"
#include "clock.h"
#include "dev/virtio_rng.h"
#include "panic.h"
#include "rng/drbg.h"
#include "rng/health.h"
#include "rng/jitter.h"
#include "rng/sha256.h"

#include <stdio.h>
#include <string.h>

enum {
    SEED_BITS = 256,
    JITTER_BLOCK = 1024,
    POOL_CAP_BITS = 4096,
};
#define RESEED_NS (600ull * 1000000000ull)   /* reseed every 10 minutes */

static const char *const source_name[RNG_NSRC] = {"rdseed", "rdrand", "virtio-rng", "jitter"};

struct entropy {
    struct sha256 pool;
    unsigned pool_bits;                    /* credited since the last extraction */
    unsigned long credited[RNG_NSRC];      /* credited per source, ever */
    unsigned frac_jitter;                  /* jitter credit remainder, 1/256 bits */
    struct health jitter_health;
    int jitter_ok;
    unsigned long jitter_samples, jitter_blocks, jitter_est_bits; /* for rng_get_stats */
    unsigned jitter_last_est;
    struct drbg drbg;
    int seeded;
    unsigned reseeds;
    uint64_t last_reseed_ns;
    uint64_t extractions;
    const char *problem;                   /* last source failure, for the log */
};

/* The boot CPU's pool and DRBG (per-CPU DRBGs come with SMP). */
static struct entropy ent;

static void pool_add(enum rng_source src, const void *data, size_t len, unsigned credit)
{
    uint8_t tag = (uint8_t)src;
    uint64_t t = rdtsc();
    sha256_update(&ent.pool, &tag, 1);
    sha256_update(&ent.pool, &t, sizeof t);
    sha256_update(&ent.pool, data, len);
    ent.credited[src] += credit;
    ent.pool_bits = ent.pool_bits + credit > POOL_CAP_BITS ? POOL_CAP_BITS
                                                           : ent.pool_bits + credit;
}

static void pool_extract(uint8_t out[SHA256_BYTES])
{
    struct sha256 c = ent.pool;
    uint8_t label[9] = {'x'};
    memcpy(label + 1, &ent.extractions, 8);
    sha256_update(&c, label, sizeof label);
    sha256_final(&c, out);
    label[0] = 'r';
    sha256_update(&ent.pool, label, sizeof label);
    uint8_t next[SHA256_BYTES];
    sha256_final(&ent.pool, next);
    sha256_init(&ent.pool);
    sha256_update(&ent.pool, next, sizeof next);
    secure_zero(next, sizeof next);
    ent.extractions++;
    ent.pool_bits = 0;
}

/* Values from RDSEED or RDRAND, rejected when they look broken: a repeat
 * of the previous value or all zeros / all ones (known failure modes). */
static int cpu_random(int seed, uint64_t *out, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        uint64_t v = 0;
        int ok = 0;
        for (int t = 0; t < 100 && !ok; t++) {
            uint8_t c;
            if (seed)
                __asm__ volatile("rdseed %0; setc %1" : "=r"(v), "=qm"(c));
            else
                __asm__ volatile("rdrand %0; setc %1" : "=r"(v), "=qm"(c));
            ok = c;
            if (!ok)
                cpu_relax();
        }
        if (!ok || v == 0 || v == ~0ull || (i > 0 && v == out[i - 1]))
            return -1;
        out[i] = v;
    }
    return 0;
}

static void collect_cpu(void)
{
    struct cpu_features f;
    cpu_features_read(&f);
    uint64_t v[32];
    if (f.rdseed) {
        if (cpu_random(1, v, 16) == 0)
            pool_add(RNG_SRC_RDSEED, v, 16 * 8, 16 * 64 / 2);
        else
            ent.problem = "rdseed failed its health check";
    }
    if (f.rdrand) {
        if (cpu_random(0, v, 32) == 0)
            pool_add(RNG_SRC_RDRAND, v, sizeof v, 32 * 64 / 8);
        else
            ent.problem = "rdrand failed its health check";
    }
    secure_zero(v, sizeof v);
}

static void collect_virtio(void)
{
    if (!virtio_rng_present())
        return;
    uint8_t buf[64];
    int n = virtio_rng_read(buf, sizeof buf, 1000);
    if (n <= 0) {
        ent.problem = "virtio-rng failed";
        return;
    }
    struct health h;
    health_init(&h, HEALTH_RCT_CUTOFF_H8, HEALTH_APT_WINDOW + 1);
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad |= health_sample(&h, buf[i]);
    pool_add(RNG_SRC_VIRTIO, buf, (size_t)n, bad ? 0 : (unsigned)n * 8);
    if (bad)
        ent.problem = "virtio-rng failed its repetition test";
    secure_zero(buf, sizeof buf);
}

/* One block of jitter samples through the health tests and the estimate. */
static void collect_jitter_block(void)
{
    if (!ent.jitter_ok)
        return;
    static uint64_t d[JITTER_BLOCK];   /* 8 KiB: too big for the stack */
    uint8_t s[JITTER_BLOCK];
    jitter_sample(d, JITTER_BLOCK);
    int bad = 0;
    for (unsigned i = 0; i < JITTER_BLOCK; i++) {
        s[i] = (uint8_t)d[i];
        bad |= health_sample(&ent.jitter_health, s[i]);
    }
    unsigned h = health_mcv_estimate(s, JITTER_BLOCK);   /* 1/256 bits per sample */
    ent.jitter_samples += JITTER_BLOCK;
    ent.jitter_blocks++;
    ent.jitter_est_bits += (unsigned long)h * JITTER_BLOCK / 256;
    ent.jitter_last_est = h;
    unsigned credit = 0;
    if (bad) {
        ent.jitter_ok = 0;
        ent.problem = ent.jitter_health.failure;
    } else if (h >= 256) {
        ent.frac_jitter += h * JITTER_BLOCK / 4;
        credit = ent.frac_jitter / 256;
        ent.frac_jitter %= 256;
    }
    pool_add(RNG_SRC_JITTER, d, sizeof d, credit);
    secure_zero(d, sizeof d);
    secure_zero(s, sizeof s);
}

static void seed_drbg(void)
{
    uint8_t seed[SHA256_BYTES], nonce[SHA256_BYTES];
    pool_extract(seed);
    pool_extract(nonce);
    uint64_t pers[2] = {0x7465726e2d726e67ull /* "tern-rng" */, rdtsc()};
    if (!ent.seeded) {
        drbg_instantiate(&ent.drbg, seed, sizeof seed, nonce, 16, pers, sizeof pers);
        ent.seeded = 1;
    } else {
        drbg_reseed(&ent.drbg, seed, sizeof seed, pers, sizeof pers);
        ent.reseeds++;
    }
    ent.last_reseed_ns = clock_mono_ns();
    secure_zero(seed, sizeof seed);
    secure_zero(nonce, sizeof nonce);
}

void rng_init(unsigned max_ms)
{
    sha256_init(&ent.pool);
    health_init(&ent.jitter_health, HEALTH_RCT_CUTOFF_H1, HEALTH_APT_CUTOFF_H1);
    ent.jitter_ok = jitter_init() == 0;
    collect_cpu();
    collect_virtio();
    /* Jitter always contributes one block; more while short of a seed. */
    uint64_t deadline = clock_mono_ns() + (uint64_t)max_ms * 1000000;
    do
        collect_jitter_block();
    while (ent.jitter_ok && ent.pool_bits < SEED_BITS && clock_mono_ns() < deadline);
    if (ent.pool_bits >= SEED_BITS)
        seed_drbg();
}

/* The ALWAYS check of the file comment. */
static void cpu0_only(void)
{
    if (smp_cpu_id() != 0)
        panic("rng: the entropy pool or the DRBG used on an application processor: they "
              "are CPU 0's alone (ADR-064)");
}

void rng_poll(void)
{
    cpu0_only();
    if (!ent.seeded) {
        collect_jitter_block();
        if (ent.pool_bits >= SEED_BITS)
            seed_drbg();
        return;
    }
    if (clock_mono_ns() - ent.last_reseed_ns < RESEED_NS)
        return;
    collect_cpu();
    collect_virtio();
    collect_jitter_block();
    if (ent.pool_bits >= SEED_BITS)
        seed_drbg();
    else
        ent.last_reseed_ns = clock_mono_ns(); /* try again next period */
}

int rng_seeded(void) { return ent.seeded; }

int rng_bytes(void *out, size_t n)
{
    cpu0_only();
    if (!ent.seeded)
        return -1;
    uint8_t *o = out;
    while (n) {
        size_t take = n < DRBG_MAX_REQUEST ? n : DRBG_MAX_REQUEST;
        if (drbg_generate(&ent.drbg, o, take, NULL, 0) < 0) {
            seed_drbg(); /* the reseed interval ran out: the pool has moved on */
            continue;
        }
        o += take;
        n -= take;
    }
    return 0;
}

uint32_t rng_u32_nonkey(void)
{
    cpu0_only();
    uint32_t v;
    if (rng_bytes(&v, sizeof v) == 0)
        return v;
    struct sha256 c = ent.pool;
    uint64_t t = rdtsc();
    uint8_t d[SHA256_BYTES];
    sha256_update(&c, &t, sizeof t);
    sha256_final(&c, d);
    memcpy(&v, d, sizeof v);
    return v;
}

void rng_get_stats(struct rng_stats *o)
{
    o->seeded = ent.seeded;
    o->reseeds = ent.reseeds;
    o->extractions = ent.extractions;
    o->pool_bits = ent.pool_bits;
    for (int i = 0; i < RNG_NSRC; i++)
        o->credited[i] = ent.credited[i];
    o->drbg_generates = ent.seeded ? ent.drbg.reseed_counter - 1 : 0; /* 1 right after seeding */
    o->jitter_ok = ent.jitter_ok;
    o->jitter_samples = ent.jitter_samples;
    o->jitter_blocks = ent.jitter_blocks;
    o->jitter_estimated_bits = ent.jitter_est_bits;
    o->jitter_last_estimate = ent.jitter_last_est;
    o->rct_cutoff = ent.jitter_health.rct_cutoff;
    o->apt_cutoff = ent.jitter_health.apt_cutoff;
    o->health_samples = ent.jitter_health.samples;
    o->health_failed = ent.jitter_health.failed;
    o->health_failure = ent.jitter_health.failure;
    o->problem = ent.problem;
}

const char *rng_source_name(enum rng_source s)
{
    return (unsigned)s < RNG_NSRC ? source_name[s] : "?";
}

void rng_describe(char *buf, size_t n)
{
    unsigned long total = 0;
    char parts[128] = "";
    size_t used = 0;
    for (int i = 0; i < RNG_NSRC; i++) {
        total += ent.credited[i];
        if (!ent.credited[i] && !(i == RNG_SRC_JITTER))
            continue;
        int w = snprintf(parts + used, sizeof parts - used, "%s%s %lu", used ? ", " : "",
                         source_name[i], ent.credited[i]);
        if (w > 0 && (size_t)w < sizeof parts - used)
            used += (size_t)w;
    }
    if (ent.seeded)
        snprintf(buf, n, "seeded, %lu bits credited (%s)", total, parts);
    else
        snprintf(buf, n, "waiting for entropy, %lu of %d bits credited (%s)%s%s", total,
                 SEED_BITS, parts, ent.problem ? "; " : "", ent.problem ? ent.problem : "");
}
