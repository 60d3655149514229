/*
 * stdlib.h - the little of <stdlib.h> the kernel and lwIP use. Memory
 * comes from mm/kmalloc.h, not malloc: there is one heap and its interface
 * says what the hardened allocator will keep.
 */
#ifndef TERN_KLIBC_STDLIB_H
#define TERN_KLIBC_STDLIB_H

#include <stddef.h>

int atoi(const char *s);

#endif
