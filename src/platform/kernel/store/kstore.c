/*
 * kstore.c - the unikernel's store thread and the main loop's side of it
 * (see kstore.h). The thread does one unit of work per resume - a group
 * commit or a backup step - and yields after it, so the main loop reports
 * a finished group at its next turn; inside a unit it yields on disk waits
 * and time slices. When it has nothing to do it waits on a condition the
 * main loop checks before resuming it (new batches, a backup due, the end
 * of a pause after a failure), which costs no switches.
 *
 * With a storage core (kstorecpu.h) the thread runs on CPU 1 while the
 * main loop runs on CPU 0, so the queue is shared as the daemon shares
 * it (posix/storeq.c): every squeue call marked "shared" in queue.h, and
 * the fields both sides read (the stats snapshot, backup_shown), are
 * made under k->lock, a ticket spinlock held only for those calls -
 * never across a yield, a disk wait or the store's work, so neither CPU
 * waits on it for longer than a queue operation. The worker-only calls
 * and fields stay CPU 1's (its thread and its main loop, which take
 * turns). With one CPU the same code runs, the lock never contended.
 *
 * The network CPU never waits on that lock during a turn (issue 18: the
 * contention counters showed CPU 0 spinning on it for seconds under TCG,
 * behind a holder whose host thread was descheduled). The thread bumps
 * k->pub after each change the main side reads (a finished group, fresh
 * counters, backup_shown); the main loop keeps a copy of the counters and
 * takes the lock only when pub moved, and then with spin_trylock: when
 * the storage CPU holds it, the turn goes on and the next one tries
 * again (the turn says it did work, so the loop does not sleep on it).
 * kstore_run hands over the turn's batches the same way. Only the
 * console's rare requests (backup-now, the status line) wait for it.
 */
#include "store/kstore.h"

#include "arch/x86_64/spinlock.h"
#include "clock.h"
#include "console.h"
#include "kthread.h"
#include "mm/kmalloc.h"
#include "panic.h"
#include "store/kscrub.h"
#include "store/kstorecpu.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

struct kstore {
    struct spinlock lock;                 /* the shared part of q, backup_shown */
    squeue q;
    squeue_store st;
    struct kthread *t;
    broker_store_batch group[SQUEUE_CAP]; /* the thread's group being applied */
    squeue_result done[SQUEUE_CAP];       /* the main loop's results to report */
    bool failing;                         /* as last reported to the core */
    uint64_t pushed_gen;                  /* the stats snapshot the core has */
    struct kscrub *scrub;                 /* NULL: no scrubber */
    uint64_t pushed_scrub;                /* the scrubber status the core has */
    bool backup_shown;                    /* q.backup_running for the main side */
    _Atomic uint64_t pub;                 /* bumped by the thread after each change
                                           * the main side reads (see the top) */
    uint64_t seen_pub;                    /* main: pub as of its last look */
    store_stats main_stats;               /* main: q.stats as of that look */
    uint64_t main_gen;                    /* main: q.stats_gen as of that look */
};

/* The thread: something the main side reads changed (after the unlock;
 * seq_cst, read by kstore_results_waiting after smp_sleep_begin). */
static void publish(struct kstore *k)
{
    atomic_fetch_add(&k->pub, 1);
}

static uint64_t now_us(void)
{
    return clock_mono_ns() / 1000u;
}

/* The platform's upkeep (squeue_store.upkeep) is due. */
static bool upkeep_due(const struct kstore *k)
{
    return k->st.upkeep_due && k->st.upkeep_due(k->st.ctx);
}

/* The waiting thread's condition: something to do now (on the thread's
 * CPU: its main loop asks before resuming it). */
static bool has_work(void *arg)
{
    struct kstore *k = arg;
    uint64_t wake;
    spin_lock(&k->lock);
    bool queued = squeue_next(&k->q, now_us(), &wake) != SQUEUE_WAIT;
    spin_unlock(&k->lock);
    return queued || upkeep_due(k) || kscrub_due(k->scrub, now_us());
}

static void store_thread(void *arg)
{
    struct kstore *k = arg;
    for (;;) {
        uint64_t wake;
        /* between units: nothing of the store's in flight */
        bool changed = upkeep_due(k) && k->st.upkeep(k->st.ctx);
        bool wish = k->st.take_backup_wish && k->st.take_backup_wish(k->st.ctx);
        spin_lock(&k->lock);
        if (changed)
            squeue_stats_changed(&k->q);
        if (wish)
            squeue_request_backup(&k->q);
        squeue_action act = squeue_next(&k->q, now_us(), &wake);
        size_t n = act == SQUEUE_COMMIT ? squeue_take_group(&k->q, k->group) : 0;
        bool forced = act == SQUEUE_BACKUP && squeue_take_backup_request(&k->q);
        spin_unlock(&k->lock);
        switch (act) {
        case SQUEUE_COMMIT: {
            store_rc rc = k->st.apply(k->st.ctx, k->group, n); /* unlocked: the long part */
            spin_lock(&k->lock);
            squeue_group_done(&k->q, rc, now_us());
            spin_unlock(&k->lock);
            publish(k);
            kstorecpu_notify_main(); /* results for the main loop, which may sleep */
            break;
        }
        case SQUEUE_BACKUP:
            squeue_backup_step(&k->q, &k->st, forced, now_us()); /* worker only */
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
            spin_lock(&k->lock);
            squeue_refresh_stats(&k->q, &k->st, now_us(), true);
            k->backup_shown = k->q.backup_running;
            spin_unlock(&k->lock);
            publish(k);
            kthread_wait_until(has_work, k, NULL);
            continue;
        case SQUEUE_STOP:
            return;
        }
        spin_lock(&k->lock);
        squeue_refresh_stats(&k->q, &k->st, now_us(), false);
        k->backup_shown = k->q.backup_running;
        spin_unlock(&k->lock);
        publish(k);
        kthread_yield(); /* one unit per resume: the main loop reports it */
    }
}

struct kstore *kstore_start(const squeue_store *st, uint32_t backup_interval_s)
{
    struct kstore *k = kmalloc(sizeof *k);
    if (!k)
        panic("out of memory for the store queue");
    memset(k, 0, sizeof *k);
    k->lock = (struct spinlock)SPINLOCK_INIT;
    k->st = *st;
    squeue_init(&k->q, backup_interval_s, now_us());
    squeue_refresh_stats(&k->q, &k->st, now_us(), true);
    k->main_stats = k->q.stats;
    k->main_gen = k->q.stats_gen;
    k->t = kthread_create("store", KSTORE_STACK_PAGES, store_thread, k);
    kstorecpu_add(k->t);
    return k;
}

/* The stats snapshot and its generation, copied under the lock. */
static uint64_t stats_copy(struct kstore *k, store_stats *out)
{
    spin_lock(&k->lock);
    *out = k->q.stats;
    uint64_t gen = k->q.stats_gen;
    spin_unlock(&k->lock);
    return gen;
}

/* The store's health to the core ($SYS). */
static void push_status(struct kstore *k, broker *b, const store_stats *st, uint64_t gen)
{
    broker_store_status bs;
    squeue_status_of(st, k->failing, &bs);
    k->pushed_scrub = kscrub_status(k->scrub, &bs);
    broker_set_store_status(b, &bs);
    k->pushed_gen = gen;
}

int kstore_complete(struct kstore *k, broker *b)
{
    size_t n = 0;
    uint64_t pub = atomic_load_explicit(&k->pub, memory_order_acquire);
    if (pub != k->seen_pub) {
        if (!spin_trylock(&k->lock))
            return 1; /* the storage CPU holds it: the next turn looks again */
        n = squeue_collect(&k->q, k->done);
        k->main_stats = k->q.stats;
        k->main_gen = k->q.stats_gen;
        spin_unlock(&k->lock);
        k->seen_pub = pub;
    }
    const store_stats *st = &k->main_stats;
    uint64_t gen = k->main_gen;
    if (n == 0) {
        if (k->pushed_gen != gen || k->pushed_scrub != kscrub_generation(k->scrub))
            push_status(k, b, st, gen); /* fresher counters, no new results */
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
    push_status(k, b, st, gen);
    return 1;
}

int kstore_run(struct kstore *k, broker *b)
{
    if (!spin_trylock(&k->lock))
        return 1; /* the storage CPU holds it: the batches go next turn */
    bool queued = squeue_submit(&k->q, b);
    spin_unlock(&k->lock);
    return kstorecpu_run(k->t, queued);
}

bool kstore_results_waiting(struct kstore *k)
{
    /* Anything published since the main loop's last look may be results
     * (a look that finds only counters costs one turn). seq_cst: the
     * sleeper's side of smp.h's rule, against publish + smp_wake. */
    return atomic_load(&k->pub) != k->seen_pub;
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

void kstore_status(struct kstore *k, broker_store_status *out)
{
    /* The main loop's copy (kstore_complete keeps it): no lock per turn. */
    squeue_status_of(&k->main_stats, k->failing, out);
}

void kstore_backup_now(struct kstore *k, struct kstore_backup_state *out)
{
    spin_lock(&k->lock);
    out->running = k->backup_shown;
    out->done = k->q.stats.backups_done;
    out->failed = k->q.stats.backups_failed;
    squeue_request_backup(&k->q);
    spin_unlock(&k->lock);
    /* The thread's wait condition (has_work) sees it at its CPU's next
     * look: the main loop's next kstore_run on one CPU, now on two. */
    kstorecpu_wake();
}

void kstore_lock_stats(struct kstore *k, struct spin_stats *out)
{
    spin_stats_read(&k->lock, out);
}

void kstore_describe(struct kstore *k, char *buf, size_t n)
{
    store_stats stats;
    (void)stats_copy(k, &stats);
    const store_stats *st = &stats;
    /* The thread's counters are written by the CPU that runs it, without
     * a lock: with a storage core this copy may be a resume behind (each
     * field an aligned 64-bit word, never torn); it is a console line. */
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
