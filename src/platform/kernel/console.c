/*
 * console.c - fans kernel output out to the consoles. Lines are formatted
 * into a stack buffer first, so a message is never interleaved with itself.
 */
#include "console.h"

#include "dev/serial.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void console_init(void)
{
    serial_init();
}

void console_write(const char *s, size_t n)
{
    serial_write(s, n);
}

void kprintf(const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    console_write(buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}
