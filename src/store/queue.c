/*
 * queue.c - the store queue and its worker's policy (see queue.h). The
 * worker takes everything waiting at once and commits it as one
 * transaction, so under load one sync covers many loop turns' batches
 * (group commit) with no added delay when the load is light. Backup steps
 * run only when no batch waits, so a backup holds a commit up by at most
 * one step.
 */
#include "store/queue.h"

#include <string.h>

void squeue_init(squeue *q, uint32_t backup_interval_s, uint64_t now_us)
{
    memset(q, 0, sizeof *q);
    q->backup_interval_s = backup_interval_s;
    q->next_backup_us = now_us + (uint64_t)backup_interval_s * 1000000u;
    q->stats_stale = true; /* the first refresh reads the store's counters */
}

bool squeue_submit(squeue *q, broker *b)
{
    broker_store_batch batch;
    bool queued = false;

    while (q->tail - q->head < SQUEUE_CAP && broker_store_take(b, &batch)) {
        q->ring[q->tail % SQUEUE_CAP].b = batch;
        q->ring[q->tail % SQUEUE_CAP].ok = false;
        q->tail++;
        queued = true;
    }
    return queued;
}

size_t squeue_collect(squeue *q, squeue_result *out)
{
    size_t n = 0;

    for (; q->head < q->done; q->head++) {
        out[n].seq = q->ring[q->head % SQUEUE_CAP].b.seq;
        out[n++].ok = q->ring[q->head % SQUEUE_CAP].ok;
    }
    return n;
}

bool squeue_report(broker *b, const squeue_result *r, size_t n)
{
    bool all_ok = true;

    for (size_t i = 0; i < n; i++) {
        broker_store_done(b, r[i].seq, r[i].ok);
        all_ok = all_ok && r[i].ok;
    }
    return all_ok;
}

bool squeue_idle(const squeue *q)
{
    return q->done == q->tail;
}

bool squeue_empty(const squeue *q)
{
    return q->head == q->tail;
}

void squeue_request_backup(squeue *q)
{
    q->backup_req = true;
}

void squeue_request_stop(squeue *q)
{
    q->stop = true;
}

void squeue_status_of(const store_stats *st, bool failing, broker_store_status *out)
{
    memset(out, 0, sizeof *out);
    out->commits = st->commits;
    out->failed_commits = st->failed_commits;
    out->records = st->records;
    out->commit_p50_us = st->p50_commit_us;
    out->commit_p99_us = st->p99_commit_us;
    out->backups_done = st->backups_done;
    out->backups_failed = st->backups_failed;
    out->failing = failing;
    out->full = st->full;
    out->restored_at_open = st->restored_at_open;
    out->disk = st->disk;
}

squeue_action squeue_next(const squeue *q, uint64_t now_us, uint64_t *wake_us)
{
    bool waiting = q->taken != q->tail;

    *wake_us = UINT64_MAX;
    if (waiting && q->retry_pause_us > 0 && !q->stop && now_us < q->retry_at_us) {
        *wake_us = q->retry_at_us; /* pausing after a failure */
        return SQUEUE_WAIT;
    }
    if (waiting)
        return SQUEUE_COMMIT;
    if (q->stop)
        return SQUEUE_STOP;
    if (q->backup_req || q->backup_running ||
        (q->backup_interval_s > 0 && now_us >= q->next_backup_us))
        return SQUEUE_BACKUP;
    if (q->backup_interval_s > 0)
        *wake_us = q->next_backup_us;
    return SQUEUE_WAIT;
}

size_t squeue_take_group(squeue *q, broker_store_batch *out)
{
    size_t n = 0;

    for (uint64_t i = q->taken; i < q->tail; i++)
        out[n++] = q->ring[i % SQUEUE_CAP].b;
    q->taken = q->tail;
    return n;
}

void squeue_group_done(squeue *q, store_rc rc, uint64_t now_us)
{
    if (rc == STORE_OK) {
        q->retry_pause_us = 0;
    } else {
        q->retry_pause_us =
            q->retry_pause_us == 0 ? SQUEUE_RETRY_MIN_US : q->retry_pause_us * 2;
        if (q->retry_pause_us > SQUEUE_RETRY_MAX_US)
            q->retry_pause_us = SQUEUE_RETRY_MAX_US;
        q->retry_at_us = now_us + q->retry_pause_us;
    }
    for (uint64_t i = q->done; i < q->taken; i++)
        q->ring[i % SQUEUE_CAP].ok = rc == STORE_OK;
    q->done = q->taken;
    q->stats_stale = true;
}

bool squeue_take_backup_request(squeue *q)
{
    bool forced = q->backup_req;

    q->backup_req = false;
    return forced;
}

void squeue_backup_step(squeue *q, const squeue_store *st, bool forced, uint64_t now_us)
{
    uint64_t next = now_us + (uint64_t)q->backup_interval_s * 1000000u;
    bool done = false;

    q->stats_stale = true;
    if (!q->backup_running) {
        store_stats s;

        st->get_stats(st->ctx, &s);
        if (!forced && s.commits == q->backup_commits && s.backups_done > 0) {
            q->next_backup_us = next; /* nothing changed since the last copy */
            return;
        }
        q->backup_commits = s.commits;
        q->backup_running = st->backup_begin(st->ctx) == STORE_OK;
        if (!q->backup_running)
            q->next_backup_us = next;
        return;
    }
    if (st->backup_step(st->ctx, &done) != STORE_OK || done) {
        q->backup_running = false; /* a failed step abandoned the copy */
        q->next_backup_us = next;
    }
}

void squeue_stats_changed(squeue *q)
{
    q->stats_stale = true;
}

void squeue_refresh_stats(squeue *q, const squeue_store *st, uint64_t now_us, bool force)
{
    if (force ? !q->stats_stale : now_us < q->next_stats_us)
        return;
    st->get_stats(st->ctx, &q->stats);
    q->stats_gen++;
    q->stats_stale = false;
    q->next_stats_us = now_us + SQUEUE_STATS_PERIOD_US;
}
