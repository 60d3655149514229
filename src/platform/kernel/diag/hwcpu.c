/*
 * hwcpu.c - CPUID decoding for the hardware report (hwcpu.h). Bit
 * positions: Intel SDM vol. 2A, CPUID; AMD APM vol. 3, appendix E.
 * Leaves beyond the maximum the CPU gives are never asked for (Intel
 * returns the highest basic leaf's data for them, which would read as
 * features), and the hypervisor range only when CPUID says one is there.
 */
#include "hwcpu.h"

#include <string.h>

enum {
    HV_BASE = 0x40000000u,
    HV_TIMING = 0x40000010u,    /* VMware's and KVM's TSC / APIC timer leaf */
    HV_MAX_SANE = 0x400000FFu,  /* the range hypervisors use for leaves */
    EXT_BASE = 0x80000000u,
};

static const struct {
    const char *sig, *name;
} hv_names[] = {
    {"TCGTCGTCGTCG", "QEMU TCG"},
    {"KVMKVMKVM\0\0\0", "KVM"},
    {"Microsoft Hv", "Hyper-V"},
    {"VMwareVMware", "VMware"},
    {"XenVMMXenVMM", "Xen"},
    {"VBoxVBoxVBox", "VirtualBox"},
    {"bhyve bhyve ", "bhyve"},
    {"ACRNACRNACRN", "ACRN"},
    {" lrpepyh  vr", "Parallels"},
    {"QNXQVMBSQG\0\0", "QNX"},
    {"EVMMEVMMEVMM", "Intel KGT"},
    {"Linux KVM Hv", "KVM (Hyper-V interface)"},
};

const char *hw_hv_name(const char sig[12])
{
    for (unsigned i = 0; i < sizeof hv_names / sizeof hv_names[0]; i++)
        if (!memcmp(sig, hv_names[i].sig, 12))
            return hv_names[i].name;
    return NULL;
}

static void regs_text(char *out, const uint32_t *regs, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        for (unsigned b = 0; b < 4; b++)
            out[i * 4 + b] = (char)(regs[i] >> (8 * b));
    out[n * 4] = 0;
}

/* Keep printable ASCII only: the text goes into JSON and onto the screen. */
static void printable(char *s, unsigned n)
{
    for (unsigned i = 0; i < n && s[i]; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7E)
            s[i] = '?';
}

static bool bit(uint32_t v, unsigned b) { return (v >> b) & 1; }

void hw_cpu_decode(hw_cpuid_fn cpuid, void *ctx, struct hw_cpu *c)
{
    memset(c, 0, sizeof *c);
    uint32_t r[4];
    cpuid(ctx, 0, 0, r);
    c->max_leaf = r[0];
    uint32_t v[3] = {r[1], r[3], r[2]}; /* EBX, EDX, ECX */
    regs_text(c->vendor, v, 3);
    printable(c->vendor, sizeof c->vendor);

    if (c->max_leaf >= 1) {
        cpuid(ctx, 1, 0, r);
        uint32_t base_family = (r[0] >> 8) & 0xF, base_model = (r[0] >> 4) & 0xF;
        c->family = base_family == 0xF ? base_family + ((r[0] >> 20) & 0xFF) : base_family;
        c->model = base_family == 0x6 || base_family == 0xF
                       ? base_model + (((r[0] >> 16) & 0xF) << 4)
                       : base_model;
        c->stepping = r[0] & 0xF;
        c->pclmulqdq = bit(r[2], 1);
        c->sse4_2 = bit(r[2], 20);
        c->x2apic = bit(r[2], 21);
        c->aes_ni = bit(r[2], 25);
        c->rdrand = bit(r[2], 30);
        c->hypervisor_bit = bit(r[2], 31);
        if (bit(r[3], 28))
            c->logical_per_package = (r[1] >> 16) & 0xFF;
    }
    if (c->max_leaf >= 7) {
        cpuid(ctx, 7, 0, r);
        c->avx2 = bit(r[1], 5);
        c->bmi2 = bit(r[1], 8);
        c->rdseed = bit(r[1], 18);
        c->adx = bit(r[1], 19);
        c->sha_ni = bit(r[1], 29);
    }
    c->tsc_khz_why = "the CPU does not state it (no CPUID leaf 0x15 or 0x16)";
    if (c->max_leaf >= 0x15) {
        cpuid(ctx, 0x15, 0, r);
        /* TSC = crystal (ECX, Hz) x EBX / EAX; any zero: not enumerated */
        if (r[0] && r[1] && r[2]) {
            c->tsc_khz = (uint64_t)r[2] * r[1] / r[0] / 1000;
            c->tsc_khz_source = "cpuid 0x15";
            c->tsc_khz_why = NULL;
        } else {
            c->tsc_khz_why = "CPUID leaf 0x15 does not give the crystal frequency";
        }
    }
    if (!c->tsc_khz && c->max_leaf >= 0x16) {
        cpuid(ctx, 0x16, 0, r);
        if (r[0] & 0xFFFF) {
            c->tsc_khz = (uint64_t)(r[0] & 0xFFFF) * 1000;
            c->tsc_khz_source = "cpuid 0x16 base frequency";
            c->tsc_khz_why = NULL;
        }
    }

    cpuid(ctx, EXT_BASE, 0, r);
    c->max_ext_leaf = r[0] >= EXT_BASE && r[0] <= EXT_BASE + 0xFFFF ? r[0] : 0;
    if (c->max_ext_leaf >= EXT_BASE + 4) {
        uint32_t b[12];
        for (uint32_t i = 0; i < 3; i++)
            cpuid(ctx, EXT_BASE + 2 + i, 0, b + 4 * i);
        char raw[49];
        regs_text(raw, b, 12);
        const char *s = raw;
        while (*s == ' ')
            s++;
        size_t n = strlen(s);
        while (n && s[n - 1] == ' ')
            n--; /* brands are padded with spaces to 48 bytes */
        memcpy(c->brand, s, n);
        c->brand[n] = 0;
        printable(c->brand, sizeof c->brand);
    }
    if (c->max_ext_leaf >= EXT_BASE + 7) {
        cpuid(ctx, EXT_BASE + 7, 0, r);
        c->invariant_tsc = bit(r[3], 8);
    }

    if (c->hypervisor_bit) {
        cpuid(ctx, HV_BASE, 0, r);
        uint32_t s[3] = {r[1], r[2], r[3]}; /* EBX, ECX, EDX */
        regs_text(c->hv_sig, s, 3);
        c->hv_name = hw_hv_name(c->hv_sig);
        printable(c->hv_sig, sizeof c->hv_sig);
        /* Some hypervisors leave EAX 0 ("max leaf 0x40000001" implied). */
        c->hv_max_leaf = r[0] >= HV_BASE && r[0] <= HV_MAX_SANE ? r[0] : 0;
        if (c->hv_max_leaf >= HV_TIMING) {
            cpuid(ctx, HV_TIMING, 0, r);
            c->hv_tsc_khz = r[0];
            c->hv_apic_khz = r[1];
        }
    }
}
