/*
 * kstorecpu.c - the storage core (see kstorecpu.h): the hand-over at boot
 * and CPU 1's loop. The loop is the storage CPU's "main context" for the
 * kthread scheduler (each CPU has its own: percpu.h), so the threads
 * yield to it exactly as they yielded to CPU 0's main loop, and their
 * wait conditions are evaluated here, on the CPU that runs them.
 *
 * Sleeping: interrupts go off and the CPU says it is sleeping
 * (smp_sleep_begin) before the last look (a thread ready, a disk
 * interrupt not yet polled), and cpu_idle is sti;hlt, so a wake IPI or an
 * MSI-X message arriving after the look ends the hlt rather than being
 * taken before it; CPU 0 sends the IPI only while CPU 1 says it sleeps. The local APIC timer (TICK_HZ) bounds every
 * sleep, which is what the time-based conditions (a backup due, the pause
 * after a failed commit, a scrub step) rely on, as on CPU 0.
 */
#include "store/kstorecpu.h"

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/lapic.h"
#include "arch/x86_64/percpu.h"
#include "arch/x86_64/simd.h"
#include "arch/x86_64/smp.h"
#include "console.h"
#include "dev/blk.h"
#include "dev/virtio_disk.h"
#include "kthread.h"
#include "mm/paging.h"
#include "panic.h"

#include <stdatomic.h>

/* Boot-time: the threads (added on CPU 0 before the hand-over, read by
 * the storage CPU after it: smp_run_role publishes them) and where they
 * run (0: CPU 0's main loop; else the storage CPU's id). */
static struct {
    struct kthread *t[KSTORECPU_THREADS];
    unsigned n;
    unsigned cpu;
} sc;

void kstorecpu_add(struct kthread *t)
{
    if (sc.cpu != 0)
        panic("a storage thread added after the hand-over to the storage core");
    if (sc.n >= KSTORECPU_THREADS)
        panic("more storage threads than KSTORECPU_THREADS");
    sc.t[sc.n++] = t;
}

/* True when a thread is ready or a disk interrupt waits (the sleep check). */
static bool something_to_do(void)
{
    if (blk_irq_pending())
        return true;
    for (unsigned i = 0; i < sc.n; i++)
        if (kthread_ready(sc.t[i]))
            return true;
    return false;
}

static _Noreturn void storage_loop(void)
{
    struct simd_state simd;
    simd_enable(&simd); /* kthread_switch saves and restores MXCSR */
    /* The disks' messages to this CPU's local APIC: it sleeps on them. */
    vdisk_irq_to(lapic_id());
    kprintf("tern: smp: CPU %u: storage core running: %u storage thread(s), the disks "
            "and their interrupts here\n", smp_cpu_id(), sc.n);
    for (;;) {
        int work = blk_poll_all();
        for (unsigned i = 0; i < sc.n; i++)
            work |= kthread_resume(sc.t[i]);
        if (work)
            continue;
        irq_disable();
        smp_sleep_begin(); /* before the last look: smp.h */
        if (something_to_do())
            irq_enable();
        else
            smp_sleep_idle();
        smp_sleep_end();
    }
}

int kstorecpu_start(void)
{
    if (sc.n == 0 || smp_online() < 2)
        return 0;
    /* CPU 1 is the storage CPU (smp.c gives the role to the first AP up). */
    if (blk_set_owner(1) != 0)
        return 0;
    paging_share(); /* from here, mappings are only ever added */
    sc.cpu = 1;
    int id = smp_run_role(CPU_ROLE_STORAGE, storage_loop);
    if (id != 1)
        panic("the storage core: CPU 1 is online but does not have the storage role");
    return 1;
}

int kstorecpu_run(struct kthread *t, bool news)
{
    if (sc.cpu == 0)
        return kthread_resume(t);
    if (news)
        smp_wake(sc.cpu);
    return 0;
}

void kstorecpu_wake(void)
{
    if (sc.cpu != 0)
        smp_wake(sc.cpu);
}

void kstorecpu_notify_main(void)
{
    if (sc.cpu != 0)
        smp_wake(0);
}
