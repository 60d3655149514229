/*
 * kmalloc.h - the kernel heap, hardened (SPEC B5; mm/kmalloc.c says how):
 * callers never depend on the layout, on freed memory contents, or on
 * anything beyond usable size >= requested. Every free wipes the whole
 * block, so kfree_sensitive() (for key material) is kfree under a name that
 * says why. A write after free, a double free, an invalid free or a
 * corrupted free list halts the machine with a report (panic.h). Not for
 * use in interrupt handlers. kmalloc(0) returns a unique minimum-size
 * object.
 */
#ifndef TERN_MM_KMALLOC_H
#define TERN_MM_KMALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "arch/x86_64/spinlock.h"

void *kmalloc(size_t size);
void *kzalloc(size_t size);
void *kcalloc(size_t n, size_t size);
void *krealloc(void *p, size_t size);
void kfree(void *p);
void kfree_sensitive(void *p);
size_t kmalloc_usable_size(const void *p);

/* Replace the free-list secret (taken from RDRAND or the TSC when the first
 * slab is made) with one from the DRBG, re-encoding every free list. */
void kmalloc_rekey(uint64_t secret);

struct kmalloc_stats {
    size_t bytes_in_use;      /* live bytes, rounded up to size classes */
    size_t pages;             /* pages held by the heap */
    size_t allocations;       /* live allocations */
};
void kmalloc_get_stats(struct kmalloc_stats *out);
/* The heap lock's counters (spinlock.h): how often CPUs met on it. */
void kmalloc_lock_stats(struct spin_stats *out);

/*
 * A heap of its own (issue 18): the same hardened heap over a region of
 * `pages` frames taken now, once, and never more, with its own lock and
 * free-list secret (secret: from the DRBG; forced odd). For one user that
 * would otherwise share the kernel heap's lock with the other CPU (SQLite
 * on the storage core). When the region is used up (or too fragmented for
 * a large object's run of pages) kheap_alloc and kheap_realloc return
 * NULL, the old block kept; corruption halts as in the kernel heap, and so
 * does a pointer from outside the region. NULL when the frames or the
 * heap's own header could not be had.
 */
struct kheap;
struct kheap *kheap_new(size_t pages, uint64_t secret);
void *kheap_alloc(struct kheap *k, size_t size);
void *kheap_realloc(struct kheap *k, void *p, size_t size);
void kheap_free(struct kheap *k, void *p);
size_t kheap_usable_size(struct kheap *k, const void *p);
void kheap_get_stats(struct kheap *k, struct kmalloc_stats *out);
/* kheap_get_stats unless another CPU holds the heap's lock (0, out
 * untouched): for a CPU that must not wait on the heap's owner. */
int kheap_try_stats(struct kheap *k, struct kmalloc_stats *out);
void kheap_lock_stats(struct kheap *k, struct spin_stats *out);

#endif
