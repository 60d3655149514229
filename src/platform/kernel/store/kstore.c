/*
 * kstore.c - the unikernel's store thread and the main loop's side of it
 * (see kstore.h). The thread does one unit of work per resume - a group
 * commit or a backup step - and yields after it, so the main loop reports
 * a finished group at its next turn; inside a unit it yields on disk waits
 * and time slices. When it has nothing to do it waits on a condition the
 * main loop checks before resuming it (new batches, a backup due, the end
 * of a pause after a failure), which costs no switches.
 */
#include "store/kstore.h"

#include "clock.h"
#include "console.h"
#include "kthread.h"
#include "mm/kmalloc.h"
#include "panic.h"
#include "store/kscrub.h"

#include <stdio.h>
#include <string.h>

struct kstore {
    squeue q;
    squeue_store st;
    struct kthread *t;
    broker_store_batch group[SQUEUE_CAP]; /* the thread's group being applied */
    squeue_result done[SQUEUE_CAP];       /* the main loop's results to report */
    bool failing;                         /* as last reported to the core */
    uint64_t pushed_gen;                  /* the stats snapshot the core has */
    struct kscrub *scrub;                 /* NULL: no scrubber */
    uint64_t pushed_scrub;                /* the scrubber status the core has */
};

static uint64_t now_us(void)
{
    return clock_mono_ns() / 1000u;
}

/* The platform's upkeep (squeue_store.upkeep) is due. */
static bool upkeep_due(const struct kstore *k)
{
    return k->st.upkeep_due && k->st.upkeep_due(k->st.ctx);
}

/* The waiting thread's condition: something to do now. */
static bool has_work(void *arg)
{
    const struct kstore *k = arg;
    uint64_t wake;
    return squeue_next(&k->q, now_us(), &wake) != SQUEUE_WAIT || upkeep_due(k) ||
           kscrub_due(k->scrub, now_us());
}

static void store_thread(void *arg)
{
    struct kstore *k = arg;
    for (;;) {
        uint64_t wake;
        /* between units: nothing of the store's in flight */
        if (upkeep_due(k) && k->st.upkeep(k->st.ctx))
            squeue_stats_changed(&k->q);
        if (k->st.take_backup_wish && k->st.take_backup_wish(k->st.ctx))
            squeue_request_backup(&k->q);
        switch (squeue_next(&k->q, now_us(), &wake)) {
        case SQUEUE_COMMIT: {
            size_t n = squeue_take_group(&k->q, k->group);
            store_rc rc = k->st.apply(k->st.ctx, k->group, n);
            squeue_group_done(&k->q, rc, now_us());
            break;
        }
        case SQUEUE_BACKUP:
            squeue_backup_step(&k->q, &k->st, squeue_take_backup_request(&k->q), now_us());
            break;
        case SQUEUE_WAIT:
            /* Nothing queued: a scrub step when one is due (between
             * batches, so it never races the store's writes). */
            if (kscrub_due(k->scrub, now_us())) {
                kscrub_step(k->scrub, now_us());
                kthread_yield();
                continue;
            }
            /* Going idle: the last commit's counters go out now. */
            squeue_refresh_stats(&k->q, &k->st, now_us(), true);
            kthread_wait_until(has_work, k, NULL);
            continue;
        case SQUEUE_STOP:
            return;
        }
        squeue_refresh_stats(&k->q, &k->st, now_us(), false);
        kthread_yield(); /* one unit per resume: the main loop reports it */
    }
}

struct kstore *kstore_start(const squeue_store *st, uint32_t backup_interval_s)
{
    struct kstore *k = kmalloc(sizeof *k);
    if (!k)
        panic("out of memory for the store queue");
    memset(k, 0, sizeof *k);
    k->st = *st;
    squeue_init(&k->q, backup_interval_s, now_us());
    squeue_refresh_stats(&k->q, &k->st, now_us(), true);
    k->t = kthread_create("store", KSTORE_STACK_PAGES, store_thread, k);
    return k;
}

/* The store's health to the core ($SYS). */
static void push_status(struct kstore *k, broker *b)
{
    broker_store_status bs;
    squeue_status_of(&k->q.stats, k->failing, &bs);
    kscrub_status(k->scrub, &bs);
    k->pushed_scrub = kscrub_generation(k->scrub);
    broker_set_store_status(b, &bs);
    k->pushed_gen = k->q.stats_gen;
}

int kstore_complete(struct kstore *k, broker *b)
{
    size_t n = squeue_collect(&k->q, k->done);
    if (n == 0) {
        if (k->pushed_gen != k->q.stats_gen || k->pushed_scrub != kscrub_generation(k->scrub))
            push_status(k, b); /* fresher counters, no new results */
        return 0;
    }
    bool ok = squeue_report(b, k->done, n);
    if (ok == k->failing) {
        char line[160];
        kstore_describe(k, line, sizeof line);
        kprintf(ok ? "tern: store: commits succeed again: %s\n"
                   : "tern: store: commits fail: acknowledgements that need the disk are "
                     "withheld, other clients are served: %s\n",
                line);
    }
    k->failing = !ok;
    push_status(k, b);
    return 1;
}

int kstore_run(struct kstore *k, broker *b)
{
    (void)squeue_submit(&k->q, b);
    return kthread_resume(k->t);
}

void kstore_set_scrub(struct kstore *k, struct kscrub *scrub)
{
    k->scrub = scrub;
}

void kstore_progress(void *ctx)
{
    (void)ctx;
    kthread_yield_after(KSTORE_SLICE_NS);
}

void kstore_status(const struct kstore *k, broker_store_status *out)
{
    squeue_status_of(&k->q.stats, k->failing, out);
}

void kstore_backup_now(struct kstore *k, struct kstore_backup_state *out)
{
    out->running = k->q.backup_running;
    out->done = k->q.stats.backups_done;
    out->failed = k->q.stats.backups_failed;
    /* The thread's wait condition (has_work) sees it at the main loop's
     * next kstore_run. */
    squeue_request_backup(&k->q);
}

void kstore_describe(const struct kstore *k, char *buf, size_t n)
{
    const store_stats *st = &k->q.stats;
    struct kthread_stats ts;
    kthread_get_stats(k->t, &ts);
    snprintf(buf, n,
             "%s, %llu commits, %llu records (%llu per commit), latency p50 %llu us p99 %llu "
             "us, %llu failed, %llu backups; longest hold of the CPU %llu us",
             st->full ? "full" : k->failing ? "failing" : "ok", (unsigned long long)st->commits,
             (unsigned long long)st->records,
             (unsigned long long)(st->commits ? st->records / st->commits : 0),
             (unsigned long long)st->p50_commit_us, (unsigned long long)st->p99_commit_us,
             (unsigned long long)st->failed_commits, (unsigned long long)st->backups_done,
             (unsigned long long)(ts.longest_run_ns / 1000));
}
