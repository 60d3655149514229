/*
 * lapic.c - the boot CPU's local APIC: enabled in xAPIC (MMIO) mode with the
 * legacy 8259 PICs masked, its timer measured against the TSC and run
 * periodically. The tick wakes the main loop from hlt so timers (lwIP's,
 * the broker's) are serviced even when no device interrupts arrive.
 * Application processors (smp.c) enable theirs with the boot CPU's
 * measurement (one timer input clock for all), count their own ticks in
 * their struct percpu, and send IPIs through the command register.
 */
#include "arch/x86_64/timer.h"

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/lapic.h"
#include "arch/x86_64/percpu.h"
#include "arch/x86_64/trap.h"
#include "mm/paging.h"
#include "panic.h"

enum {
    REG_ID = 0x20, REG_EOI = 0xB0, REG_SVR = 0xF0, REG_ICR_LO = 0x300, REG_ICR_HI = 0x310,
    REG_LVT_TIMER = 0x320, ICR_PENDING = 1 << 12,
    ICR_NMI = 0x4400, /* NMI, level assert, no shorthand: to the id in ICR_HI */
    REG_TIMER_INIT = 0x380, REG_TIMER_CUR = 0x390, REG_TIMER_DIV = 0x3E0,
    LVT_MASKED = 1 << 16, LVT_PERIODIC = 1 << 17,
    APIC_BASE_ENABLE = 1 << 11,
};

/* Boot-CPU APIC state (the mapping serves every CPU: each sees its own
 * APIC at the same address); written by CPU 0 before any AP starts. */
static volatile uint32_t *lapic;
static volatile uint64_t ticks;
static uint64_t timer_hz;
static uint32_t timer_count;

static uint32_t rd(unsigned reg) { return lapic[reg / 4]; }
static void wr(unsigned reg, uint32_t v) { lapic[reg / 4] = v; }

static void on_tick(struct trap_frame *tf)
{
    (void)tf;
    if (this_cpu()->id == 0)
        ticks++; /* the clock's tick: CPU 0's alone */
    else
        this_cpu()->ticks++;
    wr(REG_EOI, 0);
}

void lapic_timer_init(uint64_t tsc_hz, unsigned hz)
{
    /* Mask both 8259 PICs: everything arrives through the APIC. */
    outb(0x21, 0xFF);
    outb(0xA1, 0xFF);

    uint32_t r[4];
    cpuid(1, 0, r);
    if (!((r[3] >> 9) & 1))
        panic("this CPU has no local APIC");
    uint64_t base = rdmsr(MSR_APIC_BASE);
    wrmsr(MSR_APIC_BASE, base | APIC_BASE_ENABLE);
    lapic = vm_map_mmio(base & 0xFFFFF000ull, 4096);
    wr(REG_SVR, 0x100 | VEC_SPURIOUS);

    /* Count down from the maximum for 10 ms of TSC time, divider 16. */
    wr(REG_TIMER_DIV, 0x3);
    wr(REG_LVT_TIMER, LVT_MASKED | VEC_APIC_TIMER);
    wr(REG_TIMER_INIT, 0xFFFFFFFF);
    uint64_t t0 = rdtsc();
    while (rdtsc() - t0 < tsc_hz / 100)
        cpu_relax();
    uint32_t elapsed = 0xFFFFFFFF - rd(REG_TIMER_CUR);
    wr(REG_TIMER_INIT, 0);
    timer_hz = (uint64_t)elapsed * 100;
    if (elapsed < 100)
        panic("local APIC timer does not count");

    trap_set_handler(VEC_APIC_TIMER, on_tick);
    wr(REG_LVT_TIMER, LVT_PERIODIC | VEC_APIC_TIMER);
    timer_count = (uint32_t)(timer_hz / hz);
    wr(REG_TIMER_INIT, timer_count);
}

void lapic_ap_init(void)
{
    wrmsr(MSR_APIC_BASE, rdmsr(MSR_APIC_BASE) | APIC_BASE_ENABLE);
    wr(REG_SVR, 0x100 | VEC_SPURIOUS);
    wr(REG_TIMER_DIV, 0x3);
    wr(REG_LVT_TIMER, LVT_PERIODIC | VEC_APIC_TIMER);
    wr(REG_TIMER_INIT, timer_count);
}

static void icr_send(uint32_t hi, uint32_t lo)
{
    for (int i = 0; i < 1000000 && (rd(REG_ICR_LO) & ICR_PENDING); i++)
        cpu_relax();
    wr(REG_ICR_HI, hi);
    wr(REG_ICR_LO, lo); /* this write sends it */
}

void lapic_send_ipi(uint32_t apic_id, uint32_t icr)
{
    icr_send(apic_id << 24, icr);
}

void lapic_send_nmi(uint32_t apic_id)
{
    if (lapic)
        icr_send(apic_id << 24, ICR_NMI);
}

uint64_t lapic_ticks(void) { return ticks; }
uint64_t lapic_timer_hz(void) { return timer_hz * 16; }

uint8_t lapic_id(void) { return (uint8_t)(rd(REG_ID) >> 24); }
void lapic_eoi(void) { wr(REG_EOI, 0); }
