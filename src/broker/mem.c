/*
 * mem.c - the core's allocator: every allocation goes through the platform's
 * broker_allocator (so tests can fail the Nth one) and is accounted, so
 * $SYS/broker/memory/used reports what the core holds without asking the OS.
 *
 * Each block carries an 8-byte header with its size and a tag; freeing
 * checks the tag, which turns a double free or a wild pointer into a clear
 * panic instead of silent heap corruption. Eight bytes, not sixteen
 * (ADR-062): every idle connection is several core blocks, and with glibc's
 * or the daemon's pool's 16-byte steps a 16-byte header often costs a whole
 * step. So blocks are 8-byte aligned, which every type the core allocates
 * needs at most (nothing in it asks for more: no long double, no
 * over-aligned types), and a block is at most MEM_MAX bytes.
 */
#include "broker/base.h"
#include "broker/broker-t.h"
#include "broker/mem.h"

#include <stdlib.h>
#include <string.h>

#define MEM_TAG_LIVE 0x6c697665u /* "live" */
#define MEM_TAG_DEAD 0x64656164u /* "dead" */
/* The largest block (the size field's range); larger requests fail like
 * any allocation: no core block comes near it (packets are at most 256 MiB). */
#define MEM_MAX (UINT32_MAX - sizeof(mem_header))

typedef struct mem_header {
    uint32_t size;
    uint32_t tag;
} mem_header;
_Static_assert(sizeof(mem_header) == 8, "the core's block header is 8 bytes (ADR-062)");

static void *raw_alloc(broker *b, size_t size)
{
    if (b->alloc.alloc)
        return b->alloc.alloc(b->alloc.ctx, size);
    return malloc(size);
}

static void *raw_realloc(broker *b, void *p, size_t size)
{
    if (b->alloc.realloc)
        return b->alloc.realloc(b->alloc.ctx, p, size);
    return realloc(p, size);
}

static void raw_free(broker *b, void *p)
{
    if (b->alloc.free)
        b->alloc.free(b->alloc.ctx, p);
    else
        free(p);
}

void *bk_mem_alloc(broker *b, size_t size)
{
    if (size > MEM_MAX)
        return NULL;
    mem_header *h = raw_alloc(b, sizeof *h + size);
    if (!h)
        return NULL;
    h->size = (uint32_t)size;
    h->tag = MEM_TAG_LIVE;
    b->stats.memory_used += size + sizeof *h;
    return h + 1;
}

void *bk_mem_calloc(broker *b, size_t size)
{
    void *p = bk_mem_alloc(b, size);
    if (p)
        memset(p, 0, size);
    return p;
}

void *bk_mem_realloc(broker *b, void *p, size_t size)
{
    if (!p)
        return bk_mem_alloc(b, size);
    if (size > MEM_MAX)
        return NULL;
    mem_header *h = (mem_header *)p - 1;
    ALWAYS(h->tag == MEM_TAG_LIVE);
    uint64_t old = h->size;
    mem_header *n = raw_realloc(b, h, sizeof *n + size);
    if (!n)
        return NULL; /* the old block stays valid and accounted */
    n->size = (uint32_t)size;
    b->stats.memory_used = b->stats.memory_used - old + size;
    return n + 1;
}

void bk_mem_free(broker *b, void *p)
{
    if (!p)
        return;
    mem_header *h = (mem_header *)p - 1;
    ALWAYS(h->tag == MEM_TAG_LIVE);
    ALWAYS(b->stats.memory_used >= h->size + sizeof *h);
    b->stats.memory_used -= h->size + sizeof *h;
    h->tag = MEM_TAG_DEAD;
    raw_free(b, h);
}

char *bk_mem_strdup(broker *b, const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = bk_mem_alloc(b, n);
    if (d)
        memcpy(d, s, n);
    return d;
}
