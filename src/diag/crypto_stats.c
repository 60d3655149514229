/*
 * crypto_stats.c - order statistics of timing samples (crypto_stats.h).
 */
#include "diag/crypto_stats.h"

void diag_sort_u64(uint64_t *v, unsigned n)
{
    for (unsigned i = 1; i < n; i++) {
        uint64_t x = v[i];
        unsigned j = i;

        for (; j > 0 && v[j - 1] > x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

uint64_t diag_rank_u64(const uint64_t *v, unsigned n, unsigned pct)
{
    unsigned k;

    if (n == 0)
        return 0;
    k = (n * pct + 99u) / 100u;
    return v[k > 0 ? k - 1 : 0];
}
