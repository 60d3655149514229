/*
 * test_khw_cpu.c - CPUID decoding for the hardware report (diag/hwcpu.c)
 * from recorded leaves: an AMD EPYC guest under bhyve (this project's
 * build machine), an Intel CPU stating its TSC through leaf 0x15 under a
 * hypervisor with the 0x40000010 timing leaf, and QEMU's TCG with its
 * signature; leaves past the CPU's maximum must not be asked for or
 * trusted.
 */
#include "test.h"

#include "platform/kernel/diag/hwcpu.c"

struct leaf {
    uint32_t leaf, sub;
    uint32_t r[4];
};

struct cpu_rec {
    const struct leaf *leaves;
    unsigned n;
    unsigned asked_unknown;     /* leaves asked for that the record lacks */
};

static void rec_cpuid(void *ctx, uint32_t leaf, uint32_t sub, uint32_t r[4])
{
    struct cpu_rec *c = ctx;
    for (unsigned i = 0; i < c->n; i++)
        if (c->leaves[i].leaf == leaf && c->leaves[i].sub == sub) {
            memcpy(r, c->leaves[i].r, 16);
            return;
        }
    c->asked_unknown++;
    /* What Intel does for leaves out of range: the highest basic leaf. */
    memset(r, 0xA5, 16);
}

/* Recorded on the build machine (Debian 12 guest, AMD EPYC, bhyve). */
static const struct leaf epyc_bhyve[] = {
    {0x00000000, 0, {0x0000000d, 0x68747541, 0x444d4163, 0x69746e65}},
    {0x00000001, 0, {0x00b00f21, 0x49fe0800, 0xfed83203, 0x178bfbff}},
    {0x00000007, 0, {0x00000001, 0xf1bb03a9, 0x18005f42, 0x00000110}},
    {0x80000000, 0, {0x80000021, 0x68747541, 0x444d4163, 0x69746e65}},
    {0x80000002, 0, {0x6469784f, 0x69562065, 0x61757472, 0x7554206c}},
    {0x80000003, 0, {0x2d6e6972, 0x656b696c, 0x6f725020, 0x73736563}},
    {0x80000004, 0, {0x2020726f, 0x20202020, 0x20202020, 0x00202020}},
    {0x80000007, 0, {0x00000000, 0x00000000, 0x00000000, 0x00000100}},
    {0x40000000, 0, {0x40000000, 0x76796862, 0x68622065, 0x20657679}},
};

TEST(khw_cpu_decodes_recorded_epyc_under_bhyve)
{
    struct cpu_rec rec = {epyc_bhyve, sizeof epyc_bhyve / sizeof epyc_bhyve[0], 0};
    struct hw_cpu c;
    hw_cpu_decode(rec_cpuid, &rec, &c);
    CHECK(!strcmp(c.vendor, "AuthenticAMD"));
    CHECK(!strcmp(c.brand, "Oxide Virtual Turin-like Processor"));
    CHECK_EQ(c.family, 0x1A);   /* base 0xF + extended 0xB */
    CHECK_EQ(c.model, 2);
    CHECK_EQ(c.stepping, 1);
    CHECK(c.aes_ni && c.pclmulqdq && c.sse4_2 && c.avx2 && c.bmi2 && c.adx && c.sha_ni);
    CHECK(c.rdrand && c.invariant_tsc && c.hypervisor_bit);
    CHECK(!c.rdseed && !c.x2apic);        /* bhyve hides both (Linux agrees on rdseed) */
    CHECK_EQ(c.logical_per_package, 0xFE);
    CHECK_EQ(c.tsc_khz, 0);
    CHECK(c.tsc_khz_why != NULL);
    CHECK(!strcmp(c.hv_sig, "bhyve bhyve "));
    CHECK(c.hv_name && !strcmp(c.hv_name, "bhyve"));
    CHECK_EQ(c.hv_max_leaf, 0x40000000);
    CHECK_EQ(c.hv_tsc_khz, 0);
    CHECK_EQ(rec.asked_unknown, 0);
}

/* Intel family 6 model 0x8C stepping 1 (extended model folded in), leaf
 * 0x15 = 38.4 MHz crystal x 156/2; VMware's timing leaf. */
static const struct leaf intel_vmware[] = {
    {0x00000000, 0, {0x0000001b, 0x756e6547, 0x6c65746e, 0x49656e69}},
    {0x00000001, 0, {0x000806c1, 0x00020800, 0x82200000 | (1u << 25) | (1u << 30), 0}},
    {0x00000007, 0, {0, 1u << 5, 0, 0}},
    {0x00000015, 0, {2, 156, 38400000, 0}},
    {0x80000000, 0, {0x80000008, 0, 0, 0}},
    {0x80000002, 0, {0, 0, 0, 0}},
    {0x80000003, 0, {0, 0, 0, 0}},
    {0x80000004, 0, {0, 0, 0, 0}},
    {0x80000007, 0, {0, 0, 0, 0}},
    {0x40000000, 0, {0x40000010, 0x61774d56, 0x4d566572, 0x65726177}},
    {0x40000010, 0, {2995200, 1000000, 0, 0}},
};

TEST(khw_cpu_intel_tsc_from_leaf_15_and_hypervisor_timing_leaf)
{
    struct cpu_rec rec = {intel_vmware, sizeof intel_vmware / sizeof intel_vmware[0], 0};
    struct hw_cpu c;
    hw_cpu_decode(rec_cpuid, &rec, &c);
    CHECK(!strcmp(c.vendor, "GenuineIntel"));
    CHECK_EQ(c.family, 6);
    CHECK_EQ(c.model, 0x8C);
    CHECK_EQ(c.stepping, 1);
    CHECK(c.x2apic && c.aes_ni && c.rdrand && c.avx2);
    CHECK(!c.rdseed && !c.adx && !c.sha_ni && !c.invariant_tsc);
    CHECK_EQ(c.logical_per_package, 0);   /* HTT (EDX bit 28) clear */
    CHECK_EQ(c.tsc_khz, 2995200);
    CHECK(!strcmp(c.tsc_khz_source, "cpuid 0x15"));
    CHECK(c.tsc_khz_why == NULL);
    CHECK(!strcmp(c.brand, ""));          /* brand leaves all zero */
    CHECK(c.hv_name && !strcmp(c.hv_name, "VMware"));
    CHECK_EQ(c.hv_tsc_khz, 2995200);
    CHECK_EQ(c.hv_apic_khz, 1000000);
    CHECK_EQ(rec.asked_unknown, 0);
}

/* QEMU TCG (qemu64): basic leaves up to 0xd only, hypervisor bit, its
 * signature, a leaf 0x15 with no crystal (falls to 0x16 when present). */
static const struct leaf tcg[] = {
    {0x00000000, 0, {0x00000016, 0x68747541, 0x444d4163, 0x69746e65}},
    {0x00000001, 0, {0x000663, 0x00000800, 0x80002001, 0x078bfbfd}},
    {0x00000007, 0, {0, 0, 0, 0}},
    {0x00000015, 0, {0, 0, 0, 0}},
    {0x00000016, 0, {2400, 2400, 100, 0}},
    {0x80000000, 0, {0x80000004, 0, 0, 0}},
    {0x80000002, 0, {0x554d4551, 0x72695620, 0x6c617574, 0x55504320}},
    {0x80000003, 0, {0x72657620, 0x6e6f6973, 0x352e3220, 0x0000002b}},
    {0x80000004, 0, {0, 0, 0, 0}},
    {0x40000000, 0, {0x40000001, 0x54474354, 0x43544743, 0x47435447}},
};

TEST(khw_cpu_tcg_signature_and_leaf_16_base_frequency)
{
    struct cpu_rec rec = {tcg, sizeof tcg / sizeof tcg[0], 0};
    struct hw_cpu c;
    hw_cpu_decode(rec_cpuid, &rec, &c);
    CHECK(c.hv_name && !strcmp(c.hv_name, "QEMU TCG"));
    CHECK(!strcmp(c.hv_sig, "TCGTCGTCGTCG"));
    CHECK_EQ(c.hv_max_leaf, 0x40000001);
    CHECK_EQ(c.hv_tsc_khz, 0);            /* leaf 0x40000010 beyond its max: not asked */
    CHECK(!strcmp(c.brand, "QEMU Virtual CPU version 2.5+"));
    CHECK_EQ(c.family, 6);
    CHECK_EQ(c.model, 6);
    CHECK_EQ(c.stepping, 3);
    CHECK(!c.invariant_tsc);              /* no leaf 0x80000007: not asked */
    CHECK_EQ(c.tsc_khz, 2400000);
    CHECK(!strcmp(c.tsc_khz_source, "cpuid 0x16 base frequency"));
    CHECK_EQ(rec.asked_unknown, 0);
}

/* A CPU with only leaf 0 and no hypervisor: nothing beyond is asked for,
 * every feature false, the TSC rate explained. */
static const struct leaf minimal[] = {
    {0x00000000, 0, {0x00000001, 0x756e6547, 0x6c65746e, 0x49656e69}},
    {0x00000001, 0, {0x00000f41, 0, 0, 0}},
    {0x80000000, 0, {0x00000001, 0, 0, 0}},   /* no extended range */
};

TEST(khw_cpu_never_reads_leaves_beyond_the_maximum)
{
    struct cpu_rec rec = {minimal, sizeof minimal / sizeof minimal[0], 0};
    struct hw_cpu c;
    hw_cpu_decode(rec_cpuid, &rec, &c);
    CHECK_EQ(rec.asked_unknown, 0);
    CHECK_EQ(c.family, 0xF);
    CHECK_EQ(c.model, 4);
    CHECK(!c.avx2 && !c.rdseed && !c.hypervisor_bit && !c.invariant_tsc);
    CHECK_EQ(c.max_ext_leaf, 0);
    CHECK(c.tsc_khz == 0 && c.tsc_khz_why != NULL);
    CHECK(c.hv_name == NULL && c.hv_sig[0] == 0);
}

TEST(khw_cpu_unknown_hypervisor_and_unprintable_signature)
{
    static const struct leaf odd[] = {
        {0x00000000, 0, {0x00000001, 0x756e6547, 0x6c65746e, 0x49656e69}},
        {0x00000001, 0, {0, 0, 1u << 31, 0}},
        {0x80000000, 0, {0, 0, 0, 0}},
        {0x40000000, 0, {0x12345678, 0x01414141, 0x42424242, 0x43434343}},
    };
    struct cpu_rec rec = {odd, 4, 0};
    struct hw_cpu c;
    hw_cpu_decode(rec_cpuid, &rec, &c);
    CHECK(c.hv_name == NULL);
    CHECK(!strcmp(c.hv_sig, "AAA?BBBBCCCC"));  /* made printable for JSON */
    CHECK_EQ(c.hv_max_leaf, 0);                /* outside the hypervisor range */
    CHECK_EQ(rec.asked_unknown, 0);
}
