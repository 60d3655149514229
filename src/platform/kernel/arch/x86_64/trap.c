/*
 * trap.c - descriptor tables and the C side of interrupts. The GDT holds the
 * 64-bit code/data segments and the TSS; the TSS names the interrupt stacks
 * (IST) used for faults that can happen when the current stack is unusable
 * (double fault, page fault - a stack overflow into a guard page is one -
 * NMI, machine check); one GDT and TSS per CPU, one IDT for all. Exceptions are always fatal in tern (there is no user
 * mode and no demand paging), so they go to fatal_trap(); vectors >= 32 go to
 * the registered handler.
 */
#include "arch/x86_64/trap.h"

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/percpu.h"
#include "panic.h"

#include <stddef.h>
#include <string.h>

struct __attribute__((packed)) tss {
    uint32_t reserved0;
    uint64_t rsp[3];
    uint64_t reserved1;
    uint64_t ist[7];
    uint64_t reserved2;
    uint16_t reserved3;
    uint16_t iomap_base;
};

struct __attribute__((packed)) idt_gate {
    uint16_t offset_low;
    uint16_t selector;
    uint8_t ist;
    uint8_t type;
    uint16_t offset_mid;
    uint32_t offset_high;
    uint32_t reserved;
};

struct __attribute__((packed)) table_ptr {
    uint16_t limit;
    uint64_t base;
};

enum { SEL_CODE = 0x08, SEL_DATA = 0x10, SEL_TSS = 0x18 };

/* Per-CPU descriptor tables (GDT and TSS; entry 0 is the boot CPU's),
 * each written by CPU 0 or its own CPU before it loads them; the IDT and
 * the handlers are shared, written by CPU 0 only. */
struct cpu_desc {
    struct tss tss;
    uint64_t gdt[5];
};
static struct cpu_desc desc[SMP_MAX_CPUS];
#define boot_tss (desc[0].tss)
static struct idt_gate idt[256];
static irq_handler handlers[256];

extern const uint64_t trap_stubs[256];

static void set_gate(unsigned v, unsigned ist)
{
    uint64_t a = trap_stubs[v];
    idt[v] = (struct idt_gate){
        .offset_low = (uint16_t)a,
        .selector = SEL_CODE,
        .ist = (uint8_t)ist,
        .type = 0x8E, /* present, ring 0, 64-bit interrupt gate (IF cleared) */
        .offset_mid = (uint16_t)(a >> 16),
        .offset_high = (uint32_t)(a >> 32),
    };
}

/* Build CPU id's GDT and TSS and load them, with the shared IDT. */
static void load_tables(unsigned id)
{
    struct cpu_desc *d = &desc[id];
    uint64_t t = (uint64_t)&d->tss;
    d->tss.iomap_base = sizeof d->tss; /* no I/O permission bitmap */
    d->gdt[0] = 0;
    d->gdt[1] = 0x00209A0000000000ull; /* 64-bit code, ring 0 */
    d->gdt[2] = 0x0000920000000000ull; /* data */
    /* 16-byte TSS descriptor: limit, base, type 9 (available 64-bit TSS). */
    d->gdt[3] = (sizeof d->tss - 1) | ((t & 0xFFFFFF) << 16) | (0x89ull << 40) |
                ((t >> 24) & 0xFF) << 56;
    d->gdt[4] = t >> 32;

    struct table_ptr g = { sizeof d->gdt - 1, (uint64_t)d->gdt };
    __asm__ volatile("lgdt %0\n\t"
                     "pushq %1\n\t"
                     "leaq 1f(%%rip), %%rax\n\t"
                     "pushq %%rax\n\t"
                     "lretq\n"
                     "1:\n\t"
                     "movw %w2, %%ax\n\t"
                     "movw %%ax, %%ds\n\t"
                     "movw %%ax, %%es\n\t"
                     "movw %%ax, %%ss\n\t"
                     "movw %%ax, %%fs\n\t"
                     "movw %%ax, %%gs\n\t"
                     "ltr %w3"
                     :
                     : "m"(g), "i"(SEL_CODE), "r"(SEL_DATA), "r"(SEL_TSS)
                     : "rax", "memory");
    struct table_ptr i = { sizeof idt - 1, (uint64_t)idt };
    __asm__ volatile("lidt %0" : : "m"(i));
}

void trap_init_early(void)
{
    for (unsigned v = 0; v < 256; v++)
        set_gate(v, 0);
    load_tables(0);
}

void trap_init_cpu(unsigned id, const uint64_t ist_top[4])
{
    if (id == 0 || id >= SMP_MAX_CPUS)
        panic("trap_init_cpu: bad CPU id");
    /* The gates already name IST slots 1..4 (trap_set_ist on CPU 0). */
    for (unsigned i = 0; i < 4; i++)
        desc[id].tss.ist[i] = ist_top[i];
    load_tables(id);
}

void trap_set_ist(unsigned vector, unsigned ist, uint64_t stack_top)
{
    boot_tss.ist[ist - 1] = stack_top;
    set_gate(vector, ist);
}

void trap_set_handler(unsigned vector, irq_handler handler)
{
    if (vector >= VEC_IRQ_BASE && vector < 256)
        handlers[vector] = handler;
}

unsigned trap_alloc_vector(irq_handler handler)
{
    for (unsigned v = VEC_DEVICE_FIRST; v <= VEC_DEVICE_LAST; v++) {
        if (!handlers[v]) {
            handlers[v] = handler;
            return v;
        }
    }
    return 0;
}

void trap_dispatch(struct trap_frame *tf)
{
    if (tf->vector < VEC_IRQ_BASE)
        fatal_trap(tf);
    irq_handler h = handlers[tf->vector];
    if (h)
        h(tf);
    /* Unknown vectors (spurious, stray legacy IRQs) are ignored. */
}
