/*
 * serial.c - polled output on the 16550 UART at COM1 (0x3F8), 115200 8N1.
 * Polling, not interrupts: console output must work in the fatal path with
 * interrupts off, and the volume is small. '\n' is sent as "\r\n".
 */
#include "dev/serial.h"

#include "arch/x86_64/cpu.h"

enum {
    COM1 = 0x3F8,
    REG_DATA = 0, REG_IER = 1, REG_FCR = 2, REG_LCR = 3, REG_MCR = 4, REG_LSR = 5,
    LSR_THRE = 0x20,     /* transmit holding register empty */
    LCR_DLAB = 0x80,
};

void serial_init(void)
{
    outb(COM1 + REG_IER, 0x00);      /* no interrupts */
    outb(COM1 + REG_LCR, LCR_DLAB);
    outb(COM1 + REG_DATA, 1);        /* divisor 1 = 115200 baud */
    outb(COM1 + REG_IER, 0);
    outb(COM1 + REG_LCR, 0x03);      /* 8 bits, no parity, 1 stop bit */
    outb(COM1 + REG_FCR, 0xC7);      /* FIFOs on and cleared */
    outb(COM1 + REG_MCR, 0x03);      /* DTR, RTS */
}

static void put(char c)
{
    /* Bounded wait: an absent or stuck UART must not hang the kernel. */
    for (int i = 0; i < 100000 && !(inb(COM1 + REG_LSR) & LSR_THRE); i++)
        cpu_relax();
    outb(COM1 + REG_DATA, (uint8_t)c);
}

void serial_write(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\n')
            put('\r');
        put(s[i]);
    }
}
