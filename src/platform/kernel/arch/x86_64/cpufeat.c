/*
 * cpufeat.c - reads CPUID feature bits, and RDRAND for the few places that
 * need randomness before the entropy pool exists (the stack protector
 * guard). RDRAND can transiently fail (CF = 0); it is retried a bounded
 * number of times.
 */
#include "arch/x86_64/cpufeat.h"

#include "arch/x86_64/cpu.h"

void cpu_features_read(struct cpu_features *f)
{
    uint32_t r[4];
    cpuid(0, 0, r);
    uint32_t max = r[0];
    cpuid(1, 0, r);
    f->rdrand = (r[2] >> 30) & 1;
    f->x2apic = (r[2] >> 21) & 1;
    f->rdseed = 0;
    if (max >= 7) {
        cpuid(7, 0, r);
        f->rdseed = (r[1] >> 18) & 1;
    }
    cpuid(0x80000000, 0, r);
    f->invariant_tsc = 0;
    if (r[0] >= 0x80000007) {
        cpuid(0x80000007, 0, r);
        f->invariant_tsc = (r[3] >> 8) & 1;
    }
}

int cpu_rdrand64(uint64_t *out)
{
    for (int i = 0; i < 10; i++) {
        uint8_t ok;
        uint64_t v;
        __asm__ volatile("rdrand %0; setc %1" : "=r"(v), "=qm"(ok));
        if (ok) {
            *out = v;
            return 1;
        }
    }
    return 0;
}
