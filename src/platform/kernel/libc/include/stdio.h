/*
 * stdio.h - formatted output into buffers only (libc/printf.c); the kernel
 * has no FILE streams. Supports %d %i %u %x %X %o %c %s %p %% with the
 * flags '-', '0', width, precision and the length modifiers hh h l ll z.
 */
#ifndef TERN_KLIBC_STDIO_H
#define TERN_KLIBC_STDIO_H

#include <stdarg.h>
#include <stddef.h>

int vsnprintf(char *restrict buf, size_t size, const char *restrict fmt, va_list ap);
int snprintf(char *restrict buf, size_t size, const char *restrict fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
