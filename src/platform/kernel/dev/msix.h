/*
 * msix.h - MSI-X for one PCI function: its capability checked by
 * dev/pcicap.c, its table mapped uncached and non-executable from its BAR,
 * entries aimed at the boot CPU's local APIC.
 */
#ifndef TERN_DEV_MSIX_H
#define TERN_DEV_MSIX_H

#include "dev/pci.h"

#include <stdint.h>

struct msix {
    struct pci_dev pci;
    uint8_t cap;                 /* capability offset in configuration space */
    uint16_t entries;
    volatile uint32_t *table;    /* entries x 4 dwords */
};

/* Check the capability at cap against the function's BARs (base and size
 * of each; size 0 = unusable), map the table and mask every entry, with
 * MSI-X enabled but the whole function masked. 0, or -1 with *err. */
int msix_init(struct msix *m, const struct pci_dev *pd, unsigned cap, const uint64_t base[6],
              const uint64_t size[6], const char **err);
/* Aim entry at vector on the boot CPU (fixed delivery, edge) and unmask
 * it. 0, or -1 if the table has no such entry. */
int msix_route(struct msix *m, uint16_t entry, uint8_t vector);
/* As msix_route, aimed at the local APIC apic_id (xAPIC: 8 bits). The
 * entry is masked while it changes: a message raised meanwhile is held
 * pending and sent to the new CPU on unmask. */
int msix_route_to(struct msix *m, uint16_t entry, uint8_t vector, uint8_t apic_id);
/* Lift the function mask: routed entries may now interrupt. */
void msix_start(struct msix *m);
/* Mask the function and turn MSI-X off (the device falls back to no
 * interrupts at all: INTx stays disabled). */
void msix_stop(struct msix *m);

#endif
