/*
 * pool.h - the daemon's small-block allocator (pool.c): blocks of up to
 * TERN_POOL_MAX bytes come from slabs of one size class each, larger ones
 * from malloc. The core allocates through it (broker_allocator) and so do
 * the socket records (accept.c).
 *
 * Why: an idle connection is a handful of small long-lived blocks (the
 * core's connection and session, its strings, the socket record) that
 * glibc carves between the tens of kilobytes each TLS handshake allocates
 * and frees; the pages those holes leave cannot be given back, and each
 * glibc block carries an 8-byte header and 16-byte rounding. Blocks are
 * 8-byte aligned (TERN_POOL_STEP): callers must need no more. From slabs
 * the blocks sit side by side, with no header, in pages that hold nothing
 * else (measured in docs/PERFORMANCE.md, "Idle mutual-TLS connections").
 *
 * One thread only (the event loop's), like the core it serves.
 */
#ifndef TERN_POSIX_POOL_H
#define TERN_POSIX_POOL_H

#include <stddef.h>

enum {
    /* Bytes per slab, a power of two; slabs are aligned to it, which is
     * how a block finds its slab. Large enough that a slab's header is
     * noise, small enough that a class used by few blocks costs few pages
     * (only the pages a slab has handed out are ever touched). */
    TERN_POOL_SLAB = 64 * 1024,
    /* Size classes are multiples of this, and so is every block's
     * address: 8, not malloc's 16, because the blocks served here are
     * structures of pointers and integers (nothing over-aligned, no long
     * double) and most per-connection sizes are 8 past a multiple of 16
     * (the core's 248-byte connection, the 104-byte socket record, the
     * TLS adapter's 120-byte blocks): 16-byte steps would waste 8 on each. */
    TERN_POOL_STEP = 8,
    /* Larger blocks go to malloc: per-connection state is below it; big
     * buffers gain nothing from slabs. */
    TERN_POOL_MAX = 512,
};

typedef struct tern_pool tern_pool;

typedef struct tern_pool_stats {
    size_t slabs;       /* slabs mapped */
    size_t empty_slabs; /* of them, holding no block (given back by tern_pool_trim) */
    size_t blocks;      /* blocks in use from slabs */
} tern_pool_stats;

/* NULL when out of memory. */
tern_pool *tern_pool_create(void);
/* Unmaps every slab: blocks still in use from slabs are gone with it.
 * Blocks that came from malloc are not tracked: free them first. NULL is
 * ignored. */
void tern_pool_destroy(tern_pool *p);

/* Like malloc, realloc and free (size 0 gives a unique block). free and
 * realloc take blocks from either source: a block's address says which. */
void *tern_pool_alloc(tern_pool *p, size_t size);
void *tern_pool_calloc(tern_pool *p, size_t size);
void *tern_pool_realloc(tern_pool *p, void *block, size_t size);
void tern_pool_free(tern_pool *p, void *block);

/* Gives empty slabs back to the system (the loop calls it where it trims
 * the heap: never on a busy turn, so a flood cannot map and unmap a slab
 * per message). Returns how many were unmapped. */
size_t tern_pool_trim(tern_pool *p);

tern_pool_stats tern_pool_get_stats(const tern_pool *p);

/* The broker_allocator callbacks (ctx = the pool). */
void *tern_pool_alloc_cb(void *ctx, size_t size);
void *tern_pool_realloc_cb(void *ctx, void *block, size_t size);
void tern_pool_free_cb(void *ctx, void *block);

#endif
