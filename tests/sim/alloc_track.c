/*
 * alloc_track.c - the tracking, failure-injecting allocator (see the header).
 *
 * Each block carries its own small header with the requested size, so frees
 * and reallocs can be accounted without asking the C library; that keeps the
 * count exact and comparable with the core's broker_stats.memory_used.
 */
#include "alloc_track.h"

#include <stdlib.h>
#include <string.h>

/* 16 bytes keep the caller's pointer aligned for anything. */
typedef struct track_header {
    uint64_t size;
    uint64_t pad;
} track_header;

void alloc_track_init(alloc_track *t)
{
    memset(t, 0, sizeof *t);
}

/* Decide whether this allocation call is one chosen to fail. */
static bool should_fail(alloc_track *t)
{
    t->calls++;
    if (t->fail_next > 0) {
        t->fail_next--;
        t->failures++;
        return true;
    }
    if (t->fail_at != 0 && t->calls == t->fail_at) {
        t->failures++;
        t->fail_next = t->fail_burst;
        return true;
    }
    return false;
}

static void *track_alloc(void *ctx, size_t size)
{
    alloc_track *t = ctx;
    if (should_fail(t) || size > SIZE_MAX - sizeof(track_header))
        return NULL;
    track_header *h = malloc(sizeof *h + size);
    if (!h)
        return NULL;
    h->size = size;
    t->live_bytes += size;
    t->live_blocks++;
    return h + 1;
}

static void *track_realloc(void *ctx, void *p, size_t size)
{
    alloc_track *t = ctx;
    if (!p)
        return track_alloc(ctx, size);
    if (should_fail(t) || size > SIZE_MAX - sizeof(track_header))
        return NULL;
    track_header *h = (track_header *)p - 1;
    uint64_t old = h->size;
    track_header *n = realloc(h, sizeof *n + size);
    if (!n)
        return NULL;
    n->size = size;
    t->live_bytes = t->live_bytes - old + size;
    return n + 1;
}

static void track_free(void *ctx, void *p)
{
    alloc_track *t = ctx;
    if (!p)
        return;
    track_header *h = (track_header *)p - 1;
    if (t->live_bytes < h->size || t->live_blocks == 0)
        abort(); /* freeing more than was allocated: accounting is broken */
    t->live_bytes -= h->size;
    t->live_blocks--;
    free(h);
}

broker_allocator alloc_track_allocator(alloc_track *t)
{
    broker_allocator a = {
        .ctx = t,
        .alloc = track_alloc,
        .realloc = track_realloc,
        .free = track_free,
    };
    return a;
}
