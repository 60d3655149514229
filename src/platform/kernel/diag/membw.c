/*
 * membw.c - memory bandwidth (hw.h's diag_membw_write): sequential read,
 * write and copy over a buffer well beyond the caches, timed with the
 * TSC, best of up to MEMBW_PASSES passes within MEMBW_BUDGET_MS, each
 * pass cut at MEMBW_PASS_MS (the bytes it timed are reported). Integer
 * arithmetic only (hwrate.c). The buffer is 64 MiB when the frame
 * allocator can spare four times that, else the largest power of two it
 * can (at least 4 MiB, or no figure). Read and write are 64-bit loads and
 * stores in general registers (the kernel is built without SSE), so they
 * measure what the kernel's own code can move, not the machine's peak;
 * copy is the kernel's memcpy.
 */
#include "diag/hw.h"

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/memlayout.h"
#include "clock.h"
#include "diag/hwrate.h"
#include "mm/pmm.h"

#include <stdio.h>
#include <string.h>

enum {
    MEMBW_MAX_BYTES = 64 << 20,
    MEMBW_MIN_BYTES = 4 << 20,
    MEMBW_PASSES = 5,
    MEMBW_BUDGET_MS = 1500,     /* for the three kinds together, after a first pass each */
    MEMBW_PASS_MS = 400,        /* one kind's pass is cut here (see run) */
    MEMBW_CHUNK = 1 << 20,
};

/* The TSC rate the clock runs on: ns = ticks x 10^9 / hz, so hz from a
 * span of both. */
static uint64_t tsc_hz(void)
{
    uint64_t n0 = clock_mono_ns(), t0 = rdtsc();
    while (clock_mono_ns() - n0 < 10000000)
        cpu_relax();
    uint64_t n1 = clock_mono_ns(), t1 = rdtsc();
    return hw_muldiv(t1 - t0, 1000000000, n1 - n0);
}

static __attribute__((noinline)) uint64_t pass_read(const volatile uint64_t *p, size_t words)
{
    uint64_t a = 0, b = 0, c = 0, d = 0;
    for (size_t i = 0; i < words; i += 4) {
        a += p[i];
        b ^= p[i + 1];
        c += p[i + 2];
        d ^= p[i + 3];
    }
    return a ^ b ^ c ^ d;
}

static __attribute__((noinline)) void pass_write(volatile uint64_t *p, size_t words, uint64_t v)
{
    for (size_t i = 0; i < words; i += 4) {
        p[i] = v;
        p[i + 1] = v;
        p[i + 2] = v;
        p[i + 3] = v;
    }
}

struct kind {
    const char *key, *bytes_key;
    uint64_t best_milli;        /* best rate seen, MiB/s x 1000 */
    uint64_t best_bytes;        /* bytes timed in that pass */
};

/* One pass of one kind in MEMBW_CHUNK pieces, stopped at deadline_tsc (a
 * slow memcpy under emulation must not hold diagnostics for seconds); the
 * pass's rate over what it moved. */
static void run(struct kind *k, int which, uint8_t *buf, size_t size, uint64_t hz,
                uint64_t pass_ticks, volatile uint64_t *sink)
{
    size_t span = which == 2 ? size / 2 : size, done = 0;
    uint64_t t0 = rdtsc(), t = t0;
    while (done < span && t - t0 < pass_ticks) {
        size_t n = span - done < MEMBW_CHUNK ? span - done : MEMBW_CHUNK;
        if (which == 0)
            *sink += pass_read((const volatile uint64_t *)(buf + done), n / 8);
        else if (which == 1)
            pass_write((volatile uint64_t *)(buf + done), n / 8, t);
        else
            memcpy(buf + size / 2 + done, buf + done, n);
        done += n;
        t = rdtsc();
    }
    uint64_t milli = hw_mib_s_milli(done, t - t0, hz);
    if (milli > k->best_milli) {
        k->best_milli = milli;
        k->best_bytes = done;
    }
}

void diag_membw_write(jw *w)
{
    jw_obj(w, "memory_bandwidth");
    size_t size = MEMBW_MAX_BYTES;
    uint64_t phys = 0;
    for (; size >= MEMBW_MIN_BYTES; size /= 2) {
        if ((uint64_t)pmm_free_count() * PAGE_SIZE / 4 < size)
            continue;
        if ((phys = pmm_alloc_contig(size / PAGE_SIZE)))
            break;
    }
    if (!phys) {
        char why[64];
        snprintf(why, sizeof why, "not enough free memory for a %u MiB buffer",
                 (unsigned)(MEMBW_MIN_BYTES >> 20));
        static const char *const keys[] = {"read_mib_s", "write_mib_s", "copy_mib_s"};
        for (unsigned i = 0; i < 3; i++) {
            char k[24];
            jw_null(w, keys[i]);
            snprintf(k, sizeof k, "%s_why", keys[i]);
            jw_str(w, k, why);
        }
        jw_end(w);
        return;
    }
    uint8_t *buf = phys_to_virt(phys);
    uint64_t hz = tsc_hz();
    uint64_t pass_ticks = hw_muldiv(hz, MEMBW_PASS_MS, 1000);
    volatile uint64_t sink = 0;
    struct kind kinds[3] = {{"read_mib_s", "read_bytes", 0, 0},
                            {"write_mib_s", "write_bytes", 0, 0},
                            {"copy_mib_s", "copy_bytes", 0, 0}};
    /* Touch every page before timing (word stores: the kernel's memset is
     * rep stosb, which emulators run a byte at a time). */
    pass_write((volatile uint64_t *)buf, size / 8, 0x5A5A5A5A5A5A5A5Aull);
    uint64_t start = clock_mono_ns();
    unsigned passes = 0;
    while (passes < MEMBW_PASSES) {
        for (int k = 0; k < 3; k++)
            run(&kinds[k], k, buf, size, hz, pass_ticks, &sink);
        passes++;
        if (clock_mono_ns() - start > (uint64_t)MEMBW_BUDGET_MS * 1000000)
            break;
    }
    pmm_free_contig(phys, size / PAGE_SIZE);
    jw_u64(w, "buffer_bytes", size);
    jw_u64(w, "passes", passes);
    char method[160];
    snprintf(method, sizeof method,
             "64-bit loads/stores (no SSE); copy: memcpy between the buffer's halves; best "
             "pass, timed with the TSC, each pass cut at %u ms", (unsigned)MEMBW_PASS_MS);
    jw_str(w, "method", method);
    for (int k = 0; k < 3; k++) {
        jw_fixed(w, kinds[k].key, (int64_t)(kinds[k].best_milli / 100), 1);
        jw_u64(w, kinds[k].bytes_key, kinds[k].best_bytes);
    }
    jw_end(w);
}
