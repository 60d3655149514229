/*
 * virtio_pci.h - the virtio 1.x "modern" PCI transport: finds a device's
 * register regions, resets and initialises it, negotiates features and sets
 * up split virtqueues, each either polled (no vector) or tied to an MSI-X
 * table entry that the driver has routed to a CPU vector.
 */
#ifndef TERN_DEV_VIRTIO_PCI_H
#define TERN_DEV_VIRTIO_PCI_H

#include "dev/msix.h"
#include "dev/pci.h"
#include "dev/virtq.h"

#include <stdint.h>

enum {
    VIRTIO_VENDOR = 0x1AF4,
    VIRTIO_ID_NET = 1,
    VIRTIO_ID_BLK = 2,
    VIRTIO_ID_RNG = 4,
    VIRTIO_ID_SCSI = 8,
    VIRTIO_F_VERSION_1 = 32,
    VIRTIO_NO_VECTOR = 0xFFFF,
};

struct virtio_dev {
    struct pci_dev pci;
    volatile uint8_t *common, *notify, *isr, *devcfg;
    uint32_t notify_len, notify_mult, devcfg_len;
    uint64_t features;           /* negotiated */
    int failed;                  /* a bounds check or the device failed */
    uint64_t bar_base[6], bar_size[6];
    uint8_t msix_cap;            /* 0: the function has no MSI-X capability */
    struct msix msix;            /* valid after virtio_msix_init succeeded */
};

/* The virtio device type of a virtio PCI function (modern: 0x1040 + type;
 * transitional: from the subsystem ID), or 0 if it is not one. */
unsigned virtio_pci_type(const struct pci_dev *pd);
/* Map the regions, reset the device and announce the driver. 0 or -1
 * (with a console message naming the device and the reason). */
int virtio_pci_init(struct virtio_dev *vd, const struct pci_dev *pd);
/* Offer wanted & device features (VIRTIO_F_VERSION_1 is required and
 * implied); 0 if the device accepted them. */
int virtio_negotiate(struct virtio_dev *vd, uint64_t wanted);
/* Set up queue index with at most want entries: rings from the frame
 * allocator, polled (no interrupt vector). 0 or -1. */
int virtio_queue_setup(struct virtio_dev *vd, uint16_t index, uint16_t want, struct virtq *q);
/* The same, with the queue's interrupts on MSI-X table entry `entry`
 * (VIRTIO_NO_VECTOR: none). *accepted is 1 if the device read the entry
 * back, 0 if it answered NO_VECTOR (then the queue has no interrupts and
 * must be polled). 0 or -1 as above. */
int virtio_queue_setup_msix(struct virtio_dev *vd, uint16_t index, uint16_t want,
                            struct virtq *q, uint16_t entry, int *accepted);
/* Ask for configuration-change interrupts (4.1.4.3: msix_config) on MSI-X
 * table entry `entry`, before DRIVER_OK. 1 if the device read the entry
 * back, 0 if it answered NO_VECTOR (no such interrupts: poll the config). */
int virtio_config_msix(struct virtio_dev *vd, uint16_t entry);
/* Enable MSI-X on the function with every entry masked (vd->msix): after
 * virtio_pci_init, before the queues. 0, or -1 with *err (no capability,
 * or one that does not fit its BAR). */
int virtio_msix_init(struct virtio_dev *vd, const char **err);
/* Tell the device to go (DRIVER_OK). */
void virtio_driver_ok(struct virtio_dev *vd);
/* Give up on a device: FAILED status, then reset (waiting up to 100 ms for
 * the device to confirm it), so it stops touching memory. */
void virtio_fail(struct virtio_dev *vd, const char *why);
/* Tell the device a queue has new buffers if it wants to know. */
void virtio_kick(struct virtio_dev *vd, struct virtq *q);
/* Device-specific configuration, bounds-checked: reading outside the region
 * returns 0 and marks the device failed. */
uint8_t virtio_cfg8(struct virtio_dev *vd, uint32_t off);
uint16_t virtio_cfg16(struct virtio_dev *vd, uint32_t off);
uint32_t virtio_cfg32(struct virtio_dev *vd, uint32_t off);
/* Config reads that span several fields repeat until the device's config
 * generation is stable. */
uint8_t virtio_cfg_generation(struct virtio_dev *vd);

#endif
