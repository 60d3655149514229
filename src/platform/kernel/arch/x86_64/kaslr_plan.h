/*
 * kaslr_plan.h - the pure part of kernel address-space randomisation
 * (SPEC B5): where the kernel image, the direct map (which holds the
 * heap), the stacks and the MMIO window go for given random words, how
 * many bits of placement that choice has, and the relocation table
 * applied when the image moves. No hardware access: unit-tested on the
 * host (tests/unit/test_kkaslr.c); in the kernel it runs from the fixed
 * boot section before the higher half exists (kaslr_early.c), so nothing
 * here may reach code or data of the higher half.
 */
#ifndef TERN_ARCH_KASLR_PLAN_H
#define TERN_ARCH_KASLR_PLAN_H

#include <stddef.h>
#include <stdint.h>

/* The windows, each above the fixed base in memlayout.h. The kernel image
 * moves in 2 MiB steps inside the top 2 GiB (-mcmodel=kernel needs it
 * there; 2 MiB because the boot tables map it with 2 MiB pages); the
 * direct map in 2 MiB steps over 32 TiB (its 2 MiB pages need the
 * alignment; RAM up to 32 TiB still fits below the stacks); the stacks in
 * 4 KiB steps over 1 TiB; the MMIO window in 2 MiB steps over 1 TiB (its
 * large windows use 2 MiB pages). */
#define KASLR_KERNEL_ALIGN 0x200000ull
#define KASLR_KERNEL_SPAN 0x80000000ull
#define KASLR_DMAP_ALIGN 0x200000ull
#define KASLR_DMAP_SPAN (1ull << 45)
#define KASLR_STACK_ALIGN 0x1000ull
#define KASLR_STACK_SPAN (1ull << 40)
#define KASLR_MMIO_ALIGN 0x200000ull
#define KASLR_MMIO_SPAN (1ull << 40)

/* Where the early entropy came from. */
enum kaslr_source { KASLR_SRC_RDSEED = 1, KASLR_SRC_RDRAND, KASLR_SRC_JITTER };

/* The placement chosen at boot, handed from the boot section to the
 * kernel proper (arch/x86_64/kaslr.h). Offsets are from the fixed bases. */
struct kaslr_layout {
    uint64_t slide;        /* kernel image: run address - link address */
    uint64_t dmap_off;     /* direct map: base - DMAP_BASE */
    uint64_t stack_off;    /* stack window: base - STACK_BASE */
    uint64_t mmio_off;     /* MMIO window: base - MMIO_BASE */
    uint32_t kernel_bits, dmap_bits, stack_bits, mmio_bits;
    uint32_t source;       /* enum kaslr_source */
    uint32_t reloc_count;  /* relocations applied */
    uint64_t tsc_cycles;   /* what kaslr_early took, in TSC ticks */
};

/* floor(log2(n)) for n >= 1, 0 for n == 0: the bits of a choice among n
 * equally likely places (rounded down, so never overstated). */
unsigned kaslr_bits(uint64_t n);

/* The layout for four random words (kernel, direct map, stacks, MMIO)
 * and an image whose last byte (physical, from 0) ends below image_end.
 * Returns 0, or -1 if the image does not fit in the kernel window. */
int kaslr_plan(const uint64_t rnd[4], uint64_t image_end, struct kaslr_layout *out);

/* Apply the relocation table of tools/kreloc/kreloc.py (`len` bytes at
 * `table`) for `slide`: each site's link address (sign-extended from the
 * table's 32 bits) is turned into a pointer by site(ctx, addr), which
 * returns NULL for an address outside the image. Returns the number of
 * sites changed, or -1 for a table that is truncated, has a wrong magic
 * or names a site outside the image (nothing is changed then: the table
 * is checked in full first). */
long kreloc_apply(const uint8_t *table, size_t len, uint64_t slide,
                  uint8_t *(*site)(void *ctx, uint64_t addr), void *ctx);

#endif
