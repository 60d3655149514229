/*
 * kstore_test.c - the store double of test builds (see kstore_test.h).
 * Commits count what a real store would (commits, batches, records,
 * latency percentiles over the last LAT_WINDOW commits) so $SYS and the
 * console show the same counters; backups finish in one step.
 */
#include "store/kstore_test.h"

#include "arch/x86_64/cpu.h"
#include "clock.h"
#include "kthread.h"
#include "store/kstore.h"

#include <stdio.h>
#include <string.h>

#ifdef TERN_TEST_HOOKS

enum { LAT_WINDOW = 64, CPU_CHUNK_NS = 20000 };

struct test_store {
    bool cpu;                 /* compute instead of waiting */
    uint64_t ms;
    uint64_t until_ns;        /* the wait in progress ends */
    store_stats st;
    uint32_t lat_us[LAT_WINDOW];
    unsigned lat_n;
};

/* Boot-time test state: one double per kernel, chosen once. */
static struct test_store ts;
static squeue_store ts_ops;

static bool wait_over(void *arg)
{
    return clock_mono_ns() >= ((const struct test_store *)arg)->until_ns;
}

static uint64_t percentile(const struct test_store *t, unsigned pct)
{
    uint32_t v[LAT_WINDOW];
    unsigned n = t->lat_n < LAT_WINDOW ? t->lat_n : LAT_WINDOW;
    if (n == 0)
        return 0;
    memcpy(v, t->lat_us, n * sizeof v[0]);
    for (unsigned i = 1; i < n; i++) /* insertion sort: 64 values at most */
        for (unsigned j = i; j > 0 && v[j - 1] > v[j]; j--) {
            uint32_t x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    return v[(n - 1) * pct / 100];
}

static store_rc apply(void *ctx, const broker_store_batch *b, size_t n)
{
    struct test_store *t = ctx;
    uint64_t t0 = clock_mono_ns();
    t->until_ns = t0 + t->ms * 1000000u;
    if (t->cpu) {
        /* Busy work in chunks, a progress call after each, as SQLite's
         * virtual machine calls the handler every KSTORE_PROGRESS_OPS. */
        while (clock_mono_ns() < t->until_ns) {
            uint64_t chunk = clock_mono_ns() + CPU_CHUNK_NS;
            while (clock_mono_ns() < chunk)
                cpu_relax();
            kstore_progress(NULL);
        }
    } else {
        kthread_wait_until(wait_over, t, NULL);
    }
    for (size_t i = 0; i < n; i++) {
        t->st.records += b[i].records;
        t->st.bytes += b[i].len;
    }
    t->st.batches += n;
    t->st.commits++;
    uint64_t us = (clock_mono_ns() - t0) / 1000u;
    t->st.last_commit_us = us;
    if (us > t->st.max_commit_us)
        t->st.max_commit_us = us;
    t->lat_us[t->lat_n++ % LAT_WINDOW] = (uint32_t)(us > UINT32_MAX ? UINT32_MAX : us);
    return STORE_OK;
}

static store_rc backup_begin(void *ctx)
{
    (void)ctx;
    return STORE_OK;
}

static store_rc backup_step(void *ctx, bool *done)
{
    struct test_store *t = ctx;
    t->st.backups_done++;
    *done = true;
    return STORE_OK;
}

static void get_stats(void *ctx, store_stats *out)
{
    const struct test_store *t = ctx;
    *out = t->st;
    out->p50_commit_us = percentile(t, 50);
    out->p99_commit_us = percentile(t, 99);
}

static store_rc load(void *ctx, broker *b, char *err, size_t err_size)
{
    (void)ctx;
    (void)err;
    (void)err_size;
    broker_restore_done(b); /* nothing kept: an empty store */
    return STORE_OK;
}

const squeue_store *kstore_test_store(const char *spec, char *err, size_t err_size)
{
    const char *num;
    if (!strncmp(spec, "wait:", 5))
        num = spec + 5;
    else if (!strncmp(spec, "cpu:", 4))
        num = spec + 4;
    else
        num = NULL;
    uint64_t ms = 0;
    for (const char *p = num; p && *p; p++) {
        if (*p < '0' || *p > '9' || ms > 60000) {
            num = NULL;
            break;
        }
        ms = ms * 10 + (uint64_t)(*p - '0');
    }
    if (!num || !*num || ms > 60000) {
        snprintf(err, err_size, "tern.teststore=%s: expected wait:MS or cpu:MS (MS <= 60000)",
                 spec);
        return NULL;
    }
    memset(&ts, 0, sizeof ts);
    ts.cpu = spec[0] == 'c';
    ts.ms = ms;
    ts_ops = (squeue_store){ apply, backup_begin, backup_step, get_stats, load, &ts, NULL, NULL, NULL };
    return &ts_ops;
}

#endif
