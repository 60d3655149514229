/*
 * trap.h - the saved machine state of an interrupt or exception, as built by
 * trapentry.S, and the interface for installing interrupt handlers.
 */
#ifndef TERN_ARCH_TRAP_H
#define TERN_ARCH_TRAP_H

#include <stdint.h>

struct trap_frame {
    uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
    uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
    uint64_t vector, error;
    /* Pushed by the CPU. */
    uint64_t rip, cs, rflags, rsp, ss;
};

enum {
    VEC_NMI = 2,
    VEC_PAGE_FAULT = 14,
    VEC_IRQ_BASE = 32,         /* first vector for device and timer interrupts */
    VEC_APIC_TIMER = 48,
    VEC_DEVICE_FIRST = 64,     /* handed out by trap_alloc_vector */
    VEC_DEVICE_LAST = 239,
    VEC_SPURIOUS = 255,
};

typedef void (*irq_handler)(struct trap_frame *tf);

/* Load the GDT, TSS and IDT on this CPU; every vector on the current stack. */
void trap_init_early(void);
/* An application processor's own GDT and TSS (its IST stacks for the
 * double fault, page fault, NMI and machine check: ist_top[0..3]) and the
 * shared IDT, loaded on that CPU. */
void trap_init_cpu(unsigned id, const uint64_t ist_top[4]);
/* Give vector its own interrupt stack (IST slot 1..7) whose top is stack_top. */
void trap_set_ist(unsigned vector, unsigned ist, uint64_t stack_top);
/* Route vector (>= VEC_IRQ_BASE) to handler. */
void trap_set_handler(unsigned vector, irq_handler handler);
/* A free vector for a device interrupt, routed to handler; 0 if none is
 * left. Handlers run with interrupts off and must call lapic_eoi(). */
unsigned trap_alloc_vector(irq_handler handler);
void trap_dispatch(struct trap_frame *tf);

#endif
