/*
 * pool.c - the daemon's small-block allocator (pool.h): one size class per
 * slab, slabs mapped from the system aligned to their size, a set of the
 * slabs' addresses so free and realloc tell a slab's block from malloc's.
 *
 * A slab hands its blocks out in address order first (so pages it has not
 * reached are never touched), then from the list of blocks freed back to
 * it. Slabs with a free block are on their class's list; a slab that
 * empties goes to the back of it, so blocks are taken from fuller slabs
 * and empty ones can be given back by tern_pool_trim.
 *
 * Under AddressSanitizer a slab's free blocks and the bytes past each
 * block's requested size are poisoned, so the integration tests (ASan
 * daemon) still catch a use after free or an overrun inside the pool.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */

#include "platform/posix/pool.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(a, n) ASAN_POISON_MEMORY_REGION((a), (n))
#define UNPOISON(a, n) ASAN_UNPOISON_MEMORY_REGION((a), (n))
#else
#define POISON(a, n) ((void)(a), (void)(n))
#define UNPOISON(a, n) ((void)(a), (void)(n))
#endif

#define NCLASS (TERN_POOL_MAX / TERN_POOL_STEP)
/* The slab's header takes the first bytes, a multiple of the step so
 * blocks keep malloc's alignment. */
#define SLAB_HEADER 64u
#define SET_MIN 16u

_Static_assert((TERN_POOL_SLAB & (TERN_POOL_SLAB - 1)) == 0, "slab size is a power of two");
_Static_assert(TERN_POOL_MAX % TERN_POOL_STEP == 0, "classes are whole steps");
_Static_assert(SLAB_HEADER % TERN_POOL_STEP == 0, "blocks stay aligned");

typedef struct slab {
    struct slab *prev, *next; /* the class's list of slabs with a free block */
    void *free;               /* blocks freed back, linked through their first word */
    uint32_t used;            /* blocks handed out */
    uint32_t bump;            /* offset of the first block never handed out */
    uint32_t size;            /* block size (the class) */
    uint32_t cls;
    bool listed;              /* on the class's list */
} slab;
_Static_assert(sizeof(slab) <= SLAB_HEADER, "slab header fits");

struct tern_pool {
    slab *head[NCLASS], *tail[NCLASS]; /* slabs with a free block, emptiest last */
    uintptr_t *set;                    /* addresses of all slabs: open addressing */
    size_t set_cap;                    /* power of two */
    size_t slabs, empty, blocks;
};

/* --- the set of slab addresses ----------------------------------------- */

static size_t set_slot(const tern_pool *p, uintptr_t base)
{
    return (size_t)(((uint64_t)(base / TERN_POOL_SLAB) * 0x9e3779b97f4a7c15ull) >> 20) &
           (p->set_cap - 1);
}

static bool set_has(const tern_pool *p, uintptr_t base)
{
    for (size_t i = set_slot(p, base);; i = (i + 1) & (p->set_cap - 1)) {
        if (p->set[i] == base)
            return true;
        if (p->set[i] == 0)
            return false;
    }
}

static void set_put(tern_pool *p, uintptr_t base)
{
    size_t i = set_slot(p, base);
    while (p->set[i] != 0)
        i = (i + 1) & (p->set_cap - 1);
    p->set[i] = base;
}

/* Room for one more slab, the set kept at most half full. */
static bool set_reserve(tern_pool *p)
{
    if ((p->slabs + 1) * 2 <= p->set_cap)
        return true;
    size_t cap = p->set_cap * 2;
    uintptr_t *set = calloc(cap, sizeof *set);
    if (set == NULL)
        return false;
    uintptr_t *old = p->set;
    size_t old_cap = p->set_cap;
    p->set = set;
    p->set_cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i] != 0)
            set_put(p, old[i]);
    free(old);
    return true;
}

/* Linear probing's deletion: later entries of the run move back so no
 * lookup stops early at the hole. */
static void set_del(tern_pool *p, uintptr_t base)
{
    size_t mask = p->set_cap - 1, i = set_slot(p, base);
    while (p->set[i] != base)
        i = (i + 1) & mask;
    p->set[i] = 0;
    for (size_t j = (i + 1) & mask; p->set[j] != 0; j = (j + 1) & mask) {
        size_t home = set_slot(p, p->set[j]);
        /* Move it into the hole when its home is not in (i, j]. */
        bool between = i < j ? (home > i && home <= j) : (home > i || home <= j);
        if (!between) {
            p->set[i] = p->set[j];
            p->set[j] = 0;
            i = j;
        }
    }
}

/* --- slabs --------------------------------------------------------------- */

static void list_push_front(tern_pool *p, slab *s)
{
    s->prev = NULL;
    s->next = p->head[s->cls];
    if (s->next != NULL)
        s->next->prev = s;
    else
        p->tail[s->cls] = s;
    p->head[s->cls] = s;
    s->listed = true;
}

static void list_push_back(tern_pool *p, slab *s)
{
    s->next = NULL;
    s->prev = p->tail[s->cls];
    if (s->prev != NULL)
        s->prev->next = s;
    else
        p->head[s->cls] = s;
    p->tail[s->cls] = s;
    s->listed = true;
}

static void list_unlink(tern_pool *p, slab *s)
{
    if (s->prev != NULL)
        s->prev->next = s->next;
    else
        p->head[s->cls] = s->next;
    if (s->next != NULL)
        s->next->prev = s->prev;
    else
        p->tail[s->cls] = s->prev;
    s->prev = s->next = NULL;
    s->listed = false;
}

/* A mapping of one slab aligned to its size: map twice the size, unmap
 * what lies outside the aligned part. */
static slab *slab_map(tern_pool *p, uint32_t cls)
{
    if (!set_reserve(p))
        return NULL;
    size_t len = 2u * TERN_POOL_SLAB;
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    uintptr_t start = (uintptr_t)m;
    uintptr_t base = (start + TERN_POOL_SLAB - 1) & ~(uintptr_t)(TERN_POOL_SLAB - 1);
    if (base > start)
        (void)munmap(m, base - start);
    if (base + TERN_POOL_SLAB < start + len)
        (void)munmap((void *)(base + TERN_POOL_SLAB), start + len - base - TERN_POOL_SLAB);
    slab *s = (slab *)base;
    memset(s, 0, sizeof *s);
    s->cls = cls;
    s->size = (cls + 1u) * TERN_POOL_STEP;
    s->bump = SLAB_HEADER;
    POISON((char *)s + SLAB_HEADER, TERN_POOL_SLAB - SLAB_HEADER);
    set_put(p, base);
    p->slabs++;
    p->empty++;
    list_push_front(p, s);
    return s;
}

static void slab_unmap(tern_pool *p, slab *s)
{
    if (s->listed)
        list_unlink(p, s);
    set_del(p, (uintptr_t)s);
    p->slabs--;
    if (s->used == 0)
        p->empty--;
    p->blocks -= s->used;
    UNPOISON(s, TERN_POOL_SLAB);
    (void)munmap(s, TERN_POOL_SLAB);
}

/* The slab a block is in, or NULL for malloc's. */
static slab *slab_of(const tern_pool *p, const void *block)
{
    uintptr_t base = (uintptr_t)block & ~(uintptr_t)(TERN_POOL_SLAB - 1);
    return set_has(p, base) ? (slab *)base : NULL;
}

/* --- the allocator ----------------------------------------------------- */

tern_pool *tern_pool_create(void)
{
    tern_pool *p = calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    p->set = calloc(SET_MIN, sizeof *p->set);
    if (p->set == NULL) {
        free(p);
        return NULL;
    }
    p->set_cap = SET_MIN;
    return p;
}

void tern_pool_destroy(tern_pool *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->set_cap; i++)
        if (p->set[i] != 0) {
            UNPOISON((void *)p->set[i], TERN_POOL_SLAB);
            (void)munmap((void *)p->set[i], TERN_POOL_SLAB);
        }
    free(p->set);
    free(p);
}

void *tern_pool_alloc(tern_pool *p, size_t size)
{
    if (size > TERN_POOL_MAX)
        return malloc(size);
    if (size == 0)
        size = 1;
    uint32_t cls = (uint32_t)((size - 1) / TERN_POOL_STEP);
    slab *s = p->head[cls];
    if (s == NULL && (s = slab_map(p, cls)) == NULL)
        return NULL;
    char *b;
    if (s->free != NULL) {
        b = s->free;
        UNPOISON(b, sizeof(void *));
        memcpy(&s->free, b, sizeof(void *));
    } else {
        b = (char *)s + s->bump;
        s->bump += s->size;
    }
    if (s->used++ == 0)
        p->empty--;
    p->blocks++;
    if (s->free == NULL && s->bump + s->size > TERN_POOL_SLAB)
        list_unlink(p, s); /* full */
    POISON(b, s->size);
    UNPOISON(b, size);
    return b;
}

void *tern_pool_calloc(tern_pool *p, size_t size)
{
    void *b = tern_pool_alloc(p, size);
    if (b != NULL)
        memset(b, 0, size);
    return b;
}

void tern_pool_free(tern_pool *p, void *block)
{
    if (block == NULL)
        return;
    slab *s = slab_of(p, block);
    if (s == NULL) {
        free(block);
        return;
    }
    UNPOISON(block, sizeof(void *));
    memcpy(block, &s->free, sizeof(void *));
    POISON(block, s->size);
    s->free = block;
    p->blocks--;
    if (--s->used == 0) {
        p->empty++;
        if (s->listed)
            list_unlink(p, s);
        list_push_back(p, s); /* taken from last, given back by trim */
    } else if (!s->listed) {
        list_push_front(p, s); /* was full */
    }
}

void *tern_pool_realloc(tern_pool *p, void *block, size_t size)
{
    if (block == NULL)
        return tern_pool_alloc(p, size);
    slab *s = slab_of(p, block);
    if (s == NULL)
        return realloc(block, size == 0 ? 1 : size); /* malloc's stays malloc's */
    if (size == 0)
        size = 1;
    if (size <= s->size && size + TERN_POOL_STEP > s->size) {
        POISON(block, s->size); /* same class: only the poisoned tail moves */
        UNPOISON(block, size);
        return block;
    }
    void *n = tern_pool_alloc(p, size);
    if (n == NULL)
        return NULL; /* the old block stays */
    UNPOISON(block, s->size); /* what the caller wrote is within it */
    memcpy(n, block, size < s->size ? size : s->size);
    tern_pool_free(p, block);
    return n;
}

size_t tern_pool_trim(tern_pool *p)
{
    size_t n = 0;
    for (uint32_t c = 0; c < NCLASS; c++) {
        /* Empty slabs sit at the back of their list. */
        while (p->tail[c] != NULL && p->tail[c]->used == 0) {
            slab_unmap(p, p->tail[c]);
            n++;
        }
    }
    return n;
}

tern_pool_stats tern_pool_get_stats(const tern_pool *p)
{
    tern_pool_stats st = {p->slabs, p->empty, p->blocks};
    return st;
}

void *tern_pool_alloc_cb(void *ctx, size_t size)
{
    return tern_pool_alloc(ctx, size);
}

void *tern_pool_realloc_cb(void *ctx, void *block, size_t size)
{
    return tern_pool_realloc(ctx, block, size);
}

void tern_pool_free_cb(void *ctx, void *block)
{
    tern_pool_free(ctx, block);
}
