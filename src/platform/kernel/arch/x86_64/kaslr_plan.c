/*
 * kaslr_plan.c - placement choice and relocation for KASLR (see
 * kaslr_plan.h). Compiled position-independent and linked into the fixed
 * boot section (kernel.mk, linker.ld): it runs before the higher half is
 * mapped, so it calls nothing outside this file and kaslr_early.c.
 */
#include "arch/x86_64/kaslr_plan.h"

unsigned kaslr_bits(uint64_t n)
{
    unsigned b = 0;
    while (n > 1) {
        n >>= 1;
        b++;
    }
    return b;
}

/* One of `slots` places for a 64-bit random word: the modulo bias is
 * below 2^-40 for every window here (slots < 2^24). */
static uint64_t pick(uint64_t rnd, uint64_t slots) { return rnd % slots; }

int kaslr_plan(const uint64_t rnd[4], uint64_t image_end, struct kaslr_layout *out)
{
    uint64_t image = (image_end + KASLR_KERNEL_ALIGN - 1) & ~(KASLR_KERNEL_ALIGN - 1);
    if (image == 0 || image > KASLR_KERNEL_SPAN)
        return -1;
    uint64_t kslots = (KASLR_KERNEL_SPAN - image) / KASLR_KERNEL_ALIGN + 1;
    uint64_t dslots = KASLR_DMAP_SPAN / KASLR_DMAP_ALIGN;
    uint64_t sslots = KASLR_STACK_SPAN / KASLR_STACK_ALIGN;
    uint64_t mslots = KASLR_MMIO_SPAN / KASLR_MMIO_ALIGN;
    out->slide = pick(rnd[0], kslots) * KASLR_KERNEL_ALIGN;
    out->dmap_off = pick(rnd[1], dslots) * KASLR_DMAP_ALIGN;
    out->stack_off = pick(rnd[2], sslots) * KASLR_STACK_ALIGN;
    out->mmio_off = pick(rnd[3], mslots) * KASLR_MMIO_ALIGN;
    out->kernel_bits = kaslr_bits(kslots);
    out->dmap_bits = kaslr_bits(dslots);
    out->stack_bits = kaslr_bits(sslots);
    out->mmio_bits = kaslr_bits(mslots);
    return 0;
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The table's 32-bit site: the higher half's sites sign-extend into the
 * top 2 GiB, the boot section's stay below 2 GiB. */
static uint64_t site_addr(uint32_t v) { return (uint64_t)(int64_t)(int32_t)v; }

long kreloc_apply(const uint8_t *table, size_t len, uint64_t slide,
                  uint8_t *(*site)(void *ctx, uint64_t addr), void *ctx)
{
    if (len < 16 || table[0] != 'K' || table[1] != 'R' || table[2] != 'E' || table[3] != 'L')
        return -1;
    uint64_t n64 = get32(table + 4), n32 = get32(table + 8);
    if ((len - 16) / 4 < n64 + n32 || (len - 16) % 4 || (len - 16) / 4 != n64 + n32)
        return -1;
    const uint8_t *e = table + 16;
    for (uint64_t i = 0; i < n64 + n32; i++) {
        uint8_t *p = site(ctx, site_addr(get32(e + 4 * i)));
        if (!p)
            return -1;
    }
    for (uint64_t i = 0; i < n64; i++) {
        uint8_t *p = site(ctx, site_addr(get32(e + 4 * i)));
        uint64_t v = 0;
        for (int b = 0; b < 8; b++)
            v |= (uint64_t)p[b] << (8 * b);
        v += slide;
        for (int b = 0; b < 8; b++)
            p[b] = (uint8_t)(v >> (8 * b));
    }
    for (uint64_t i = n64; i < n64 + n32; i++) {
        uint8_t *p = site(ctx, site_addr(get32(e + 4 * i)));
        uint32_t v = get32(p) + (uint32_t)slide;
        for (int b = 0; b < 4; b++)
            p[b] = (uint8_t)(v >> (8 * b));
    }
    return (long)(n64 + n32);
}
