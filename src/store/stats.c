/*
 * stats.c - the store's counters and commit-latency percentiles.
 *
 * Latencies of the last STORE_LATENCY_WINDOW commits sit in a ring; the
 * percentiles are computed when someone asks (a copy is sorted), which the
 * daemon does about once a second, not per commit.
 */
#include "store/internal.h"

#include <stdlib.h>
#include <string.h>

uint64_t store_now_us(const store *s)
{
    return s->opt.clock != NULL ? s->opt.clock(s->opt.clock_ctx) : 0;
}

void store_stats_commit(store *s, uint64_t latency_us)
{
    uint32_t v = latency_us > UINT32_MAX ? UINT32_MAX : (uint32_t)latency_us;

    s->st.last_commit_us = v;
    s->lat_us[s->lat_next] = v;
    s->lat_next = (s->lat_next + 1) % STORE_LATENCY_WINDOW;
    if (s->lat_count < STORE_LATENCY_WINDOW)
        s->lat_count++;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return (x > y) - (x < y);
}

/* Nearest-rank percentile of a sorted array of n > 0 values. */
static uint32_t rank(const uint32_t *sorted, uint32_t n, uint32_t pct)
{
    uint32_t i = (uint32_t)(((uint64_t)n * pct + 99) / 100);

    return sorted[i == 0 ? 0 : i - 1];
}

void store_get_stats(const store *s, store_stats *out)
{
    uint32_t sorted[STORE_LATENCY_WINDOW];
    uint32_t n = s->lat_count;

    *out = s->st;
    out->full = s->commit_full || s->checkpoint_full;
    out->p50_commit_us = out->p99_commit_us = out->max_commit_us = 0;
    if (n == 0)
        return;
    memcpy(sorted, s->lat_us, n * sizeof sorted[0]);
    qsort(sorted, n, sizeof sorted[0], cmp_u32);
    out->p50_commit_us = rank(sorted, n, 50);
    out->p99_commit_us = rank(sorted, n, 99);
    out->max_commit_us = sorted[n - 1];
}
