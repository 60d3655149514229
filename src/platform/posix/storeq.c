/*
 * storeq.c - the store thread and its queue (see storeq.h): a pthread, a
 * mutex and an eventfd around the store queue both platforms share
 * (src/store/queue.c), which holds the batches in flight, their order,
 * group commit, the pause after a failed group and the backup schedule.
 * The thread holds the mutex except while it works on the store, so the
 * event loop can queue batches during a commit.
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
#include "store/queue.h"
#ifdef TERN_TEST_HOOKS
#include "store/faultvfs.h"
#endif

enum {
    DRAIN_ROUNDS = 8,              /* shutdown: batches reported may produce more */
};

/* Which thread may touch what. "The loop" is the thread that opens and
 * stops the queue (the event loop's); before the store thread starts and
 * after it is joined, the loop has everything to itself. */
struct tern_storeq {
    /* set by tern_storeq_open() before the thread starts; read-only after */
    uint8_t kind;          /* TERN_HANDLE_STORE; first, like every epoll handle */
    int efd;               /* owned eventfd: completions are waiting (the thread
                              writes it, the loop reads it) */
    tern_log *log;         /* not owned; both threads log through it */

    /* loop thread only */
    pthread_t thread;
    bool started;          /* thread is running and must be joined */

    /* guarded by mu (the queue's "shared" calls) */
    pthread_mutex_t mu;
    pthread_cond_t work;   /* batches queued, stop, or a backup request */
    pthread_cond_t idle;   /* a group finished */
    squeue sq;

    /* store thread only (set before it starts) */
    store *s;              /* owned */
    squeue_store backend;  /* over s */
    broker_store_batch scratch[SQUEUE_CAP]; /* the group being applied */
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
    size_t n = squeue_take_group(&q->sq, q->scratch);
    store_rc rc;

    unlock(q);
    fault_hook_check(q);
    rc = q->backend.apply(q->backend.ctx, q->scratch, n);
    lock(q);
    squeue_group_done(&q->sq, rc, mono_us());
    if (pthread_cond_broadcast(&q->idle) != 0)
        tern_panic(__FILE__, __LINE__, "store queue condvar");
    {
        uint64_t one = 1;

        /* The counter only fails to grow at 2^64 - 1 pending wake-ups. */
        if (write(q->efd, &one, sizeof one) != (ssize_t)sizeof one)
            tern_logf(q->log, BROKER_LOG_WARN, "store eventfd: %s", strerror(errno));
    }
}

/* One backup step, outside the lock. Called and returns locked. */
static void backup_step(tern_storeq *q)
{
    bool forced = squeue_take_backup_request(&q->sq);

    unlock(q);
    squeue_backup_step(&q->sq, &q->backend, forced, mono_us());
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

    lock(q);
    for (;;) {
        uint64_t wake_us;
        squeue_action act = squeue_next(&q->sq, mono_us(), &wake_us);

        if (act == SQUEUE_STOP)
            break;
        if (act == SQUEUE_COMMIT)
            commit_group(q);
        else if (act == SQUEUE_BACKUP)
            backup_step(q);
        else {
            squeue_refresh_stats(&q->sq, &q->backend, mono_us(), true); /* going idle */
            wait_for_work(q, wake_us);
        }
        squeue_refresh_stats(&q->sq, &q->backend, mono_us(), false);
    }
    squeue_refresh_stats(&q->sq, &q->backend, mono_us(), true);
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
    lock(q);
    if (squeue_submit(&q->sq, b) && pthread_cond_signal(&q->work) != 0)
        tern_panic(__FILE__, __LINE__, "store queue condvar");
    unlock(q);
}

bool tern_storeq_complete(tern_storeq *q, broker *b)
{
    squeue_result done[SQUEUE_CAP];
    uint64_t count;
    size_t n;

    /* Nonblocking: EAGAIN only means another call already took them. */
    if (read(q->efd, &count, sizeof count) < 0 && errno != EAGAIN)
        tern_logf(q->log, BROKER_LOG_WARN, "store eventfd: %s", strerror(errno));
    lock(q);
    n = squeue_collect(&q->sq, done);
    unlock(q);
    /* Outside the lock: the core may take long, and the thread no longer
     * looks at these slots. */
    return squeue_report(b, done, n);
}

void tern_storeq_drain(tern_storeq *q, broker *b)
{
    for (int round = 0; round < DRAIN_ROUNDS; round++) {
        bool empty;

        tern_storeq_submit(q, b);
        lock(q);
        empty = squeue_empty(&q->sq);
        while (!squeue_idle(&q->sq))
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
    squeue_request_backup(&q->sq);
    if (pthread_cond_signal(&q->work) != 0)
        tern_panic(__FILE__, __LINE__, "store queue condvar");
    unlock(q);
}

void tern_storeq_stats(tern_storeq *q, store_stats *out)
{
    lock(q);
    *out = q->sq.stats;
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
static bool open_store(tern_storeq *q, const char *path, store_sync sync, uint32_t cache_kib,
                       broker *b)
{
    char err[STORE_ERR_SIZE];
    store_open_info info;
    store_options opt;

    memset(&opt, 0, sizeof opt);
    if (!fault_hook_open(q, &opt))
        return false;
    opt.path = path;
    opt.sync = sync;
    opt.cache_kib = cache_kib;
    opt.log = tern_log_broker;
    opt.log_ctx = q->log;
    opt.clock = store_clock;
    q->s = store_open(&opt, &info, err, sizeof err);
    if (q->s == NULL) {
        tern_logf(q->log, BROKER_LOG_ERROR, "store: %s", err);
        return false;
    }
    if (info.restored)
        tern_logf(q->log, BROKER_LOG_ERROR, "store: %s %s and was restored from %s.bak-%c",
                  path, info.found_empty ? "was empty" : "failed its check", path,
                  info.restored_from);
    if (store_load(q->s, b, err, sizeof err) != STORE_OK) {
        tern_logf(q->log, BROKER_LOG_ERROR, "store: %s", err);
        return false;
    }
    tern_logf(q->log, BROKER_LOG_INFO,
              "store: %s (%s, WAL, synchronous %s, backups %s)", path,
              info.created ? "new" : "opened", sync == STORE_SYNC_FULL ? "FULL" : "NORMAL",
              q->sq.backup_interval_s > 0 ? "periodic" : "on demand only");
    return true;
}

tern_storeq *tern_storeq_open(const char *path, store_sync sync, uint32_t backup_interval_s,
                              uint32_t cache_kib, broker *b, tern_log *log)
{
    tern_storeq *q = calloc(1, sizeof *q);

    if (q == NULL) {
        tern_logf(log, BROKER_LOG_ERROR, "out of memory");
        return NULL;
    }
    q->kind = TERN_HANDLE_STORE;
    q->log = log;
    q->efd = -1;
    squeue_init(&q->sq, backup_interval_s, mono_us());
    if (!init_sync(q)) {
        tern_logf(log, BROKER_LOG_ERROR, "store thread: cannot create its mutex");
        free(q);
        return NULL;
    }
    if (!open_store(q, path, sync, cache_kib, b))
        goto fail;
    q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (q->efd < 0) {
        tern_logf(log, BROKER_LOG_ERROR, "eventfd: %s", strerror(errno));
        goto fail;
    }
    squeue_store_of(&q->backend, q->s);
    squeue_refresh_stats(&q->sq, &q->backend, mono_us(), true);
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
        squeue_request_stop(&q->sq);
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
