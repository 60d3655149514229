/*
 * timer.h - x86 time sources: the PIT (only as a reference to measure the
 * others against, and as a delay before they are known), the TSC, and the
 * local APIC timer that gives the main loop a periodic wake-up.
 */
#ifndef TERN_ARCH_TIMER_H
#define TERN_ARCH_TIMER_H

#include <stdint.h>

/* Busy-wait about us microseconds (at most 50000) on PIT channel 2. */
void pit_wait_us(uint32_t us);

struct tsc_info {
    uint64_t hz;
    int invariant;      /* CPUID says the TSC rate is constant in all states */
};
/* Measure the TSC frequency against the PIT. */
void tsc_calibrate(struct tsc_info *out);

/* Enable the local APIC (legacy PICs masked) and start its timer at hz. */
void lapic_timer_init(uint64_t tsc_hz, unsigned hz);
/* Timer interrupts since lapic_timer_init. */
uint64_t lapic_ticks(void);
/* Local APIC timer input frequency measured (Hz). */
uint64_t lapic_timer_hz(void);

#endif
