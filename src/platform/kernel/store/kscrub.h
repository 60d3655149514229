/*
 * kscrub.h - the scrubber in the kernel (SPEC D6): store/scrub.c's passes
 * run on the store thread between its batches (kstore.c), never while a
 * commit or backup step is in progress, reading the disk through the
 * thread's waits so the main loop runs meanwhile, at store.scrub_rate KiB/s
 * and starting a pass every store.scrub_interval seconds. Findings go to
 * the console (rate-limited) and to $SYS/broker/store/scrub/... through
 * the store's status. Boot does not scrub: the first pass starts
 * KSCRUB_FIRST_DELAY_S (or the interval, when shorter) after the store
 * opens.
 */
#ifndef TERN_KSTORE_KSCRUB_H
#define TERN_KSTORE_KSCRUB_H

#include "broker/journal.h"
#include "dev/blk.h"
#include "disk/layout.h"

#include <stdbool.h>
#include <stdint.h>

enum {
    KSCRUB_STEP_BYTES = 32 * 1024,   /* read per step: the store thread's longest scrub hold */
    KSCRUB_FIRST_DELAY_S = 10,       /* after the store starts: boot does not scrub */
    KSCRUB_CONSOLE_PER_PASS = 8,     /* finding lines per pass; the rest are counted */
};

struct kscrub;

/* Scrub l on dev at rate_kib KiB/s, a pass every interval_s seconds (from
 * the start of one to the start of the next; a pass that takes longer is
 * followed at once). NULL when rate_kib is 0 (off) or out of memory. */
struct kscrub *kscrub_start(struct blk_dev *dev, const struct klayout *l, uint32_t rate_kib,
                            uint32_t interval_s);

/* A step may run now (the store thread's wake condition). */
bool kscrub_due(struct kscrub *k, uint64_t now_us);

/* One step, on the store thread. */
void kscrub_step(struct kscrub *k, uint64_t now_us);

/* The operator console's "scrub now": a pass starts at the store thread's
 * next idle moment instead of at its scheduled time (it still reads at
 * store.scrub_rate, and the next scheduled pass counts from its start).
 * Returns 0 when one was asked for, 1 when a pass is already under way
 * (it goes on; nothing changes). Main loop; the store thread may run on
 * another CPU meanwhile (kscrub.c's lock). */
int kscrub_request(struct kscrub *k, uint64_t now_us);

/* Changes whenever the status below does (after a step). */
uint64_t kscrub_generation(struct kscrub *k);

/* The scrubber's part of the store's $SYS status (unchanged for NULL);
 * returns the generation it is as of. */
uint64_t kscrub_status(struct kscrub *k, broker_store_status *out);

#endif
