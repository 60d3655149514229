/*
 * queue.h - the store queue both platforms share: the journal batches the
 * broker core produced, on their way to a store worker (the Linux daemon's
 * store thread, the unikernel's cooperative store thread) and back to the
 * core in order, with the worker's policy: group commit, the pause after a
 * failed group, backup steps between commits on store.backup_interval, and
 * the store's health for $SYS.
 *
 * Two sides use it: the main side, which owns the broker (the event loop;
 * the kernel's main loop), and the worker, which owns the store. The queue
 * keeps no lock: where the sides run in parallel (the daemon) the platform
 * holds its mutex around every call marked "shared" below; where they take
 * turns (the kernel) none is needed. Batch bytes belong to the core and
 * stay unchanged until reported (journal.h).
 *
 * Portable and SQLite-free: the worker reaches the store through a
 * squeue_store (queue_store.c binds it to store.h), so the queue also
 * builds into a kernel before its SQLite does, and tests can drive it with
 * a store of their own.
 */
#ifndef TERN_STORE_QUEUE_H
#define TERN_STORE_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/broker.h"
#include "broker/journal.h"
#include "store/store.h"

enum {
    SQUEUE_CAP = 256,                 /* batches queued or in flight */
    SQUEUE_RETRY_MIN_US = 50000,      /* after a failed group, first pause before the next */
    SQUEUE_RETRY_MAX_US = 2000000,    /* ... doubling up to this while failures go on */
    SQUEUE_STATS_PERIOD_US = 1000000, /* refresh of the stats snapshot */
};

/* What the worker does with the store: store.h's calls, behind pointers. */
typedef struct squeue_store {
    store_rc (*apply)(void *ctx, const broker_store_batch *batches, size_t n);
    store_rc (*backup_begin)(void *ctx);
    store_rc (*backup_step)(void *ctx, bool *done);
    void (*get_stats)(void *ctx, store_stats *out);
    /* Rebuild the core from the store (main side, before serving). */
    store_rc (*load)(void *ctx, broker *b, char *err, size_t err_size);
    void *ctx;
    /* Optional (NULL: none), the kernel's disk growth: upkeep_due, cheap
     * and without I/O, says whether the worker should run upkeep when it
     * has nothing else in flight (asked on either side); upkeep runs on
     * the worker between units. */
    bool (*upkeep_due)(void *ctx);
    bool (*upkeep)(void *ctx);        /* true when what get_stats reports changed */
    /* Optional (NULL: none), worker side, cheap: true once when the
     * platform wants a backup now (the kernel's disk growth moved the
     * backups to empty regions); the worker then asks for one as the
     * console's "backup now" does. */
    bool (*take_backup_wish)(void *ctx);
} squeue_store;

/* The squeue_store of an open store (queue_store.c). */
void squeue_store_of(squeue_store *out, store *s);

typedef struct squeue_slot {
    broker_store_batch b;
    bool ok;
} squeue_slot;

/* A finished batch, for the main side to report. */
typedef struct squeue_result {
    uint64_t seq;
    bool ok;
} squeue_result;

/*
 * Running indices head <= done <= taken <= tail: [head, done) are finished
 * and wait to be reported, [done, taken) are being committed, [taken, tail)
 * wait for the worker. Fields are private to queue.c.
 */
typedef struct squeue {
    /* shared */
    uint64_t head, done, taken, tail;
    squeue_slot ring[SQUEUE_CAP];
    bool stop, backup_req;
    store_stats stats;        /* the worker's last snapshot */
    uint64_t stats_gen;       /* counts refreshes of the snapshot */
    /* worker only */
    uint32_t backup_interval_s;
    uint64_t next_backup_us;  /* a periodic backup is due from then */
    uint64_t backup_commits;  /* commits when the last backup began */
    bool backup_running;
    uint64_t retry_pause_us;  /* 0 after a success, else the current pause */
    uint64_t retry_at_us;     /* no group before this after a failure */
    uint64_t next_stats_us;
    bool stats_stale;         /* work done since the last refresh */
} squeue;

/* Empty queue; backup_interval_s 0 = backups on demand only. */
void squeue_init(squeue *q, uint32_t backup_interval_s, uint64_t now_us);

/* ---- main side ---------------------------------------------------------- */

/* Shared. Take the core's batches while there is room (the rest stay in the
 * core until the next call). True when any was queued: wake the worker. */
bool squeue_submit(squeue *q, broker *b);
/* Shared. Move the finished batches into out (room for SQUEUE_CAP); returns
 * how many. Report them with squeue_report outside any lock. */
size_t squeue_collect(squeue *q, squeue_result *out);
/* Report results to the core in order; false when any failed. */
bool squeue_report(broker *b, const squeue_result *r, size_t n);
/* Shared. Nothing queued or being committed (finished ones may wait). */
bool squeue_idle(const squeue *q);
/* Shared. Nothing at all: every batch taken was reported. */
bool squeue_empty(const squeue *q);
/* Shared. Ask for a backup now (the console's "backup now"). */
void squeue_request_backup(squeue *q);
/* Shared. Ask the worker to stop once nothing waits. */
void squeue_request_stop(squeue *q);

/* The store's health for the core ($SYS/broker/store/), from a stats
 * snapshot and whether the results just reported failed (fresher). */
void squeue_status_of(const store_stats *st, bool failing, broker_store_status *out);

/* ---- worker side -------------------------------------------------------- */

typedef enum squeue_action {
    SQUEUE_COMMIT, /* batches wait: squeue_take_group, apply, squeue_group_done */
    SQUEUE_BACKUP, /* nothing waits, a backup is asked for, due or running:
                      squeue_take_backup_request, then squeue_backup_step */
    SQUEUE_WAIT,   /* nothing to do before *wake_us (UINT64_MAX: until woken) */
    SQUEUE_STOP,   /* stop asked for and nothing waits */
} squeue_action;

/* Shared. What to do now; changes nothing. */
squeue_action squeue_next(const squeue *q, uint64_t now_us, uint64_t *wake_us);
/* Shared. Every batch waiting, for one transaction (group commit); out has
 * room for SQUEUE_CAP. */
size_t squeue_take_group(squeue *q, broker_store_batch *out);
/* Shared. The group taken last finished with rc at now_us: its batches are
 * ready to report; after a failure the next group waits a pause that
 * doubles from SQUEUE_RETRY_MIN_US to SQUEUE_RETRY_MAX_US while failures
 * go on (the core answers a failure with a rewrite of its whole state, and
 * without the pause a full disk would turn that into a busy loop). */
void squeue_group_done(squeue *q, store_rc rc, uint64_t now_us);
/* Shared. Whether a backup was asked for since the last call (forced). */
bool squeue_take_backup_request(squeue *q);
/*
 * Worker only (no lock needed). Start a backup or copy its next pages. A
 * periodic backup of a database that has not changed since the last one
 * is skipped; a forced one is not. The next periodic one is due
 * backup_interval_s after the last one ended or was skipped.
 */
void squeue_backup_step(squeue *q, const squeue_store *st, bool forced, uint64_t now_us);
/* Shared. Refresh the stats snapshot when SQUEUE_STATS_PERIOD_US passed
 * since the last refresh, or - with force - at once if a commit or backup
 * step happened since (a worker about to go idle: the last commit's
 * counters must not wait for the next one). */
void squeue_refresh_stats(squeue *q, const squeue_store *st, uint64_t now_us, bool force);
/* Worker only. What get_stats reports changed outside a unit (the
 * platform's upkeep): the next forced refresh takes it. */
void squeue_stats_changed(squeue *q);

#endif
