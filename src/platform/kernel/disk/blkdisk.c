/*
 * blkdisk.c - struct kdisk over a blk_dev: each call is one or more
 * blk_*_sync requests (split at the driver's max_transfer), so the layout
 * code never sees the asynchronous interface. A read-only device gets no
 * write or flush call, so the layout code can never write to it.
 */
#include "disk/blkdisk.h"

#include "arch/x86_64/memlayout.h"
#include "mm/pmm.h"

#include <string.h>

enum { IO_PAGES = KDISK_IO_BYTES / PAGE_SIZE };

/* Blocks per request: max_transfer in whole blocks, at least one. */
static uint32_t per_request(const struct blk_dev *d)
{
    uint32_t n = d->topo.max_transfer / d->topo.logical_block;
    return n ? n : 1;
}

static int rd(void *ctx, uint64_t lba, uint32_t count, void *buf)
{
    struct blk_dev *d = ctx;
    uint32_t step = per_request(d);
    for (uint32_t i = 0; i < count; i += step) {
        uint32_t n = count - i < step ? count - i : step;
        int st = blk_read_sync(d, lba + i, n, (uint8_t *)buf + (size_t)i * d->topo.logical_block);
        if (st)
            return st;
    }
    return BLK_OK;
}

static int wr(void *ctx, uint64_t lba, uint32_t count, const void *buf)
{
    struct blk_dev *d = ctx;
    uint32_t step = per_request(d);
    for (uint32_t i = 0; i < count; i += step) {
        uint32_t n = count - i < step ? count - i : step;
        int st = blk_write_sync(d, lba + i, n,
                                (const uint8_t *)buf + (size_t)i * d->topo.logical_block, 0);
        if (st)
            return st;
    }
    return BLK_OK;
}

static int fl(void *ctx) { return blk_flush_sync(ctx); }

int blkdisk_open(struct blk_dev *dev, struct blkdisk *out)
{
    memset(out, 0, sizeof *out);
    uint64_t phys = pmm_alloc_contig(IO_PAGES);
    if (!phys)
        return -1;
    out->dev = dev;
    out->io_phys = phys;
    out->disk = (struct kdisk){
        .read = rd,
        .write = dev->topo.read_only ? NULL : wr,
        .flush = dev->topo.read_only ? NULL : fl,
        .status_text = blk_status_text,
        .ctx = dev,
        .logical_block = dev->topo.logical_block,
        .physical_block = dev->topo.physical_block,
        .optimal_io = dev->topo.optimal_io,
        .capacity = dev->topo.capacity,
        .io = phys_to_virt(phys),
    };
    return 0;
}

void blkdisk_close(struct blkdisk *bd)
{
    if (bd->io_phys)
        pmm_free_contig(bd->io_phys, IO_PAGES);
    memset(bd, 0, sizeof *bd);
}
