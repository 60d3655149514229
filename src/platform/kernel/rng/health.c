/*
 * health.c - SP 800-90B health tests and the MCV estimate in integer
 * arithmetic (the kernel has no floating point): probabilities are 32-bit
 * fixed point, the square root is an integer one, and -log2 is taken bit
 * by bit by repeated squaring.
 */
#include "health.h"

void health_init(struct health *h, unsigned rct_cutoff, unsigned apt_cutoff)
{
    *h = (struct health){.rct_cutoff = rct_cutoff, .apt_cutoff = apt_cutoff};
}

static int fire(struct health *h, const char *why)
{
    h->failed = 1;
    h->failure = why;
    return -1;
}

int health_sample(struct health *h, uint8_t s)
{
    if (h->failed)
        return -1;
    /* Repetition count (4.4.1): a run of identical samples. */
    if (h->samples > 0 && s == h->rct_last) {
        if (++h->rct_count >= h->rct_cutoff)
            return fire(h, "repetition count test");
    } else {
        h->rct_last = s;
        h->rct_count = 1;
    }
    /* Adaptive proportion (4.4.2): how often the window's first sample
     * recurs in the window. */
    if (h->apt_seen == 0) {
        h->apt_first = s;
        h->apt_count = 1;
    } else if (s == h->apt_first && ++h->apt_count >= h->apt_cutoff) {
        return fire(h, "adaptive proportion test");
    }
    if (++h->apt_seen == HEALTH_APT_WINDOW)
        h->apt_seen = 0;
    h->samples++;
    return 0;
}

static uint64_t isqrt(uint64_t v)
{
    uint64_t r = 0;
    for (int b = 31; b >= 0; b--) {
        uint64_t t = r | (1ull << b);
        if ((unsigned __int128)t * t <= v)
            r = t;
    }
    return r;
}

/* -log2(p / 2^32) in 1/256 bits, for 0 < p <= 2^32. */
static unsigned neg_log2_q32(uint64_t p)
{
    int e = 63 - __builtin_clzll(p);         /* p = 2^e * m, m in [1, 2) */
    /* m in Q31 */
    uint64_t m = e >= 31 ? p >> (e - 31) : p << (31 - e);
    unsigned frac = 0;
    for (int i = 0; i < 8; i++) {             /* 8 fractional bits of log2(m) */
        m = (m * m) >> 31;
        frac <<= 1;
        if (m >= (2ull << 31)) {
            m >>= 1;
            frac |= 1;
        }
    }
    /* log2(p) = e + frac/256 - 32; we want its negation. */
    int v = (32 - e) * 256 - (int)frac;
    return v < 0 ? 0 : (unsigned)v;
}

unsigned health_mcv_estimate(const uint8_t *s, size_t n)
{
    uint32_t count[256] = {0};
    uint32_t max = 0;
    for (size_t i = 0; i < n; i++)
        if (++count[s[i]] > max)
            max = count[s[i]];
    /* p = max/n in Q32; bound = p + 2.576 * sqrt(p (1 - p) / (n - 1)).
     * 64-bit arithmetic suffices: max < 2^32 and p (1 - p) <= 2^62. */
    uint64_t one = 1ull << 32;
    uint64_t p = ((uint64_t)max << 32) / n;
    uint64_t var = p * (one - p) / (n - 1);
    uint64_t dev = isqrt(var) * 2576 / 1000;
    uint64_t pu = p + dev > one ? one : p + dev;
    unsigned h = neg_log2_q32(pu);
    return h > 8 * 256 ? 8 * 256 : h;
}
