/*
 * kmalloc.c - a simple size-class heap on top of the frame allocator.
 * Small objects (16..2048 bytes, powers of two) come from one-page slabs:
 * a 64-byte header, then equal objects; a bitmap in the header records which
 * are live, so a double or bogus free is caught. Large objects get their own
 * contiguous pages with the same header. Any object's header is found by
 * rounding its address down to the page. Freed memory is zeroed; an empty
 * slab is returned to the frame allocator unless it is its class's last.
 * Everything is reached through the direct map.
 */
#include "mm/kmalloc.h"

#include "arch/x86_64/memlayout.h"
#include "mm/pmm.h"
#include "panic.h"

#include <stdint.h>
#include <string.h>

enum {
    HDR = 64,
    MIN_SHIFT = 4,               /* 16 bytes */
    MAX_SHIFT = 11,              /* 2048 bytes */
    CLASSES = MAX_SHIFT - MIN_SHIFT + 1,
    MAGIC_SLAB = 0x51ab51ab,
    MAGIC_LARGE = 0x1a46e000,
};

struct slab {
    uint32_t magic;
    uint32_t size;               /* object size, or requested size (large) */
    uint32_t live;
    uint32_t pages;              /* large only */
    struct slab *prev, *next;    /* class list of slabs with free objects */
    uint64_t used[4];            /* live-object bitmap, up to 252 objects */
};
_Static_assert(sizeof(struct slab) <= HDR, "slab header exceeds its space");

struct heap {
    struct slab *partial[CLASSES];
    size_t slab_count[CLASSES];
    struct kmalloc_stats stats;
};

/* The heap of the boot CPU (per-CPU heaps or the hardened allocator later). */
static struct heap heap;

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

static void list_remove(unsigned c, struct slab *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        heap.partial[c] = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
}

static void list_push(unsigned c, struct slab *s)
{
    s->prev = NULL;
    s->next = heap.partial[c];
    if (s->next)
        s->next->prev = s;
    heap.partial[c] = s;
}

static void *alloc_large(size_t size)
{
    size_t pages = (size + HDR + PAGE_SIZE - 1) / PAGE_SIZE;
    uint64_t pa = pmm_alloc_contig(pages);
    if (!pa)
        return NULL;
    struct slab *s = phys_to_virt(pa);
    memset(s, 0, HDR);
    s->magic = MAGIC_LARGE;
    s->size = (uint32_t)size;
    s->pages = (uint32_t)pages;
    heap.stats.pages += pages;
    return (char *)s + HDR;
}

void *kmalloc(size_t size)
{
    if (size == 0)
        size = 1;
    if (size > ((size_t)1 << MAX_SHIFT)) {
        if (size > UINT32_MAX - PAGE_SIZE)
            return NULL;
        void *p = alloc_large(size);
        if (p) {
            heap.stats.allocations++;
            heap.stats.bytes_in_use += size;
        }
        return p;
    }
    unsigned c = class_of(size);
    struct slab *s = heap.partial[c];
    if (!s) {
        uint64_t pa = pmm_alloc();
        if (!pa)
            return NULL;
        s = phys_to_virt(pa);
        memset(s, 0, PAGE_SIZE);
        s->magic = MAGIC_SLAB;
        s->size = 1u << (c + MIN_SHIFT);
        list_push(c, s);
        heap.slab_count[c]++;
        heap.stats.pages++;
    }
    size_t n = per_slab(c);
    for (size_t w = 0; w < 4; w++) {
        if (s->used[w] == ~0ull)
            continue;
        size_t i = w * 64 + (size_t)__builtin_ctzll(~s->used[w]);
        if (i >= n)
            break;
        s->used[w] |= 1ull << (i % 64);
        if (++s->live == n)
            list_remove(c, s);
        heap.stats.allocations++;
        heap.stats.bytes_in_use += s->size;
        return (char *)s + HDR + i * s->size;
    }
    panic("kmalloc: slab list is corrupt");
}

void *kzalloc(size_t size)
{
    /* Fresh and freed memory is already zero; clear anyway so the hardened
     * allocator may change that without breaking callers. */
    void *p = kmalloc(size);
    if (p)
        memset(p, 0, size);
    return p;
}

void *kcalloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    return kzalloc(n * size);
}

size_t kmalloc_usable_size(const void *p)
{
    if (!p)
        return 0;
    const struct slab *s = slab_of(p);
    if (s->magic == MAGIC_LARGE)
        return (size_t)s->pages * PAGE_SIZE - HDR;
    if (s->magic == MAGIC_SLAB)
        return s->size;
    panic("kmalloc: pointer is not from the heap");
}

void *krealloc(void *p, size_t size)
{
    if (!p)
        return kmalloc(size);
    if (size == 0) {
        kfree(p);
        return NULL;
    }
    size_t old = kmalloc_usable_size(p);
    if (size <= old && slab_of(p)->magic == MAGIC_SLAB)
        return p;
    void *n = kmalloc(size);
    if (!n)
        return NULL;
    memcpy(n, p, old < size ? old : size);
    kfree(p);
    return n;
}

void kfree(void *p)
{
    if (!p)
        return;
    struct slab *s = slab_of(p);
    if (s->magic == MAGIC_LARGE) {
        if ((char *)p != (char *)s + HDR)
            panic("kmalloc: invalid free");
        size_t pages = s->pages;
        heap.stats.allocations--;
        heap.stats.bytes_in_use -= s->size;
        heap.stats.pages -= pages;
        memset(s, 0, pages * PAGE_SIZE);
        pmm_free_contig(virt_to_phys(s), pages);
        return;
    }
    if (s->magic != MAGIC_SLAB)
        panic("kmalloc: invalid free");
    size_t off = (size_t)((char *)p - ((char *)s + HDR));
    size_t i = off / s->size;
    unsigned c = class_of(s->size);
    if ((char *)p < (char *)s + HDR || off % s->size || i >= per_slab(c) ||
        !((s->used[i / 64] >> (i % 64)) & 1))
        panic("kmalloc: invalid or double free");
    memset(p, 0, s->size);
    s->used[i / 64] &= ~(1ull << (i % 64));
    heap.stats.allocations--;
    heap.stats.bytes_in_use -= s->size;
    if (s->live-- == per_slab(c))
        list_push(c, s);
    if (s->live == 0 && heap.slab_count[c] > 1) {
        list_remove(c, s);
        heap.slab_count[c]--;
        heap.stats.pages--;
        s->magic = 0;
        pmm_free(virt_to_phys(s));
    }
}

void kfree_sensitive(void *p)
{
    kfree(p);
}

void kmalloc_get_stats(struct kmalloc_stats *out)
{
    *out = heap.stats;
}
