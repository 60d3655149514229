/*
 * cpu.h - thin inline wrappers around x86_64 instructions the kernel needs:
 * port I/O, MSRs, control registers, CPUID, the TSC, interrupt flag and halt.
 * Nothing here keeps state; every function is one or two instructions.
 */
#ifndef TERN_ARCH_CPU_H
#define TERN_ARCH_CPU_H

#include <stdint.h>

static inline void outb(uint16_t port, uint8_t v)
{
    __asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
    uint8_t v;
    __asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}

static inline void outw(uint16_t port, uint16_t v)
{
    __asm__ volatile("outw %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint16_t inw(uint16_t port)
{
    uint16_t v;
    __asm__ volatile("inw %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}

static inline void outl(uint16_t port, uint32_t v)
{
    __asm__ volatile("outl %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint32_t inl(uint16_t port)
{
    uint32_t v;
    __asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}

static inline uint64_t rdmsr(uint32_t msr)
{
    uint32_t lo, hi;
    __asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
    return ((uint64_t)hi << 32) | lo;
}

static inline void wrmsr(uint32_t msr, uint64_t v)
{
    __asm__ volatile("wrmsr" : : "c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)));
}

static inline void cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
    __asm__ volatile("cpuid"
                     : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3])
                     : "a"(leaf), "c"(sub));
}

static inline uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    /* lfence keeps the read from being hoisted above earlier loads, so
     * time measurements bracket the work they are meant to measure. */
    __asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi) : : "memory");
    return ((uint64_t)hi << 32) | lo;
}

static inline uint64_t read_cr2(void)
{
    uint64_t v;
    __asm__ volatile("mov %%cr2, %0" : "=r"(v));
    return v;
}

static inline uint64_t read_cr3(void)
{
    uint64_t v;
    __asm__ volatile("mov %%cr3, %0" : "=r"(v));
    return v;
}

static inline void write_cr3(uint64_t v)
{
    __asm__ volatile("mov %0, %%cr3" : : "r"(v) : "memory");
}

static inline void invlpg(uint64_t va)
{
    __asm__ volatile("invlpg (%0)" : : "r"(va) : "memory");
}

static inline void cpu_relax(void) { __asm__ volatile("pause"); }
static inline void irq_enable(void) { __asm__ volatile("sti" : : : "memory"); }
static inline void irq_disable(void) { __asm__ volatile("cli" : : : "memory"); }
/* Interrupts off, returning the flags to give back to irq_restore: for
 * sections that must not be entered again by an interrupt on this CPU. */
static inline uint64_t irq_save(void)
{
    uint64_t f;
    __asm__ volatile("pushfq; popq %0; cli" : "=r"(f) : : "memory");
    return f;
}
static inline void irq_restore(uint64_t flags)
{
    if (flags & (1u << 9)) /* IF */
        __asm__ volatile("sti" : : : "memory");
}

/* sti;hlt is atomic with respect to interrupts (sti's one-instruction
 * shadow), so a wake-up interrupt cannot slip in between and be missed. */
static inline void cpu_idle(void) { __asm__ volatile("sti; hlt" : : : "memory"); }

enum {
    MSR_EFER = 0xC0000080,
    MSR_APIC_BASE = 0x1B,
};

/* Halt forever with interrupts off (NMIs aside). */
_Noreturn void cpu_halt_forever(void);
/* Reset the machine: 0xCF9, then the keyboard controller, then a triple fault. */
_Noreturn void cpu_reset(void);

#endif
