/*
 * virtio_scsi.c - virtio-scsi (virtio 1.x, 5.6) behind blk.h: each direct
 * access LUN behind the host adapter is one disk. At boot the targets are
 * scanned (REPORT LUNS on each target's LUN 0, bounded by the device's
 * max_target and SCAN_TARGETS; LUN 0 alone when REPORT LUNS is refused);
 * each LUN answers INQUIRY (a disk? its vendor and product), TEST UNIT
 * READY (which also consumes the power-on unit attention), READ
 * CAPACITY(16), the VPD pages it lists (0xB0 block limits, 0xB2
 * provisioning) and MODE SENSE(10)'s caching page (write cache, DPO/FUA,
 * write protect). Reads and writes are READ(16)/WRITE(16) with FUA when
 * asked; flush is SYNCHRONIZE CACHE(16), or (10) when the device refuses
 * (16); discard is UNMAP and write-zeroes WRITE SAME(16) of a zero block
 * with UNMAP, each only when READ CAPACITY's LBPME and the provisioning
 * page say so. A CHECK CONDITION is classified by scsi_parse.c: unit
 * attention, busy and reset are retried (RETRIES times), the rest are
 * errors (or "not supported"), logged with their sense.
 *
 * Only the request queue (2) is used: no hotplug events, no task
 * management; a device that stops answering is given up by the block
 * layer's watchdog (reset). Requests are chains of the 51-byte request
 * header, data-out, the 108-byte response, data-in, in driver-owned DMA
 * slots shared by every LUN of the adapter.
 */
#include "dev/virtio_disk.h"

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/memlayout.h"
#include "clock.h"
#include "console.h"
#include "dev/blk.h"
#include "dev/scsi_parse.h"
#include "mm/kmalloc.h"
#include "mm/pmm.h"

#include <stdio.h>
#include <string.h>

enum {
    REQUESTQ = 2,
    NSLOTS = 32,
    SLOT_BYTES = 256,         /* request 0..50, response 64..171, UNMAP list 192..215 */
    SLOT_RESP = 64,
    SLOT_PARAM = 192,
    UNMAP_LIST = 24,
    RETRIES = 5,
    SCAN_TARGETS = 256,
    LUNS_PER_TARGET = 8,
    PROBE_BUF = 4096,
    PROBE_WAIT_MS = 5000,
    MAX_LOGGED_ERRORS = 20,

    OP_TEST_UNIT_READY = 0x00,
    OP_INQUIRY = 0x12,
    OP_SYNC_CACHE_10 = 0x35,
    OP_UNMAP = 0x42,
    OP_MODE_SENSE_10 = 0x5A,
    OP_READ_16 = 0x88,
    OP_WRITE_16 = 0x8A,
    OP_SYNC_CACHE_16 = 0x91,
    OP_WRITE_SAME_16 = 0x93,
    OP_SERVICE_IN_16 = 0x9E,
    SA_READ_CAPACITY_16 = 0x10,
    OP_REPORT_LUNS = 0xA0,
};

struct vscsi_host;

struct vscsi_lun {
    struct blk_dev dev;
    struct vscsi_host *h;
    uint8_t target;
    uint16_t lun;
    bool sync10;              /* SYNCHRONIZE CACHE(16) refused: use (10) */
    unsigned logged;          /* errors logged so far */
};

struct vscsi_slot {
    struct blk_req *req;      /* NULL: free */
    struct vscsi_lun *l;
    uint8_t *va;
    uint64_t pa;
    struct virtq_buf bufs[VDISK_MAX_SEGS + 3];
    unsigned nbufs;
    unsigned retries;
};

struct vscsi_host {
    struct virtio_dev vd;
    struct virtq q;
    struct vscsi_slot slot[NSLOTS];
    struct vscsi_lun *lun[BLK_MAX_DEVICES];
    unsigned nluns;
    uint32_t max_segs, max_sectors;
    uint8_t *probe;           /* PROBE_BUF bytes of DMA memory for boot-time data-in */
    uint8_t *zero;            /* one zeroed block of the largest block size, for WRITE SAME */
    bool msix;
};

static void put_be16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8), p[1] = (uint8_t)v; }
static void put_be32(uint8_t *p, uint32_t v)
{
    put_be16(p, (uint16_t)(v >> 16));
    put_be16(p + 2, (uint16_t)v);
}
static void put_be64(uint8_t *p, uint64_t v)
{
    put_be32(p, (uint32_t)(v >> 32));
    put_be32(p + 4, (uint32_t)v);
}

/* The request header: single-level LUN address (5.6.6.1), tag, SIMPLE
 * task attribute, the CDB zero-padded to VSCSI_CDB_SIZE. */
static void request_header(struct vscsi_slot *s, uint8_t target, uint16_t lun,
                           const uint8_t *cdb, unsigned cdb_len)
{
    uint8_t *r = s->va;
    memset(r, 0, VSCSI_REQ_BYTES);
    r[0] = 1;
    r[1] = target;
    r[2] = (uint8_t)(0x40 | (lun >> 8));
    r[3] = (uint8_t)lun;
    put_be64(r + 8, (uint64_t)(s - s->l->h->slot));   /* id: the slot */
    memcpy(r + 19, cdb, cdb_len);
    memset(s->va + SLOT_RESP, 0xFF, VSCSI_RESP_BYTES); /* response "unset" */
}

static struct vscsi_slot *slot_get(struct vscsi_host *h)
{
    for (unsigned i = 0; i < NSLOTS; i++)
        if (!h->slot[i].req && !h->slot[i].l)
            return &h->slot[i];
    return NULL;
}

static void slot_put(struct vscsi_slot *s)
{
    s->req = NULL;
    s->l = NULL;
}

/* Chain: header, data-out, response, data-in. */
static int post(struct vscsi_host *h, struct vscsi_slot *s)
{
    if (virtq_add(&h->q, s->bufs, s->nbufs, s) < 0)
        return -1;
    virtio_kick(&h->vd, &h->q);
    return 0;
}

static int build(struct vscsi_slot *s, const uint8_t *cdb, unsigned cdb_len, void *data,
                 size_t len, bool data_in, uint32_t seg)
{
    struct vscsi_lun *l = s->l;
    request_header(s, l->target, l->lun, cdb, cdb_len);
    unsigned n = 0;
    s->bufs[n++] = (struct virtq_buf){s->pa, VSCSI_REQ_BYTES, 0};
    struct virtq_buf data_bufs[VDISK_MAX_SEGS];
    int k = 0;
    if (len) {
        k = vdisk_split(data, len, seg, data_in, data_bufs, l->h->max_segs);
        if (k < 0)
            return k == -1 ? BLK_EINVAL : BLK_ERANGE;
    }
    if (!data_in)
        for (int i = 0; i < k; i++)
            s->bufs[n++] = data_bufs[i];
    s->bufs[n++] = (struct virtq_buf){s->pa + SLOT_RESP, VSCSI_RESP_BYTES, 1};
    if (data_in)
        for (int i = 0; i < k; i++)
            s->bufs[n++] = data_bufs[i];
    s->nbufs = n;
    s->retries = 0;
    return BLK_OK;
}

static void rw_cdb(uint8_t *cdb, uint8_t op, uint8_t flags, uint64_t lba, uint32_t count)
{
    memset(cdb, 0, 16);
    cdb[0] = op;
    cdb[1] = flags;
    put_be64(cdb + 2, lba);
    put_be32(cdb + 10, count);
}

static int vscsi_submit(struct blk_dev *d, struct blk_req *req)
{
    struct vscsi_lun *l = d->drv;
    struct vscsi_host *h = l->h;
    if (h->vd.failed)
        return BLK_EIO;
    struct vscsi_slot *s = slot_get(h);
    if (!s)
        return BLK_EAGAIN;
    s->l = l;
    uint8_t cdb[16];
    unsigned cdb_len = 16;
    void *data = NULL;
    size_t len = 0;
    bool in = false;
    uint32_t lbs = d->topo.logical_block;
    switch (req->op) {
    case BLK_READ:
    case BLK_WRITE:
        in = req->op == BLK_READ;
        rw_cdb(cdb, in ? OP_READ_16 : OP_WRITE_16, req->flags & BLK_F_FUA ? 0x08 : 0, req->lba,
               req->count);
        data = req->buf;
        len = (size_t)req->count * lbs;
        break;
    case BLK_FLUSH:
        if (l->sync10) {
            memset(cdb, 0, 10);
            cdb[0] = OP_SYNC_CACHE_10;
            cdb_len = 10;
        } else {
            rw_cdb(cdb, OP_SYNC_CACHE_16, 0, 0, 0);   /* 0 blocks: all of them */
        }
        break;
    case BLK_DISCARD: {
        memset(cdb, 0, 10);
        cdb[0] = OP_UNMAP;
        put_be16(cdb + 7, UNMAP_LIST);
        cdb_len = 10;
        uint8_t *p = s->va + SLOT_PARAM;
        memset(p, 0, UNMAP_LIST);
        put_be16(p, UNMAP_LIST - 2);
        put_be16(p + 2, 16);
        put_be64(p + 8, req->lba);
        put_be32(p + 16, req->count);
        data = p;
        len = UNMAP_LIST;
        break;
    }
    case BLK_WRITE_ZEROES:
        rw_cdb(cdb, OP_WRITE_SAME_16, 0x08 /* UNMAP */, req->lba, req->count);
        data = h->zero;
        len = lbs;
        break;
    default:
        slot_put(s);
        return BLK_EINVAL;
    }
    int r = build(s, cdb, cdb_len, data, len, in, VDISK_PAGE);
    if (r == BLK_OK && post(h, s) < 0)
        r = BLK_EAGAIN;
    if (r != BLK_OK) {
        slot_put(s);
        return r;
    }
    s->req = req;
    return BLK_OK;
}

static const char *op_name(enum blk_op op)
{
    static const char *const names[] = {"read", "write", "flush", "discard", "write-zeroes"};
    return (unsigned)op < 5 ? names[op] : "request";
}

/* A finished chain: retry, or the blk status for its request. */
static int outcome(struct vscsi_slot *s, bool *retry)
{
    struct scsi_result res;
    vscsi_resp_parse(s->va + SLOT_RESP, &res);
    enum scsi_outcome o = scsi_classify(&res);
    *retry = false;
    if (o == SCSI_RETRY && s->retries < RETRIES) {
        s->retries++;
        *retry = true;
        return BLK_OK;
    }
    if (o == SCSI_GOOD) {
        /* Data commands must move all their bytes. */
        if (res.residual && s->req && (s->req->op == BLK_READ || s->req->op == BLK_WRITE))
            return BLK_EIO;
        return BLK_OK;
    }
    struct vscsi_lun *l = s->l;
    /* Write-protected after all (MODE SENSE said nothing): later writes
     * are refused at submit, and the store's refusal says why. */
    if (s->req && s->req->op != BLK_READ && scsi_write_protected(&res))
        l->dev.topo.read_only = true;
    if (s->req && l->logged < MAX_LOGGED_ERRORS) {
        char text[64];
        scsi_result_text(&res, text, sizeof text);
        l->logged++;
        kprintf("tern: disk %s: %s of %u blocks at %llu failed: %s\n", l->dev.name,
                op_name(s->req->op), s->req->count, (unsigned long long)s->req->lba, text);
    }
    return o == SCSI_UNSUPPORTED ? BLK_EUNSUPP : BLK_EIO;
}

static int host_poll(struct vscsi_host *h, struct blk_dev *d)
{
    int n = 0;
    void *cookie;
    uint32_t len;
    int r;
    while ((r = virtq_get(&h->q, &cookie, &len)) > 0) {
        struct vscsi_slot *s = cookie;
        if (!s->req)
            continue;          /* a probe's chain: collected by its waiter */
        bool retry;
        int status = outcome(s, &retry);
        /* The chain's descriptors were just freed: the same chain fits. */
        if (retry && post(h, s) == 0)
            continue;
        struct blk_req *req = s->req;
        struct vscsi_lun *l = s->l;
        slot_put(s);
        n++;
        blk_complete(&l->dev, req, retry ? BLK_EIO : status);
    }
    if (r < 0) {
        blk_fail(d, h->q.error);
        return 1;
    }
    return n;
}

static int vscsi_poll(struct blk_dev *d)
{
    struct vscsi_lun *l = d->drv;
    return host_poll(l->h, d);
}

static void vscsi_fail(struct blk_dev *d, const char *why)
{
    struct vscsi_host *h = ((struct vscsi_lun *)d->drv)->h;
    if (!h->vd.failed)
        virtio_fail(&h->vd, why);
    /* The whole adapter is reset: every LUN on it goes. */
    for (unsigned i = 0; i < h->nluns; i++)
        if (&h->lun[i]->dev != d)
            h->lun[i]->dev.failed = true;
    for (unsigned i = 0; i < NSLOTS; i++) {
        struct vscsi_slot *s = &h->slot[i];
        struct blk_req *req = s->req;
        struct vscsi_lun *l = s->l;
        slot_put(s);
        if (req)
            blk_complete(&l->dev, req, BLK_EIO);
    }
}

static const struct blk_ops vscsi_ops = {vscsi_submit, vscsi_poll, vscsi_fail, NULL};

/* ---- boot-time commands, polled ---- */

/* Run cdb on (target, lun) with up to len bytes of data-in into h->probe,
 * retrying what scsi_classify says to retry. The outcome, with *got the
 * bytes transferred; SCSI_ERROR also when the device does not answer
 * within PROBE_WAIT_MS (then it has been given up). */
static enum scsi_outcome probe_cmd(struct vscsi_host *h, struct vscsi_lun *l, const uint8_t *cdb,
                                   unsigned cdb_len, size_t len, size_t *got)
{
    struct vscsi_slot *s = &h->slot[0];
    s->l = l;
    enum scsi_outcome o = SCSI_ERROR;
    for (unsigned attempt = 0; attempt <= RETRIES; attempt++) {
        memset(h->probe, 0, PROBE_BUF);
        if (build(s, cdb, cdb_len, h->probe, len, true, VDISK_PAGE) != BLK_OK || post(h, s) < 0)
            break;
        uint64_t deadline = clock_mono_ns() + (uint64_t)PROBE_WAIT_MS * 1000000;
        void *cookie;
        uint32_t ulen;
        int r;
        while ((r = virtq_get(&h->q, &cookie, &ulen)) == 0) {
            if (clock_mono_ns() > deadline) {
                virtio_fail(&h->vd, "no answer during the LUN scan");
                slot_put(s);
                return SCSI_ERROR;
            }
            cpu_relax();
        }
        if (r < 0) {
            virtio_fail(&h->vd, h->q.error);
            slot_put(s);
            return SCSI_ERROR;
        }
        struct scsi_result res;
        vscsi_resp_parse(s->va + SLOT_RESP, &res);
        o = scsi_classify(&res);
        *got = res.residual < len ? len - res.residual : 0;
        if (o != SCSI_RETRY)
            break;
    }
    slot_put(s);
    return o;
}

static enum scsi_outcome simple_cmd(struct vscsi_host *h, struct vscsi_lun *l, uint8_t op,
                                    uint8_t b1, uint8_t b2, size_t alloc, size_t *got)
{
    uint8_t cdb[16] = {op, b1, b2};
    unsigned cdb_len = 6;
    switch (op) {
    case OP_INQUIRY:
        put_be16(cdb + 3, (uint16_t)alloc);
        break;
    case OP_MODE_SENSE_10:
        put_be16(cdb + 7, (uint16_t)alloc);
        cdb_len = 10;
        break;
    case OP_REPORT_LUNS:
        put_be32(cdb + 6, (uint32_t)alloc);
        cdb_len = 12;
        break;
    case OP_SERVICE_IN_16:
        put_be32(cdb + 10, (uint32_t)alloc);
        cdb_len = 16;
        break;
    case OP_SYNC_CACHE_16:
        cdb_len = 16;
        break;
    default:
        break;
    }
    return probe_cmd(h, l, cdb, cdb_len, alloc, got);
}

/* Fill l's topology from the device; 0, or -1 (not a usable disk: *why). */
static int lun_topology(struct vscsi_host *h, struct vscsi_lun *l, unsigned flags,
                        const char **why)
{
    struct blk_topology *t = &l->dev.topo;
    size_t got;
    struct scsi_inquiry inq;
    if (simple_cmd(h, l, OP_INQUIRY, 0, 0, 96, &got) != SCSI_GOOD ||
        scsi_inquiry_parse(h->probe, got, &inq) < 0) {
        *why = "no INQUIRY data";
        return -1;
    }
    if (inq.qualifier != 0 || inq.type != 0) {
        *why = NULL;            /* not a disk (or not present): skipped quietly */
        return -1;
    }
    snprintf(l->dev.model, sizeof l->dev.model, "%s%s%s", inq.vendor,
             inq.vendor[0] && inq.product[0] ? " " : "", inq.product);
    if (simple_cmd(h, l, OP_TEST_UNIT_READY, 0, 0, 0, &got) != SCSI_GOOD) {
        *why = "not ready";
        return -1;
    }
    struct scsi_capacity cap;
    if (simple_cmd(h, l, OP_SERVICE_IN_16, SA_READ_CAPACITY_16, 0, 32, &got) != SCSI_GOOD ||
        scsi_readcap16_parse(h->probe, got, &cap, why) < 0) {
        if (got < 32)
            *why = "no READ CAPACITY(16) data";
        return -1;
    }
    t->logical_block = cap.block_len;
    t->physical_block = cap.physical;
    t->capacity = cap.blocks;

    bool b0 = false, b2 = false;
    if (simple_cmd(h, l, OP_INQUIRY, 1, 0x00, 255, &got) == SCSI_GOOD) {
        b0 = scsi_vpd_lists(h->probe, got, 0xB0);
        b2 = scsi_vpd_lists(h->probe, got, 0xB2);
    }
    struct scsi_block_limits bl = {0};
    if (b0 && simple_cmd(h, l, OP_INQUIRY, 1, 0xB0, 64, &got) == SCSI_GOOD)
        scsi_vpd_b0_parse(h->probe, got, &bl);
    struct scsi_provisioning pv = {0};
    if (b2 && simple_cmd(h, l, OP_INQUIRY, 1, 0xB2, 64, &got) == SCSI_GOOD)
        scsi_vpd_b2_parse(h->probe, got, &pv);

    uint64_t xfer = (uint64_t)(h->max_segs - 1) * VDISK_PAGE;
    if (bl.max_transfer && (uint64_t)bl.max_transfer * t->logical_block < xfer)
        xfer = (uint64_t)bl.max_transfer * t->logical_block;
    if (h->max_sectors && (uint64_t)h->max_sectors * 512 < xfer)
        xfer = (uint64_t)h->max_sectors * 512;
    xfer -= xfer % t->logical_block;
    if (!xfer) {
        *why = "transfer limits below one block";
        return -1;
    }
    t->max_transfer = (uint32_t)xfer;
    uint64_t opt = (uint64_t)bl.opt_transfer * t->logical_block;
    if (opt && opt <= (1u << 30) && opt % t->physical_block == 0)
        t->optimal_io = (uint32_t)opt;
    t->discard = cap.lbpme && pv.lbpu && bl.max_unmap && bl.max_unmap_desc;
    t->max_discard = t->discard ? bl.max_unmap : 0;
    t->write_zeroes = cap.lbpme && pv.lbpws;
    t->max_write_zeroes = !t->write_zeroes ? 0
                        : bl.max_write_same && bl.max_write_same < UINT32_MAX
                        ? (uint32_t)bl.max_write_same : UINT32_MAX;

    /* Without a caching page, assume the worst: a volatile cache. */
    struct scsi_caching c = {.wce = true}, m;
    if (simple_cmd(h, l, OP_MODE_SENSE_10, 0x08 /* DBD */, 0x08, 255, &got) == SCSI_GOOD &&
        scsi_mode_caching_parse(h->probe, got, true, &m) == 0) {
        c.write_protected = m.write_protected;
        c.dpofua = m.dpofua;
        c.wce = m.page ? m.wce : true;
    }
    t->write_cache = c.wce;
    t->read_only = c.write_protected;
    t->flush = !(flags & VDISK_NOFLUSH);
    t->fua = c.dpofua && !(flags & VDISK_NOFLUSH);
    if (t->flush && t->write_cache) {
        /* Learn which SYNCHRONIZE CACHE the device takes, and that it works. */
        enum scsi_outcome o = simple_cmd(h, l, OP_SYNC_CACHE_16, 0, 0, 0, &got);
        if (o == SCSI_UNSUPPORTED) {
            l->sync10 = true;
            o = simple_cmd(h, l, OP_SYNC_CACHE_10, 0, 0, 0, &got);
        }
        if (o != SCSI_GOOD)
            t->flush = false;   /* refused for durable storage, said at probe */
    }
    return 0;
}

/* LUNs of target: REPORT LUNS, or LUN 0 alone. -1: no such target. */
static int target_luns(struct vscsi_host *h, struct vscsi_lun *probe_lun, uint8_t target,
                       uint16_t *luns)
{
    probe_lun->target = target;
    probe_lun->lun = 0;
    size_t got;
    enum scsi_outcome o = simple_cmd(h, probe_lun, OP_REPORT_LUNS, 0, 0, 8 + 8 * 64, &got);
    if (o == SCSI_NO_TARGET || h->vd.failed)
        return -1;
    if (o == SCSI_GOOD) {
        unsigned skipped;
        return (int)scsi_report_luns_parse(h->probe, got, luns, LUNS_PER_TARGET, &skipped);
    }
    luns[0] = 0;
    return 1;
}

static const struct vdisk_field cfg_fields[] = {
    {0, 4}, {4, 4}, {8, 4}, {12, 4}, {16, 4}, {20, 4}, {24, 4}, {28, 2}, {30, 2}, {32, 4},
};

static int host_init(struct vscsi_host *h, const struct pci_dev *pd, const char **polled_why)
{
    struct virtio_dev *vd = &h->vd;
    if (virtio_pci_init(vd, pd) < 0 || virtio_negotiate(vd, 0) < 0)
        return -1;
    uint8_t cfg[VSCSI_CFG_BYTES];
    size_t len = vdisk_cfg_snapshot(vd, cfg_fields, sizeof cfg_fields / sizeof cfg_fields[0],
                                    cfg, sizeof cfg);
    struct vscsi_config c;
    const char *err;
    if (vd->failed || vscsi_parse_config(cfg, len, &c, &err) < 0) {
        virtio_fail(vd, vd->failed ? "configuration unreadable" : err);
        return -1;
    }
    h->msix = vdisk_msix(vd, polled_why) == 0;
    int accepted = 0;
    if (virtio_queue_setup_msix(vd, REQUESTQ, VDISK_QSIZE, &h->q,
                                h->msix ? 0 : VIRTIO_NO_VECTOR, &accepted) < 0)
        return -1;
    /* QEMU reports data-out bytes in the used length; only the response
     * header's content is trusted here anyway. */
    h->q.clamp_len = 1;
    if (h->msix && !accepted) {
        *polled_why = "the device refused the queue's MSI-X entry";
        h->msix = 0;
        msix_stop(&vd->msix);
    }
    /* Data segments: the device's limit, the queue minus header and
     * response, and ours. */
    h->max_segs = VDISK_MAX_SEGS;
    if (h->q.size - 2u < h->max_segs)
        h->max_segs = h->q.size - 2u;
    if (c.seg_max && c.seg_max < h->max_segs)
        h->max_segs = c.seg_max;
    h->max_sectors = c.max_sectors;
    uint64_t slots = pmm_alloc_contig(NSLOTS * SLOT_BYTES / VDISK_PAGE);
    uint64_t probe = pmm_alloc();
    uint64_t zero = pmm_alloc_contig(BLK_BLOCK_MAX / VDISK_PAGE);
    if (h->max_segs < 2 || !slots || !probe || !zero) {
        virtio_fail(vd, h->max_segs < 2 ? "seg_max below 2" : "out of memory");
        return -1;
    }
    for (unsigned i = 0; i < NSLOTS; i++) {
        h->slot[i].pa = slots + (uint64_t)i * SLOT_BYTES;
        h->slot[i].va = phys_to_virt(h->slot[i].pa);
    }
    h->probe = phys_to_virt(probe);
    h->zero = phys_to_virt(zero);
    memset(h->zero, 0, BLK_BLOCK_MAX);
    if (h->msix)
        msix_start(&vd->msix);
    virtio_driver_ok(vd);
    return c.max_target < SCAN_TARGETS - 1 ? c.max_target : SCAN_TARGETS - 1;
}

int virtio_scsi_init(const struct pci_dev *pd, unsigned flags)
{
    struct vscsi_host *h = kzalloc(sizeof *h);
    struct vscsi_lun *l = kzalloc(sizeof *l);
    if (!h || !l) {
        kprintf("tern: virtio-scsi %02x:%02x.%u: out of memory\n", pd->bus, pd->dev, pd->fn);
        return -1;
    }
    const char *polled_why = NULL;
    int max_target = host_init(h, pd, &polled_why);
    if (max_target < 0)
        return -1;
    if (!h->msix)
        kprintf("tern: virtio-scsi %02x:%02x.%u: polled (%s)\n", pd->bus, pd->dev, pd->fn,
                polled_why);
    l->h = h;
    unsigned found = 0;
    for (int t = 0; t <= max_target && !h->vd.failed; t++) {
        uint16_t luns[LUNS_PER_TARGET];
        int n = target_luns(h, l, (uint8_t)t, luns);
        for (int i = 0; i < n && !h->vd.failed; i++) {
            l->target = (uint8_t)t;
            l->lun = luns[i];
            snprintf(l->dev.name, sizeof l->dev.name, "virtio-scsi %02x:%02x.%u %d:%u",
                     pd->bus, pd->dev, pd->fn, t, luns[i]);
            const char *why = NULL;
            if (lun_topology(h, l, flags, &why) < 0) {
                if (why)
                    kprintf("tern: disk %s: skipped: %s\n", l->dev.name, why);
                memset(&l->dev, 0, sizeof l->dev);
                continue;
            }
            l->dev.ops = &vscsi_ops;
            l->dev.drv = l;
            l->dev.irq = h->msix;
            if (h->nluns == BLK_MAX_DEVICES || blk_register(&l->dev) < 0) {
                kprintf("tern: disk %s: skipped: too many disks\n", l->dev.name);
                return (int)found;
            }
            h->lun[h->nluns++] = l;
            found++;
            l = kzalloc(sizeof *l);
            if (!l)
                return (int)found;
            l->h = h;
        }
    }
    kfree(l);
    return (int)found;
}
