/*
 * ramdisk.h - a block device in memory for test builds (TERN_TEST_HOOKS)
 * and host unit tests: any topology the test asks for, requests completed
 * on the next poll (never inside submit, as blk.h requires), and faults on
 * demand (failing writes or flushes, a device that never answers, a full
 * queue), so users of blk.h can be tested without QEMU.
 */
#ifndef TERN_DEV_RAMDISK_H
#define TERN_DEV_RAMDISK_H

#include "dev/blk.h"

#include <stddef.h>
#include <stdint.h>

struct ramdisk {
    struct blk_dev dev;
    uint8_t *store;              /* capacity * logical_block bytes, the caller's */
    struct blk_req *head, *tail; /* submitted, completed at the next poll */
    unsigned queued;
    /* faults, set by tests at any time */
    unsigned queue_max;          /* > 0: submits beyond this many get BLK_EAGAIN */
    bool fail_writes;            /* writes, discards, write-zeroes complete BLK_EIO */
    bool fail_flushes;           /* flushes complete BLK_EIO */
    bool stall;                  /* nothing completes (the watchdog's case) */
    bool reset;                  /* set when the block layer gave it up */
};

/* Set rd up over store with topology t (max_transfer 0: 1 MiB) and name.
 * 0, or -1 if the topology is impossible (block sizes not powers of two,
 * physical not a multiple of logical, no capacity). */
int ramdisk_init(struct ramdisk *rd, const struct blk_topology *t, void *store,
                 const char *name);

#endif
