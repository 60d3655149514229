/*
 * diskstat.h - the arithmetic of the disk measurements (diskbench.h), pure
 * and integer-only (the kernel has no floating point), so the host unit
 * tests check it: latency percentiles over every sample, rates per second
 * without overflow, and the LCG that spreads random I/O over a span.
 */
#ifndef TERN_DIAG_DISKSTAT_H
#define TERN_DIAG_DISKSTAT_H

#include <stddef.h>
#include <stdint.h>

/* Percentiles of n latency samples in nanoseconds. */
struct diskstat_pct {
    uint64_t p50, p90, p99, max;
};

/* Sort samples[0..n) in place, then take the nearest-rank percentiles
 * (the smallest sample with at least p% of the samples at or below it:
 * rank ceil(p * n / 100)). 0, or -1 when n is 0 (out untouched). */
int diskstat_percentiles(uint64_t *samples, size_t n, struct diskstat_pct *out);

/* The nearest-rank index (0-based) of percentile p (1..100) of n >= 1
 * sorted samples. */
size_t diskstat_rank(size_t n, unsigned p);

/* amount per second, times 10^decimals (decimals <= 3), over elapsed_ns
 * at microsecond resolution (under 1 us counts as 1 us), rounded down;
 * exact for every input (UINT64_MAX if the result does not fit). */
uint64_t diskstat_per_s(uint64_t amount, uint64_t elapsed_ns, unsigned decimals);

/* MiB per second with one decimal, times 10 (123.4 MiB/s -> 1234). */
uint64_t diskstat_mib_s_x10(uint64_t bytes, uint64_t elapsed_ns);

/* A 64-bit LCG (Knuth's MMIX constants): not for secrets; only spreads
 * I/O so that no cache along the way predicts it. */
struct diskstat_lcg {
    uint64_t x;
};
void diskstat_lcg_seed(struct diskstat_lcg *g, uint64_t seed);
/* A number in [0, n) (n >= 1) from the generator's high bits. */
uint64_t diskstat_lcg_below(struct diskstat_lcg *g, uint64_t n);

#endif
