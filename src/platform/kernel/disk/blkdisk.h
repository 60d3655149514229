/*
 * blkdisk.h - the kernel's adapter from a block device (dev/blk.h) to the
 * layout code's struct kdisk: synchronous reads, writes and flushes through
 * blk_*_sync, the topology copied over, and an I/O buffer from the frame
 * allocator (blk.h wants 512-byte aligned direct-map memory, which kmalloc
 * does not promise). Boot-time only, like the sync calls it uses.
 */
#ifndef TERN_DISK_BLKDISK_H
#define TERN_DISK_BLKDISK_H

#include "dev/blk.h"
#include "disk/kdisk.h"

#include <stdint.h>

struct blkdisk {
    struct kdisk disk;        /* what the layout code gets */
    struct blk_dev *dev;
    uint64_t io_phys;         /* the I/O buffer's frames */
};

/* Wrap dev. 0, or -1 when the I/O buffer cannot be allocated. */
int blkdisk_open(struct blk_dev *dev, struct blkdisk *out);
void blkdisk_close(struct blkdisk *bd);

#endif
