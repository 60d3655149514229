/*
 * diag_clock.h - the time source the diagnostics measurements use, given by
 * the platform: the daemon passes clock_gettime(CLOCK_MONOTONIC) and rdtsc,
 * the kernel its calibrated TSC. Portable code (src/diag/) never reads a
 * clock itself, so the same measurement runs in the daemon and the kernel.
 */
#ifndef TERN_DIAG_CLOCK_H
#define TERN_DIAG_CLOCK_H

#include <stdint.h>

struct diag_clock {
    /* Monotonic nanoseconds (any origin). Required. */
    uint64_t (*now_ns)(void *ctx);
    /* A cycle counter (TSC) for per-operation cycle counts; NULL when the
     * platform has none it trusts, and the report then says why. */
    uint64_t (*cycles)(void *ctx);
    void *ctx;
};

#endif
