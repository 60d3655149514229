/*
 * storeq.c - the store thread and its queue (see storeq.h).
 *
 * The queue is a ring of batch descriptors with four running indices,
 * head <= done <= taken <= tail: [head, done) are finished and wait for the
 * event loop to report them, [done, taken) are being committed, [taken,
 * tail) wait for the thread. The thread takes everything waiting at once and
 * commits it as one transaction, so under load one fsync covers many loop
 * turns' batches (group commit) with no added delay when the load is light.
 *
 * Between commits, and only when no batch waits, the thread takes backup
 * steps (a few pages each), so a backup never holds up a commit by more
 * than one step.
 *
 * After a failed group (disk full, I/O error) the next one waits a pause
 * that doubles from 50 ms to 2 s while failures go on: the core answers a
 * failure with a batch that rewrites its whole state, and without a pause a
 * full disk would turn that into a busy loop of ever-failing rewrites.
 * Acknowledgements wait in the meantime, which is what they must do.
 *
 * Test hook (TERN_TEST_HOOKS builds only, the ASan daemon the integration
 * tests run): TERN_TEST_STORE_FAULT=FILE opens the database through the
 * fault-injection VFS and makes every write fail while FILE exists. The
 * release daemon has neither the hook nor the variable's name.
 */
#define _GNU_SOURCE

#include "platform/posix/storeq.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "platform/posix/sock.h" /* TERN_HANDLE_STORE */
#ifdef TERN_TEST_HOOKS
#include "store/faultvfs.h"
#endif

enum {
    QCAP = 256,                    /* batches queued or in flight */
    STATS_PERIOD_US = 1000000,     /* refresh of the shared counters */
    DRAIN_ROUNDS = 8,              /* shutdown: batches reported may produce more */
    RETRY_MIN_US = 50000,          /* after a failed group, first pause before the next */
    RETRY_MAX_US = 2000000,        /* ... doubling up to this while failures go on */
};

typedef struct qslot {
    broker_store_batch b;
    bool ok;
} qslot;

/* Which thread may touch what. "The loop" is the thread that opens and
 * stops the queue (the event loop's); before the store thread starts and
 * after it is joined, the loop has everything to itself. */
struct tern_storeq {
    /* set by tern_storeq_open() before the thread starts; read-only after */
    uint8_t kind;          /* TERN_HANDLE_STORE; first, like every epoll handle */
    int efd;               /* owned eventfd: completions are waiting (the thread
                              writes it, the loop reads it) */
    tern_log *log;         /* not owned; both threads log through it */
    uint32_t backup_interval_s;

    /* loop thread only */
    pthread_t thread;
    bool started;          /* thread is running and must be joined */

    /* guarded by mu */
    pthread_mutex_t mu;
    pthread_cond_t work;   /* batches queued, stop, or a backup request */
    pthread_cond_t idle;   /* a group finished */
    uint64_t head, done, taken, tail;
    qslot ring[QCAP];
    bool stop, backup_req;
    store_stats stats;     /* the thread's last snapshot */

    /* store thread only */
    store *s;              /* owned */
    uint64_t backup_commits; /* commits when the last backup began */
    uint64_t retry_pause_us; /* 0 after a success, else the current pause */
    uint64_t retry_at_us;    /* no group before this after a failure */
    broker_store_batch scratch[QCAP]; /* the group being applied */
#ifdef TERN_TEST_HOOKS
    store_fault *fault;    /* owned; NULL unless the hook is set */
    char *fault_file;      /* owned */
    bool fault_on;
#endif
};

static uint64_t mono_us(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        tern_panic(__FILE__, __LINE__, "CLOCK_MONOTONIC unavailable");
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t store_clock(void *ctx)
{
    (void)ctx;
    return mono_us();
}

static void lock(tern_storeq *q)
{
    if (pthread_mutex_lock(&q->mu) != 0)
        tern_panic(__FILE__, __LINE__, "store queue mutex");
}

static void unlock(tern_storeq *q)
{
    if (pthread_mutex_unlock(&q->mu) != 0)
        tern_panic(__FILE__, __LINE__, "store queue mutex");
}

/* ---- the test hook ------------------------------------------------------ */

#ifdef TERN_TEST_HOOKS
#define FAULT_ENV "TERN_TEST_STORE_FAULT"
#define FAULT_VFS_NAME "tern-test-fault"

/* With FAULT_ENV set, open the database through the fault VFS. */
static bool fault_hook_open(tern_storeq *q, store_options *opt)
{
    const char *hook = getenv(FAULT_ENV);

    if (hook == NULL || hook[0] == '\0')
        return true;
    tern_logf(q->log, BROKER_LOG_WARN,
              "TEST HOOK %s=%s: the store writes through a fault-injecting VFS", FAULT_ENV, hook);
    q->fault_file = strdup(hook);
    q->fault = store_fault_create(FAULT_VFS_NAME, NULL);
    if (q->fault_file == NULL || q->fault == NULL) {
        tern_logf(q->log, BROKER_LOG_ERROR, "cannot set up the fault-injection VFS");
        return false;
    }
    opt->vfs = FAULT_VFS_NAME;
    return true;
}

/* After the store is closed. */
static void fault_hook_close(tern_storeq *q)
{
    store_fault_destroy(q->fault);
    free(q->fault_file);
}

/* Writes fail while the control file exists. Checked before each group, so
 * a test can switch faults on and off at run time. */
static void fault_hook_check(tern_storeq *q)
{
    char word[8] = {0};
    bool on;
    int fd;

    if (q->fault == NULL)
        return;
    fd = open(q->fault_file, O_RDONLY | O_CLOEXEC);
    on = fd >= 0;
    if (on) {
        if (read(fd, word, sizeof word - 1) < 0)
            word[0] = '\0';
        (void)close(fd);
    }
    if (on == q->fault_on)
        return;
    q->fault_on = on;
    store_fault_fail_all(q->fault, on,
                         strncmp(word, "io", 2) == 0 ? STORE_FAULT_CODE_IO
                                                     : STORE_FAULT_CODE_FULL);
    tern_logf(q->log, BROKER_LOG_WARN, "test hook: store writes now %s",
              on ? (strncmp(word, "io", 2) == 0 ? "fail with I/O errors" : "fail: disk full")
                 : "succeed");
}
#else
static bool fault_hook_open(tern_storeq *q, store_options *opt)
{
    (void)q;
    (void)opt;
    return true;
}

static void fault_hook_close(tern_storeq *q)
{
    (void)q;
}

static void fault_hook_check(tern_storeq *q)
{
    (void)q;
}
#endif

/* ---- the thread --------------------------------------------------------- */

/* Commit every batch waiting, as one group. Called and returns locked. */
static void commit_group(tern_storeq *q)
{
    size_t n = 0;
    store_rc rc;

    for (uint64_t i = q->taken; i < q->tail; i++)
        q->scratch[n++] = q->ring[i % QCAP].b;
    q->taken = q->tail;
    unlock(q);
    fault_hook_check(q);
    rc = store_apply(q->s, q->scratch, n);
    if (rc == STORE_OK) {
        q->retry_pause_us = 0;
    } else {
        q->retry_pause_us = q->retry_pause_us == 0 ? RETRY_MIN_US : q->retry_pause_us * 2;
        if (q->retry_pause_us > RETRY_MAX_US)
            q->retry_pause_us = RETRY_MAX_US;
        q->retry_at_us = mono_us() + q->retry_pause_us;
    }
    lock(q);
    for (uint64_t i = q->done; i < q->taken; i++)
        q->ring[i % QCAP].ok = rc == STORE_OK;
    q->done = q->taken;
    if (pthread_cond_broadcast(&q->idle) != 0)
        tern_panic(__FILE__, __LINE__, "store queue condvar");
    {
        uint64_t one = 1;

        /* The counter only fails to grow at 2^64 - 1 pending wake-ups. */
        if (write(q->efd, &one, sizeof one) != (ssize_t)sizeof one)
            tern_logf(q->log, BROKER_LOG_WARN, "store eventfd: %s", strerror(errno));
    }
}

/* Start a backup or copy its next pages. A periodic backup of a database
 * that has not changed since the last one is skipped. */
static void backup_step(tern_storeq *q, bool forced, uint64_t *next_backup)
{
    bool done = false;

    unlock(q);
    if (!store_backup_running(q->s)) {
        store_stats st;

        store_get_stats(q->s, &st);
        if (!forced && st.commits == q->backup_commits && st.backups_done > 0) {
            *next_backup = mono_us() + (uint64_t)q->backup_interval_s * 1000000u;
        } else {
            q->backup_commits = st.commits;
            if (store_backup_begin(q->s) != STORE_OK)
                *next_backup = mono_us() + (uint64_t)q->backup_interval_s * 1000000u;
        }
    } else if (store_backup_step(q->s, &done) != STORE_OK || done) {
        *next_backup = mono_us() + (uint64_t)q->backup_interval_s * 1000000u;
    }
    lock(q);
}

/* Sleep until signalled or until the monotonic time deadline_us
 * (UINT64_MAX: no deadline). Called locked. */
static void wait_for_work(tern_storeq *q, uint64_t deadline_us)
{
    int rc;

    if (deadline_us == UINT64_MAX) {
        rc = pthread_cond_wait(&q->work, &q->mu);
    } else {
        struct timespec ts;

        ts.tv_sec = (time_t)(deadline_us / 1000000u);
        ts.tv_nsec = (long)(deadline_us % 1000000u) * 1000;
        rc = pthread_cond_timedwait(&q->work, &q->mu, &ts);
    }
    if (rc != 0 && rc != ETIMEDOUT)
        tern_panic(__FILE__, __LINE__, "store queue condvar");
}

static void *thread_main(void *arg)
{
    tern_storeq *q = arg;
    uint64_t next_backup = mono_us() + (uint64_t)q->backup_interval_s * 1000000u;
    uint64_t next_stats = 0;

    lock(q);
    for (;;) {
        uint64_t now;

        if (q->taken != q->tail && q->retry_pause_us > 0 && !q->stop &&
            mono_us() < q->retry_at_us) {
            wait_for_work(q, q->retry_at_us); /* pausing after a failure */
        } else if (q->taken != q->tail) {
            commit_group(q);
        } else if (q->stop) {
            break;
        } else if (q->backup_req || store_backup_running(q->s) ||
                   (q->backup_interval_s > 0 && mono_us() >= next_backup)) {
            bool forced = q->backup_req;

            q->backup_req = false;
            backup_step(q, forced, &next_backup);
        } else {
            wait_for_work(q, q->backup_interval_s > 0 ? next_backup : UINT64_MAX);
        }
        now = mono_us();
        if (now >= next_stats) {
            store_get_stats(q->s, &q->stats);
            next_stats = now + STATS_PERIOD_US;
        }
    }
    store_get_stats(q->s, &q->stats);
    unlock(q);
    return NULL;
}

/* ---- the event loop's side --------------------------------------------- */

int tern_storeq_fd(const tern_storeq *q)
{
    return q->efd;
}

void *tern_storeq_handle(tern_storeq *q)
{
    return &q->kind;
}

void tern_storeq_submit(tern_storeq *q, broker *b)
{
    broker_store_batch batch;
    bool queued = false;

    lock(q);
    while (q->tail - q->head < QCAP && broker_store_take(b, &batch)) {
        q->ring[q->tail % QCAP].b = batch;
        q->tail++;
        queued = true;
    }
    if (queued && pthread_cond_signal(&q->work) != 0)
        tern_panic(__FILE__, __LINE__, "store queue condvar");
    unlock(q);
}

bool tern_storeq_complete(tern_storeq *q, broker *b)
{
    uint64_t count, seqs[QCAP];
    bool oks[QCAP], all_ok = true;
    size_t n = 0;

    /* Nonblocking: EAGAIN only means another call already took them. */
    if (read(q->efd, &count, sizeof count) < 0 && errno != EAGAIN)
        tern_logf(q->log, BROKER_LOG_WARN, "store eventfd: %s", strerror(errno));
    lock(q);
    for (; q->head < q->done; q->head++) {
        seqs[n] = q->ring[q->head % QCAP].b.seq;
        oks[n++] = q->ring[q->head % QCAP].ok;
    }
    unlock(q);
    /* Outside the lock: the core may take long, and the thread no longer
     * looks at these slots. */
    for (size_t i = 0; i < n; i++) {
        broker_store_done(b, seqs[i], oks[i]);
        all_ok = all_ok && oks[i];
    }
    return all_ok;
}

void tern_storeq_drain(tern_storeq *q, broker *b)
{
    for (int round = 0; round < DRAIN_ROUNDS; round++) {
        bool empty;

        tern_storeq_submit(q, b);
        lock(q);
        empty = q->head == q->tail;
        while (q->done != q->tail)
            if (pthread_cond_wait(&q->idle, &q->mu) != 0)
                tern_panic(__FILE__, __LINE__, "store queue condvar");
        unlock(q);
        if (!tern_storeq_complete(q, b)) {
            tern_logf(q->log, BROKER_LOG_ERROR,
                      "store: shutting down with the last batches not committed (their "
                      "acknowledgements were withheld)");
            return;
        }
        if (empty)
            return;
    }
    tern_logf(q->log, BROKER_LOG_WARN, "store: shutdown with batches still produced");
}

void tern_storeq_backup_now(tern_storeq *q)
{
    lock(q);
    q->backup_req = true;
    if (pthread_cond_signal(&q->work) != 0)
        tern_panic(__FILE__, __LINE__, "store queue condvar");
    unlock(q);
}

void tern_storeq_stats(tern_storeq *q, store_stats *out)
{
    lock(q);
    *out = q->stats;
    unlock(q);
}

/* ---- start and stop ---------------------------------------------------- */

static bool init_sync(tern_storeq *q)
{
    pthread_condattr_t ca;
    bool ok;

    if (pthread_condattr_init(&ca) != 0)
        return false;
    /* Timed waits for the backup schedule use the monotonic clock. */
    ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
         pthread_mutex_init(&q->mu, NULL) == 0;
    if (ok && pthread_cond_init(&q->work, &ca) != 0) {
        (void)pthread_mutex_destroy(&q->mu);
        ok = false;
    }
    if (ok && pthread_cond_init(&q->idle, &ca) != 0) {
        (void)pthread_cond_destroy(&q->work);
        (void)pthread_mutex_destroy(&q->mu);
        ok = false;
    }
    (void)pthread_condattr_destroy(&ca);
    return ok;
}

/* The store, opened (through the fault VFS under the test hook), checked
 * and loaded into b. */
static bool open_store(tern_storeq *q, const char *path, store_sync sync, broker *b)
{
    char err[STORE_ERR_SIZE];
    store_open_info info;
    store_options opt;

    memset(&opt, 0, sizeof opt);
    if (!fault_hook_open(q, &opt))
        return false;
    opt.path = path;
    opt.sync = sync;
    opt.log = tern_log_broker;
    opt.log_ctx = q->log;
    opt.clock = store_clock;
    q->s = store_open(&opt, &info, err, sizeof err);
    if (q->s == NULL) {
        tern_logf(q->log, BROKER_LOG_ERROR, "store: %s", err);
        return false;
    }
    if (info.restored)
        tern_logf(q->log, BROKER_LOG_ERROR,
                  "store: %s failed its check and was restored from %s.bak-%c", path, path,
                  info.restored_from);
    if (store_load(q->s, b, err, sizeof err) != STORE_OK) {
        tern_logf(q->log, BROKER_LOG_ERROR, "store: %s", err);
        return false;
    }
    tern_logf(q->log, BROKER_LOG_INFO,
              "store: %s (%s, WAL, synchronous %s, backups %s)", path,
              info.created ? "new" : "opened", sync == STORE_SYNC_FULL ? "FULL" : "NORMAL",
              q->backup_interval_s > 0 ? "periodic" : "on demand only");
    return true;
}

tern_storeq *tern_storeq_open(const char *path, store_sync sync, uint32_t backup_interval_s,
                              broker *b, tern_log *log)
{
    tern_storeq *q = calloc(1, sizeof *q);

    if (q == NULL) {
        tern_logf(log, BROKER_LOG_ERROR, "out of memory");
        return NULL;
    }
    q->kind = TERN_HANDLE_STORE;
    q->log = log;
    q->efd = -1;
    q->backup_interval_s = backup_interval_s;
    if (!init_sync(q)) {
        tern_logf(log, BROKER_LOG_ERROR, "store thread: cannot create its mutex");
        free(q);
        return NULL;
    }
    if (!open_store(q, path, sync, b))
        goto fail;
    q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (q->efd < 0) {
        tern_logf(log, BROKER_LOG_ERROR, "eventfd: %s", strerror(errno));
        goto fail;
    }
    store_get_stats(q->s, &q->stats);
    if (pthread_create(&q->thread, NULL, thread_main, q) != 0) {
        tern_logf(log, BROKER_LOG_ERROR, "cannot start the store thread");
        goto fail;
    }
    q->started = true;
    return q;

fail:
    tern_storeq_stop(q);
    return NULL;
}

/* One line at shutdown: what the store did, for operators and benchmarks. */
static void log_summary(tern_storeq *q)
{
    store_stats st;

    store_get_stats(q->s, &st);
    tern_logf(q->log, BROKER_LOG_INFO,
              "store: %llu commits, %llu batches, %llu records, %llu bytes; commit latency "
              "p50 %.2f ms, p99 %.2f ms, max %.2f ms (last %u commits); %llu failed; %llu "
              "backups",
              (unsigned long long)st.commits, (unsigned long long)st.batches,
              (unsigned long long)st.records, (unsigned long long)st.bytes,
              (double)st.p50_commit_us / 1000.0, (double)st.p99_commit_us / 1000.0,
              (double)st.max_commit_us / 1000.0, STORE_LATENCY_WINDOW,
              (unsigned long long)st.failed_commits, (unsigned long long)st.backups_done);
}

void tern_storeq_stop(tern_storeq *q)
{
    if (q == NULL)
        return;
    if (q->started) {
        lock(q);
        q->stop = true;
        if (pthread_cond_signal(&q->work) != 0)
            tern_panic(__FILE__, __LINE__, "store queue condvar");
        unlock(q);
        if (pthread_join(q->thread, NULL) != 0)
            tern_panic(__FILE__, __LINE__, "joining the store thread");
        log_summary(q);
    }
    store_close(q->s); /* cancels a backup in progress: its slot keeps the old copy */
    fault_hook_close(q);
    if (q->efd >= 0)
        (void)close(q->efd);
    (void)pthread_cond_destroy(&q->idle);
    (void)pthread_cond_destroy(&q->work);
    (void)pthread_mutex_destroy(&q->mu);
    free(q);
}
