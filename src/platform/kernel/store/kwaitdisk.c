/*
 * kwaitdisk.c - the yielding block I/O of kwaitdisk.h: one request at a
 * time, completion recorded by its callback, the thread parked in
 * kthread_wait_until meanwhile.
 */
#include "store/kwaitdisk.h"

#include "kthread.h"

#include <stdbool.h>
#include <string.h>

struct waiter {
    struct blk_req req;
    bool done;
};

static void req_done(struct blk_req *req) { ((struct waiter *)req->ctx)->done = true; }
static bool waiter_done(void *arg) { return ((struct waiter *)arg)->done; }
static int poll_disks(void) { return blk_poll_all(); }

static int one(struct blk_dev *d, enum blk_op op, uint64_t lba, uint32_t count, void *buf)
{
    struct waiter w;
    memset(&w, 0, sizeof w);
    w.req = (struct blk_req){.op = op, .lba = lba, .count = count, .buf = buf, .done = req_done,
                             .ctx = &w};
    int rc;
    /* A full queue: collect completions (they free slots), then let the
     * main loop run before trying again. */
    while ((rc = blk_submit(d, &w.req)) == BLK_EAGAIN) {
        blk_poll_all();
        kthread_yield_after(0);
    }
    if (rc != BLK_OK)
        return rc;
    kthread_wait_until(waiter_done, &w, poll_disks);
    return w.req.status;
}

int kwaitdisk_xfer(struct blk_dev *d, enum blk_op op, uint64_t lba, uint32_t count, void *buf)
{
    uint32_t limit = op == BLK_DISCARD ? d->topo.max_discard
                   : op == BLK_WRITE_ZEROES ? d->topo.max_write_zeroes
                   : d->topo.max_transfer / d->topo.logical_block;
    if (!limit)
        limit = 1;
    for (uint32_t i = 0; i < count; i += limit) {
        uint32_t n = count - i < limit ? count - i : limit;
        uint8_t *p = buf ? (uint8_t *)buf + (size_t)i * d->topo.logical_block : NULL;
        int st = one(d, op, lba + i, n, p);
        if (st)
            return st;
    }
    return BLK_OK;
}

static int w_read(void *ctx, uint64_t lba, uint32_t count, void *buf)
{
    return kwaitdisk_xfer(ctx, BLK_READ, lba, count, buf);
}

static int w_write(void *ctx, uint64_t lba, uint32_t count, const void *buf)
{
    return kwaitdisk_xfer(ctx, BLK_WRITE, lba, count, (void *)(uintptr_t)buf);
}

static int w_flush(void *ctx) { return one(ctx, BLK_FLUSH, 0, 0, NULL); }

void kwaitdisk_attach(struct blkdisk *bd)
{
    bd->disk.read = w_read;
    if (bd->disk.write)
        bd->disk.write = w_write;
    if (bd->disk.flush)
        bd->disk.flush = w_flush;
}
