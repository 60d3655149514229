/*
 * kstore.h - the unikernel's store thread (issue 13, "a commit waiting for
 * the disk must not stop the network"): the kernel's counterpart of the
 * daemon's posix/storeq.c and loop_store.c, on the same store queue
 * (src/store/queue.h) and a cooperative kernel thread (kthread.h).
 *
 * The main loop owns the broker: kstore_complete() reports finished
 * batches to the core in order before the broker's turn, kstore_run()
 * queues the turn's batches and lets the store thread run after it. The
 * thread owns the store: it commits everything queued as one group, takes
 * backup steps between commits on store.backup_interval, and gives the CPU
 * back whenever it waits for the disk (the VFS waits through
 * kthread_wait_until) and at least every KSTORE_SLICE_NS of SQLite work
 * (store_set_progress), so the main loop is never held longer than
 *   KSTORE_SLICE_NS + the work between two progress calls
 *   (KSTORE_PROGRESS_OPS virtual-machine instructions)
 * plus any stretch SQLite spends outside its virtual machine without
 * waiting for the disk (docs/STORE.md gives the figures). Large commits
 * spend most of their time writing pages, so the VFS must wait (and so
 * yield) per device request, never write a whole commit without waiting.
 *
 * There is no orderly shutdown in the kernel: power-off is a power cut,
 * which is what the store's durability contract is for.
 */
#ifndef TERN_KSTORE_H
#define TERN_KSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/broker.h"
#include "store/queue.h"
#include "store/store.h"

enum {
    KSTORE_SLICE_NS = 1000000,  /* longest run of SQLite work between yields */
    KSTORE_PROGRESS_OPS = 1000, /* SQLite VM instructions between checks of the slice */
    KSTORE_STACK_PAGES = 64,    /* 256 KiB: SQLite's deepest calls and a trap frame */
};

struct kstore;

/* Start the store thread over st (st and its ctx stay valid for good).
 * Load the broker from it first (st->load, on the main context). */
struct kstore *kstore_start(const squeue_store *st, uint32_t backup_interval_s);

/* Main loop, before the broker's turn: report finished batches to the core
 * in order and hand it the store's health ($SYS); a console line when
 * commits start failing or work again. Nonzero when any was reported. */
int kstore_complete(struct kstore *k, broker *b);
/* Main loop, after the broker's turn: queue the core's batches and resume
 * the store thread if it is ready. Nonzero when it ran (the loop should
 * not sleep: it may have more to do). */
int kstore_run(struct kstore *k, broker *b);
/* Main loop: finished batches wait for kstore_complete (the idle decision
 * asks this with interrupts off: with a storage core the results arrive
 * from CPU 1, with a wake IPI). */
bool kstore_results_waiting(struct kstore *k);

/* A store's progress callback (store_set_progress): yields the store
 * thread once it has run KSTORE_SLICE_NS; a no-op on the main context
 * (opening and loading the store at boot). */
void kstore_progress(void *ctx);

/* The store's health as last reported to the core (the telemetry journal
 * records its changes). */
void kstore_status(struct kstore *k, broker_store_status *out);
/* Run the disk scrubber (kscrub.h; NULL: none) on the store thread while
 * it has no batch or backup step to do. */
struct kscrub;
void kstore_set_scrub(struct kstore *k, struct kscrub *scrub);

/* The operator console's "backup now": the store thread starts a backup
 * at its next idle moment (between commits), even if nothing changed
 * since the last one; a request while one runs joins it. Main loop; out
 * gets the backup counters as of now and whether one was already under
 * way. */
struct kstore_backup_state {
    bool running;         /* a backup was under way before this request */
    uint64_t done, failed; /* $SYS/broker/store/backups/done and failed */
};
void kstore_backup_now(struct kstore *k, struct kstore_backup_state *out);

/* One line for the console: commits, records per commit, latency, state. */
void kstore_describe(struct kstore *k, char *buf, size_t n);

/* The store queue lock's counters (spinlock.h): CPU 0 and the storage
 * CPU meet on it at every hand-over. */
struct spin_stats;
void kstore_lock_stats(struct kstore *k, struct spin_stats *out);

/*
 * Issue 13's plug for an open SQLite store (the disk, its layout and the
 * VFS give it): the squeue_store over s, with the yield above installed.
 * Inline so that a kernel without SQLite compiled in does not reference
 * the store's functions until something calls it.
 */
static inline void kstore_bind_store(squeue_store *out, store *s)
{
    squeue_store_of(out, s);
    store_set_progress(s, KSTORE_PROGRESS_OPS, kstore_progress, NULL);
}

#endif
