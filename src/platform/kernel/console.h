/*
 * console.h - kernel text output to every console (serial now; the
 * framebuffer joins later). kprintf formats with libc/printf.c.
 */
#ifndef TERN_CONSOLE_H
#define TERN_CONSOLE_H

#include <stddef.h>

void console_init(void);
void console_write(const char *s, size_t n);
void kprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
