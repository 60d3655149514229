/*
 * membw.c - memory bandwidth (hw.h's diag_membw_write): sequential read,
 * write and copy over a buffer well beyond the caches, timed with the
 * TSC, best of up to MEMBW_PASSES passes within MEMBW_BUDGET_MS. Integer
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
    const char *key;
    uint64_t best;              /* fewest ticks */
    uint64_t bytes;             /* moved per pass (copy: bytes copied) */
};

static void run(struct kind *k, int which, uint8_t *buf, size_t size, volatile uint64_t *sink)
{
    uint64_t t0 = rdtsc();
    if (which == 0)
        *sink += pass_read((const volatile uint64_t *)buf, size / 8);
    else if (which == 1)
        pass_write((volatile uint64_t *)buf, size / 8, t0);
    else
        memcpy(buf + size / 2, buf, size / 2);
    uint64_t d = rdtsc() - t0;
    if (!k->best || d < k->best)
        k->best = d;
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
        static const char why[] = "not enough free memory for a 4 MiB buffer";
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
    volatile uint64_t sink = 0;
    struct kind kinds[3] = {{"read_mib_s", 0, size}, {"write_mib_s", 0, size},
                            {"copy_mib_s", 0, size / 2}};
    memset(buf, 0x5A, size); /* touch every page before timing */
    uint64_t start = clock_mono_ns();
    unsigned passes = 0;
    while (passes < MEMBW_PASSES) {
        for (int k = 0; k < 3; k++)
            run(&kinds[k], k, buf, size, &sink);
        passes++;
        if (clock_mono_ns() - start > (uint64_t)MEMBW_BUDGET_MS * 1000000)
            break;
    }
    pmm_free_contig(phys, size / PAGE_SIZE);
    jw_u64(w, "buffer_bytes", size);
    jw_u64(w, "passes", passes);
    jw_str(w, "method", "64-bit loads/stores (no SSE), copy by memcpy of half the buffer; "
                        "best pass, timed with the TSC");
    for (int k = 0; k < 3; k++)
        jw_fixed(w, kinds[k].key,
                 (int64_t)(hw_mib_s_milli(kinds[k].bytes, kinds[k].best, hz) / 100), 1);
    jw_end(w);
}
