/*
 * cpu.c - the two ways the kernel stops: halting for good, and resetting the
 * machine. Reset tries the methods in order of how cleanly they work on PCs
 * and VMs, ending with a triple fault, which no machine can ignore.
 */
#include "arch/x86_64/cpu.h"

_Noreturn void cpu_halt_forever(void)
{
    for (;;)
        __asm__ volatile("cli; hlt");
}

_Noreturn void cpu_reset(void)
{
    irq_disable();
    /* PCI reset control register: full reset (bit 2) with system reset (bit 1). */
    outb(0xCF9, 0x02);
    outb(0xCF9, 0x06);
    for (int i = 0; i < 1000; i++)
        cpu_relax();
    /* 8042 keyboard controller: pulse the reset line. */
    for (int i = 0; i < 100000 && (inb(0x64) & 0x02); i++)
        cpu_relax();
    outb(0x64, 0xFE);
    for (int i = 0; i < 1000; i++)
        cpu_relax();
    /* Triple fault: an empty IDT makes the next exception unrecoverable. */
    static const struct __attribute__((packed)) {
        uint16_t limit;
        uint64_t base;
    } empty = { 0, 0 };
    __asm__ volatile("lidt %0; int3" : : "m"(empty));
    cpu_halt_forever();
}
