/*
 * serial.h - the 16550 UART on COM1: the kernel's first and always-present
 * console (QEMU -serial, cloud VPS serial consoles).
 */
#ifndef TERN_DEV_SERIAL_H
#define TERN_DEV_SERIAL_H

#include <stddef.h>

void serial_init(void);
void serial_write(const char *s, size_t n);

#endif
