/*
 * stdlib.h - the little of <stdlib.h> the kernel, lwIP and the portable
 * broker code use. The malloc family (libc/malloc.c) are names for the one
 * kernel heap in mm/kmalloc.h, for portable code that falls back to them;
 * kernel code calls kmalloc directly. abort() is a fatal error
 * (libc/abort.c).
 */
#ifndef TERN_KLIBC_STDLIB_H
#define TERN_KLIBC_STDLIB_H

#include <stddef.h>

int atoi(const char *s);

void *malloc(size_t size);
void *calloc(size_t n, size_t size);
void *realloc(void *p, size_t size);
void free(void *p);

_Noreturn void abort(void);

void qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

#endif
