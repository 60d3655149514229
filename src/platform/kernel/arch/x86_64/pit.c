/*
 * pit.c - the 8254 programmable interval timer, channel 2, polled. Channel 2
 * is the one whose gate and output the kernel can drive and read through
 * port 0x61 without interrupts, which makes it a clean stopwatch.
 */
#include "arch/x86_64/timer.h"

#include "arch/x86_64/cpu.h"

enum { PIT_HZ = 1193182, PIT_CH2 = 0x42, PIT_CMD = 0x43, PORT_B = 0x61 };

void pit_wait_us(uint32_t us)
{
    if (us > 50000)
        us = 50000;
    uint32_t count = (uint32_t)((uint64_t)us * PIT_HZ / 1000000);
    if (count == 0)
        count = 1;
    /* Gate low (stop), speaker off. */
    uint8_t b = inb(PORT_B);
    outb(PORT_B, (uint8_t)((b & ~0x03) | 0x00));
    /* Channel 2, lobyte/hibyte, mode 0 (output goes high at terminal count). */
    outb(PIT_CMD, 0xB0);
    outb(PIT_CH2, (uint8_t)count);
    outb(PIT_CH2, (uint8_t)(count >> 8));
    /* Gate high starts the count. */
    outb(PORT_B, (uint8_t)((b & ~0x02) | 0x01));
    /* Bounded: a missing PIT must not hang the fatal path forever. */
    for (uint32_t i = 0; i < 100000000u && !(inb(PORT_B) & 0x20); i++)
        cpu_relax();
    outb(PORT_B, b);
}
