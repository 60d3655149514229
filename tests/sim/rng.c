/*
 * rng.c - the simulator's only source of randomness: splitmix64 on a state
 * the caller owns, so one seed reproduces a whole run.
 */
#include "sim.h"

void rng_seed(rng *r, uint64_t seed)
{
    r->s = seed;
}

uint64_t rng_next(rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint32_t rng_below(rng *r, uint32_t n)
{
    /* The modulo bias is irrelevant for n this small. */
    return (uint32_t)(rng_next(r) % n);
}

bool rng_pct(rng *r, uint32_t percent)
{
    return rng_below(r, 100) < percent;
}
