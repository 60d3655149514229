/*
 * pci_ecam.c - sets up ECAM from the ACPI MCFG table. The table is
 * firmware input: its entries are checked by acpi/tables.c; here the
 * window chosen (segment 0 - tern enumerates one segment) must not overlap
 * RAM or ACPI memory in the boot memory map (a lying MCFG must not make
 * configuration writes land in memory), and where legacy configuration
 * ports answer, device 00:00.0 must read the same through both ways
 * before the window is used.
 */
#include "dev/pci_ecam.h"

#include "acpi/acpi.h"
#include "acpi/tables.h"
#include "arch/x86_64/cpu.h"
#include "mm/paging.h"

#include <stdio.h>

/* Mechanism #1, only for the cross-check. */
static uint32_t legacy_id(void)
{
    outl(0xCF8, 0x80000000u);
    return inl(0xCFC);
}

static int overlaps_memory(const struct boot_info *bi, uint64_t base, uint64_t len)
{
    for (unsigned i = 0; i < bi->nregions; i++) {
        const struct mem_region *r = &bi->regions[i];
        if (r->type != MEM_USABLE && r->type != MEM_ACPI_RECLAIM && r->type != MEM_ACPI_NVS)
            continue;
        if (r->base < base + len && base < r->base + r->len)
            return 1;
    }
    return 0;
}

int pci_ecam_setup(const struct boot_info *bi, struct pci_ecam *out, char *why, size_t n)
{
    if (acpi_init(bi) < 0) {
        snprintf(why, n, "no ACPI tables");
        return -1;
    }
    uint8_t table[ACPI_MCFG_MAX_LEN];
    const char *err;
    long len = acpi_table("MCFG", table, sizeof table, &err);
    if (len < 0) {
        snprintf(why, n, "MCFG %s", err);
        return -1;
    }
    struct acpi_mcfg_entry e[ACPI_MCFG_MAX_ENTRIES];
    unsigned skipped;
    int count = acpi_mcfg_parse(table, (size_t)len, e, ACPI_MCFG_MAX_ENTRIES, &skipped, &err);
    if (count < 0) {
        snprintf(why, n, "%s", err);
        return -1;
    }
    const struct acpi_mcfg_entry *m = NULL;
    for (int i = 0; i < count && !m; i++)
        if (e[i].segment == 0)
            m = &e[i];
    if (!m) {
        snprintf(why, n, "MCFG has no entry for PCI segment 0");
        return -1;
    }
    uint64_t phys = m->base + ((uint64_t)m->bus_start << 20);
    uint64_t size = ((uint64_t)m->bus_end - m->bus_start + 1) << 20;
    if (overlaps_memory(bi, phys, size)) {
        snprintf(why, n, "the MCFG window overlaps RAM in the memory map");
        return -1;
    }
    struct pci_ecam ecam = {
        .window = vm_map_mmio(phys, size), .phys = phys,
        .bus_start = m->bus_start, .bus_end = m->bus_end,
    };
    if (m->bus_start == 0) {
        uint32_t legacy = legacy_id(), via_ecam = *pci_ecam_at(&ecam, 0, 0, 0, 0);
        if (legacy != 0xFFFFFFFFu && legacy != via_ecam) {
            snprintf(why, n, "00:00.0 reads %08x through the MCFG window, %08x through the "
                     "ports", via_ecam, legacy);
            return -1;
        }
    }
    *out = ecam;
    if (skipped)
        snprintf(why, n, "%u MCFG entries skipped", skipped);
    else if (n)
        why[0] = '\0';
    return 0;
}
