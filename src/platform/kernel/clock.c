/*
 * clock.c - monotonic time from the TSC: ns = (tsc - tsc0) * mult >> 32,
 * with mult = 1e9 * 2^32 / tsc_hz computed once, so reading the clock costs
 * one multiply and no division. The 128-bit product cannot overflow for
 * centuries of uptime.
 */
#include "clock.h"

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/timer.h"

struct clock {
    uint64_t tsc0;
    uint64_t mult;
    uint64_t tsc_hz;
};

/* Boot-time clock parameters, written once by clock_init. */
static struct clock clk;

void clock_init(uint64_t tsc_hz)
{
    clk.tsc0 = rdtsc();
    clk.tsc_hz = tsc_hz;
    clk.mult = (uint64_t)(((unsigned __int128)1000000000u << 32) / tsc_hz);
}

uint64_t clock_mono_ns(void)
{
    if (!clk.mult)
        return 0;
    return (uint64_t)(((unsigned __int128)(rdtsc() - clk.tsc0) * clk.mult) >> 32);
}

void delay_ms(uint32_t ms)
{
    if (clk.tsc_hz) {
        uint64_t end = rdtsc() + clk.tsc_hz / 1000 * ms;
        while (rdtsc() < end)
            cpu_relax();
        return;
    }
    for (; ms >= 10; ms -= 10)
        pit_wait_us(10000);
    if (ms)
        pit_wait_us(ms * 1000);
}
