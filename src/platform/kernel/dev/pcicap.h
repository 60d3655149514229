/*
 * pcicap.h - finds the virtio 1.x register regions in a PCI function's
 * capability list (virtio 1.x, 4.1.4) and reads its MSI-X capability (PCI
 * Local Bus 3.0, 6.8.2). Works on a 256-byte snapshot of
 * configuration space and a table of BAR sizes, so it is a pure function
 * that host tests can feed malformed lists (tests/unit/test_kpci_caps.c).
 */
#ifndef TERN_DEV_PCICAP_H
#define TERN_DEV_PCICAP_H

#include <stdint.h>

enum {
    PCI_CFG_BYTES = 256,
    PCI_CAP_MSIX = 0x11,
    PCI_CAP_VENDOR = 0x09,
    VIRTIO_CAP_COMMON = 1,
    VIRTIO_CAP_NOTIFY = 2,
    VIRTIO_CAP_ISR = 3,
    VIRTIO_CAP_DEVICE = 4,
    VIRTIO_COMMON_CFG_MIN = 0x38,   /* the 1.0 common configuration layout */
};

struct virtio_region {
    int present;
    uint8_t bar;
    uint32_t offset, length;        /* within the BAR; checked against its size */
};

struct virtio_layout {
    struct virtio_region common, notify, isr, device;
    uint32_t notify_mult;
    uint8_t msix_cap;               /* offset of the MSI-X capability, 0 if none */
    unsigned ignored;               /* capabilities skipped as malformed */
};

/* Parse cfg (configuration space) given the size of each BAR (0 for an
 * unassigned or I/O BAR). Returns 0 and fills out, or -1 with *err set when
 * the list is unusable or a required region (common, notify, ISR) is
 * missing. Never reads outside cfg, and terminates on looping lists. */
int pcicap_virtio_layout(const uint8_t cfg[PCI_CFG_BYTES], const uint64_t bar_size[6],
                         struct virtio_layout *out, const char **err);

enum {
    MSIX_CAP_LEN = 12,
    MSIX_CTRL = 2,                  /* message control, 16 bits */
    MSIX_CTRL_ENABLE = 1u << 15,
    MSIX_CTRL_FUNCTION_MASK = 1u << 14,
    MSIX_ENTRY_LEN = 16,
};

struct msix_layout {
    uint16_t entries;               /* table size, 1..2048 */
    uint8_t table_bar, pba_bar;
    uint32_t table_offset, pba_offset;  /* within their BARs; checked */
};

/* Read the MSI-X capability at cap (an offset found by the list walk) from
 * cfg. The table (entries x 16 bytes) and the pending-bit array (one bit
 * per entry, in qwords) must lie in memory BARs of the sizes given, each
 * inside its BAR, not overlapping each other. 0 and *out, or -1 with *err. */
int pcicap_msix(const uint8_t cfg[PCI_CFG_BYTES], unsigned cap, const uint64_t bar_size[6],
                struct msix_layout *out, const char **err);

#endif
