/*
 * console.h - kernel text output to every console: serial, and the boot
 * loader's framebuffer when there is a usable one. kprintf formats with
 * libc/printf.c.
 */
#ifndef TERN_CONSOLE_H
#define TERN_CONSOLE_H

#include "bootinfo.h"

#include <stddef.h>
#include <stdint.h>

void console_init(void);
/* Add the loader's framebuffer (after paging_init), or say why not. */
void console_init_fb(const struct boot_info *bi);
void console_write(const char *s, size_t n);
/* Hand the framebuffer over to a full-screen picture (the diagnostics
 * dashboard, diag/dash.c): from then on console output goes to serial
 * only. Its pixels (lines *stride pixels apart) and its description, or
 * NULL when the console has no framebuffer. */
uint32_t *console_fb_claim(const struct fb_info **info, size_t *stride);
void kprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The console lock's counters (arch/x86_64/spinlock.h; issue 18). */
struct spin_stats;
void console_lock_stats(struct spin_stats *out);

#endif
