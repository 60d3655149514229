/*
 * kmalloc.h - the kernel heap. This interface is the one the hardened
 * allocator (SPEC B5) will keep: callers never depend on the layout, on
 * freed memory contents, or on anything beyond usable size >= requested.
 * kfree_sensitive() is for key material: the hardened allocator may treat
 * it specially; here it zeroes like kfree. Not for use in interrupt
 * handlers. kmalloc(0) returns a unique minimum-size object.
 */
#ifndef TERN_MM_KMALLOC_H
#define TERN_MM_KMALLOC_H

#include <stddef.h>

void *kmalloc(size_t size);
void *kzalloc(size_t size);
void *kcalloc(size_t n, size_t size);
void *krealloc(void *p, size_t size);
void kfree(void *p);
void kfree_sensitive(void *p);
size_t kmalloc_usable_size(const void *p);

struct kmalloc_stats {
    size_t bytes_in_use;      /* live bytes, rounded up to size classes */
    size_t pages;             /* pages held by the heap */
    size_t allocations;       /* live allocations */
};
void kmalloc_get_stats(struct kmalloc_stats *out);

#endif
