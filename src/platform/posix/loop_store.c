/*
 * loop_store.c - the event loop's side of durable storage (store.path):
 * open and load the store before any listener exists, watch the store
 * thread's completion eventfd, hand the core's batches over after every
 * turn, and commit everything before shutting down. Without store.path the
 * broker keeps its state in memory only and none of this runs.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>

#include "platform/posix/file.h"
#include "platform/posix/loop_internal.h"
#include "platform/posix/storeq.h"
#include "store/queue.h"

bool tern_loop_store_open(tern_loop *l)
{
    char path[4096];
    struct epoll_event ev;

    if (l->cfg.store_path[0] == '\0')
        return true;
    if (!tern_path_resolve(l->config_path, l->cfg.store_path, path, sizeof path)) {
        tern_logf(l->log, BROKER_LOG_ERROR, "store.path: path too long");
        return false;
    }
    l->store = tern_storeq_open(path,
                                l->cfg.store_sync == TERN_STORE_SYNC_NORMAL ? STORE_SYNC_NORMAL
                                                                            : STORE_SYNC_FULL,
                                l->cfg.store_backup_interval_s, l->cfg.store_cache_kib, l->b,
                                l->log);
    if (l->store == NULL)
        return false;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN;
    ev.data.ptr = tern_storeq_handle(l->store);
    if (epoll_ctl(l->ep, EPOLL_CTL_ADD, tern_storeq_fd(l->store), &ev) != 0) {
        tern_logf(l->log, BROKER_LOG_ERROR, "epoll_ctl (store): %s", strerror(errno));
        return false;
    }
    return true;
}

/* Hand the store's health to the core ($SYS). `failed` is the outcome of
 * the batches just reported, fresher than the thread's counters. */
static void report_status(tern_loop *l, bool failed)
{
    store_stats st;
    broker_store_status bs;

    tern_storeq_stats(l->store, &st);
    squeue_status_of(&st, failed, &bs);
    broker_set_store_status(l->b, &bs);
}

void tern_loop_store_event(tern_loop *l)
{
    /* Failures are the core's to handle (broker_store_done) and the store
     * thread's to log; the core also publishes them on $SYS. */
    bool ok = tern_storeq_complete(l->store, l->b);
    report_status(l, !ok);
}

void tern_loop_store_submit(tern_loop *l)
{
    if (l->store != NULL)
        tern_storeq_submit(l->store, l->b);
}

void tern_loop_store_drain(tern_loop *l)
{
    if (l->store != NULL)
        tern_storeq_drain(l->store, l->b);
}

void tern_loop_store_close(tern_loop *l)
{
    tern_storeq_stop(l->store);
    l->store = NULL;
}
