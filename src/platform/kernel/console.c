/*
 * console.c - fans kernel output out to the consoles: the serial port
 * always, and the loader's framebuffer when it handed over one tern can
 * draw on (dev/fb.c says which; anything else is named in the log and
 * left alone). Lines are formatted into a stack buffer first, so a
 * message is never interleaved with itself; a ticket spinlock (taken with
 * interrupts off, so a handler on the same CPU cannot deadlock on it)
 * keeps two CPUs' lines from interleaving and their writes from racing
 * on the UART and the framebuffer's cursor. The fatal report writes
 * without it: by then every other CPU is halted, perhaps inside it.
 */
#include "console.h"

#include "dev/fb.h"
#include "dev/fbcon.h"
#include "dev/serial.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/smp.h"
#include "arch/x86_64/spinlock.h"
#include "mm/paging.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The console's state, shared by every CPU under lock; the framebuffer
 * joins once console_init_fb ran. */
static struct spinlock lock = SPINLOCK_INIT;
static struct fbcon fbcon;
static int fb_on;
static const struct fb_info *fb_desc;

void console_init(void)
{
    serial_init();
}

/* The framebuffer must not lie in RAM the frame allocator hands out. */
static int overlaps_ram(const struct boot_info *bi, uint64_t base, uint64_t len)
{
    for (unsigned i = 0; i < bi->nregions; i++) {
        const struct mem_region *r = &bi->regions[i];
        if (r->type == MEM_USABLE && r->base < base + len && base < r->base + r->len)
            return 1;
    }
    return 0;
}

void console_init_fb(const struct boot_info *bi)
{
    const struct fb_info *f = &bi->fb;
    const char *why;
    if (fb_check(f, &why) < 0) {
        kprintf("tern: console: serial only (framebuffer: %s)\n", why);
        return;
    }
    uint64_t bytes = (uint64_t)f->pitch * f->height;
    if (overlaps_ram(bi, f->addr, bytes)) {
        kprintf("tern: console: serial only (framebuffer: overlaps usable RAM)\n");
        return;
    }
    uint32_t *pixels = vm_map_mmio_wc(f->addr, (size_t)bytes);
    fbcon_init(&fbcon, pixels, f->pitch / 4, f->width, f->height,
               fb_colour(f, 0xC0, 0xC0, 0xC0), fb_colour(f, 0, 0, 0));
    fb_on = 1;
    fb_desc = f;
    /* The banner went to serial before the framebuffer was up. */
    fbcon_write(&fbcon, "tern: booting\n", 14);
    kprintf("tern: console: serial and framebuffer %ux%u (%u x %u characters)\n", f->width,
            f->height, fbcon.cols, fbcon.rows);
}

/* Take the console; returns what console_unlock needs. During a fatal
 * stop the reporter must not wait for a CPU that the stop NMI halted
 * while it held the lock, so nobody takes it then (the others are
 * halted or about to be). */
struct hold {
    uint64_t flags;
    int locked;
};

static struct hold console_lock(void)
{
    struct hold h = {irq_save(), !smp_stopping()};
    if (h.locked)
        spin_lock(&lock);
    return h;
}

static void console_unlock(struct hold h)
{
    if (h.locked)
        spin_unlock(&lock);
    irq_restore(h.flags);
}

void console_lock_stats(struct spin_stats *out)
{
    struct hold h = console_lock();
    *out = lock.st;
    console_unlock(h);
}

void console_write(const char *s, size_t n)
{
    struct hold h = console_lock();
    serial_write(s, n);
    if (fb_on)
        fbcon_write(&fbcon, s, n);
    console_unlock(h);
}

uint32_t *console_fb_claim(const struct fb_info **info, size_t *stride)
{
    struct hold h = console_lock();
    uint32_t *pixels = NULL;
    if (fb_on) {
        fb_on = 0;
        *info = fb_desc;
        *stride = fbcon.stride;
        pixels = fbcon.pixels;
    }
    console_unlock(h);
    return pixels;
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
