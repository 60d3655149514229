/*
 * pci_ecam.h - PCI Express enhanced configuration access (ECAM): finds the
 * window of PCI segment 0 in the ACPI MCFG table, checks it against the
 * boot memory map and maps it uncached and non-executable.
 */
#ifndef TERN_DEV_PCI_ECAM_H
#define TERN_DEV_PCI_ECAM_H

#include "bootinfo.h"

#include <stddef.h>
#include <stdint.h>

struct pci_ecam {
    volatile uint8_t *window;   /* configuration space of bus_start */
    uint64_t phys;              /* physical address of the window */
    uint8_t bus_start, bus_end;
};

/* 0 with *out ready to use, or -1 with why (a phrase for the boot log)
 * when there is no usable window: then the legacy ports are the way. */
int pci_ecam_setup(const struct boot_info *bi, struct pci_ecam *out, char *why, size_t n);

/* The address of (bus, dev, fn, off) in the window, or NULL when the bus
 * is outside it. off < 4096. */
static inline volatile uint32_t *pci_ecam_at(const struct pci_ecam *e, uint8_t bus,
                                             uint8_t dev, uint8_t fn, uint16_t off)
{
    if (bus < e->bus_start || bus > e->bus_end)
        return NULL;
    uint64_t o = (uint64_t)(bus - e->bus_start) << 20 | (uint64_t)(dev & 31) << 15 |
                 (uint64_t)(fn & 7) << 12 | (off & 0xFFCu);
    return (volatile uint32_t *)(e->window + o);
}

#endif
