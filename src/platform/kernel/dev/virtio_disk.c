/*
 * virtio_disk.c - the helpers of virtio_disk.h and the disk probe. The
 * probe runs once at boot; the interrupt vector is allocated on the first
 * device that asks for it and shared by all.
 */
#include "dev/virtio_disk.h"

#include "arch/x86_64/lapic.h"
#include "arch/x86_64/memlayout.h"
#include "arch/x86_64/trap.h"
#include "console.h"
#include "dev/blk.h"
#include "mm/pmm.h"

#include <stdio.h>
#include <string.h>

/* Allocated once at boot by the first disk with MSI-X (and the first
 * that takes configuration-change interrupts). */
static unsigned disk_vector, config_vector;
/* Every entry routed, so that vdisk_irq_to can aim them elsewhere: a disk
 * uses two at most (completions, configuration), a SCSI host's LUNs share
 * its entries. Written at boot only. */
enum { VDISK_ROUTES_MAX = 2 * BLK_MAX_DEVICES };
static struct vdisk_route {
    struct msix *m;
    uint16_t entry;
    uint8_t vector;
} routes[VDISK_ROUTES_MAX];
static unsigned nroutes;

/* msix_route, remembered (a full table only loses the later re-aim: the
 * storage core then polls that disk on its timer). */
static int route(struct msix *m, uint16_t entry, unsigned vector)
{
    int rc = msix_route(m, entry, (uint8_t)vector);
    if (rc == 0 && nroutes < VDISK_ROUTES_MAX)
        routes[nroutes++] = (struct vdisk_route){m, entry, (uint8_t)vector};
    return rc;
}

void vdisk_irq_to(uint8_t apic_id)
{
    for (unsigned i = 0; i < nroutes; i++)
        (void)msix_route_to(routes[i].m, routes[i].entry, routes[i].vector, apic_id);
}

static void on_disk_interrupt(struct trap_frame *tf)
{
    (void)tf;
    blk_irq_raise();
    lapic_eoi();
}

int vdisk_msix(struct virtio_dev *vd, const char **why)
{
    if (virtio_msix_init(vd, why) < 0)
        return -1;
    if (!disk_vector)
        disk_vector = trap_alloc_vector(on_disk_interrupt);
    if (!disk_vector || route(&vd->msix, 0, disk_vector) < 0) {
        *why = disk_vector ? "MSI-X table has no entry 0" : "no free CPU vector";
        msix_stop(&vd->msix);
        return -1;
    }
    return 0;
}

/* A disk's configuration changed (virtio-blk: resized): only counted;
 * the store thread reads the capacity. */
static void on_config_interrupt(struct trap_frame *tf)
{
    (void)tf;
    blk_config_irq();
    lapic_eoi();
}

int vdisk_msix_config(struct virtio_dev *vd, const char **why)
{
    if (!config_vector)
        config_vector = trap_alloc_vector(on_config_interrupt);
    if (!config_vector) {
        *why = "no free CPU vector";
        return -1;
    }
    /* Routed first: the entry must exist before the device is told of it
     * (a refused entry stays routed, and unused). */
    if (route(&vd->msix, VDISK_CFG_ENTRY, config_vector) < 0) {
        *why = "MSI-X table has no configuration entry";
        return -1;
    }
    if (!virtio_config_msix(vd, VDISK_CFG_ENTRY)) {
        *why = "the device refused the configuration MSI-X entry";
        return -1;
    }
    return 0;
}

size_t vdisk_cfg_snapshot(struct virtio_dev *vd, const struct vdisk_field *f, unsigned n,
                          uint8_t *out, size_t cap)
{
    size_t got = 0;
    for (int tries = 0; tries < 10; tries++) {
        uint8_t gen = virtio_cfg_generation(vd);
        memset(out, 0, cap);
        got = 0;
        for (unsigned i = 0; i < n; i++) {
            unsigned off = f[i].off, w = f[i].width;
            if (off + w > vd->devcfg_len || off + w > cap)
                break;
            uint32_t v = w == 1 ? virtio_cfg8(vd, off)
                       : w == 2 ? virtio_cfg16(vd, off) : virtio_cfg32(vd, off);
            for (unsigned b = 0; b < w; b++)
                out[off + b] = (uint8_t)(v >> (8 * b));
            got = off + w;
        }
        if (virtio_cfg_generation(vd) == gen)
            break;
    }
    return got;
}

int vdisk_split(void *va, size_t len, uint32_t seg, int device_writes, struct virtq_buf *out,
                unsigned max)
{
    uint64_t a = (uint64_t)(uintptr_t)va;
    if (a < kernel_dmap_base || a - kernel_dmap_base > pmm_limit() ||
        len > pmm_limit() - (a - kernel_dmap_base))
        return -1;
    unsigned n = 0;
    while (len) {
        uint32_t piece = seg - (uint32_t)(a & (seg - 1));
        if (piece > len)
            piece = (uint32_t)len;
        if (n == max)
            return -2;
        /* Each piece is translated on its own, so buffers need not be
         * physically contiguous once the direct map stops being linear. */
        out[n++] = (struct virtq_buf){virt_to_phys((void *)(uintptr_t)a), piece, device_writes};
        a += piece;
        len -= piece;
    }
    return (int)n;
}

void virtio_disk_probe(const struct pci_dev *devs, unsigned n, unsigned flags)
{
    unsigned first = blk_count();
    for (unsigned i = 0; i < n; i++) {
        unsigned type = virtio_pci_type(&devs[i]);
        if (type == VIRTIO_ID_BLK)
            virtio_blk_init(&devs[i], flags);
        else if (type == VIRTIO_ID_SCSI)
            virtio_scsi_init(&devs[i], flags);
    }
    for (unsigned i = first; i < blk_count(); i++) {
        struct blk_dev *d = blk_get(i);
        char line[320], out[340];
        const char *why;
        blk_describe(d, line, sizeof line);
        /* Longer than kprintf's line limit, so formatted here. */
        int len = snprintf(out, sizeof out, "tern: disk %s\n", line);
        console_write(out, len > 0 && (size_t)len < sizeof out ? (size_t)len : 0);
        if (!blk_durable_ok(d, &why))
            kprintf("tern: disk %s: refused for durable storage: %s\n", d->name, why);
    }
    if (blk_count() == first)
        kprintf("tern: disks: none\n");
}
