/*
 * kdiagclock.h - the kernel's clock for the diagnostics measurements
 * (src/diag/diag_clock.h): the calibrated monotonic clock (clock.h), and
 * the TSC as the cycle counter only when it is invariant (otherwise its
 * rate changes with power states and cycles would mislead: the report then
 * says there is no cycle counter). The diagnostics mode and the test hook
 * (cryptobench_hook.h) both use it.
 */
#ifndef TERN_CRYPTO_KDIAGCLOCK_H
#define TERN_CRYPTO_KDIAGCLOCK_H

#include "arch/x86_64/timer.h"
#include "diag/diag_clock.h"

struct diag_clock kdiag_clock(const struct tsc_info *tsc);

#endif
