/*
 * pci.h - PCI configuration space and the list of devices found at boot.
 * Configuration space is reached through ECAM when the ACPI MCFG table
 * describes a usable window (all 4 KiB of each function), else through
 * legacy configuration mechanism #1 (ports 0xCF8/0xCFC, first 256 bytes).
 */
#ifndef TERN_DEV_PCI_H
#define TERN_DEV_PCI_H

#include "bootinfo.h"

#include <stdint.h>

struct pci_dev {
    uint8_t bus, dev, fn;
    uint16_t vendor, device;
    uint8_t class_code, subclass, prog_if, header_type;
};

enum { PCI_MAX_DEVICES = 64 };

/* Choose the access method and say which on the console. Before any other
 * call; until then (and without ECAM) the ports are used. */
void pci_init(const struct boot_info *bi);
/* "ECAM" or "legacy configuration ports", for the boot log. */
const char *pci_access_name(void);
/* Dword at off (rounded down to 4). Outside what the method reaches (a bus
 * beyond the ECAM window, off >= 256 through the ports) reads return all
 * ones and writes are dropped. */
uint32_t pci_read32(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t off);
void pci_write32(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t off, uint32_t v);
/* Scan every bus; fills out (up to max); returns the number found. */
unsigned pci_enumerate(struct pci_dev *out, unsigned max);

#endif
