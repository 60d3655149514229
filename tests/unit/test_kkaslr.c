/*
 * test_kkaslr.c - the pure part of KASLR (arch/x86_64/kaslr_plan.c) on the
 * host. Checked: the bits stated are floor(log2) of the places (never
 * overstated); every placement stays inside its window and on its
 * alignment for extreme random words; different words give different
 * places; an image too big for the window is refused. The relocation
 * applier: 64-bit and 32S sites of an image in a buffer move by the
 * slide (32S values stay sign-extended into the top 2 GiB), boot-section
 * sites translate too; a wrong magic, a truncated table, counts that do
 * not match the length, and a site outside the image are each refused
 * with the image unchanged (ASan: nothing read beyond the table).
 */
#include "test.h"

#include "platform/kernel/arch/x86_64/kaslr_plan.c"

#include <stdlib.h>

#define VMA 0xffffffff80000000ull

TEST(kaslr_bits_are_floor_log2_of_the_places)
{
    CHECK_EQ(kaslr_bits(0), 0u);
    CHECK_EQ(kaslr_bits(1), 0u);
    CHECK_EQ(kaslr_bits(2), 1u);
    CHECK_EQ(kaslr_bits(1023), 9u);
    CHECK_EQ(kaslr_bits(1024), 10u);
    CHECK_EQ(kaslr_bits(1ull << 40), 40u);
}

TEST(kaslr_plan_stays_inside_each_window_and_alignment)
{
    const uint64_t words[][4] = {
        {0, 0, 0, 0}, {~0ull, ~0ull, ~0ull, ~0ull}, {1, 2, 3, 4},
        {0x123456789abcdefull, 0xfedcba987654321ull, 0x5555555555555555ull, 0xaaaaaaaaaaaaaaaull},
    };
    uint64_t image_end = 0x7a0000; /* about tern's: 7.6 MiB */
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        struct kaslr_layout l;
        CHECK_EQ(kaslr_plan(words[i], image_end, &l), 0);
        CHECK_EQ(l.slide % KASLR_KERNEL_ALIGN, 0u);
        CHECK(l.slide + 0x800000 <= KASLR_KERNEL_SPAN); /* image rounded up to 8 MiB */
        CHECK_EQ(l.dmap_off % KASLR_DMAP_ALIGN, 0u);
        CHECK(l.dmap_off < KASLR_DMAP_SPAN);
        CHECK_EQ(l.stack_off % KASLR_STACK_ALIGN, 0u);
        CHECK(l.stack_off < KASLR_STACK_SPAN);
        CHECK_EQ(l.mmio_off % KASLR_MMIO_ALIGN, 0u);
        CHECK(l.mmio_off < KASLR_MMIO_SPAN);
        /* (2 GiB - 8 MiB) / 2 MiB + 1 = 1021 places: 9 bits, not 10. */
        CHECK_EQ(l.kernel_bits, 9u);
        CHECK_EQ(l.dmap_bits, 24u);
        CHECK_EQ(l.stack_bits, 28u);
        CHECK_EQ(l.mmio_bits, 19u);
    }
    /* The last place: the image ends exactly at the top of memory. */
    struct kaslr_layout l;
    uint64_t last[4] = {1020, 0, 0, 0};
    CHECK_EQ(kaslr_plan(last, image_end, &l), 0);
    CHECK_EQ(l.slide, KASLR_KERNEL_SPAN - 0x800000);
}

TEST(kaslr_plan_differs_for_different_words)
{
    uint64_t a[4] = {11, 22, 33, 44}, b[4] = {12, 23, 34, 45};
    struct kaslr_layout la, lb;
    CHECK_EQ(kaslr_plan(a, 0x400000, &la), 0);
    CHECK_EQ(kaslr_plan(b, 0x400000, &lb), 0);
    CHECK(la.slide != lb.slide);
    CHECK(la.dmap_off != lb.dmap_off);
    CHECK(la.stack_off != lb.stack_off);
    CHECK(la.mmio_off != lb.mmio_off);
}

TEST(kaslr_plan_refuses_an_image_beyond_the_window)
{
    uint64_t w[4] = {0};
    struct kaslr_layout l;
    CHECK_EQ(kaslr_plan(w, KASLR_KERNEL_SPAN + 1, &l), -1);
    CHECK_EQ(kaslr_plan(w, 0, &l), -1);
    CHECK_EQ(kaslr_plan(w, KASLR_KERNEL_SPAN, &l), 0);
    CHECK_EQ(l.slide, 0u);
    CHECK_EQ(l.kernel_bits, 0u);
}

/* A fake image: 4 KiB at physical 1 MiB, linked at VMA + 1 MiB. */
struct img {
    uint8_t b[4096];
};

static uint8_t *img_site(void *ctx, uint64_t addr)
{
    struct img *m = ctx;
    uint64_t pa = addr >= VMA ? addr - VMA : addr;
    if (pa < 0x100000 || pa > 0x100000 + sizeof m->b - 8)
        return NULL;
    return m->b + (pa - 0x100000);
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* A table with the given sites (link addresses, low 32 bits). */
static size_t table(uint8_t *t, const uint32_t *s64, uint32_t n64, const uint32_t *s32, uint32_t n32)
{
    memcpy(t, "KREL", 4);
    put32(t + 4, n64);
    put32(t + 8, n32);
    put32(t + 12, 0);
    for (uint32_t i = 0; i < n64; i++)
        put32(t + 16 + 4 * i, s64[i]);
    for (uint32_t i = 0; i < n32; i++)
        put32(t + 16 + 4 * (n64 + i), s32[i]);
    return 16 + 4 * (size_t)(n64 + n32);
}

TEST(kreloc_moves_64bit_and_32s_sites_by_the_slide)
{
    struct img m;
    memset(&m, 0, sizeof m);
    put64(m.b + 0x10, VMA + 0x100040);         /* a pointer in .data */
    put64(m.b + 0x20, VMA + 0x100080);         /* an immediate in the boot code */
    put32(m.b + 0x30, (uint32_t)(VMA + 0x100100)); /* a 32S displacement */
    put32(m.b + 0x40, 0x00100000u);            /* symbol - KERNEL_VMA, folded */
    uint32_t s64[] = {(uint32_t)(VMA + 0x100010), 0x100020u};
    uint32_t s32[] = {(uint32_t)(VMA + 0x100030), (uint32_t)(VMA + 0x100040)};
    uint8_t t[64];
    size_t len = table(t, s64, 2, s32, 2);
    uint64_t slide = 0x3fe00000;
    CHECK_EQ(kreloc_apply(t, len, slide, img_site, &m), 4);
    CHECK_EQ(get64(m.b + 0x10), VMA + 0x100040 + slide);
    CHECK_EQ(get64(m.b + 0x20), VMA + 0x100080 + slide);
    uint32_t v;
    memcpy(&v, m.b + 0x30, 4);
    CHECK_EQ((uint64_t)(int64_t)(int32_t)v, VMA + 0x100100 + slide);
    memcpy(&v, m.b + 0x40, 4);
    CHECK_EQ(v, 0x00100000u + (uint32_t)slide);
    /* Untouched bytes stay zero. */
    CHECK_EQ(get64(m.b + 0x50), 0u);
}

TEST(kreloc_refuses_bad_tables_and_changes_nothing)
{
    struct img m, orig;
    memset(&m, 0x5a, sizeof m);
    orig = m;
    uint32_t good[] = {(uint32_t)(VMA + 0x100010)};
    uint32_t outside[] = {(uint32_t)(VMA + 0x100010), (uint32_t)(VMA + 0x200000)};
    uint32_t edge[] = {(uint32_t)(VMA + 0x100000 + 4096 - 4)}; /* 8 bytes would overrun */
    uint8_t t[64];

    size_t len = table(t, good, 1, NULL, 0);
    t[0] = 'X';
    CHECK_EQ(kreloc_apply(t, len, 0x200000, img_site, &m), -1);
    len = table(t, good, 1, NULL, 0);
    for (size_t cut = 0; cut < len; cut++) {
        uint8_t *copy = malloc(cut ? cut : 1);
        memcpy(copy, t, cut);
        CHECK_EQ(kreloc_apply(copy, cut, 0x200000, img_site, &m), -1);
        free(copy);
    }
    /* A count beyond the entries present, and one short of them. */
    put32(t + 4, 2);
    CHECK_EQ(kreloc_apply(t, len, 0x200000, img_site, &m), -1);
    put32(t + 4, 0xffffffffu);
    CHECK_EQ(kreloc_apply(t, len, 0x200000, img_site, &m), -1);
    len = table(t, good, 1, NULL, 0);
    CHECK_EQ(kreloc_apply(t, len + 4, 0x200000, img_site, &m), -1);
    /* A site outside the image: refused before the first one is changed. */
    len = table(t, outside, 2, NULL, 0);
    CHECK_EQ(kreloc_apply(t, len, 0x200000, img_site, &m), -1);
    len = table(t, edge, 1, NULL, 0);
    CHECK_EQ(kreloc_apply(t, len, 0x200000, img_site, &m), -1);
    CHECK_MEM(&m, &orig, sizeof m);
    /* An empty but well-formed table is fine. */
    len = table(t, NULL, 0, NULL, 0);
    CHECK_EQ(kreloc_apply(t, len, 0x200000, img_site, &m), 0);
}
