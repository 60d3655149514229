/*
 * clock.h - the monotonic clock (nanoseconds since boot, from the TSC) and
 * busy-wait delays that work from the first instruction to the fatal path.
 */
#ifndef TERN_CLOCK_H
#define TERN_CLOCK_H

#include <stdint.h>

/* Start the clock; tsc_hz from tsc_calibrate(). */
void clock_init(uint64_t tsc_hz);
/* Nanoseconds since clock_init; never goes backwards. 0 before init. */
uint64_t clock_mono_ns(void);
/* Busy-wait: on the TSC once the clock runs, on the PIT before. */
void delay_ms(uint32_t ms);

/* The diagnostics' time source (src/diag/diag_clock.h) over this clock,
 * with the TSC as the cycle counter only when it is invariant (its rate
 * then says nothing about the CPU's current clock). */
struct diag_clock;
void clock_diag(struct diag_clock *out, int tsc_invariant);

#endif
