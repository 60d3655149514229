/*
 * fake_blk.h - a memory-backed block device (dev/blk.h) for host tests,
 * with a volatile write cache: completed writes are visible to reads at
 * once but only durable after a flush. A simulated power cut keeps a
 * random part of the unflushed writes: each one whole, not at all, or torn
 * at 512-byte sector granularity. Writes and flushes can be made to fail.
 *
 * Requests complete only in fake_blk_poll(), never inside submit, as the
 * blk.h contract says (done is called directly: no block layer counts
 * them here), and submit checks what blk.c checks (range, count, offered
 * operations; a 512-byte aligned buffer, stricter than blk.c). Writes that are not whole physical
 * blocks are counted, so a test can prove a user never writes one.
 */
#ifndef TERN_TEST_FAKE_BLK_H
#define TERN_TEST_FAKE_BLK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "platform/kernel/dev/blk.h"

struct fake_write;

struct fake_blk {
    struct blk_dev dev;
    uint8_t *durable;          /* what survives a power cut */
    uint8_t *cur;              /* what reads see */
    struct fake_write *pend;   /* unflushed writes, oldest first */
    size_t npend, pend_cap;
    struct blk_req *queue[16]; /* submitted, not yet completed */
    size_t nq;
    uint64_t rng;
    /* fault injection: fail the nth next operation (1 = the next), or all */
    uint64_t fail_write_nth, fail_flush_nth;
    bool fail_writes, fail_flushes;
    /* the power goes at the nth next request: it and all later ones fail
     * and change nothing, until fake_blk_cut() */
    uint64_t die_nth;
    bool dead;
    /* counters */
    uint64_t writes, flushes, cuts, lost_writes, torn_writes, kept_writes;
    uint64_t partial_block_writes, failed;
};

void fake_blk_init(struct fake_blk *f, uint32_t logical, uint32_t physical, uint64_t blocks,
                   uint64_t seed);
void fake_blk_free(struct fake_blk *f);

/* Complete everything submitted to f; nonzero if anything completed. */
int fake_blk_poll(struct fake_blk *f);

/* blk.h's blk_submit, blk_poll_all and blk_status_text for code compiled
 * against the fake (see test_kvfs_host.c); poll_all polls the device that
 * fake_blk_current names. */
int fake_blk_submit(struct blk_dev *d, struct blk_req *req);
int fake_blk_poll_all(void);
const char *fake_blk_status_text(int status);
void fake_blk_set_current(struct fake_blk *f);

/* A wait hook for kvfs_env (ctx = the fake). */
void fake_blk_wait(void *ctx);

/* Power cut: unflushed writes are kept, lost or torn at random (each with
 * probability 1/3); the disk then holds only what persisted. Returns how
 * many unflushed writes there were. */
size_t fake_blk_cut(struct fake_blk *f);

#endif
