/*
 * pci.h - PCI configuration space and the list of devices found at boot.
 * Legacy configuration mechanism #1 (ports 0xCF8/0xCFC) for now; ECAM via
 * the ACPI MCFG table comes with the ACPI parser.
 */
#ifndef TERN_DEV_PCI_H
#define TERN_DEV_PCI_H

#include <stdint.h>

struct pci_dev {
    uint8_t bus, dev, fn;
    uint16_t vendor, device;
    uint8_t class_code, subclass, prog_if, header_type;
};

enum { PCI_MAX_DEVICES = 64 };

uint32_t pci_read32(uint8_t bus, uint8_t dev, uint8_t fn, uint8_t off);
void pci_write32(uint8_t bus, uint8_t dev, uint8_t fn, uint8_t off, uint32_t v);
/* Scan every bus; fills out (up to max); returns the number found. */
unsigned pci_enumerate(struct pci_dev *out, unsigned max);

#endif
