/*
 * kmalloc.c - the kernel heap, hardened (SPEC B5): a size-class heap on top
 * of the frame allocator. Small objects (16..2048 bytes, powers of two) come
 * from one-page slabs: a 64-byte header, then equal objects. Large objects
 * get their own contiguous pages with the same header. Any object's header
 * is found by rounding its address down to the page. Everything is reached
 * through the direct map.
 *
 * Hardening, and why each step:
 * - Wipe on free: a freed object is overwritten at once (the whole block),
 *   so nothing it held - key material included - survives in free memory;
 *   kfree_sensitive() needs nothing more. Objects are handed out zeroed.
 * - Poison verified on reuse: a free object holds a fixed pattern, checked
 *   when the object is handed out again, so a write after free is caught
 *   at the next allocation that reuses the block.
 * - Double free: a live-object bitmap per slab says whether an object is
 *   live; freeing a free object (or an address that is no object) halts.
 * - Free lists: each slab threads its free objects into a list whose links
 *   are XOR-encoded with a boot-time secret and the link's own address, so
 *   an overflow or a use after free cannot plant a chosen pointer without
 *   knowing the secret. Every link is checked when followed: it must decode
 *   to a free object of the same slab, or the heap halts.
 * - Corruption halts: heap_corrupt() reports through panic() on every
 *   console, naming what was found and the object's size class, never an
 *   address (production reports carry none; debug builds add it).
 * An empty slab is zeroed and returned to the frame allocator unless it is
 * its class's last.
 *
 * One heap for every CPU, behind a ticket spinlock (arch/x86_64/
 * spinlock.h): every public call takes it for its whole run, so the heap's
 * lists, bitmaps, counters and secret are only ever touched by one CPU at
 * a time, with the lock's acquire/release ordering between holders. Lock
 * order: the heap's lock, then the frame allocator's (slab_new and the
 * large objects take pages while holding it); nothing takes the heap's
 * lock while holding the frame allocator's. A corruption report panics
 * with the lock held: the fatal path stops the other CPUs and never
 * allocates. Its cost on the flood path: docs/PERFORMANCE.md, "The heap
 * lock".
 *
 * Heaps of their own (kheap_new, issue 18): the same heap, hardening and
 * all, over a bounded region of pages taken once from the frame allocator,
 * with its own lock and secret. SQLite's allocations on the storage core
 * go there (store/ksqlite.c), so CPU 0 and CPU 1 no longer meet on the
 * kernel heap's lock at each of them. A region heap hands out pages of
 * its region only (first fit in a bitmap; large objects need a contiguous
 * run), so when the region is used up an allocation returns NULL, as an
 * exhausted frame allocator makes kmalloc do. Its objects are checked to
 * lie in the region before any header is read.
 */
#include "mm/kmalloc.h"

#include "arch/x86_64/memlayout.h"
#include "arch/x86_64/spinlock.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifndef KMALLOC_HOST_TEST
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/cpufeat.h"
#include "mm/pmm.h"
#include "panic.h"

/* Pages for slabs and large objects, from the frame allocator. */
static void *pages_get(size_t n)
{
    uint64_t pa = n == 1 ? pmm_alloc() : pmm_alloc_contig(n);
    return pa ? phys_to_virt(pa) : NULL;
}

static void pages_put(void *p, size_t n)
{
    if (n == 1)
        pmm_free(virt_to_phys(p));
    else
        pmm_free_contig(virt_to_phys(p), n);
}

/* The first secret, taken when the first slab is made (before the DRBG is
 * seeded, which itself allocates): RDRAND when the CPU has it, else the
 * TSC mixed by a multiply - weak, which is why kmalloc_rekey() replaces it
 * from the DRBG once that is seeded. */
static uint64_t boot_secret(void)
{
    struct cpu_features f;
    cpu_features_read(&f);
    uint64_t v = 0;
    if (!f.rdrand || !cpu_rdrand64(&v))
        v = (rdtsc() ^ 0x5deece66dull) * 0x9E3779B97F4A7C15ull;
    return v;
}

#define KMALLOC_HALT(msg) panic(msg)
#endif

enum {
    HDR = 64,
    MIN_SHIFT = 4,               /* 16 bytes */
    MAX_SHIFT = 11,              /* 2048 bytes */
    CLASSES = MAX_SHIFT - MIN_SHIFT + 1,
    MAGIC_SLAB = 0x51ab51ab,
    MAGIC_LARGE = 0x1a46e000,
    LINK = sizeof(uint64_t),     /* the encoded link at a free object's start */
};

/* Objects and pages are 16-byte aligned and multiples of 8 bytes, so the
 * heap reads and writes them a word at a time. Not memcpy/memset: the
 * kernel is freestanding (no builtins), where an 8-byte memcpy is a call,
 * and "rep stosb" runs a byte per step under QEMU's TCG. */
typedef uint64_t __attribute__((may_alias)) word;

static void fill_words(void *p, uint64_t v, size_t bytes)
{
    word *w = p;
    for (size_t k = 0; k < bytes / 8; k++)
        w[k] = v;
}

/* What fills a free object after its link. Not zero: a stray write of
 * zeroes after free is as likely as any other. */
#define POISON_BYTE 0xa5
#define POISON_WORD 0xa5a5a5a5a5a5a5a5ull

struct slab {
    uint32_t magic;
    uint32_t size;               /* object size, or requested size (large) */
    uint32_t count;              /* live objects (slab) or pages (large) */
    uint32_t free_enc;           /* first free object's offset, encoded; valid
                                  * only while count < per_slab */
    struct slab *prev, *next;    /* class list of slabs with free objects */
    uint64_t used[4];            /* live-object bitmap, up to 252 objects */
};
_Static_assert(sizeof(struct slab) <= HDR, "slab header exceeds its space");

/* A region heap's pages (kheap_new): one bit per page, set while the page
 * is a slab or part of a large object. */
struct region {
    char *base;
    size_t pages;
    size_t hint;                 /* no free page below this index */
    uint64_t *map;
};

struct heap {
    struct slab *partial[CLASSES];
    size_t slab_count[CLASSES];
    struct kmalloc_stats stats;
    uint64_t secret;             /* free-list key; 0 until the first slab */
    struct region *reg;          /* NULL: pages from the frame allocator */
    struct spinlock lock;        /* held by every public call (see the top) */
};

/* The kernel's heap, shared by the CPUs under heap.lock. */
static struct heap heap;

static int region_used(const struct region *r, size_t i)
{
    return (r->map[i / 64] >> (i % 64)) & 1;
}

static void region_mark(struct region *r, size_t first, size_t n, int used)
{
    for (size_t i = first; i < first + n; i++) {
        if (used)
            r->map[i / 64] |= 1ull << (i % 64);
        else
            r->map[i / 64] &= ~(1ull << (i % 64));
    }
}

/* First fit: n free pages in a row, or NULL. */
static void *region_get(struct region *r, size_t n)
{
    size_t run = 0;
    for (size_t i = r->hint; i < r->pages; i++) {
        if (region_used(r, i)) {
            run = 0;
            continue;
        }
        if (++run == n) {
            size_t first = i + 1 - n;
            region_mark(r, first, n, 1);
            if (first == r->hint)
                r->hint = first + n;
            return r->base + first * PAGE_SIZE;
        }
    }
    return NULL;
}

static void region_put(struct region *r, void *p, size_t n)
{
    size_t first = (size_t)((char *)p - r->base) / PAGE_SIZE;
    region_mark(r, first, n, 0);
    if (first < r->hint)
        r->hint = first;
}

static void *heap_pages_get(struct heap *h, size_t n)
{
    return h->reg ? region_get(h->reg, n) : pages_get(n);
}

static void heap_pages_put(struct heap *h, void *p, size_t n)
{
    if (h->reg)
        region_put(h->reg, p, n);
    else
        pages_put(p, n);
}

/* Halt with a report: what was found and the object's size class (0: no
 * size known, the pointer is not in a slab). The address is printed only
 * by debug builds (panic.h's convention). */
static _Noreturn void heap_corrupt(const char *what, size_t size, const void *where)
{
    char msg[192], sz[40] = "object of unknown size";
    if (size)
        snprintf(sz, sizeof sz, "%zu-byte object", size);
#ifdef TERN_DEBUG
    snprintf(msg, sizeof msg, "kmalloc: heap corruption: %s (%s at %p)", what, sz, where);
#else
    (void)where;
    snprintf(msg, sizeof msg, "kmalloc: heap corruption: %s (%s)", what, sz);
#endif
    KMALLOC_HALT(msg);
}

static unsigned class_of(size_t size)
{
    unsigned c = 0;
    while (((size_t)1 << (c + MIN_SHIFT)) < size)
        c++;
    return c;
}

static size_t per_slab(unsigned c) { return (PAGE_SIZE - HDR) >> (c + MIN_SHIFT); }

static struct slab *slab_of(const void *p)
{
    return (struct slab *)((uintptr_t)p & ~(uintptr_t)(PAGE_SIZE - 1));
}

/* A slab header that could be ours: the magic and a class's size. */
static int slab_ok(const struct slab *s)
{
    return s->magic == MAGIC_SLAB && s->size >= (1u << MIN_SHIFT) &&
           s->size <= (1u << MAX_SHIFT) && !(s->size & (s->size - 1));
}

static int is_live(const struct slab *s, size_t i) { return (s->used[i / 64] >> (i % 64)) & 1; }

/* Links: a free object's first word is the next free object's address XOR
 * the secret XOR the word's own address (equal links read differently);
 * the header's head is the first free object's offset XOR the secret's
 * low bits XOR the slab's page number. */
static uint64_t link_key(uint64_t secret, const void *at)
{
    return secret ^ (uint64_t)(uintptr_t)at;
}

static uint32_t head_key(uint64_t secret, const struct slab *s)
{
    return (uint32_t)secret ^ (uint32_t)((uintptr_t)s >> 12);
}

static void link_set(uint64_t secret, void *at, const void *next)
{
    *(word *)at = (uint64_t)(uintptr_t)next ^ link_key(secret, at);
}

static uint64_t link_get(uint64_t secret, const void *at)
{
    return *(const word *)at ^ link_key(secret, at);
}

static void head_set(uint64_t secret, struct slab *s, const void *obj)
{
    s->free_enc = (uint32_t)((uintptr_t)obj - (uintptr_t)s) ^ head_key(secret, s);
}

/* The decoded head, not yet checked (a corrupted one may point anywhere). */
static uint64_t head_get(uint64_t secret, const struct slab *s)
{
    return (uintptr_t)s + (s->free_enc ^ head_key(secret, s));
}

/* The free object a decoded link or head names, or halts: it must lie on
 * an object boundary of this slab and be free. */
static char *checked_free_obj(struct slab *s, uint64_t addr, unsigned c)
{
    uintptr_t base = (uintptr_t)s + HDR;
    size_t i = (size_t)(addr - base) / s->size;
    if (addr < base || (addr - base) % s->size || i >= per_slab(c) || is_live(s, i))
        heap_corrupt("free-list pointer corrupted", s->size, (const void *)(uintptr_t)addr);
    return (char *)(uintptr_t)addr;
}

/* Hand out a free object: it must still hold its poison after the link
 * (checked and zeroed in one pass, one branch at the end: this runs on
 * every allocation). */
static void take_poisoned(char *p, size_t size)
{
    word *w = (word *)p;
    uint64_t diff = 0;
    w[0] = 0;
    for (size_t k = 1; k < size / 8; k++) {
        diff |= w[k] ^ POISON_WORD;
        w[k] = 0;
    }
    if (diff)
        heap_corrupt("write after free", size, p);
}

static void list_remove(struct heap *h, unsigned c, struct slab *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        h->partial[c] = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
}

static void list_push(struct heap *h, unsigned c, struct slab *s)
{
    s->prev = NULL;
    s->next = h->partial[c];
    if (s->next)
        s->next->prev = s;
    h->partial[c] = s;
}

/* A new slab for class c: every object poisoned and linked in order. */
static struct slab *slab_new(struct heap *h, unsigned c)
{
    if (!h->secret)
        h->secret = boot_secret() | 1; /* never 0: 0 means "not yet" */
    struct slab *s = heap_pages_get(h, 1);
    if (!s)
        return NULL;
    memset(s, 0, HDR);
    fill_words((char *)s + HDR, POISON_WORD, PAGE_SIZE - HDR);
    s->magic = MAGIC_SLAB;
    s->size = 1u << (c + MIN_SHIFT);
    size_t n = per_slab(c);
    char *obj = (char *)s + HDR;
    for (size_t i = 0; i < n; i++)
        link_set(h->secret, obj + i * s->size, i + 1 < n ? obj + (i + 1) * s->size : NULL);
    head_set(h->secret, s, obj);
    list_push(h, c, s);
    h->slab_count[c]++;
    h->stats.pages++;
    return s;
}

static void *alloc_large(struct heap *h, size_t size)
{
    size_t pages = (size + HDR + PAGE_SIZE - 1) / PAGE_SIZE;
    struct slab *s = heap_pages_get(h, pages);
    if (!s)
        return NULL;
    /* Frames come from the frame allocator as their last user left them
     * (not every user is this heap, which zeroes what it gives back). */
    fill_words(s, 0, pages * PAGE_SIZE);
    s->magic = MAGIC_LARGE;
    s->size = (uint32_t)size;
    s->count = (uint32_t)pages;
    h->stats.pages += pages;
    return (char *)s + HDR;
}

/* kmalloc with h->lock held. */
static void *heap_alloc(struct heap *h, size_t size)
{
    if (size == 0)
        size = 1;
    if (size > ((size_t)1 << MAX_SHIFT)) {
        if (size > UINT32_MAX - PAGE_SIZE)
            return NULL;
        void *p = alloc_large(h, size);
        if (p) {
            h->stats.allocations++;
            h->stats.bytes_in_use += size;
        }
        return p;
    }
    unsigned c = class_of(size);
    struct slab *s = h->partial[c];
    if (!s && !(s = slab_new(h, c)))
        return NULL;
    size_t n = per_slab(c);
    if (!slab_ok(s) || s->size != 1u << (c + MIN_SHIFT) || s->count >= n)
        heap_corrupt("slab header corrupted", (size_t)1 << (c + MIN_SHIFT), s);
    char *obj = checked_free_obj(s, head_get(h->secret, s), c);
    uint64_t next = link_get(h->secret, obj);
    take_poisoned(obj, s->size);
    size_t i = (size_t)(obj - ((char *)s + HDR)) / s->size;
    s->used[i / 64] |= 1ull << (i % 64);
    if (++s->count == n) {
        if (next)
            heap_corrupt("free-list pointer corrupted", s->size, obj);
        list_remove(h, c, s);
    } else {
        head_set(h->secret, s, checked_free_obj(s, next, c));
    }
    h->stats.allocations++;
    h->stats.bytes_in_use += s->size;
    return obj;
}

/* A region heap's object must lie in its region (checked before its
 * header is read); the kernel heap's pointers are checked by their
 * headers only. */
static void check_in_heap(const struct heap *h, const void *p)
{
    const struct region *r = h->reg;
    if (r && ((const char *)p < r->base || (const char *)p >= r->base + r->pages * PAGE_SIZE))
        heap_corrupt("pointer is not from this heap", 0, p);
}

/* kmalloc_usable_size with h->lock held. */
static size_t usable_size(const struct heap *h, const void *p)
{
    if (!p)
        return 0;
    check_in_heap(h, p);
    const struct slab *s = slab_of(p);
    if (s->magic == MAGIC_LARGE)
        return (size_t)s->count * PAGE_SIZE - HDR;
    if (slab_ok(s))
        return s->size;
    heap_corrupt("pointer is not from the heap", 0, p);
}

static void heap_free(struct heap *h, void *p);

/* krealloc with h->lock held: the whole move is one critical section. */
static void *heap_realloc(struct heap *h, void *p, size_t size)
{
    if (!p)
        return heap_alloc(h, size);
    if (size == 0) {
        heap_free(h, p);
        return NULL;
    }
    size_t old = usable_size(h, p);
    if (size <= old && slab_of(p)->magic != MAGIC_LARGE)
        return p;
    void *n = heap_alloc(h, size);
    if (!n)
        return NULL;
    memcpy(n, p, old < size ? old : size);
    heap_free(h, p);
    return n;
}

static void free_large(struct heap *h, struct slab *s, void *p)
{
    if ((char *)p != (char *)s + HDR)
        heap_corrupt("invalid free (not an object's start)", s->size, p);
    size_t pages = s->count;
    h->stats.allocations--;
    h->stats.bytes_in_use -= s->size;
    h->stats.pages -= pages;
    /* Zeroed, magic included: a second free of it finds no heap object. */
    fill_words(s, 0, pages * PAGE_SIZE);
    heap_pages_put(h, s, pages);
}

/* kfree with h->lock held. */
static void heap_free(struct heap *h, void *p)
{
    if (!p)
        return;
    check_in_heap(h, p);
    struct slab *s = slab_of(p);
    if (s->magic == MAGIC_LARGE) {
        free_large(h, s, p);
        return;
    }
    if (!slab_ok(s))
        heap_corrupt("invalid free (a freed large object, or not a heap pointer)", 0, p);
    unsigned c = class_of(s->size);
    size_t n = per_slab(c);
    size_t off = (size_t)((char *)p - ((char *)s + HDR));
    size_t i = off / s->size;
    if ((char *)p < (char *)s + HDR || off % s->size || i >= n)
        heap_corrupt("invalid free (not an object's start)", s->size, p);
    if (!is_live(s, i))
        heap_corrupt("double free", s->size, p);
    /* The wipe: poison over everything, then the link to the old head. */
    fill_words(p, POISON_WORD, s->size);
    int was_full = s->count == n;
    link_set(h->secret, p, was_full ? NULL : (void *)(uintptr_t)head_get(h->secret, s));
    head_set(h->secret, s, p);
    s->used[i / 64] &= ~(1ull << (i % 64));
    h->stats.allocations--;
    h->stats.bytes_in_use -= s->size;
    s->count--;
    if (was_full)
        list_push(h, c, s);
    if (s->count == 0 && h->slab_count[c] > 1) {
        list_remove(h, c, s);
        h->slab_count[c]--;
        h->stats.pages--;
        fill_words(s, 0, PAGE_SIZE); /* pages leave the heap zeroed */
        heap_pages_put(h, s, 1);
    }
}

/* ---- the kernel heap ---------------------------------------------------- */

void *kmalloc(size_t size)
{
    spin_lock(&heap.lock);
    void *p = heap_alloc(&heap, size);
    spin_unlock(&heap.lock);
    return p;
}

void *kzalloc(size_t size)
{
    /* Every object is handed out zeroed (take_poisoned, alloc_large). */
    return kmalloc(size);
}

void *kcalloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    return kzalloc(n * size);
}

size_t kmalloc_usable_size(const void *p)
{
    spin_lock(&heap.lock);
    size_t n = usable_size(&heap, p);
    spin_unlock(&heap.lock);
    return n;
}

void *krealloc(void *p, size_t size)
{
    spin_lock(&heap.lock);
    void *n = heap_realloc(&heap, p, size);
    spin_unlock(&heap.lock);
    return n;
}

void kfree(void *p)
{
    if (!p)
        return; /* free(NULL) is common: no lock for it */
    spin_lock(&heap.lock);
    heap_free(&heap, p);
    spin_unlock(&heap.lock);
}

void kfree_sensitive(void *p)
{
    /* Every free wipes the whole block (see the top of this file). */
    kfree(p);
}

/* Re-encode every free list under a new secret, checking each link as it
 * is followed. Full slabs have no list; every slab with a free object is
 * on its class's partial list. */
void kmalloc_rekey(uint64_t secret)
{
    spin_lock(&heap.lock);
    secret |= 1;
    uint64_t old = heap.secret;
    for (unsigned c = 0; c < CLASSES; c++) {
        for (struct slab *s = heap.partial[c]; s; s = s->next) {
            size_t nfree = per_slab(c) - s->count;
            char *obj = checked_free_obj(s, head_get(old, s), c);
            head_set(secret, s, obj);
            for (size_t k = 0; k < nfree; k++) {
                uint64_t next = link_get(old, obj);
                char *nobj = NULL;
                if (k + 1 < nfree)
                    nobj = checked_free_obj(s, next, c);
                else if (next)
                    heap_corrupt("free-list pointer corrupted", s->size, obj);
                link_set(secret, obj, nobj);
                obj = nobj;
            }
        }
    }
    heap.secret = secret;
    spin_unlock(&heap.lock);
}

void kmalloc_lock_stats(struct spin_stats *out)
{
    spin_stats_read(&heap.lock, out);
}

void kmalloc_get_stats(struct kmalloc_stats *out)
{
    spin_lock(&heap.lock);
    *out = heap.stats;
    spin_unlock(&heap.lock);
}

/* ---- heaps of their own (kheap_new) -------------------------------------- */

struct kheap {
    struct heap h;
    struct region r;
    uint64_t map[];              /* the region's bitmap */
};

struct kheap *kheap_new(size_t pages, uint64_t secret)
{
    if (pages == 0 || pages > SIZE_MAX / PAGE_SIZE)
        return NULL;
    size_t words = (pages + 63) / 64;
    struct kheap *k = kmalloc(sizeof *k + words * sizeof(uint64_t));
    if (!k)
        return NULL;
    char *base = pages_get(pages); /* once: the region is all it ever has */
    if (!base) {
        kfree(k);
        return NULL;
    }
    fill_words(base, 0, pages * PAGE_SIZE);
    k->r = (struct region){.base = base, .pages = pages, .hint = 0, .map = k->map};
    k->h.reg = &k->r;
    k->h.secret = secret | 1;
    return k;
}

void *kheap_alloc(struct kheap *k, size_t size)
{
    spin_lock(&k->h.lock);
    void *p = heap_alloc(&k->h, size);
    spin_unlock(&k->h.lock);
    return p;
}

void *kheap_realloc(struct kheap *k, void *p, size_t size)
{
    spin_lock(&k->h.lock);
    void *n = heap_realloc(&k->h, p, size);
    spin_unlock(&k->h.lock);
    return n;
}

void kheap_free(struct kheap *k, void *p)
{
    if (!p)
        return;
    spin_lock(&k->h.lock);
    heap_free(&k->h, p);
    spin_unlock(&k->h.lock);
}

size_t kheap_usable_size(struct kheap *k, const void *p)
{
    spin_lock(&k->h.lock);
    size_t n = usable_size(&k->h, p);
    spin_unlock(&k->h.lock);
    return n;
}

void kheap_get_stats(struct kheap *k, struct kmalloc_stats *out)
{
    spin_lock(&k->h.lock);
    *out = k->h.stats;
    spin_unlock(&k->h.lock);
}

int kheap_try_stats(struct kheap *k, struct kmalloc_stats *out)
{
    if (!spin_trylock(&k->h.lock))
        return 0;
    *out = k->h.stats;
    spin_unlock(&k->h.lock);
    return 1;
}

void kheap_lock_stats(struct kheap *k, struct spin_stats *out)
{
    spin_stats_read(&k->h.lock, out);
}
