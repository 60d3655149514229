/*
 * hw.c - the hardware report's machine half (hw.h): cpu and hypervisor
 * (CPUID through hwcpu.c), the measured TSC rate (against the ACPI PM
 * timer, an oscillator independent of the TSC, else the PIT figure boot
 * measured), cores (the ACPI MADT through acpi/madt.c), memory (the
 * loader's map and the frame allocator) and firmware; then the devices
 * (hwdev.c) and the RNG panel (rngpanel.c).
 */
#include "diag/hw.h"

#include "acpi/acpi.h"
#include "acpi/madt.h"
#include "acpi/sleep.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/memlayout.h"
#include "diag/hwcpu.h"
#include "diag/hwdev.h"
#include "diag/hwrate.h"
#include "diag/hwtext.h"
#include "mm/kmalloc.h"
#include "mm/pmm.h"

#include <stdio.h>
#include <string.h>

enum {
    FADT_MAX_LEN = 4096,
    FADT_PM_TMR_BLK = 76,       /* I/O port of the PM timer (ACPI 6.5, 5.2.9) */
    FADT_PM_TMR_LEN = 91,       /* 4 when there is one */
    FADT_FLAGS = 112,
    FADT_TMR_VAL_EXT = 1 << 8,  /* 32-bit counter, else 24-bit */
    FADT_HW_REDUCED = 1 << 20,  /* no fixed hardware: no PM timer */
    FADT_MINOR = 131,           /* ACPI 5.1+: FADT minor version */
    PM_TIMER_HZ = 3579545,
    PM_WINDOW = PM_TIMER_HZ / 20, /* 50 ms of PM timer ticks */
    PM_ROUNDS = 3,
    PM_SPIN_MAX = 50000000,     /* bounded waits: a stuck timer cannot hang diag */
    TEXT_MAX = 96,
};

static void real_cpuid(void *ctx, uint32_t leaf, uint32_t sub, uint32_t r[4])
{
    (void)ctx;
    cpuid(leaf, sub, r);
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The FADT copy (kmalloc'd) and its length, or NULL with *why. */
struct fadt {
    uint8_t *b;
    long len;
    const char *why;
};

/* TSC ticks over PM_WINDOW PM timer ticks, best of PM_ROUNDS, as kHz;
 * 0 with *why when the timer is absent or does not advance. */
static uint64_t tsc_vs_pm_timer(const struct fadt *f, uint16_t *port_out, const char **why)
{
    if (!f->b) {
        *why = f->why;
        return 0;
    }
    if (le32(f->b + FADT_FLAGS) & FADT_HW_REDUCED) { /* len >= ACPI_FADT_MIN_LEN */
        *why = "hardware-reduced ACPI: no PM timer";
        return 0;
    }
    uint32_t port = le32(f->b + FADT_PM_TMR_BLK);
    if (!port || port > 0xFFFC || f->b[FADT_PM_TMR_LEN] != 4) {
        *why = "the FADT gives no PM timer port";
        return 0;
    }
    *port_out = (uint16_t)port;
    uint32_t mask = (le32(f->b + FADT_FLAGS) & FADT_TMR_VAL_EXT) ? 0xFFFFFFFFu : 0xFFFFFFu;
    uint64_t best = 0;
    for (int round = 0; round < PM_ROUNDS; round++) {
        /* Start on a tick edge so the window is whole ticks. */
        uint32_t p0 = inl((uint16_t)port) & mask, p;
        unsigned spin = 0;
        while (((p = inl((uint16_t)port) & mask)) == p0 && ++spin < PM_SPIN_MAX)
            ;
        if (spin >= PM_SPIN_MAX) {
            *why = "the PM timer does not advance";
            return 0;
        }
        uint64_t c0 = rdtsc();
        uint32_t d = 0;
        spin = 0;
        while ((d = ((inl((uint16_t)port) & mask) - p) & mask) < PM_WINDOW &&
               ++spin < PM_SPIN_MAX)
            ;
        uint64_t c1 = rdtsc();
        if (spin >= PM_SPIN_MAX) {
            *why = "the PM timer stalled during the measurement";
            return 0;
        }
        uint64_t khz = hw_muldiv(c1 - c0, PM_TIMER_HZ, (uint64_t)d * 1000);
        /* The smallest: a delay between the last timer read and the TSC
         * read (an interrupt, the host) only adds TSC ticks. */
        if (!best || khz < best)
            best = khz;
    }
    return best;
}

static void write_cpu(jw *w, const struct hw_cpu *c, const struct diag_env *env,
                      const struct fadt *f)
{
    jw_obj(w, "cpu");
    jw_str(w, "vendor", c->vendor);
    if (c->brand[0])
        jw_str(w, "brand", c->brand);
    else {
        jw_null(w, "brand");
        jw_str(w, "brand_why", "CPUID gives no brand string (leaves 0x80000002-4)");
    }
    jw_u64(w, "family", c->family);
    jw_u64(w, "model", c->model);
    jw_u64(w, "stepping", c->stepping);
    jw_obj(w, "features");
    jw_bool(w, "aes_ni", c->aes_ni);
    jw_bool(w, "pclmulqdq", c->pclmulqdq);
    jw_bool(w, "sse4_2", c->sse4_2);
    jw_bool(w, "avx2", c->avx2);
    jw_bool(w, "bmi2", c->bmi2);
    jw_bool(w, "adx", c->adx);
    jw_bool(w, "sha_ni", c->sha_ni);
    jw_bool(w, "rdrand", c->rdrand);
    jw_bool(w, "rdseed", c->rdseed);
    jw_bool(w, "invariant_tsc", c->invariant_tsc);
    jw_bool(w, "x2apic", c->x2apic);
    jw_end(w);
    if (c->logical_per_package)
        jw_u64(w, "logical_per_package", c->logical_per_package);
    else {
        jw_null(w, "logical_per_package");
        jw_str(w, "logical_per_package_why", "CPUID leaf 1 does not give it (HTT clear)");
    }
    uint16_t port = 0;
    const char *why = NULL;
    uint64_t khz = tsc_vs_pm_timer(f, &port, &why);
    char against[TEXT_MAX];
    if (khz) {
        jw_u64(w, "measured_khz", khz);
        snprintf(against, sizeof against,
                 "acpi pm timer (port 0x%x, 3.579545 MHz), best of %d x 50 ms", port,
                 PM_ROUNDS);
        jw_str(w, "measured_against", against);
    } else if (env->tsc && env->tsc->hz) {
        /* Boot measured the TSC against the PIT: independent of it too. */
        jw_u64(w, "measured_khz", env->tsc->hz / 1000);
        snprintf(against, sizeof against, "pit channel 2, best of 3 x 50 ms at boot (%s)", why);
        jw_str(w, "measured_against", against);
    } else {
        jw_null(w, "measured_khz");
        snprintf(against, sizeof against, "not measurable: %s, and no PIT figure from boot",
                 why);
        jw_str(w, "measured_khz_why", against);
    }
    if (env->tsc && env->tsc->hz)
        jw_u64(w, "boot_pit_khz", env->tsc->hz / 1000);
    else {
        jw_null(w, "boot_pit_khz");
        jw_str(w, "boot_pit_khz_why", "boot did not say");
    }
    if (c->tsc_khz) {
        jw_u64(w, "tsc_khz", c->tsc_khz);
        jw_str(w, "tsc_khz_source", c->tsc_khz_source);
    } else {
        jw_null(w, "tsc_khz");
        jw_str(w, "tsc_khz_why", c->tsc_khz_why);
    }
    jw_end(w);
}

static void write_hypervisor(jw *w, const struct hw_cpu *c)
{
    jw_obj(w, "hypervisor");
    jw_bool(w, "present", c->hypervisor_bit);
    if (!c->hypervisor_bit) {
        static const char none[] = "CPUID's hypervisor bit is clear (bare metal, or a "
                                   "hypervisor that hides itself)";
        jw_null(w, "signature");
        jw_str(w, "signature_why", none);
        jw_null(w, "name");
        jw_str(w, "name_why", none);
        jw_end(w);
        return;
    }
    jw_str(w, "signature", c->hv_sig);
    if (c->hv_name)
        jw_str(w, "name", c->hv_name);
    else {
        jw_null(w, "name");
        jw_str(w, "name_why", "signature not in tern's list");
    }
    char hex[16];
    snprintf(hex, sizeof hex, "0x%08x", c->hv_max_leaf);
    jw_str(w, "max_leaf", hex);
    if (c->hv_tsc_khz) {
        jw_u64(w, "tsc_khz", c->hv_tsc_khz);
        jw_u64(w, "apic_khz", c->hv_apic_khz);
    } else {
        jw_null(w, "tsc_khz");
        jw_str(w, "tsc_khz_why", c->hv_max_leaf >= 0x40000010
                                     ? "leaf 0x40000010 gives 0"
                                     : "no timing leaf 0x40000010");
    }
    jw_end(w);
}

static void write_cores(jw *w)
{
    jw_obj(w, "cores");
    const char *err = NULL;
    uint8_t *buf = kmalloc(MADT_MAX_LEN);
    struct madt_info *m = kmalloc(sizeof *m);
    long len = buf && m ? acpi_table("APIC", buf, MADT_MAX_LEN, &err) : -1;
    if (!buf || !m)
        err = "no memory for the table";
    if (len >= 0 && madt_parse(buf, (size_t)len, m, &err) < 0)
        len = -1;
    if (len < 0) {
        char why[TEXT_MAX];
        snprintf(why, sizeof why, "ACPI MADT: %s", err ? err : "unusable");
        static const char *const keys[] = {"enabled", "online_capable", "apic_ids", "ioapics"};
        for (unsigned i = 0; i < 4; i++) {
            char k[32];
            jw_null(w, keys[i]);
            snprintf(k, sizeof k, "%s_why", keys[i]);
            jw_str(w, k, why);
        }
    } else {
        jw_u64(w, "enabled", m->cpus_enabled);
        jw_u64(w, "online_capable", m->cpus_online_capable);
        jw_u64(w, "disabled", m->cpus_disabled);
        jw_arr(w, "apic_ids");
        unsigned x2 = 0;
        for (unsigned i = 0; i < m->ncpus; i++) {
            jw_u64(w, NULL, m->cpu[i].apic_id);
            x2 += m->cpu[i].x2apic;
        }
        jw_end(w);
        jw_u64(w, "x2apic_entries", x2);
        if (m->cpus_dropped)
            jw_u64(w, "apic_ids_not_listed", m->cpus_dropped);
        jw_u64(w, "ioapics", m->nioapics);
        jw_u64(w, "interrupt_overrides", m->noverrides);
        jw_u64(w, "nmi_entries", m->nmi_sources + m->lapic_nmis);
        jw_u64(w, "entries_skipped", m->malformed + m->unknown + m->cpus_duplicate);
        char hex[24];
        snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)m->lapic_addr);
        jw_str(w, "lapic_address", hex);
        jw_bool(w, "legacy_pics", (m->flags & MADT_PCAT_COMPAT) != 0);
    }
    jw_u64(w, "used_by_tern", 1); /* the boot CPU; SMP is issue 18 */
    kfree(m);
    kfree(buf);
    jw_end(w);
}

static const char *region_type(uint32_t t)
{
    switch (t) {
    case MEM_USABLE: return "usable";
    case MEM_RESERVED: return "reserved";
    case MEM_ACPI_RECLAIM: return "acpi_reclaimable";
    case MEM_ACPI_NVS: return "acpi_nvs";
    case 5: return "bad";
    case 7: return "persistent";
    default: return "other";
    }
}

static void write_memory(jw *w, const struct boot_info *bi)
{
    static const uint32_t types[] = {MEM_USABLE, MEM_RESERVED, MEM_ACPI_RECLAIM, MEM_ACPI_NVS,
                                     5, 7, 0};
    jw_obj(w, "memory");
    uint64_t total = 0, span = 0, largest = 0, largest_base = 0;
    for (unsigned i = 0; i < bi->nregions; i++) {
        const struct mem_region *r = &bi->regions[i];
        span += r->len;
        /* RAM: every type but "reserved" (which also covers device holes). */
        if (r->type != MEM_RESERVED)
            total += r->len;
        if (r->type == MEM_USABLE && r->len > largest) {
            largest = r->len;
            largest_base = r->base;
        }
    }
    jw_u64(w, "usable_bytes", bi->usable_bytes);
    jw_u64(w, "total_bytes", total);
    jw_u64(w, "map_bytes", span); /* every region, reserved ones included */
    jw_str(w, "map_from", bi->loader);
    jw_arr(w, "regions");
    for (unsigned t = 0; t < sizeof types / sizeof types[0]; t++) {
        uint64_t count = 0, bytes = 0;
        for (unsigned i = 0; i < bi->nregions; i++) {
            uint32_t rt = bi->regions[i].type;
            int known = 0;
            for (unsigned k = 0; k + 1 < sizeof types / sizeof types[0]; k++)
                known |= rt == types[k];
            if (types[t] ? rt == types[t] : !known) {
                count++;
                bytes += bi->regions[i].len;
            }
        }
        if (!count)
            continue;
        jw_obj(w, NULL);
        jw_str(w, "type", region_type(types[t] ? types[t] : 0xFFFF));
        jw_u64(w, "count", count);
        jw_u64(w, "bytes", bytes);
        jw_end(w);
    }
    jw_end(w);
    jw_u64(w, "largest_usable_bytes", largest);
    char hex[24];
    snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)largest_base);
    jw_str(w, "largest_usable_base", hex);
    jw_u64(w, "managed_bytes", (uint64_t)pmm_total_count() * PAGE_SIZE);
    jw_u64(w, "free_bytes", (uint64_t)pmm_free_count() * PAGE_SIZE);
    jw_end(w);
}

static void write_firmware(jw *w, const struct diag_env *env, const struct fadt *f)
{
    const struct boot_info *bi = env->boot;
    char text[BOOT_CMDLINE_MAX];
    jw_obj(w, "firmware");
    if (!strcmp(bi->loader, "multiboot2")) {
        jw_str(w, "type", bi->efi_tags ? "uefi" : "bios");
        jw_str(w, "type_from", bi->efi_tags ? "multiboot2 EFI tags (system table, memory map)"
                                            : "multiboot2 without EFI tags");
    } else {
        jw_null(w, "type");
        jw_str(w, "type_why", "PVH entry: the loader does not say which firmware ran (QEMU's "
                              "PVH boot runs SeaBIOS; Firecracker and Cloud Hypervisor none)");
    }
    jw_str(w, "loader", bi->loader);
    if (bi->loader_name[0]) {
        hw_printable(text, sizeof text, bi->loader_name);
        jw_str(w, "loader_name", text);
    } else {
        jw_null(w, "loader_name");
        jw_str(w, "loader_name_why", strcmp(bi->loader, "multiboot2")
                                         ? "PVH start info carries no loader name"
                                         : "no multiboot2 loader name tag");
    }
    acpi_describe(text, sizeof text);
    jw_str(w, "acpi_tables", text);
    if (f->b) {
        char oem[16];
        memcpy(text, f->b + 10, 6);
        text[6] = 0;
        hw_printable(oem, sizeof oem, text);
        jw_str(w, "acpi_oem_id", oem);
        jw_u64(w, "fadt_major", f->b[8]);
        if (f->len > FADT_MINOR)
            jw_u64(w, "fadt_minor", f->b[FADT_MINOR] & 0xF);
        else {
            jw_null(w, "fadt_minor");
            jw_str(w, "fadt_minor_why", "FADT older than ACPI 5.1");
        }
    } else {
        jw_null(w, "acpi_oem_id");
        jw_str(w, "acpi_oem_id_why", f->why);
        jw_null(w, "fadt_major");
        jw_str(w, "fadt_major_why", f->why);
    }
    jw_null(w, "smbios");
    jw_str(w, "smbios_why", "SMBIOS is not read by this build");
    hw_printable(text, sizeof text, bi->cmdline);
    jw_str(w, "cmdline", text);
    jw_end(w);
}

void diag_hw_write(jw *w, const struct diag_env *env)
{
    struct hw_cpu c;
    hw_cpu_decode(real_cpuid, NULL, &c);
    struct fadt f = {kmalloc(FADT_MAX_LEN), -1, NULL};
    if (!f.b)
        f.why = "no memory for the FADT";
    else if ((f.len = acpi_table("FACP", f.b, FADT_MAX_LEN, &f.why)) < ACPI_FADT_MIN_LEN) {
        if (f.len >= 0)
            f.why = "FADT shorter than its header";
        kfree(f.b);
        f.b = NULL;
    }
    write_cpu(w, &c, env, &f);
    write_hypervisor(w, &c);
    write_cores(w);
    write_memory(w, env->boot);
    write_firmware(w, env, &f);
    kfree(f.b);
    diag_hw_write_devices(w, env);
    diag_rng_write(w);
}
