/*
 * kwaitdisk.h - block I/O for the kernel's storage threads (the journal
 * writer, the scrubber): each request is submitted, then the calling
 * kthread yields until it completes (kthread_wait_until), so the main loop
 * keeps serving while the disk works. Called outside a thread (at boot),
 * the wait polls, like blkdisk's synchronous calls.
 */
#ifndef TERN_STORE_KWAITDISK_H
#define TERN_STORE_KWAITDISK_H

#include "dev/blk.h"
#include "disk/blkdisk.h"

#include <stdint.h>

/* op (read, write, discard, write-zeroes; count blocks from lba; buf NULL
 * but for read and write) split at the driver's limit for op. BLK_OK or
 * the first failing request's status. */
int kwaitdisk_xfer(struct blk_dev *d, enum blk_op op, uint64_t lba, uint32_t count, void *buf);

/* Point bd's struct kdisk calls (opened by blkdisk_open) at the yielding
 * ones; a read-only device keeps no write or flush, as in blkdisk. */
void kwaitdisk_attach(struct blkdisk *bd);

#endif
