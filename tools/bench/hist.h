/*
 * hist.h - a fixed-size latency histogram (log-linear buckets).
 *
 * Recording must cost a few instructions and never allocate, because the
 * load generator records one value per delivered message. Buckets are 32
 * per power of two, so a reported percentile is within ~3% of the true
 * value; values are nanoseconds and anything up to 2^64 fits.
 */
#ifndef TERN_BENCH_HIST_H
#define TERN_BENCH_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 5u
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_BUCKETS (HIST_SUB + (64u - HIST_SUB_BITS) * HIST_SUB)

typedef struct hist {
    uint64_t count;
    uint64_t max;
    uint64_t sum;
    uint64_t b[HIST_BUCKETS];
} hist;

void hist_add(hist *h, uint64_t v);
/* Add every sample of src to dst. */
void hist_merge(hist *dst, const hist *src);
/* Value at quantile q (0..1); 0 for an empty histogram. */
uint64_t hist_quantile(const hist *h, double q);

#endif
