/*
 * hwcpu.h - the processor and hypervisor as CPUID describes them, decoded
 * by a pure function over a CPUID reader, so host tests
 * (tests/unit/test_khw_cpu.c) feed it leaves recorded on real and virtual
 * CPUs. The kernel passes the instruction itself (diag/hw.c).
 */
#ifndef TERN_DIAG_HWCPU_H
#define TERN_DIAG_HWCPU_H

#include <stdbool.h>
#include <stdint.h>

/* r = {EAX, EBX, ECX, EDX} of CPUID(leaf, sub). */
typedef void (*hw_cpuid_fn)(void *ctx, uint32_t leaf, uint32_t sub, uint32_t r[4]);

struct hw_cpu {
    char vendor[13];            /* "GenuineIntel", "AuthenticAMD", ... */
    char brand[49];             /* leaves 0x80000002-4, padding cut; "" if none */
    uint32_t max_leaf, max_ext_leaf;
    unsigned family, model, stepping;   /* display values (extended fields folded in) */
    /* CPUID feature bits (what the CPU claims; AVX2 also needs the OS to
     * enable YMM state, which the kernel does: arch/x86_64/simd.c) */
    bool aes_ni, pclmulqdq, sse4_2, avx2, bmi2, adx, sha_ni, rdrand, rdseed, x2apic;
    bool invariant_tsc, hypervisor_bit;
    unsigned logical_per_package; /* leaf 1 EBX[23:16] when HTT is set; 0: not given */
    /* TSC rate the CPU states: leaf 0x15 (crystal x ratio), else leaf
     * 0x16's base frequency; 0 with tsc_khz_why when neither says. */
    uint64_t tsc_khz;
    const char *tsc_khz_source; /* "cpuid 0x15" or "cpuid 0x16 base frequency" */
    const char *tsc_khz_why;
    /* hypervisor leaves (0x40000000...), only when the hypervisor bit is set */
    char hv_sig[13];
    const char *hv_name;        /* "QEMU TCG", "KVM", ...; NULL for unknown */
    uint32_t hv_max_leaf;
    uint32_t hv_tsc_khz;        /* leaf 0x40000010 EAX; 0 when not given */
    uint32_t hv_apic_khz;       /* leaf 0x40000010 EBX */
};

void hw_cpu_decode(hw_cpuid_fn cpuid, void *ctx, struct hw_cpu *out);

/* The name of a hypervisor signature (12 bytes as CPUID gives them), or
 * NULL when unknown. */
const char *hw_hv_name(const char sig[12]);

#endif
