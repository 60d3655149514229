/*
 * hwpci.h - facts about a PCI function for the hardware report, from a
 * 256-byte snapshot of its configuration space: a name for the devices
 * tern meets (QEMU's chipsets, virtio, common NICs) and its MSI-X table
 * size. Pure: host tests (tests/unit/test_khw_pci.c) feed it malformed
 * capability lists.
 */
#ifndef TERN_DIAG_HWPCI_H
#define TERN_DIAG_HWPCI_H

#include <stdint.h>

/* A name for vendor:device, else for the class, else NULL. */
const char *hw_pci_name(uint16_t vendor, uint16_t device, uint8_t class_code, uint8_t subclass);

/* Walk the capability list of cfg (bounded: at most 48 steps, pointers
 * inside the header's end and the 256 bytes, dword-aligned). The offset
 * of the first capability with id, or 0 when there is none or the list is
 * unusable (*err then says why; NULL when it is simply absent). */
unsigned hw_pci_find_cap(const uint8_t cfg[256], uint8_t id, const char **err);

/* MSI-X: 1 with the table size (1..2048) and whether it is enabled now,
 * 0 without the capability. */
int hw_pci_msix(const uint8_t cfg[256], unsigned *entries, int *enabled, const char **err);

#endif
