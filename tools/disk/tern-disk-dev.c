/*
 * tern-disk-dev.c - the image tern-disk looks at (tern-disk.h): a file or a
 * block device opened read-only, detected as a whole disk or a partition
 * alone, and presented twice: as a struct kdisk for the layout code and as
 * a blk_dev for the kernel's store VFS (kvfs), which tern-disk links
 * unchanged. blk.h's blk_submit, blk_poll_all and blk_status_text are
 * defined here for it, as the host has no block layer.
 *
 * Reading a database can make SQLite write (recovering a WAL into its
 * index, rolling back a hot journal): those writes land in an in-memory
 * overlay of logical blocks that later reads see, never in the image. The
 * image's file descriptor is opened O_RDONLY, so no code path can change it.
 * Only an image opened writable (the test fixture that populates images;
 * a migration's --apply) writes through, and flushes with fsync.
 */
#define _GNU_SOURCE

#include "tern-disk.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
    SHORT_IO = -100000,   /* a kdisk status for a read past the end */
    QUEUE = 16,           /* blk requests in flight (kvfs has one at a time) */
    MAX_TRANSFER = 1 << 20,
};

/* Logical blocks written by SQLite while reading, keyed by LBA + 1. */
struct overlay {
    uint64_t *keys;
    uint8_t **vals;
    size_t cap, n;
};

struct tdisk_image {
    int fd;
    bool writable;
    const char *path;
    enum tdisk_kind kind;
    int blockdev;
    uint64_t bytes;
    uint32_t lb;
    uint64_t base;          /* LBA the image's first block stands for */
    struct kdisk kd;
    uint8_t *io;
    struct blk_dev dev;
    struct blk_req *queue[QUEUE];
    unsigned nq;
    struct overlay ov;
};

/* ---- the overlay ------------------------------------------------------- */

static uint8_t **ov_slot(struct overlay *ov, uint64_t lba, int insert)
{
    if (ov->cap == 0)
        return NULL;
    size_t i = (size_t)(lba * 0x9E3779B97F4A7C15ull) & (ov->cap - 1);
    while (ov->keys[i] != 0) {
        if (ov->keys[i] == lba + 1)
            return &ov->vals[i];
        i = (i + 1) & (ov->cap - 1);
    }
    if (!insert)
        return NULL;
    ov->keys[i] = lba + 1;
    ov->n++;
    return &ov->vals[i];
}

static int ov_grow(struct overlay *ov)
{
    struct overlay bigger = {.cap = ov->cap ? ov->cap * 2 : 1024};
    bigger.keys = calloc(bigger.cap, sizeof *bigger.keys);
    bigger.vals = calloc(bigger.cap, sizeof *bigger.vals);
    if (!bigger.keys || !bigger.vals) {
        free(bigger.keys);
        free(bigger.vals);
        return -1;
    }
    for (size_t i = 0; i < ov->cap; i++)
        if (ov->keys[i])
            *ov_slot(&bigger, ov->keys[i] - 1, 1) = ov->vals[i];
    free(ov->keys);
    free(ov->vals);
    *ov = bigger;
    return 0;
}

static int ov_put(struct overlay *ov, uint64_t lba, const uint8_t *blk, uint32_t lb)
{
    uint8_t **v = ov_slot(ov, lba, 0);
    if (!v) {
        if ((ov->n + 1) * 2 > ov->cap && ov_grow(ov))
            return -1;
        v = ov_slot(ov, lba, 1);
        if (!(*v = malloc(lb)))
            return -1;
    }
    memcpy(*v, blk, lb);
    return 0;
}

static void ov_free(struct overlay *ov)
{
    for (size_t i = 0; i < ov->cap; i++)
        free(ov->vals[i]);
    free(ov->keys);
    free(ov->vals);
    memset(ov, 0, sizeof *ov);
}

/* ---- block access -------------------------------------------------------- */

static int img_read(struct tdisk_image *im, uint64_t lba, uint32_t count, void *buf)
{
    size_t len = (size_t)count * im->lb;
    if (lba < im->base)
        return SHORT_IO;
    lba -= im->base;
    if (lba > im->bytes / im->lb || count > im->bytes / im->lb - lba)
        return SHORT_IO;
    ssize_t n = pread(im->fd, buf, len, (off_t)(lba * im->lb));
    if (n != (ssize_t)len)
        return n < 0 ? -errno : SHORT_IO;
    if (im->ov.n)
        for (uint32_t i = 0; i < count; i++) {
            uint8_t **v = ov_slot(&im->ov, lba + i, 0);
            if (v)
                memcpy((uint8_t *)buf + (size_t)i * im->lb, *v, im->lb);
        }
    return 0;
}

static int img_write(struct tdisk_image *im, uint64_t lba, uint32_t count, const void *buf)
{
    if (lba < im->base)
        return SHORT_IO;
    lba -= im->base;
    if (lba > im->bytes / im->lb || count > im->bytes / im->lb - lba)
        return SHORT_IO;
    if (im->writable) {
        size_t len = (size_t)count * im->lb;
        ssize_t n = pwrite(im->fd, buf, len, (off_t)(lba * im->lb));
        return n == (ssize_t)len ? 0 : n < 0 ? -errno : SHORT_IO;
    }
    for (uint32_t i = 0; i < count; i++)
        if (ov_put(&im->ov, lba + i, (const uint8_t *)buf + (size_t)i * im->lb, im->lb))
            return -ENOMEM;
    return 0;
}

static int img_flush(struct tdisk_image *im)
{
    return im->writable && fsync(im->fd) ? -errno : 0;
}

static int kd_read(void *ctx, uint64_t lba, uint32_t count, void *buf)
{
    return img_read(ctx, lba, count, buf);
}

static int kd_write(void *ctx, uint64_t lba, uint32_t count, const void *buf)
{
    return img_write(ctx, lba, count, buf);
}

static int kd_flush(void *ctx)
{
    return img_flush(ctx);
}

static const char *kd_status(int status)
{
    return status == SHORT_IO ? "short read (past the end of the image?)" : strerror(-status);
}

/* ---- the blk_dev for kvfs ------------------------------------------------ */

static int dev_submit(struct blk_dev *d, struct blk_req *req)
{
    struct tdisk_image *im = d->drv;
    if (im->nq == QUEUE)
        return BLK_EAGAIN;
    im->queue[im->nq++] = req;
    return BLK_OK;
}

static int dev_poll(struct blk_dev *d)
{
    struct tdisk_image *im = d->drv;
    unsigned n = im->nq;
    for (unsigned i = 0; i < n; i++) {
        struct blk_req *req = im->queue[i];
        int rc = 0;
        if (req->op == BLK_READ)
            rc = img_read(im, req->lba, req->count, req->buf);
        else if (req->op == BLK_WRITE)
            rc = img_write(im, req->lba, req->count, req->buf);
        else
            rc = img_flush(im);
        blk_complete(d, req, rc ? BLK_EIO : BLK_OK);
    }
    im->nq = 0;
    return n > 0;
}

static const struct blk_ops dev_ops = {.submit = dev_submit, .poll = dev_poll};

int blk_submit(struct blk_dev *d, struct blk_req *req)
{
    const struct blk_topology *t = &d->topo;
    if (req->op == BLK_FLUSH)
        return req->count ? BLK_ERANGE : d->ops->submit(d, req);
    if (req->op != BLK_READ && req->op != BLK_WRITE)
        return BLK_EUNSUPP;
    if (!req->buf)
        return BLK_EINVAL;
    if (req->count == 0 || req->lba > t->capacity || req->count > t->capacity - req->lba ||
        (uint64_t)req->count * t->logical_block > t->max_transfer)
        return BLK_ERANGE;
    return d->ops->submit(d, req);
}

void blk_complete(struct blk_dev *d, struct blk_req *req, int status)
{
    (status == BLK_OK ? (req->op == BLK_READ ? &d->reads : &d->writes) : &d->errors)[0]++;
    req->status = status;
    req->done(req);
}

/* kvfs waits through its env.wait hook (tern-disk-db.c polls the image
 * there), so it never needs the kernel's poll of every device. */
int blk_poll_all(void)
{
    return 0;
}

const char *blk_status_text(int status)
{
    switch (status) {
    case BLK_OK:
        return "ok";
    case BLK_EIO:
        return "I/O error";
    case BLK_EUNSUPP:
        return "operation not supported";
    case BLK_ERANGE:
        return "out of range";
    case BLK_EINVAL:
        return "invalid request";
    case BLK_EAGAIN:
        return "queue full";
    default:
        return "unknown status";
    }
}

struct blk_dev *tdisk_image_blk(struct tdisk_image *im, uint32_t physical_block)
{
    struct blk_dev *d = &im->dev;
    memset(d, 0, sizeof *d);
    d->ops = &dev_ops;
    d->drv = im;
    snprintf(d->name, sizeof d->name, "image");
    d->topo = (struct blk_topology){
        .logical_block = im->lb,
        .physical_block = physical_block < im->lb ? im->lb : physical_block,
        .capacity = im->base + im->bytes / im->lb,
        .max_transfer = MAX_TRANSFER,
        .write_cache = true,
        .flush = true,
    };
    return d;
}

/* ---- a kdisk over any blk_dev (the migration's, also over a test's fake) -- */

struct blk_wait {
    bool done;
};

static void blk_wait_done(struct blk_req *req)
{
    ((struct blk_wait *)req->ctx)->done = true;
}

/* One request on d, polled to completion; a blk status. */
int tdisk_blk_sync(struct blk_dev *d, enum blk_op op, uint64_t lba, uint32_t count, void *buf)
{
    struct blk_wait w = {false};
    struct blk_req req = {.op = op, .lba = lba, .count = count, .buf = buf,
                          .done = blk_wait_done, .ctx = &w};
    int rc;
    while ((rc = blk_submit(d, &req)) == BLK_EAGAIN)
        (void)d->ops->poll(d);
    if (rc != BLK_OK)
        return rc;
    while (!w.done)
        (void)d->ops->poll(d);
    return req.status;
}

static int bk_read(void *ctx, uint64_t lba, uint32_t count, void *buf)
{
    return tdisk_blk_sync(ctx, BLK_READ, lba, count, buf);
}

static int bk_write(void *ctx, uint64_t lba, uint32_t count, const void *buf)
{
    return tdisk_blk_sync(ctx, BLK_WRITE, lba, count, (void *)buf);
}

static int bk_flush(void *ctx)
{
    return tdisk_blk_sync(ctx, BLK_FLUSH, 0, 0, NULL);
}

void tdisk_blk_kdisk(struct kdisk *kd, struct blk_dev *d, uint8_t *io)
{
    *kd = (struct kdisk){
        .read = bk_read,
        .write = bk_write,
        .flush = bk_flush,
        .status_text = blk_status_text,
        .ctx = d,
        .logical_block = d->topo.logical_block,
        .physical_block = d->topo.physical_block,
        .optimal_io = d->topo.optimal_io,
        .capacity = d->topo.capacity,
        .io = io,
    };
}

/* ---- opening --------------------------------------------------------------- */

static int read_at(int fd, uint64_t off, uint8_t *buf, size_t len, uint64_t size, size_t *got)
{
    *got = 0;
    if (off >= size)
        return 0;
    if (len > size - off)
        len = (size_t)(size - off);
    ssize_t n = pread(fd, buf, len, (off_t)off);
    if (n < 0)
        return -1;
    *got = (size_t)n;
    return 0;
}

/* The logical block a lone partition was formatted with: the superblock's
 * (unchecked here: ksuper_read judges the slot), else 512. */
static uint32_t partition_lb(const uint8_t *slot, size_t len)
{
    if (len < 52 || memcmp(slot, KSUPER_MAGIC, KSUPER_MAGIC_LEN) != 0)
        return 0;
    uint32_t lb = kdisk_le32(slot + 48);
    return lb == 512 || lb == 1024 || lb == 2048 || lb == 4096 ? lb : 0;
}

struct tdisk_image *tdisk_image_open(const char *path, uint32_t force_lb, bool writable,
                                     char *err, size_t err_size)
{
    struct tdisk_image *im = calloc(1, sizeof *im);
    static uint8_t head[TDISK_HEAD_BYTES], slot_b[KSUPER_READ_BYTES], tail[TDISK_TAIL_BYTES];
    struct stat st;
    if (!im) {
        snprintf(err, err_size, "%s: out of memory", path);
        return NULL;
    }
    im->path = path;
    im->writable = writable;
    im->fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    if (im->fd < 0 || fstat(im->fd, &st)) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        goto fail;
    }
    im->blockdev = S_ISBLK(st.st_mode);
    uint32_t dev_lb = 0;
    if (im->blockdev) {
        int ssz = 0;
        if (ioctl(im->fd, BLKGETSIZE64, &im->bytes) || ioctl(im->fd, BLKSSZGET, &ssz)) {
            snprintf(err, err_size, "%s: cannot read its size: %s", path, strerror(errno));
            goto fail;
        }
        dev_lb = (uint32_t)ssz;
    } else if (S_ISREG(st.st_mode)) {
        im->bytes = (uint64_t)st.st_size;
    } else {
        snprintf(err, err_size, "%s: neither a file nor a block device", path);
        goto fail;
    }
    size_t nh, nb, nt;
    uint64_t tail_off = im->bytes > sizeof tail ? im->bytes - sizeof tail : 0;
    if (read_at(im->fd, 0, head, sizeof head, im->bytes, &nh) ||
        read_at(im->fd, KSUPER_SLOT_B, slot_b, sizeof slot_b, im->bytes, &nb) ||
        read_at(im->fd, tail_off, tail, sizeof tail, im->bytes, &nt)) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        goto fail;
    }
    uint32_t lb = 512;
    im->kind = tdisk_detect(head, nh, slot_b, nb, tail, nt, &lb);
    if (im->kind == TDISK_PARTITION) {
        uint32_t a = partition_lb(head, nh), b = partition_lb(slot_b, nb);
        lb = a ? a : b ? b : 512;
    }
    if (force_lb) {
        im->kind = TDISK_WHOLE_DISK;
        lb = force_lb;
    }
    if (dev_lb)
        lb = dev_lb; /* a block device knows its own */
    im->lb = lb;
    if (!(im->io = aligned_alloc(4096, KDISK_IO_BYTES))) {
        snprintf(err, err_size, "%s: out of memory", path);
        goto fail;
    }
    im->kd = (struct kdisk){
        .read = kd_read,
        .write = writable ? kd_write : NULL,
        .flush = writable ? kd_flush : NULL,
        .status_text = kd_status,
        .ctx = im,
        .logical_block = lb,
        .physical_block = lb,
        .capacity = im->bytes / lb,
        .io = im->io,
    };
    return im;
fail:
    tdisk_image_close(im);
    return NULL;
}

void tdisk_image_close(struct tdisk_image *im)
{
    if (!im)
        return;
    if (im->fd >= 0)
        close(im->fd);
    ov_free(&im->ov);
    free(im->io);
    free(im);
}

void tdisk_image_set_base(struct tdisk_image *im, uint64_t base)
{
    im->base = base;
    im->kd.capacity = base + im->bytes / im->lb;
}

enum tdisk_kind tdisk_image_kind(const struct tdisk_image *im) { return im->kind; }
const char *tdisk_image_path(const struct tdisk_image *im) { return im->path; }
const struct kdisk *tdisk_image_kdisk(struct tdisk_image *im) { return &im->kd; }
int tdisk_image_is_blockdev(const struct tdisk_image *im) { return im->blockdev; }
