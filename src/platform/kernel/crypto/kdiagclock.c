/*
 * kdiagclock.c - the kernel's diag_clock (kdiagclock.h).
 */
#include "crypto/kdiagclock.h"

#include "arch/x86_64/cpu.h"
#include "clock.h"

#include <stddef.h>

static uint64_t mono_ns(void *ctx)
{
    (void)ctx;
    return clock_mono_ns();
}

static uint64_t tsc_cycles(void *ctx)
{
    (void)ctx;
    return rdtsc();
}

struct diag_clock kdiag_clock(const struct tsc_info *tsc)
{
    struct diag_clock c = {mono_ns, tsc->invariant ? tsc_cycles : NULL, NULL};
    return c;
}
