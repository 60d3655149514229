/*
 * memlayout.h - where things live in the kernel's one address space.
 *
 *   0x0000000000000000 ..        not mapped once the kernel runs (null traps)
 *   0xffff800000000000 DMAP_BASE direct map of physical RAM, RW + NX
 *   0xffffc00000000000 STACK_BASE kernel stacks, each above an unmapped guard page
 *   0xffffd00000000000 MMIO_BASE  device registers, RW + NX + uncached
 *   0xffffffff80000000 KERNEL_VMA the kernel image (-mcmodel=kernel), loaded at
 *                                 KERNEL_PHYS; text RX, rodata R, data/bss RW+NX
 *
 * Each region's real base lies at a random offset above the one named here
 * (KASLR, arch/x86_64/kaslr_plan.h gives the windows): the image at
 * KERNEL_VMA + kernel_slide + physical, RAM at kernel_dmap_base + physical.
 * Shared by C and the assembly boot path, so only plain constants here and
 * the two variables (arch/x86_64/kaslr.c) the address conversions need.
 */
#ifndef TERN_ARCH_MEMLAYOUT_H
#define TERN_ARCH_MEMLAYOUT_H

#define KERNEL_PHYS 0x100000
#define KERNEL_VMA 0xffffffff80000000
#define DMAP_BASE 0xffff800000000000
#define STACK_BASE 0xffffc00000000000
#define MMIO_BASE 0xffffd00000000000
#define PAGE_SIZE 4096

/* The early page tables map this much of physical memory (2 MiB pages),
 * enough for the kernel, the boot information and the first allocations. */
#define EARLY_MAP_BYTES 0x100000000

#define BOOT_KIND_MULTIBOOT2 1
#define BOOT_KIND_PVH 2

#ifndef __ASSEMBLER__
#include <stdint.h>
/* Set once, first thing in kmain_early (kaslr_adopt). */
extern uint64_t kernel_slide, kernel_dmap_base;
static inline void *phys_to_virt(uint64_t pa) { return (void *)(pa + kernel_dmap_base); }
static inline uint64_t virt_to_phys(const void *va) { return (uint64_t)va - kernel_dmap_base; }
static inline uint64_t kimage_to_phys(const void *va)
{
    return (uint64_t)va - KERNEL_VMA - kernel_slide;
}
#endif

#endif
