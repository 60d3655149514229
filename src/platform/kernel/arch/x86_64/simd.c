/*
 * simd.c - switches on SSE and the AVX register state (see simd.h).
 *
 * SSE needs CR0.EM clear, CR0.MP set and CR4.OSFXSR/OSXMMEXCPT; without
 * them the first SSE instruction raises #UD. AVX additionally needs
 * CR4.OSXSAVE and the YMM bit in XCR0, which may only be set when CPUID
 * leaf 0xD says the CPU supports that state component. AVX-512 state is
 * enabled too when every one of its components is supported, so a CPU that
 * advertises AVX-512 never faults on it; wolfSSL 5.7 does not use it.
 */
#include "arch/x86_64/simd.h"

#include "arch/x86_64/cpu.h"

#include <stdint.h>

enum {
    CR0_MP = 1u << 1,
    CR0_EM = 1u << 2,
    CR0_NE = 1u << 5,
    CR4_OSFXSR = 1u << 9,
    CR4_OSXMMEXCPT = 1u << 10,
    CR4_OSXSAVE = 1u << 18,
    XCR0_X87 = 1u << 0,
    XCR0_SSE = 1u << 1,
    XCR0_AVX = 1u << 2,
    XCR0_AVX512 = 7u << 5, /* opmask, ZMM_Hi256, Hi16_ZMM */
    CPUID1_XSAVE = 1u << 26,
    CPUID1_AVX = 1u << 28,
    MXCSR_DEFAULT = 0x1F80, /* all exceptions masked, round to nearest */
};

static uint64_t read_cr0(void)
{
    uint64_t v;
    __asm__ volatile("mov %%cr0, %0" : "=r"(v));
    return v;
}

static void write_cr0(uint64_t v)
{
    __asm__ volatile("mov %0, %%cr0" : : "r"(v) : "memory");
}

static uint64_t read_cr4(void)
{
    uint64_t v;
    __asm__ volatile("mov %%cr4, %0" : "=r"(v));
    return v;
}

static void write_cr4(uint64_t v)
{
    __asm__ volatile("mov %0, %%cr4" : : "r"(v) : "memory");
}

static void write_xcr0(uint64_t v)
{
    __asm__ volatile("xsetbv" : : "c"(0), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)));
}

void simd_enable(struct simd_state *st)
{
    uint32_t r[4], max;
    uint32_t mxcsr = MXCSR_DEFAULT;

    write_cr0((read_cr0() & ~(uint64_t)CR0_EM) | CR0_MP | CR0_NE);
    write_cr4(read_cr4() | CR4_OSFXSR | CR4_OSXMMEXCPT);
    __asm__ volatile("fninit");
    __asm__ volatile("ldmxcsr %0" : : "m"(mxcsr));
    st->sse = 1;
    st->avx = 0;
    st->avx_hidden = 0;

    cpuid(0, 0, r);
    max = r[0];
    cpuid(1, 0, r);
    int has_avx = (r[2] & CPUID1_AVX) != 0;
    if (!(r[2] & CPUID1_XSAVE) || max < 0xD) {
        st->avx_hidden = has_avx;
        return;
    }
    cpuid(0xD, 0, r); /* EAX: supported XCR0 bits (low half) */
    uint64_t supported = r[0];
    uint64_t xcr0 = XCR0_X87 | XCR0_SSE;
    if (has_avx && (supported & XCR0_AVX)) {
        xcr0 |= XCR0_AVX;
        if ((supported & XCR0_AVX512) == XCR0_AVX512)
            xcr0 |= XCR0_AVX512;
    }
    write_cr4(read_cr4() | CR4_OSXSAVE);
    write_xcr0(xcr0);
    st->avx = (xcr0 & XCR0_AVX) != 0;
    st->avx_hidden = has_avx && !st->avx;
}
