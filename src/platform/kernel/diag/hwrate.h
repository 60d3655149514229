/*
 * hwrate.h - rates from a byte count and a TSC interval, in integers (the
 * kernel has no floating point), exact (128-bit intermediates) and
 * saturating instead of overflowing: the memory bandwidth
 * measurement's arithmetic, tested on the host (tests/unit/test_khw_rate.c).
 */
#ifndef TERN_DIAG_HWRATE_H
#define TERN_DIAG_HWRATE_H

#include <stdint.h>

/* floor(a x b / c), exact, saturating at UINT64_MAX; 0 when c is 0. */
uint64_t hw_muldiv(uint64_t a, uint64_t b, uint64_t c);
/* MiB/s in thousandths (1500 = 1.5 MiB/s) of bytes moved in ticks TSC
 * ticks at hz; 0 when ticks or hz is 0. Saturates at UINT64_MAX. */
uint64_t hw_mib_s_milli(uint64_t bytes, uint64_t ticks, uint64_t hz);
/* Nanoseconds of ticks at hz; 0 when hz is 0. */
uint64_t hw_ticks_ns(uint64_t ticks, uint64_t hz);
/* kHz of a counter that advanced ticks over ns nanoseconds; 0 if ns is 0. */
uint64_t hw_khz(uint64_t ticks, uint64_t ns);

#endif
