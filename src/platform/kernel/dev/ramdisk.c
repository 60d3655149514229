/*
 * ramdisk.c - the RAM disk of ramdisk.h. Requests wait in a FIFO threaded
 * through req->drv until the next poll, which performs and completes them
 * in order. Compiled into test builds only.
 */
#ifdef TERN_TEST_HOOKS

#include "dev/ramdisk.h"

#include <stdio.h>
#include <string.h>

enum { DEFAULT_MAX_TRANSFER = 1 << 20 };

static int rd_submit(struct blk_dev *d, struct blk_req *req)
{
    struct ramdisk *rd = d->drv;
    if (rd->queue_max && rd->queued >= rd->queue_max)
        return BLK_EAGAIN;
    req->drv = NULL;
    if (rd->tail)
        rd->tail->drv = req;
    else
        rd->head = req;
    rd->tail = req;
    rd->queued++;
    return BLK_OK;
}

static struct blk_req *take(struct ramdisk *rd)
{
    struct blk_req *r = rd->head;
    if (r) {
        rd->head = r->drv;
        if (!rd->head)
            rd->tail = NULL;
        rd->queued--;
    }
    return r;
}

static int perform(struct ramdisk *rd, const struct blk_req *r)
{
    size_t lb = rd->dev.topo.logical_block;
    uint8_t *at = rd->store + r->lba * lb;
    size_t len = (size_t)r->count * lb;
    switch (r->op) {
    case BLK_READ:
        memcpy(r->buf, at, len);
        return BLK_OK;
    case BLK_WRITE:
        if (rd->fail_writes)
            return BLK_EIO;
        memcpy(at, r->buf, len);
        return BLK_OK;
    case BLK_FLUSH:
        return rd->fail_flushes ? BLK_EIO : BLK_OK;
    case BLK_DISCARD:
    case BLK_WRITE_ZEROES:
        /* Discarded blocks read back as a pattern, not zeroes, so a user
         * relying on discard to zero is caught. */
        if (rd->fail_writes)
            return BLK_EIO;
        memset(at, r->op == BLK_DISCARD ? 0xDD : 0, len);
        return BLK_OK;
    }
    return BLK_EIO;
}

static int rd_poll(struct blk_dev *d)
{
    struct ramdisk *rd = d->drv;
    if (rd->stall)
        return 0;
    int n = 0;
    /* Only what was queued before this poll: a done callback that submits
     * again is served next time, as with a real device. */
    for (unsigned todo = rd->queued; todo; todo--, n++) {
        struct blk_req *r = take(rd);
        blk_complete(d, r, perform(rd, r));
    }
    return n;
}

static void rd_fail(struct blk_dev *d, const char *why)
{
    (void)why;
    struct ramdisk *rd = d->drv;
    rd->reset = true;
    struct blk_req *r;
    while ((r = take(rd)))
        blk_complete(d, r, BLK_EIO);
}

static const struct blk_ops rd_ops = {rd_submit, rd_poll, rd_fail, NULL};

static bool pow2(uint32_t v) { return v && !(v & (v - 1)); }

int ramdisk_init(struct ramdisk *rd, const struct blk_topology *t, void *store,
                 const char *name)
{
    if (!pow2(t->logical_block) || t->logical_block < 512 || !pow2(t->physical_block) ||
        t->physical_block < t->logical_block || !t->capacity)
        return -1;
    memset(rd, 0, sizeof *rd);
    rd->store = store;
    rd->dev.ops = &rd_ops;
    rd->dev.drv = rd;
    rd->dev.topo = *t;
    if (!rd->dev.topo.max_transfer)
        rd->dev.topo.max_transfer = DEFAULT_MAX_TRANSFER;
    rd->dev.topo.max_transfer -= rd->dev.topo.max_transfer % t->logical_block;
    snprintf(rd->dev.name, sizeof rd->dev.name, "%s", name);
    snprintf(rd->dev.model, sizeof rd->dev.model, "RAM disk");
    return 0;
}

#endif
