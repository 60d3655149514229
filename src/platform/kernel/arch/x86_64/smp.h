/*
 * smp.h - the application processors: found in the ACPI MADT, started with
 * INIT-SIPI-SIPI through trampoline.S, each given its role (percpu.h), and
 * stopped all at once by a fatal error on any of them. See smp.c.
 */
#ifndef TERN_ARCH_SMP_H
#define TERN_ARCH_SMP_H

#include "bootinfo.h"

#include <stdint.h>

/* The boot CPU's struct percpu and GS base: first thing in kmain_early,
 * after the descriptor tables and before anything that may panic. */
void smp_boot_cpu_init(void);
/* Start every enabled CPU the MADT lists (after paging, the local APIC
 * timer and acpi_init); log each one's role, or why it did not come up.
 * The machine goes on with those that did. */
void smp_start(const struct boot_info *bi);
/* CPUs running (1 before smp_start). */
unsigned smp_online(void);
/* The fatal path: stop every other CPU (an NMI to each online one; one
 * still starting stops itself on arrival) and wait briefly for them to
 * say so. 1 if this CPU is the first to call it,
 * 0 if another CPU already is reporting (the caller then halts quietly). */
int smp_stop_others(void);
/* 1 when a stop is in progress (an NMI then halts its CPU). */
int smp_stopping(void);
/* This CPU's id (0 before smp_boot_cpu_init). */
unsigned smp_cpu_id(void);
/* This CPU's struct percpu (the boot CPU's before smp_boot_cpu_init, when
 * the GS base is not set yet). */
struct percpu *smp_this_cpu(void);
/* Hand a parked application processor of the given role its work: it
 * calls fn (which must not return) on its own stack, with its struct
 * percpu. Everything the caller wrote before is visible to fn (release
 * here, acquire there). Returns the CPU's id, or -1 when no CPU of that
 * role is online (fn is then not run anywhere). CPU 0 only. */
int smp_run_role(int role, void (*fn)(void));
/* Wake CPU id from hlt (an IPI on the wake vector, whose handler does
 * nothing but acknowledge it) if it is between smp_sleep_begin and
 * smp_sleep_end: the sleeper's loop then looks for work. A CPU that is
 * not sleeping looks at its work on its own, and gets no IPI (each costs
 * both CPUs an exit under emulation). Call after publishing the work. No-op
 * for this CPU or one not online. */
void smp_wake(unsigned id);
/* A loop about to sleep: with interrupts off, smp_sleep_begin, then the
 * last look for work, then cpu_idle (or irq_enable when there was work),
 * then smp_sleep_end. The flag is set before the look and smp_wake reads
 * it after its work is published, both sequentially consistent, so either
 * the look sees the work or smp_wake sees the flag and sends the IPI,
 * which the pending-interrupt rule of sti;hlt delivers into the hlt. */
void smp_sleep_begin(void);
void smp_sleep_end(void);
/* cpu_idle (sti;hlt) for a loop between smp_sleep_begin and _end,
 * counted in this CPU's halts. */
void smp_sleep_idle(void);

/* CPU id's hand-over counters (percpu.h), read without a lock: each is
 * an aligned word written only by its CPU, so a copy is at most a few
 * events behind. 1 when CPU id is online, else 0 (and zeroes). */
struct smp_counters {
    uint64_t ipis_sent, ipis_skipped, halts;
};
int smp_get_counters(unsigned id, struct smp_counters *out);
/* A CPU told to stop (or losing the race to report): count it, halt. */
_Noreturn void smp_halt_stopped(void);
/* CPUs halted by smp_halt_stopped so far. */
unsigned smp_stopped_count(void);

/* CPU 0's main loop, every turn: at most once a second, names any AP
 * that arrived after its start window since the last look. smp_start
 * names those that arrived while CPUs were being started; a vCPU the
 * host runs later still may arrive any time after, and halts in the
 * trampoline without a word of its own (it has no console). */
void smp_poll_late(uint64_t now_ns);

#endif
