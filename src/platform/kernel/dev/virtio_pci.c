/*
 * virtio_pci.c - the modern virtio PCI transport (virtio 1.x, 4.1). The
 * configuration space is read into a snapshot and its capabilities parsed
 * by pcicap.c; each region used is mapped uncached through the MMIO window
 * after checking it lies inside its BAR. Initialisation follows 3.1.1:
 * reset, ACKNOWLEDGE, DRIVER, features, FEATURES_OK (re-read to confirm),
 * queues, DRIVER_OK. Only VIRTIO_F_VERSION_1 and what a driver asks for is
 * ever offered; ACCESS_PLATFORM is not (no IOMMU here).
 */
#include "dev/virtio_pci.h"

#include "arch/x86_64/memlayout.h"
#include "clock.h"
#include "console.h"
#include "dev/pcicap.h"
#include "mm/paging.h"
#include "mm/pmm.h"

#include <string.h>

enum {
    PCI_COMMAND = 0x04,
    PCI_CMD_MEM = 1 << 1,
    PCI_CMD_MASTER = 1 << 2,
    PCI_CMD_INTX_OFF = 1 << 10,
    PCI_BAR0 = 0x10,

    /* Common configuration (4.1.4.3). */
    CC_DFSELECT = 0x00, CC_DF = 0x04, CC_GFSELECT = 0x08, CC_GF = 0x0C,
    CC_MSIX_CONFIG = 0x10, CC_NUM_QUEUES = 0x12, CC_STATUS = 0x14, CC_GENERATION = 0x15,
    CC_Q_SELECT = 0x16, CC_Q_SIZE = 0x18, CC_Q_MSIX = 0x1A, CC_Q_ENABLE = 0x1C,
    CC_Q_NOTIFY_OFF = 0x1E, CC_Q_DESC = 0x20, CC_Q_DRIVER = 0x28, CC_Q_DEVICE = 0x30,

    ST_ACKNOWLEDGE = 1, ST_DRIVER = 2, ST_DRIVER_OK = 4, ST_FEATURES_OK = 8,
    ST_FAILED = 128,
    NO_VECTOR = 0xFFFF,
};

static void w8(volatile uint8_t *b, unsigned off, uint8_t v) { b[off] = v; }
static void w16(volatile uint8_t *b, unsigned off, uint16_t v)
{
    *(volatile uint16_t *)(b + off) = v;
}
static void w32(volatile uint8_t *b, unsigned off, uint32_t v)
{
    *(volatile uint32_t *)(b + off) = v;
}
/* 64-bit fields are written as two 32-bit halves, low first (4.1.3.1). */
static void w64(volatile uint8_t *b, unsigned off, uint64_t v)
{
    w32(b, off, (uint32_t)v);
    w32(b, off + 4, (uint32_t)(v >> 32));
}
static uint8_t r8(volatile uint8_t *b, unsigned off) { return b[off]; }
static uint16_t r16(volatile uint8_t *b, unsigned off)
{
    return *(volatile uint16_t *)(b + off);
}
static uint32_t r32(volatile uint8_t *b, unsigned off)
{
    return *(volatile uint32_t *)(b + off);
}

unsigned virtio_pci_type(const struct pci_dev *pd)
{
    if (pd->vendor != VIRTIO_VENDOR)
        return 0;
    if (pd->device >= 0x1041 && pd->device <= 0x107F)
        return pd->device - 0x1040u;
    /* Transitional devices (IDs 0x1000-0x103F) carry the type in the
     * subsystem ID; we drive them through their modern interface only. */
    if (pd->device >= 0x1000 && pd->device <= 0x103F)
        return pci_read32(pd->bus, pd->dev, pd->fn, 0x2C) >> 16;
    return 0;
}

static uint32_t cfg32(const struct pci_dev *pd, unsigned off)
{
    return pci_read32(pd->bus, pd->dev, pd->fn, (uint16_t)off);
}

static void cfg32_write(const struct pci_dev *pd, unsigned off, uint32_t v)
{
    pci_write32(pd->bus, pd->dev, pd->fn, (uint16_t)off, v);
}

/* Size every memory BAR the usual way (write ones, read the mask back,
 * restore), with memory decoding off meanwhile. A BAR the firmware left
 * at address 0 counts as absent. */
static void read_bars(const struct pci_dev *pd, uint64_t base[6], uint64_t size[6])
{
    uint32_t cmd = cfg32(pd, PCI_COMMAND);
    cfg32_write(pd, PCI_COMMAND, cmd & ~(uint32_t)PCI_CMD_MEM);
    for (unsigned i = 0; i < 6; i++) {
        base[i] = size[i] = 0;
        unsigned off = PCI_BAR0 + 4 * i;
        uint32_t lo = cfg32(pd, off);
        if (lo & 1)
            continue; /* I/O space: virtio 1.x regions are in memory BARs */
        int is64 = ((lo >> 1) & 3) == 2 && i < 5;
        cfg32_write(pd, off, 0xFFFFFFFF);
        uint64_t mask = cfg32(pd, off) & ~0xFull;
        cfg32_write(pd, off, lo);
        uint64_t addr = lo & ~0xFull;
        if (is64) {
            uint32_t hi = cfg32(pd, off + 4);
            cfg32_write(pd, off + 4, 0xFFFFFFFF);
            mask |= (uint64_t)cfg32(pd, off + 4) << 32;
            cfg32_write(pd, off + 4, hi);
            addr |= (uint64_t)hi << 32;
        } else {
            mask |= 0xFFFFFFFF00000000ull;
        }
        if (mask && addr) {
            base[i] = addr;
            size[i] = ~mask + 1;
        }
        if (is64)
            i++;
    }
    cfg32_write(pd, PCI_COMMAND, cmd);
}

static volatile uint8_t *map_region(const struct virtio_region *r, const uint64_t base[6])
{
    return vm_map_mmio(base[r->bar] + r->offset, r->length);
}

int virtio_pci_init(struct virtio_dev *vd, const struct pci_dev *pd)
{
    memset(vd, 0, sizeof *vd);
    vd->pci = *pd;

    uint8_t cfg[PCI_CFG_BYTES];
    for (unsigned off = 0; off < PCI_CFG_BYTES; off += 4) {
        uint32_t v = cfg32(pd, off);
        memcpy(cfg + off, &v, 4);
    }
    uint64_t *base = vd->bar_base, *size = vd->bar_size;
    read_bars(pd, base, size);
    struct virtio_layout lay;
    const char *err;
    if (pcicap_virtio_layout(cfg, size, &lay, &err) < 0) {
        kprintf("tern: virtio %02x:%02x.%u: %s\n", pd->bus, pd->dev, pd->fn, err);
        return -1;
    }
    vd->msix_cap = lay.msix_cap;
    vd->common = map_region(&lay.common, base);
    vd->notify = map_region(&lay.notify, base);
    vd->isr = map_region(&lay.isr, base);
    vd->notify_len = lay.notify.length;
    vd->notify_mult = lay.notify_mult;
    if (lay.device.present) {
        vd->devcfg = map_region(&lay.device, base);
        vd->devcfg_len = lay.device.length;
    }

    /* Memory decoding and bus mastering (DMA) on; legacy INTx off: queues
     * are polled or use MSI-X. */
    uint32_t cmd = cfg32(pd, PCI_COMMAND) & 0xFFFF;
    cfg32_write(pd, PCI_COMMAND, cmd | PCI_CMD_MEM | PCI_CMD_MASTER | PCI_CMD_INTX_OFF);

    /* Reset, and wait for the device to say it is done (4.1.4.3.2). */
    w8(vd->common, CC_STATUS, 0);
    uint64_t t0 = clock_mono_ns();
    while (r8(vd->common, CC_STATUS) != 0) {
        if (clock_mono_ns() - t0 > 1000000000ull) {
            kprintf("tern: virtio %02x:%02x.%u: reset does not complete\n", pd->bus, pd->dev,
                    pd->fn);
            return -1;
        }
    }
    w8(vd->common, CC_STATUS, ST_ACKNOWLEDGE);
    w8(vd->common, CC_STATUS, ST_ACKNOWLEDGE | ST_DRIVER);
    w16(vd->common, CC_MSIX_CONFIG, NO_VECTOR);
    return 0;
}

int virtio_negotiate(struct virtio_dev *vd, uint64_t wanted)
{
    wanted |= 1ull << VIRTIO_F_VERSION_1;
    w32(vd->common, CC_DFSELECT, 0);
    uint64_t dev = r32(vd->common, CC_DF);
    w32(vd->common, CC_DFSELECT, 1);
    dev |= (uint64_t)r32(vd->common, CC_DF) << 32;
    if (!(dev & (1ull << VIRTIO_F_VERSION_1))) {
        virtio_fail(vd, "not a virtio 1.x device");
        return -1;
    }
    uint64_t use = dev & wanted;
    w32(vd->common, CC_GFSELECT, 0);
    w32(vd->common, CC_GF, (uint32_t)use);
    w32(vd->common, CC_GFSELECT, 1);
    w32(vd->common, CC_GF, (uint32_t)(use >> 32));
    uint8_t st = r8(vd->common, CC_STATUS);
    w8(vd->common, CC_STATUS, st | ST_FEATURES_OK);
    if (!(r8(vd->common, CC_STATUS) & ST_FEATURES_OK)) {
        virtio_fail(vd, "features refused");
        return -1;
    }
    vd->features = use;
    return 0;
}

int virtio_msix_init(struct virtio_dev *vd, const char **err)
{
    if (!vd->msix_cap) {
        *err = "no MSI-X capability";
        return -1;
    }
    return msix_init(&vd->msix, &vd->pci, vd->msix_cap, vd->bar_base, vd->bar_size, err);
}

int virtio_queue_setup(struct virtio_dev *vd, uint16_t index, uint16_t want, struct virtq *q)
{
    return virtio_queue_setup_msix(vd, index, want, q, VIRTIO_NO_VECTOR, NULL);
}

int virtio_queue_setup_msix(struct virtio_dev *vd, uint16_t index, uint16_t want,
                            struct virtq *q, uint16_t entry, int *accepted)
{
    if (index >= r16(vd->common, CC_NUM_QUEUES)) {
        virtio_fail(vd, "queue missing");
        return -1;
    }
    w16(vd->common, CC_Q_SELECT, index);
    uint16_t max = r16(vd->common, CC_Q_SIZE);
    uint16_t size = want < max ? want : max;
    while (size & (size - 1))
        size &= (uint16_t)(size - 1); /* split queues are powers of two */
    if (size == 0) {
        virtio_fail(vd, "queue unavailable");
        return -1;
    }
    uint64_t off = (uint64_t)r16(vd->common, CC_Q_NOTIFY_OFF) * vd->notify_mult;
    if (off + 2 > vd->notify_len) {
        virtio_fail(vd, "queue notify address outside its region");
        return -1;
    }

    size_t ring = virtq_ring_bytes(size), priv = virtq_priv_bytes(size);
    size_t ring_pages = (ring + PAGE_SIZE - 1) / PAGE_SIZE;
    size_t priv_pages = (priv + PAGE_SIZE - 1) / PAGE_SIZE;
    uint64_t ring_pa = pmm_alloc_contig(ring_pages);
    uint64_t priv_pa = pmm_alloc_contig(priv_pages);
    if (!ring_pa || !priv_pa) {
        virtio_fail(vd, "out of memory for a queue");
        return -1;
    }
    virtq_init(q, size, phys_to_virt(ring_pa), ring_pa, phys_to_virt(priv_pa));
    q->index = index;
    q->notify_off = (uint32_t)off;

    w16(vd->common, CC_Q_SIZE, size);
    /* The device reads back NO_VECTOR when it could not take the entry
     * (4.1.5.1.3): the queue then raises no interrupts. */
    w16(vd->common, CC_Q_MSIX, entry);
    if (accepted)
        *accepted = entry != NO_VECTOR && r16(vd->common, CC_Q_MSIX) == entry;
    w64(vd->common, CC_Q_DESC, q->desc_pa);
    w64(vd->common, CC_Q_DRIVER, q->avail_pa);
    w64(vd->common, CC_Q_DEVICE, q->used_pa);
    w16(vd->common, CC_Q_ENABLE, 1);
    return 0;
}

int virtio_config_msix(struct virtio_dev *vd, uint16_t entry)
{
    w16(vd->common, CC_MSIX_CONFIG, entry);
    return entry != NO_VECTOR && r16(vd->common, CC_MSIX_CONFIG) == entry;
}

void virtio_driver_ok(struct virtio_dev *vd)
{
    w8(vd->common, CC_STATUS, (uint8_t)(r8(vd->common, CC_STATUS) | ST_DRIVER_OK));
}

void virtio_fail(struct virtio_dev *vd, const char *why)
{
    const struct pci_dev *pd = &vd->pci;
    kprintf("tern: virtio %02x:%02x.%u: %s; device disabled\n", pd->bus, pd->dev, pd->fn, why);
    vd->failed = 1;
    if (vd->common) {
        w8(vd->common, CC_STATUS, (uint8_t)(r8(vd->common, CC_STATUS) | ST_FAILED));
        w8(vd->common, CC_STATUS, 0);
        /* Block drivers hand the request buffers back after this: wait
         * for the reset to be done (4.1.4.3.2), within reason. */
        uint64_t t0 = clock_mono_ns();
        while (r8(vd->common, CC_STATUS) != 0 && clock_mono_ns() - t0 < 100000000ull)
            ;
    }
}

void virtio_kick(struct virtio_dev *vd, struct virtq *q)
{
    /* notify_off was checked against the region when the queue was set up. */
    if (!vd->failed && virtq_should_notify(q))
        w16(vd->notify, q->notify_off, q->index);
}

uint8_t virtio_cfg8(struct virtio_dev *vd, uint32_t off)
{
    if (!vd->devcfg || off >= vd->devcfg_len) {
        vd->failed = 1;
        return 0;
    }
    return r8(vd->devcfg, off);
}

uint16_t virtio_cfg16(struct virtio_dev *vd, uint32_t off)
{
    if (!vd->devcfg || off > vd->devcfg_len || vd->devcfg_len - off < 2) {
        vd->failed = 1;
        return 0;
    }
    return r16(vd->devcfg, off);
}

uint32_t virtio_cfg32(struct virtio_dev *vd, uint32_t off)
{
    if (!vd->devcfg || off > vd->devcfg_len || vd->devcfg_len - off < 4 || off % 4) {
        vd->failed = 1;
        return 0;
    }
    return r32(vd->devcfg, off);
}

uint8_t virtio_cfg_generation(struct virtio_dev *vd)
{
    return r8(vd->common, CC_GENERATION);
}
