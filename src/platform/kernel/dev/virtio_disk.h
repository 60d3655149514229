/*
 * virtio_disk.h - what the two virtio disk drivers (virtio_blk.c,
 * virtio_scsi.c) share, and the boot-time probe that finds their PCI
 * functions, registers their disks with the block layer and logs one line
 * per disk: buffers from blk.h's users split into descriptors (checked to
 * lie in the direct map), configuration snapshots read at each field's
 * width, and one completion interrupt vector for every disk (MSI-X entry
 * 0 of each device), whose handler only raises blk_irq_raise(); and one
 * configuration-change vector (virtio-blk: MSI-X entry 1), whose handler
 * only counts a change (blk_config_irq()).
 */
#ifndef TERN_DEV_VIRTIO_DISK_H
#define TERN_DEV_VIRTIO_DISK_H

#include "dev/pci.h"
#include "dev/virtio_pci.h"

#include <stddef.h>
#include <stdint.h>

enum {
    VDISK_NOFLUSH = 1,     /* test builds: hide flush (and FUA) from the drivers */
    VDISK_QSIZE = 128,     /* request queue entries asked for */
    VDISK_MAX_SEGS = 65,   /* data segments per request: 256 KiB at any alignment */
    VDISK_PAGE = 4096,
    VDISK_CFG_ENTRY = 1,   /* MSI-X entry for configuration changes (0: the queue) */
};

/* Probe every virtio-blk and virtio-scsi function of devs (n of them). */
void virtio_disk_probe(const struct pci_dev *devs, unsigned n, unsigned flags);

/* For the drivers. */
struct vdisk_field {
    uint8_t off, width;    /* width 1, 2 or 4 (64-bit fields as two 4s) */
};
/* Read the fields (sorted by offset) into out (zeroed first, cap bytes)
 * until the first that does not fit the device's configuration region,
 * repeating while the configuration generation changes. Returns the
 * number of leading bytes read (the snapshot's usable length). */
size_t vdisk_cfg_snapshot(struct virtio_dev *vd, const struct vdisk_field *f, unsigned n,
                          uint8_t *out, size_t cap);
/* MSI-X on with entry 0 aimed at the disks' vector: 0, or -1 with *why
 * (then the queue is polled). */
int vdisk_msix(struct virtio_dev *vd, const char **why);
/* After vdisk_msix: configuration changes on entry VDISK_CFG_ENTRY, aimed
 * at the disks' configuration vector. 0, or -1 with *why (the device
 * raises no such interrupt then: its configuration must be polled). */
int vdisk_msix_config(struct virtio_dev *vd, const char **why);
/* Aim every disk interrupt routed so far (completions and configuration
 * changes, every disk) at the local APIC apic_id: the storage core's,
 * which owns the disks from then on (blk_set_owner). CPU 0, at boot. */
void vdisk_irq_to(uint8_t apic_id);
/* Split [va, va+len) into at most max buffers, none crossing a seg-aligned
 * boundary (seg: a power of two <= 4096). Returns the number, -1 if the
 * range is not in the direct map, -2 if it needs more than max. */
int vdisk_split(void *va, size_t len, uint32_t seg, int device_writes, struct virtq_buf *out,
                unsigned max);

/* The drivers; each registers its disks. */
int virtio_blk_init(const struct pci_dev *pd, unsigned flags);
int virtio_scsi_init(const struct pci_dev *pd, unsigned flags);

#endif
