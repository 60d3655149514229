/*
 * tsc.c - TSC frequency. The TSC is measured over a 50 ms PIT interval
 * (best of three, least disturbed by emulation or host scheduling).
 * "Invariant" is CPUID 0x80000007 EDX bit 8; without it the TSC is still
 * used (on VMs it is normally constant) and the ready line says so.
 */
#include "arch/x86_64/timer.h"

#include "arch/x86_64/cpu.h"

void tsc_calibrate(struct tsc_info *out)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 3; i++) {
        uint64_t t0 = rdtsc();
        pit_wait_us(50000);
        uint64_t d = rdtsc() - t0;
        if (d < best)
            best = d;
    }
    out->hz = best * 20;
    uint32_t r[4];
    cpuid(0x80000000, 0, r);
    out->invariant = 0;
    if (r[0] >= 0x80000007) {
        cpuid(0x80000007, 0, r);
        out->invariant = (r[3] >> 8) & 1;
    }
}
