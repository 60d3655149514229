/*
 * percpu.h - each CPU's own data, reached through its GS base: the struct
 * percpu below, one per CPU in smp.c's table, with the GS base MSR of
 * each CPU pointing at its own (self first, so this_cpu() is one load).
 * What a CPU is for (its role), its stacks (guarded, mm/stack.c) and the
 * kernel thread it runs live here; the descriptor tables (GDT, TSS) are
 * per CPU in trap.c, indexed by id. Set for the boot CPU first thing in
 * kmain_early (smp_boot_cpu_init), for each AP by smp_ap_entry.
 */
#ifndef TERN_ARCH_PERCPU_H
#define TERN_ARCH_PERCPU_H

#include <stdint.h>

enum { SMP_MAX_CPUS = 64, SMP_IST_STACKS = 4 };

enum cpu_role {
    CPU_ROLE_BOOT,      /* CPU 0: network and broker, as on one CPU */
    CPU_ROLE_STORAGE,   /* CPU 1: the storage core (storecpu.h) once the
                         * store is open; parked until then, and for good
                         * without a durable store */
    CPU_ROLE_NETWORK,   /* CPUs 2..: network, idle until the multi-core broker */
};

enum cpu_state {
    CPU_ABSENT,         /* no such CPU, or not started */
    CPU_STARTING,       /* INIT-SIPI-SIPI sent, not yet in smp_ap_entry */
    CPU_ONLINE,         /* running its role (parked until given work) */
    CPU_STOPPED,        /* halted by a fatal error elsewhere */
};

struct kthread;

struct percpu {
    struct percpu *self;        /* at %gs:0: this_cpu() */
    unsigned id;                /* 0 = boot CPU, then in MADT order */
    uint32_t apic_id;
    enum cpu_role role;
    _Atomic int state;          /* enum cpu_state; written by the CPU itself
                                 * (ONLINE, STOPPED) or by CPU 0 (STARTING) */
    uint64_t stack_top;         /* its main stack (APs: from stack_alloc) */
    uint64_t ist_top[SMP_IST_STACKS]; /* double fault, page fault, NMI, #MC */
    struct kthread *current;    /* the kernel thread it runs, NULL on its main
                                 * context (kthread.c) */
    uint64_t main_rsp;          /* its main context's stack pointer while a
                                 * thread runs (kthread.c) */
    volatile uint64_t ticks;    /* its local APIC timer's interrupts */
    /* What a parked AP runs once CPU 0 hands it work (smp_run_role): set
     * once with release by CPU 0, read with acquire by the AP. */
    void (*_Atomic work)(void);
    /* 1 from its loop's last look for work to the end of its hlt
     * (smp_sleep_begin/end): only then does smp_wake send an IPI. */
    _Atomic int sleeping;
    /* Hand-over counters (smp.h's smp_counters), each written only by
     * this CPU: wake IPIs it sent, wakes it skipped (the other CPU was
     * awake), and its hlts (smp_sleep_idle). */
    uint64_t ipis_sent, ipis_skipped, halts;
};

static inline struct percpu *this_cpu(void)
{
    struct percpu *p;
    __asm__ volatile("movq %%gs:0, %0" : "=r"(p));
    return p;
}

#endif
