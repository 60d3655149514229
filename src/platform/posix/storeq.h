/*
 * storeq.h - the Linux daemon's store thread: a bounded queue of the core's
 * journal batches, a thread that commits everything queued in one SQLite
 * transaction (group commit) and takes backup steps between commits, and
 * completions back to the event loop through an eventfd.
 *
 * The event loop owns the broker and is the only thread that touches it:
 * tern_storeq_submit() takes the core's batches after a turn, and
 * tern_storeq_complete() (when the eventfd is readable) reports finished
 * batches to the core in order. The store thread owns the store and only
 * sees batch bytes, which the core keeps unchanged until they are reported
 * (journal.h).
 */
#ifndef TERN_STOREQ_H
#define TERN_STOREQ_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/broker.h"
#include "config/config.h"
#include "platform/posix/log.h"
#include "store/store.h"

typedef struct tern_storeq tern_storeq;

/*
 * Open the database of cfg (store.path, resolved by the caller; cache_kib
 * from store.cache_size, 0 = SQLite's default), check it,
 * restore from a backup if needed, load it into b (which must be durable and
 * have no connections yet) and start the store thread. Logs and returns NULL
 * on failure. Test hook, in TERN_TEST_HOOKS builds only (the ASan daemon):
 * with TERN_TEST_STORE_FAULT=FILE in the environment the database is opened
 * through the fault-injection VFS and every write fails while FILE exists
 * (its content "io" = I/O error, otherwise disk full).
 */
tern_storeq *tern_storeq_open(const char *path, store_sync sync, uint32_t backup_interval_s,
                              uint32_t cache_kib, broker *b, tern_log *log);

/* The eventfd to watch for EPOLLIN; its epoll handle tag is the queue's. */
int tern_storeq_fd(const tern_storeq *q);
/* What to register with epoll as data.ptr (starts with a handle kind byte). */
void *tern_storeq_handle(tern_storeq *q);

/* After a loop turn: hand the core's batches to the thread while the queue
 * has room (the rest stay in the core until the next turn). */
void tern_storeq_submit(tern_storeq *q, broker *b);
/* The eventfd is readable: report finished batches to the core, in order.
 * False when one of them failed. */
bool tern_storeq_complete(tern_storeq *q, broker *b);
/* Shutdown: submit everything, wait until it is committed, report it. When
 * the disk fails, gives up after the first failed round: what could not be
 * committed was not acknowledged either. */
void tern_storeq_drain(tern_storeq *q, broker *b);

/* Ask for a backup now (the console's "backup now"). */
void tern_storeq_backup_now(tern_storeq *q);
/* The store's counters, refreshed by the thread about once a second. */
void tern_storeq_stats(tern_storeq *q, store_stats *out);

/* Commit what is queued, stop the thread, close the store (NULL is fine).
 * Call tern_storeq_drain() first to report the last batches to the core. */
void tern_storeq_stop(tern_storeq *q);

#endif
