/*
 * virtio_blk.c - virtio-blk (virtio 1.x, 5.2) behind blk.h. One request
 * queue, completions by MSI-X into the disks' shared vector or polled when
 * that cannot be had (as virtio-net). Each request is a descriptor chain:
 * a 16-byte header (type, sector in 512-byte units), the data split at
 * page (or size_max) boundaries, or for discard and write-zeroes one
 * 16-byte range, then the status byte the device writes. Headers, ranges
 * and status bytes live in driver-owned DMA slots, one per request in
 * flight; the status byte is preset to an invalid value so a device that
 * completes without writing it reports an error, not success. The
 * configuration is read into a snapshot at each field's width and parsed
 * by blk_parse.c; the write cache follows the spec's rules there. A
 * resize (a configuration change) raises the disks' configuration
 * interrupt (MSI-X entry 1) when the device takes it; else the capacity is
 * polled by its user (the boot log says which).
 */
#include "dev/virtio_disk.h"

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/memlayout.h"
#include "clock.h"
#include "console.h"
#include "dev/blk.h"
#include "dev/blk_parse.h"
#include "mm/kmalloc.h"
#include "mm/pmm.h"

#include <stdio.h>
#include <string.h>

enum {
    T_IN = 0,
    T_OUT = 1,
    T_FLUSH = 4,
    T_GET_ID = 8,
    T_DISCARD = 11,
    T_WRITE_ZEROES = 13,
    WZ_FLAG_UNMAP = 1,
    ID_BYTES = 20,
    NSLOTS = 32,
    SLOT_BYTES = 64,          /* header 0..15, range 16..31, id 32..51, status 56 */
    SLOT_RANGE = 16,
    SLOT_ID = 32,
    SLOT_STATUS = 56,
    STATUS_UNSET = 0xFF,
    GET_ID_WAIT_MS = 1000,
};

struct vblk_slot {
    struct blk_req *req;      /* NULL: free */
    uint8_t *va;              /* SLOT_BYTES of DMA memory */
    uint64_t pa;
};

struct vblk {
    struct blk_dev dev;
    struct virtio_dev vd;
    struct virtq q;
    struct vblk_slot slot[NSLOTS];
    uint32_t seg_size, max_segs;
    bool wz_unmap;
};

static const struct vdisk_field cfg_fields[] = {
    {0, 4}, {4, 4}, {8, 4}, {12, 4}, {20, 4}, {24, 1}, {25, 1}, {26, 2}, {28, 4}, {32, 1},
    {36, 4}, {40, 4}, {44, 4}, {48, 4}, {52, 4}, {56, 1},
};

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v)
{
    put_le32(p, (uint32_t)v);
    put_le32(p + 4, (uint32_t)(v >> 32));
}

static struct vblk_slot *slot_get(struct vblk *b)
{
    for (unsigned i = 0; i < NSLOTS; i++)
        if (!b->slot[i].req)
            return &b->slot[i];
    return NULL;
}

/* The header of type at sector, status preset; returns its buffer. */
static struct virtq_buf header(struct vblk_slot *s, uint32_t type, uint64_t sector)
{
    put_le32(s->va, type);
    put_le32(s->va + 4, 0);
    put_le64(s->va + 8, sector);
    s->va[SLOT_STATUS] = STATUS_UNSET;
    return (struct virtq_buf){s->pa, 16, 0};
}

static int vblk_submit(struct blk_dev *d, struct blk_req *req)
{
    struct vblk *b = d->drv;
    if (b->vd.failed)
        return BLK_EIO;
    struct vblk_slot *s = slot_get(b);
    if (!s)
        return BLK_EAGAIN;
    uint32_t per = d->topo.logical_block / VBLK_SECTOR;
    uint64_t sector = req->lba * per;
    struct virtq_buf bufs[VDISK_MAX_SEGS + 2];
    unsigned n = 0;
    switch (req->op) {
    case BLK_READ:
    case BLK_WRITE: {
        bufs[n++] = header(s, req->op == BLK_READ ? T_IN : T_OUT, sector);
        int k = vdisk_split(req->buf, (size_t)req->count * d->topo.logical_block, b->seg_size,
                            req->op == BLK_READ, bufs + n, b->max_segs);
        if (k < 0)
            return k == -1 ? BLK_EINVAL : BLK_ERANGE;
        n += (unsigned)k;
        break;
    }
    case BLK_FLUSH:
        bufs[n++] = header(s, T_FLUSH, 0);
        break;
    case BLK_DISCARD:
    case BLK_WRITE_ZEROES: {
        bool wz = req->op == BLK_WRITE_ZEROES;
        bufs[n++] = header(s, wz ? T_WRITE_ZEROES : T_DISCARD, 0);
        uint8_t *r = s->va + SLOT_RANGE;
        put_le64(r, sector);
        put_le32(r + 8, req->count * per);    /* within max_* sectors: checked by blk.c */
        put_le32(r + 12, wz && b->wz_unmap ? WZ_FLAG_UNMAP : 0);
        bufs[n++] = (struct virtq_buf){s->pa + SLOT_RANGE, 16, 0};
        break;
    }
    default:
        return BLK_EINVAL;
    }
    bufs[n++] = (struct virtq_buf){s->pa + SLOT_STATUS, 1, 1};
    if (virtq_add(&b->q, bufs, n, s) < 0)
        return BLK_EAGAIN;     /* descriptors run out before slots do */
    s->req = req;
    virtio_kick(&b->vd, &b->q);
    return BLK_OK;
}

static int vblk_poll(struct blk_dev *d)
{
    struct vblk *b = d->drv;
    int n = 0;
    void *cookie;
    uint32_t len;
    int r;
    while ((r = virtq_get(&b->q, &cookie, &len)) > 0) {
        struct vblk_slot *s = cookie;             /* our own cookie: a slot */
        struct blk_req *req = s->req;
        s->req = NULL;
        n++;
        if (req)
            blk_complete(d, req, vblk_status(s->va[SLOT_STATUS]));
    }
    if (r < 0) {
        blk_fail(d, b->q.error);
        return 1;
    }
    return n;
}

static void vblk_fail(struct blk_dev *d, const char *why)
{
    struct vblk *b = d->drv;
    virtio_fail(&b->vd, why);
    for (unsigned i = 0; i < NSLOTS; i++) {
        struct blk_req *req = b->slot[i].req;
        b->slot[i].req = NULL;
        if (req)
            blk_complete(d, req, BLK_EIO);
    }
}

/* The capacity field alone (virtio 1.x, 5.2.4: 512-byte sectors), read
 * under the configuration generation like the boot snapshot; the device
 * changes it when the disk is resized (QEMU's block_resize). */
static int vblk_capacity(struct blk_dev *d, uint64_t *blocks)
{
    static const struct vdisk_field cap_fields[] = {{0, 4}, {4, 4}};
    struct vblk *b = d->drv;
    uint8_t cfg[8];
    if (b->vd.failed || vdisk_cfg_snapshot(&b->vd, cap_fields, 2, cfg, sizeof cfg) < sizeof cfg)
        return -1;
    uint64_t sectors = 0;
    for (int i = 7; i >= 0; i--)
        sectors = sectors << 8 | cfg[i];
    *blocks = sectors / (d->topo.logical_block / VBLK_SECTOR);
    return 0;
}

static const struct blk_ops vblk_ops = {vblk_submit, vblk_poll, vblk_fail, vblk_capacity};

/* The serial number (GET_ID), polled before the disk is registered; a
 * device that does not answer within GET_ID_WAIT_MS is given up. */
static int read_serial(struct vblk *b)
{
    struct vblk_slot *s = &b->slot[0];
    struct virtq_buf bufs[3] = {header(s, T_GET_ID, 0), {s->pa + SLOT_ID, ID_BYTES, 1},
                                {s->pa + SLOT_STATUS, 1, 1}};
    memset(s->va + SLOT_ID, 0, ID_BYTES);
    if (virtq_add(&b->q, bufs, 3, s) < 0)
        return -1;
    virtio_kick(&b->vd, &b->q);
    uint64_t deadline = clock_mono_ns() + (uint64_t)GET_ID_WAIT_MS * 1000000;
    void *cookie;
    uint32_t len;
    int r;
    while ((r = virtq_get(&b->q, &cookie, &len)) == 0) {
        if (clock_mono_ns() > deadline) {
            virtio_fail(&b->vd, "no answer to GET_ID");
            return -1;
        }
        cpu_relax();
    }
    if (r < 0) {
        virtio_fail(&b->vd, b->q.error);
        return -1;
    }
    if (vblk_status(s->va[SLOT_STATUS]) == BLK_OK)
        blk_text_clean(b->dev.model, sizeof b->dev.model, s->va + SLOT_ID,
                       len < ID_BYTES ? len : ID_BYTES);
    return 0;
}

int virtio_blk_init(const struct pci_dev *pd, unsigned flags)
{
    struct vblk *b = kzalloc(sizeof *b);
    uint64_t slots_pa = pmm_alloc();
    if (!b || !slots_pa) {
        kprintf("tern: virtio-blk %02x:%02x.%u: out of memory\n", pd->bus, pd->dev, pd->fn);
        return -1;
    }
    struct virtio_dev *vd = &b->vd;
    uint64_t want = 1ull << VBLK_F_SIZE_MAX | 1ull << VBLK_F_SEG_MAX | 1ull << VBLK_F_RO |
                    1ull << VBLK_F_BLK_SIZE | 1ull << VBLK_F_FLUSH | 1ull << VBLK_F_TOPOLOGY |
                    1ull << VBLK_F_CONFIG_WCE | 1ull << VBLK_F_DISCARD |
                    1ull << VBLK_F_WRITE_ZEROES;
    if (flags & VDISK_NOFLUSH)
        want &= ~(1ull << VBLK_F_FLUSH);
    if (virtio_pci_init(vd, pd) < 0 || virtio_negotiate(vd, want) < 0)
        return -1;
    const char *polled_why = NULL;
    int msix = vdisk_msix(vd, &polled_why) == 0, accepted = 0;
    if (virtio_queue_setup_msix(vd, 0, VDISK_QSIZE, &b->q, msix ? 0 : VIRTIO_NO_VECTOR,
                                &accepted) < 0)
        return -1;
    if (msix && !accepted) {
        polled_why = "the device refused the queue's MSI-X entry";
        msix = 0;
        msix_stop(&vd->msix);
    }
    const char *cfg_polled_why = msix ? NULL : "no MSI-X";
    int cfg_irq = msix && vdisk_msix_config(vd, &cfg_polled_why) == 0;
    uint8_t cfg[VBLK_CFG_BYTES];
    size_t len = vdisk_cfg_snapshot(vd, cfg_fields, sizeof cfg_fields / sizeof cfg_fields[0],
                                    cfg, sizeof cfg);
    struct vblk_params p;
    const char *err;
    uint32_t drv_segs = b->q.size - 2 < VDISK_MAX_SEGS ? b->q.size - 2u : VDISK_MAX_SEGS;
    if (vd->failed || vblk_parse_config(cfg, len, vd->features, drv_segs, &p, &err) < 0) {
        virtio_fail(vd, vd->failed ? "configuration unreadable" : err);
        return -1;
    }
    b->seg_size = p.seg_size;
    b->max_segs = p.max_segs;
    b->wz_unmap = p.wz_may_unmap;
    for (unsigned i = 0; i < NSLOTS; i++) {
        b->slot[i].pa = slots_pa + (uint64_t)i * SLOT_BYTES;
        b->slot[i].va = phys_to_virt(b->slot[i].pa);
    }
    struct blk_dev *d = &b->dev;
    d->ops = &vblk_ops;
    d->drv = b;
    d->topo = p.topo;
    d->irq = msix;
    d->cfg_irq = cfg_irq;
    snprintf(d->name, sizeof d->name, "virtio-blk %02x:%02x.%u", pd->bus, pd->dev, pd->fn);
    if (msix)
        msix_start(&vd->msix);
    virtio_driver_ok(vd);
    if (read_serial(b) < 0)
        return -1;
    if (!msix)
        kprintf("tern: %s: polled (%s)\n", d->name, polled_why);
    if (cfg_irq)
        kprintf("tern: %s: capacity changes by interrupt\n", d->name);
    else
        kprintf("tern: %s: capacity changes polled (%s)\n", d->name, cfg_polled_why);
    if (blk_register(d) < 0) {
        virtio_fail(vd, "too many disks");
        return -1;
    }
    return 0;
}
