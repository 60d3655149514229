/*
 * conin.c - polled console input (conin.h): COM1's line status register's
 * data-ready bit, and the i8042's status port (output buffer full, and
 * whether the byte is the mouse's). A controller that reads all ones is
 * absent and ignored.
 */
#include "dev/conin.h"

#include "arch/x86_64/cpu.h"
#include "dev/ps2kbd.h"

enum {
    COM1 = 0x3F8, REG_DATA = 0, REG_LSR = 5, LSR_DATA_READY = 0x01,
    I8042_DATA = 0x60, I8042_STATUS = 0x64, I8042_OUT_FULL = 0x01, I8042_AUX = 0x20,
    DRAIN_MAX = 256,
};

/* The keyboard's Shift/Caps state: boot-time console state, like the
 * serial port's own. */
static struct ps2kbd kbd;

static int serial_getc(void)
{
    uint8_t lsr = inb(COM1 + REG_LSR);
    if (lsr == 0xFF || !(lsr & LSR_DATA_READY))
        return -1;
    int c = inb(COM1 + REG_DATA);
    return c == '\r' ? '\n' : c;
}

static int kbd_getc(void)
{
    for (;;) {
        uint8_t st = inb(I8042_STATUS);
        if (st == 0xFF || !(st & I8042_OUT_FULL))
            return -1;
        uint8_t code = inb(I8042_DATA);
        if (st & I8042_AUX)
            continue; /* a mouse byte */
        int c = ps2kbd_feed(&kbd, code);
        if (c)
            return c;
    }
}

void conin_drain(void)
{
    for (int i = 0; i < DRAIN_MAX && (serial_getc() >= 0 || kbd_getc() >= 0); i++)
        ;
}

int conin_getc(void)
{
    int c = serial_getc();
    return c >= 0 ? c : kbd_getc();
}
