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

#endif
