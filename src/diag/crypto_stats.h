/*
 * crypto_stats.h - order statistics of timing samples for the crypto and
 * handshake measurements. Medians, not means, are the figures: the machine
 * may be shared (a VM's stolen time, other processes), and a sample that
 * was interrupted says nothing about the operation's cost.
 */
#ifndef TERN_DIAG_CRYPTO_STATS_H
#define TERN_DIAG_CRYPTO_STATS_H

#include <stdint.h>

/* Sort v[0..n) ascending (insertion sort: n is at most a few hundred). */
void diag_sort_u64(uint64_t *v, unsigned n);

/* Nearest-rank percentile pct (1..100) of sorted v[0..n); 0 when n is 0. */
uint64_t diag_rank_u64(const uint64_t *v, unsigned n, unsigned pct);

#endif
