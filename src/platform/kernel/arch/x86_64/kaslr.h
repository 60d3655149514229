/*
 * kaslr.h - the random layout chosen at boot (SPEC B5), for the kernel
 * proper: kmain_early adopts what the boot section picked (kaslr_early.c)
 * before anything uses an address, the stack and MMIO allocators take
 * their bases from here, and the boot log states the bits of placement
 * entropy and their source, never an address.
 */
#ifndef TERN_ARCH_KASLR_H
#define TERN_ARCH_KASLR_H

#include <stddef.h>
#include <stdint.h>

/* Copy the layout from its physical address (boot.S passes it; the
 * identity map still exists) and set kernel_slide and kernel_dmap_base. */
void kaslr_adopt(uint64_t layout_phys);
/* The bases of the stack window and the MMIO window. */
uint64_t kaslr_stack_base(void);
uint64_t kaslr_mmio_base(void);
/* "kernel 9 bits, heap 24 bits, stacks 28 bits, mmio 19 bits (rdrand)". */
void kaslr_describe(char *buf, size_t len);
#ifdef TERN_TEST_HOOKS
/* Test builds only (tern.test.kaslr=show): the bases themselves. */
void kaslr_show_bases(void);
/* Test builds only: how long the boot's relocation took, once the TSC's
 * rate is known (for docs/PERFORMANCE.md). */
void kaslr_show_cost(uint64_t tsc_hz);
#endif

#endif
