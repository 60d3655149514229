/*
 * simd.h - the vector units wolfSSL's assembly uses (SSE for AES-NI and
 * GCM, AVX/AVX2 for SHA-2, ChaCha20 and Poly1305), switched on at boot.
 *
 * The kernel's own code is compiled without vector registers
 * (-mgeneral-regs-only), so the vector state belongs to whatever crypto
 * call is running and never needs saving: no interrupt handler touches it,
 * and the only context switches (kthread.h's cooperative threads) happen
 * at function calls, where the ABI makes every vector register the
 * caller's to save; the switch keeps MXCSR and the x87 control word, which
 * the ABI says a call preserves.
 */
#ifndef TERN_ARCH_SIMD_H
#define TERN_ARCH_SIMD_H

struct simd_state {
    int sse;  /* SSE..SSE4 usable (always, on x86_64) */
    int avx;  /* AVX (YMM) state enabled in XCR0 */
    int avx_hidden; /* the CPU has AVX but its state could not be enabled */
};

/* Enable SSE (CR0/CR4) and, when the CPU offers it, the AVX state through
 * XSAVE/XCR0. Call once, before any crypto. */
void simd_enable(struct simd_state *st);

#endif
