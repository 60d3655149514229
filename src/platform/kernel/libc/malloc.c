/*
 * malloc.c - malloc, calloc, realloc and free over the kernel heap
 * (mm/kmalloc.h), for portable code that falls back to the C library's
 * allocator when it is not given one (the broker core, later wolfSSL).
 * There is still one heap: these are names for kmalloc, not a second
 * allocator. Kernel code itself calls kmalloc directly.
 */
#include <stdlib.h>

#include "mm/kmalloc.h"

void *malloc(size_t size)
{
    return kmalloc(size);
}

void *calloc(size_t n, size_t size)
{
    return kcalloc(n, size);
}

void *realloc(void *p, size_t size)
{
    return krealloc(p, size);
}

void free(void *p)
{
    kfree(p);
}
