/*
 * panic.c - the fatal report. Every fatal path ends here: a CPU exception
 * (fatal_trap) or a kernel check that failed (panic). The report names what
 * happened in words - the exception and, for page faults, the likely cause
 * (null pointer, stack overflow into a guard page, W^X violation, a write
 * to a page table) - then the
 * machine waits and resets. A fault inside the report goes straight to
 * reset, so a broken console cannot cause a fault loop.
 * With several CPUs, the first to fail stops the others (an NMI, which
 * halts them: smp.c) before it reports; the report goes to every console
 * (kprintf writes serial and screen) and names the CPU. A CPU that fails
 * while another is reporting halts quietly.
 */
#include "panic.h"

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/memlayout.h"
#include "arch/x86_64/smp.h"
#include "arch/x86_64/trap.h"
#include "console.h"
#include "mm/paging.h"
#include "mm/stack.h"
#include "clock.h"

#include <stdint.h>

#ifndef TERN_FATAL_HOLD_MS
#define TERN_FATAL_HOLD_MS 60000
#endif

/* The CPU reporting (+1; 0: none yet), set by the first fatal error; a
 * second one on that CPU (a fault while reporting) resets at once. The
 * only writer is the CPU that won smp_stop_others. */
static volatile unsigned reporter;

static const char *const exception_names[32] = {
    "divide error (#DE)", "debug (#DB)", "non-maskable interrupt (NMI)",
    "breakpoint (#BP)", "overflow (#OF)", "bound range exceeded (#BR)",
    "invalid opcode (#UD)", "device not available (#NM)", "double fault (#DF)",
    "coprocessor segment overrun", "invalid TSS (#TS)", "segment not present (#NP)",
    "stack-segment fault (#SS)", "general protection fault (#GP)", "page fault (#PF)",
    "reserved exception 15", "x87 floating-point error (#MF)", "alignment check (#AC)",
    "machine check (#MC)", "SIMD floating-point error (#XM)", "virtualization exception (#VE)",
    "control protection exception (#CP)", "reserved exception 22", "reserved exception 23",
    "reserved exception 24", "reserved exception 25", "reserved exception 26",
    "reserved exception 27", "hypervisor injection (#HV)", "VMM communication (#VC)",
    "security exception (#SX)", "reserved exception 31",
};

static const char *page_fault_cause(uint64_t addr, uint64_t err)
{
    const uint64_t present = 1, write = 2, fetch = 16;
    if (stack_is_guard(addr))
        return "stack overflow into a guard page";
    if (addr < 0x10000)
        return "null pointer dereference";
    if ((err & present) && (err & fetch))
        return "execution of non-executable memory (NX)";
    if ((err & present) && (err & write) && vm_is_page_table(addr))
        return "write to a page table (read-only after boot)";
    if ((err & present) && (err & write))
        return "write to read-only memory (W^X)";
    if (!(err & present))
        return "access to unmapped memory";
    return "protection violation";
}

static _Noreturn void hold_and_reset(void)
{
    kprintf("*** tern: resetting in %u s\n", (unsigned)(TERN_FATAL_HOLD_MS / 1000));
    delay_ms(TERN_FATAL_HOLD_MS);
    kprintf("*** tern: reset\n");
    cpu_reset();
}

static void enter_fatal(void)
{
    irq_disable();
    unsigned me = smp_cpu_id();
    if (!smp_stop_others()) {
        if (reporter == me + 1)
            cpu_reset();
        smp_halt_stopped(); /* another CPU is reporting */
    }
    reporter = me + 1;
}

/* After the first line: where it happened, when there is more than one CPU. */
static void say_cpu(void)
{
    if (smp_online() > 1)
        kprintf("*** tern: on CPU %u; %u other CPU(s) stopped\n", smp_cpu_id(),
                smp_stopped_count());
}

_Noreturn void panic(const char *msg)
{
    enter_fatal();
    kprintf("\n*** tern: FATAL: %s\n", msg);
    say_cpu();
    hold_and_reset();
}

#ifdef TERN_DEBUG
static void dump_registers(const struct trap_frame *tf)
{
    kprintf("  rip %016llx  rsp %016llx  rflags %016llx\n", (unsigned long long)tf->rip,
            (unsigned long long)tf->rsp, (unsigned long long)tf->rflags);
    kprintf("  rax %016llx  rbx %016llx  rcx %016llx\n", (unsigned long long)tf->rax,
            (unsigned long long)tf->rbx, (unsigned long long)tf->rcx);
    kprintf("  rdx %016llx  rsi %016llx  rdi %016llx\n", (unsigned long long)tf->rdx,
            (unsigned long long)tf->rsi, (unsigned long long)tf->rdi);
    kprintf("  rbp %016llx  r8  %016llx  r9  %016llx\n", (unsigned long long)tf->rbp,
            (unsigned long long)tf->r8, (unsigned long long)tf->r9);
    kprintf("  r10 %016llx  r11 %016llx  r12 %016llx\n", (unsigned long long)tf->r10,
            (unsigned long long)tf->r11, (unsigned long long)tf->r12);
    kprintf("  r13 %016llx  r14 %016llx  r15 %016llx\n", (unsigned long long)tf->r13,
            (unsigned long long)tf->r14, (unsigned long long)tf->r15);
    kprintf("  error %llx  cr2 %016llx\n", (unsigned long long)tf->error,
            (unsigned long long)read_cr2());
    /* KASLR: rip minus the slide is the address in tern-debug.elf. */
    kprintf("  kernel slide %016llx (rip in the ELF: %016llx)\n",
            (unsigned long long)kernel_slide, (unsigned long long)(tf->rip - kernel_slide));
}
#endif

_Noreturn void fatal_trap(const struct trap_frame *tf)
{
    /* The stop NMI from the CPU reporting a fatal error: halt here. */
    if (tf->vector == VEC_NMI && smp_stopping())
        smp_halt_stopped();
    enter_fatal();
    kprintf("\n*** tern: FATAL: CPU exception: %s\n", exception_names[tf->vector & 31]);
    if (tf->vector == VEC_PAGE_FAULT)
        kprintf("*** tern: cause: %s\n", page_fault_cause(read_cr2(), tf->error));
    else if (tf->vector == 8)
        kprintf("*** tern: cause: a fault while handling a fault\n");
    say_cpu();
#ifdef TERN_DEBUG
    dump_registers(tf);
#endif
    hold_and_reset();
}
