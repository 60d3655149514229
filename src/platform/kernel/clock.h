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

#endif
