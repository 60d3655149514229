/*
 * hwbits.h - a stuck/bias check over a random source's output for the
 * RNG panel (SPEC E3): the share of one bits and the longest run of equal
 * bits, with a verdict against stated thresholds. A sanity check that
 * catches a stuck or grossly biased source, not a certification (that
 * would be SP 800-90B's full estimate over far more data). Pure and
 * integer-only (the kernel has no floating point); tested on the host
 * (tests/unit/test_khw_bits.c).
 */
#ifndef TERN_DIAG_HWBITS_H
#define TERN_DIAG_HWBITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    /* Biased: the count of ones is further from half than this many
     * standard deviations (sqrt(bits)/2): about 2e-9 for a fair source. */
    BITS_BIAS_SIGMAS = 6,
    /* Stuck: a run of equal bits at least this long. In 2^19 fair bits
     * the longest run is about 19; 64 has odds near 2^-45. */
    BITS_STUCK_RUN = 64,
    BITS_MIN_BYTES = 1024,      /* below this no verdict is given */
};

struct bitstat {
    uint64_t bits, ones;
    uint64_t run, longest;      /* current and longest run of equal bits */
    int last;                   /* the previous bit, -1 before the first */
};

void bitstat_init(struct bitstat *s);
/* Count n more bytes (bits taken least significant first). */
void bitstat_add(struct bitstat *s, const void *data, size_t n);
/* Share of ones in thousandths of a percent (50000 = 50.000%). */
uint64_t bitstat_ones_milli_pct(const struct bitstat *s);
/* |2 x ones - bits| against BITS_BIAS_SIGMAS x sqrt(bits). */
bool bitstat_biased(const struct bitstat *s);
bool bitstat_stuck(const struct bitstat *s);
/* Floor of the square root. */
uint64_t isqrt64(uint64_t v);

#endif
