/*
 * hwbits.c - bit statistics for the RNG panel (hwbits.h).
 */
#include "hwbits.h"

/* Ones in a byte (no __builtin_popcount: the kernel links no libgcc). */
static unsigned ones8(uint8_t b)
{
    b = (uint8_t)(b - ((b >> 1) & 0x55));
    b = (uint8_t)((b & 0x33) + ((b >> 2) & 0x33));
    return (unsigned)((b + (b >> 4)) & 0x0F);
}

void bitstat_init(struct bitstat *s)
{
    s->bits = s->ones = s->run = s->longest = 0;
    s->last = -1;
}

void bitstat_add(struct bitstat *s, const void *data, size_t n)
{
    const uint8_t *p = data;
    for (size_t i = 0; i < n; i++) {
        uint8_t b = p[i];
        s->ones += ones8(b);
        /* A byte that continues the run whole: 8 more bits of it. */
        if ((b == 0x00 && s->last == 0) || (b == 0xFF && s->last == 1)) {
            s->run += 8;
        } else {
            for (unsigned k = 0; k < 8; k++) {
                int v = (b >> k) & 1;
                if (v == s->last) {
                    s->run++;
                } else {
                    s->last = v;
                    s->run = 1;
                }
                if (s->run > s->longest)
                    s->longest = s->run;
            }
        }
        if (s->run > s->longest)
            s->longest = s->run;
    }
    s->bits += (uint64_t)n * 8;
}

uint64_t bitstat_ones_milli_pct(const struct bitstat *s)
{
    return s->bits ? s->ones * 100000 / s->bits : 0;
}

uint64_t isqrt64(uint64_t v)
{
    uint64_t r = 0;
    for (uint64_t b = 1ull << 62; b; b >>= 2) {
        if (v >= r + b) {
            v -= r + b;
            r = (r >> 1) + b;
        } else {
            r >>= 1;
        }
    }
    return r;
}

bool bitstat_biased(const struct bitstat *s)
{
    uint64_t twice = 2 * s->ones;
    uint64_t dev = twice > s->bits ? twice - s->bits : s->bits - twice;
    /* |ones - bits/2| > k x sqrt(bits)/2  <=>  |2 ones - bits| > k sqrt(bits);
     * squared to stay in integers: dev^2 > k^2 x bits. */
    return dev * dev > (uint64_t)BITS_BIAS_SIGMAS * BITS_BIAS_SIGMAS * s->bits;
}

bool bitstat_stuck(const struct bitstat *s) { return s->longest >= BITS_STUCK_RUN; }
