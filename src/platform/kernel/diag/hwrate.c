/*
 * hwrate.c - integer rate arithmetic (hwrate.h), exact: a x b / c through
 * a 128-bit intermediate.
 */
#include "hwrate.h"

/* floor(a x b / c), saturating at UINT64_MAX; c > 0. The 128-bit product
 * is formed from 32-bit halves and divided bit by bit (no 128-bit
 * division helper exists in the freestanding kernel). */
static uint64_t muldiv(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t al = a & 0xFFFFFFFFu, ah = a >> 32, bl = b & 0xFFFFFFFFu, bh = b >> 32;
    uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    uint64_t mid = (ll >> 32) + (lh & 0xFFFFFFFFu) + (hl & 0xFFFFFFFFu);
    uint64_t lo = (ll & 0xFFFFFFFFu) | mid << 32;
    uint64_t hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
    if (hi >= c)
        return UINT64_MAX; /* the quotient needs more than 64 bits */
    uint64_t q = 0, r = hi;
    for (int i = 63; i >= 0; i--) {
        uint64_t top = r >> 63;
        r = r << 1 | ((lo >> i) & 1);
        q <<= 1;
        if (top || r >= c) {
            r -= c;
            q |= 1;
        }
    }
    return q;
}

uint64_t hw_muldiv(uint64_t a, uint64_t b, uint64_t c) { return c ? muldiv(a, b, c) : 0; }

uint64_t hw_mib_s_milli(uint64_t bytes, uint64_t ticks, uint64_t hz)
{
    if (!ticks || !hz)
        return 0;
    /* bytes x hz / ticks = bytes per second; x 1000 / 2^20 = MiB/s milli */
    uint64_t per_s = muldiv(bytes, hz, ticks);
    if (per_s == UINT64_MAX)
        return UINT64_MAX;
    return muldiv(per_s, 1000, 1u << 20);
}

uint64_t hw_ticks_ns(uint64_t ticks, uint64_t hz) { return hz ? muldiv(ticks, 1000000000, hz) : 0; }

uint64_t hw_khz(uint64_t ticks, uint64_t ns) { return ns ? muldiv(ticks, 1000000, ns) : 0; }
