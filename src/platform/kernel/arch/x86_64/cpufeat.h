/*
 * cpufeat.h - CPU features the kernel reports or relies on, read once.
 */
#ifndef TERN_ARCH_CPUFEAT_H
#define TERN_ARCH_CPUFEAT_H

#include <stdint.h>

struct cpu_features {
    int rdrand, rdseed, invariant_tsc, x2apic;
};

void cpu_features_read(struct cpu_features *f);
/* One value from RDRAND (10 tries, as Intel advises); 1 on success. */
int cpu_rdrand64(uint64_t *out);

#endif
