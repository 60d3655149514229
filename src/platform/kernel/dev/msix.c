/*
 * msix.c - programs a function's MSI-X table. The capability is read from
 * a fresh configuration-space snapshot and checked by pcicap_msix (table
 * and pending bits inside their BARs); only then is the table mapped. The
 * message control register is updated with read-modify-write of its
 * dword (the capability ID and next pointer in the low half are read-only).
 * Messages go to the boot CPU's local APIC: address 0xFEE00000 | ID << 12,
 * data = vector (fixed delivery, edge-triggered).
 */
#include "dev/msix.h"

#include "arch/x86_64/lapic.h"
#include "dev/pcicap.h"
#include "mm/paging.h"

#include <string.h>

enum { ENTRY_ADDR_LO = 0, ENTRY_ADDR_HI = 1, ENTRY_DATA = 2, ENTRY_CTRL = 3, CTRL_MASKED = 1 };

static void set_control(struct msix *m, uint16_t set, uint16_t clear)
{
    const struct pci_dev *pd = &m->pci;
    uint32_t v = pci_read32(pd->bus, pd->dev, pd->fn, m->cap);
    v = (v | (uint32_t)set << 16) & ~((uint32_t)clear << 16);
    pci_write32(pd->bus, pd->dev, pd->fn, m->cap, v);
}

int msix_init(struct msix *m, const struct pci_dev *pd, unsigned cap, const uint64_t base[6],
              const uint64_t size[6], const char **err)
{
    uint8_t cfg[PCI_CFG_BYTES];
    for (unsigned off = 0; off < PCI_CFG_BYTES; off += 4) {
        uint32_t v = pci_read32(pd->bus, pd->dev, pd->fn, (uint16_t)off);
        memcpy(cfg + off, &v, 4);
    }
    struct msix_layout lay;
    if (pcicap_msix(cfg, cap, size, &lay, err) < 0)
        return -1;
    memset(m, 0, sizeof *m);
    m->pci = *pd;
    m->cap = (uint8_t)cap;
    m->entries = lay.entries;
    m->table = vm_map_mmio(base[lay.table_bar] + lay.table_offset,
                           (size_t)lay.entries * MSIX_ENTRY_LEN);
    /* Function masked while entries are programmed (PCI 3.0, 6.8.2.3). */
    set_control(m, MSIX_CTRL_ENABLE | MSIX_CTRL_FUNCTION_MASK, 0);
    for (uint16_t i = 0; i < m->entries; i++)
        m->table[4u * i + ENTRY_CTRL] = CTRL_MASKED;
    return 0;
}

int msix_route(struct msix *m, uint16_t entry, uint8_t vector)
{
    return msix_route_to(m, entry, vector, lapic_id());
}

int msix_route_to(struct msix *m, uint16_t entry, uint8_t vector, uint8_t apic_id)
{
    if (entry >= m->entries)
        return -1;
    volatile uint32_t *e = m->table + 4u * entry;
    e[ENTRY_CTRL] = CTRL_MASKED;
    e[ENTRY_ADDR_LO] = LAPIC_MSI_ADDRESS | (uint32_t)apic_id << 12;
    e[ENTRY_ADDR_HI] = 0;
    e[ENTRY_DATA] = vector;
    e[ENTRY_CTRL] = 0;
    return 0;
}

void msix_start(struct msix *m) { set_control(m, 0, MSIX_CTRL_FUNCTION_MASK); }

void msix_stop(struct msix *m)
{
    set_control(m, MSIX_CTRL_FUNCTION_MASK, MSIX_CTRL_ENABLE);
}
