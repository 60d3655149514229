/*
 * diskstat.c - the measurements' integer arithmetic (diskstat.h). Sorting
 * uses qsort, which the kernel's libc has; nothing here touches a device.
 */
#include "diskstat.h"

#include <stdlib.h>

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

size_t diskstat_rank(size_t n, unsigned p)
{
    /* ceil(p * n / 100), at least 1; n is bounded by the sample buffer so
     * p * n does not overflow. */
    size_t r = ((size_t)p * n + 99) / 100;
    if (r < 1)
        r = 1;
    if (r > n)
        r = n;
    return r - 1;
}

int diskstat_percentiles(uint64_t *samples, size_t n, struct diskstat_pct *out)
{
    if (n == 0)
        return -1;
    qsort(samples, n, sizeof *samples, cmp_u64);
    out->p50 = samples[diskstat_rank(n, 50)];
    out->p90 = samples[diskstat_rank(n, 90)];
    out->p99 = samples[diskstat_rank(n, 99)];
    out->max = samples[n - 1];
    return 0;
}

uint64_t diskstat_per_s(uint64_t amount, uint64_t elapsed_ns, unsigned decimals)
{
    uint64_t us = elapsed_ns / 1000;
    if (us == 0)
        us = 1;
    /* amount * 10^(6 + decimals) / us by long division, one decimal digit
     * at a time: the remainder stays below us, so rem * 10 cannot
     * overflow; only a result beyond 2^64 could, and it saturates. */
    uint64_t q = amount / us, rem = amount % us;
    if (decimals > 3)
        decimals = 3;
    for (unsigned i = 0; i < 6 + decimals; i++) {
        if (q > UINT64_MAX / 10)
            return UINT64_MAX;
        rem *= 10;
        q = q * 10 + rem / us;
        rem %= us;
    }
    return q;
}

uint64_t diskstat_mib_s_x10(uint64_t bytes, uint64_t elapsed_ns)
{
    return diskstat_per_s(bytes, elapsed_ns, 1) >> 20;
}

void diskstat_lcg_seed(struct diskstat_lcg *g, uint64_t seed) { g->x = seed; }

uint64_t diskstat_lcg_below(struct diskstat_lcg *g, uint64_t n)
{
    g->x = g->x * 6364136223846793005ull + 1442695040888963407ull;
    /* The low bits of an LCG have short periods: use the top 48. */
    return (g->x >> 16) % n;
}
