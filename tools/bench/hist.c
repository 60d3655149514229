/*
 * hist.c - the log-linear latency histogram of hist.h.
 *
 * Bucket index: values below 32 map to themselves; larger values keep their
 * leading one bit's position (the exponent) and the next five bits (the
 * mantissa), so a bucket is 1/32 of its power of two wide.
 */
#include "hist.h"

#include <math.h>

static unsigned bucket_of(uint64_t v)
{
    if (v < HIST_SUB)
        return (unsigned)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= HIST_SUB_BITS */
    unsigned m = (unsigned)(v >> (e - HIST_SUB_BITS)) & (HIST_SUB - 1u);
    return HIST_SUB + (e - HIST_SUB_BITS) * HIST_SUB + m;
}

/* Middle of a bucket: the error is then at most half a bucket. */
static uint64_t bucket_value(unsigned i)
{
    if (i < HIST_SUB)
        return i;
    unsigned e = (i - HIST_SUB) / HIST_SUB + HIST_SUB_BITS;
    unsigned m = (i - HIST_SUB) % HIST_SUB;
    unsigned shift = e - HIST_SUB_BITS;
    uint64_t lo = (uint64_t)(HIST_SUB + m) << shift;
    return lo + ((1ull << shift) >> 1);
}

void hist_add(hist *h, uint64_t v)
{
    h->b[bucket_of(v)]++;
    h->count++;
    h->sum += v;
    if (v > h->max)
        h->max = v;
}

void hist_merge(hist *dst, const hist *src)
{
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        dst->b[i] += src->b[i];
    dst->count += src->count;
    dst->sum += src->sum;
    if (src->max > dst->max)
        dst->max = src->max;
}

uint64_t hist_quantile(const hist *h, double q)
{
    if (h->count == 0)
        return 0;
    /* The smallest value with at least ceil(q * count) samples at or below. */
    double want = ceil(q * (double)h->count);
    uint64_t rank = want < 1.0 ? 1 : (uint64_t)want;
    uint64_t seen = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank) {
            uint64_t v = bucket_value(i);
            return v > h->max ? h->max : v;
        }
    }
    return h->max;
}
