/*
 * store_bench.c - how fast durable commits are on this machine's disk, to
 * choose the journal mode and synchronous level (docs/STORE.md) and to
 * measure the store itself: commits/s, rows/s and commit latency p50/p99
 * for several group sizes, and commit latency while a backup runs.
 *
 *   store-bench [--dir DIR] [--seconds S]
 *
 * Part 1 compares SQLite settings on a table shaped like the store's
 * retained table (raw SQLite, same statements for every mode). Part 2 runs
 * the store (store_apply on journal batches, WAL + FULL) with and without a
 * backup interleaved between commits, as the daemon's store thread does.
 * Output: one line per run, plain text.
 */
#define _POSIX_C_SOURCE 200809L

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "broker/journal.h"
#include "store/store.h"

enum { MAX_SAMPLES = 200000, PAYLOAD = 64 };

/* Longest backup begin, middle step and final step of the last run (us). */
static uint64_t backup_max[3];

typedef struct run_result {
    uint64_t commits, rows;
    double seconds;
    uint64_t p50_us, p99_us, max_us;
} run_result;

static uint64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t clock_cb(void *ctx)
{
    (void)ctx;
    return now_us();
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

static void percentiles(uint64_t *lat, uint64_t n, run_result *r)
{
    if (n == 0)
        return;
    qsort(lat, n, sizeof lat[0], cmp_u64);
    r->p50_us = lat[(n - 1) / 2];
    r->p99_us = lat[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1];
    r->max_us = lat[n - 1];
}

static void remove_db(const char *path)
{
    static const char *const sfx[] = {"", "-wal", "-journal", "-shm", ".bak-a", ".bak-b"};
    char p[512];

    for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++) {
        snprintf(p, sizeof p, "%s%s", path, sfx[i]);
        (void)unlink(p);
    }
}

static void print(const char *what, unsigned group, const run_result *r)
{
    printf("%-34s group %4u: %8.0f commits/s %9.0f rows/s  latency p50 %6.2f ms  p99 %6.2f "
           "ms  max %6.2f ms\n",
           what, group, (double)r->commits / r->seconds, (double)r->rows / r->seconds,
           (double)r->p50_us / 1000.0, (double)r->p99_us / 1000.0, (double)r->max_us / 1000.0);
    fflush(stdout);
}

/* ---- part 1: raw SQLite, one mode ------------------------------------- */

static int raw_run(const char *path, const char *pragmas, unsigned group, double seconds,
                   uint64_t *lat, run_result *r)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *ins = NULL, *begin = NULL, *commit = NULL;
    char payload[PAYLOAD];
    uint64_t start, end, id = 0;
    int rc;

    memset(r, 0, sizeof *r);
    memset(payload, 'x', sizeof payload);
    remove_db(path);
    rc = sqlite3_open(path, &db);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, pragmas, NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db,
                          "CREATE TABLE retained(topic BLOB NOT NULL UNIQUE, payload BLOB NOT "
                          "NULL, qos INTEGER NOT NULL)",
                          NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db,
                                "INSERT INTO retained(topic, payload, qos) VALUES(?1, ?2, 1)"
                                " ON CONFLICT(topic) DO UPDATE SET payload = excluded.payload",
                                -1, &ins, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db, "BEGIN IMMEDIATE", -1, &begin, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db, "COMMIT", -1, &commit, NULL);
    start = now_us();
    end = start + (uint64_t)(seconds * 1e6);
    while (rc == SQLITE_OK && now_us() < end && r->commits < MAX_SAMPLES) {
        uint64_t t0 = now_us();

        rc = sqlite3_step(begin) == SQLITE_DONE ? sqlite3_reset(begin) : SQLITE_ERROR;
        for (unsigned i = 0; rc == SQLITE_OK && i < group; i++) {
            char topic[48];
            int n = snprintf(topic, sizeof topic, "bench/%llu", (unsigned long long)(id++ % 100000));

            rc = sqlite3_bind_blob(ins, 1, topic, n, SQLITE_STATIC);
            if (rc == SQLITE_OK)
                rc = sqlite3_bind_blob(ins, 2, payload, sizeof payload, SQLITE_STATIC);
            if (rc == SQLITE_OK)
                rc = sqlite3_step(ins) == SQLITE_DONE ? sqlite3_reset(ins) : SQLITE_ERROR;
        }
        if (rc == SQLITE_OK)
            rc = sqlite3_step(commit) == SQLITE_DONE ? sqlite3_reset(commit) : SQLITE_ERROR;
        lat[r->commits++] = now_us() - t0;
        r->rows += group;
    }
    r->seconds = (double)(now_us() - start) / 1e6;
    if (rc != SQLITE_OK)
        fprintf(stderr, "raw run: %s\n", sqlite3_errmsg(db));
    sqlite3_finalize(ins);
    sqlite3_finalize(begin);
    sqlite3_finalize(commit);
    sqlite3_close(db);
    percentiles(lat, r->commits, r);
    remove_db(path);
    return rc;
}

/* ---- part 2: the store ------------------------------------------------- */

static size_t encode_retained(uint8_t *out, uint64_t *id, unsigned group)
{
    size_t len = 0;

    for (unsigned i = 0; i < group; i++) {
        char topic[48];
        uint32_t tl = (uint32_t)snprintf(topic, sizeof topic, "bench/%llu",
                                         (unsigned long long)((*id)++ % 100000));

        out[len++] = J_RETAIN_SET;
        for (int k = 3; k >= 0; k--)
            out[len++] = (uint8_t)(tl >> (8 * k));
        memcpy(out + len, topic, tl);
        len += tl;
        for (int k = 3; k >= 0; k--)
            out[len++] = (uint8_t)((uint32_t)PAYLOAD >> (8 * k));
        memset(out + len, 'x', PAYLOAD);
        len += PAYLOAD;
        out[len++] = 1;
    }
    return len;
}

static int store_run(const char *path, unsigned group, double seconds, bool preload,
                     bool with_backup, uint64_t *lat, run_result *r, store_stats *st)
{
    uint8_t *buf = malloc((size_t)(group > 500 ? group : 500) * 128 + 64);
    char err[STORE_ERR_SIZE];
    store_open_info info;
    store_options opt;
    store *s;
    uint64_t start, end, id = 0, seq = 1;
    int rc = 0;

    memset(r, 0, sizeof *r);
    remove_db(path);
    memset(&opt, 0, sizeof opt);
    opt.path = path;
    opt.sync = STORE_SYNC_FULL;
    opt.clock = clock_cb;
    s = store_open(&opt, &info, err, sizeof err);
    if (s == NULL || buf == NULL) {
        fprintf(stderr, "store_open: %s\n", err);
        free(buf);
        return 1;
    }
    if (preload) {
        /* A database of a realistic size (for the copy to take a while),
         * which also leaves the WAL at its full size: later commits
         * overwrite its blocks instead of growing the file. */
        for (int i = 0; i < 200; i++) {
            broker_store_batch b = {seq++, buf, encode_retained(buf, &id, 500), 500};

            if (store_apply(s, &b, 1) != STORE_OK)
                rc = 1;
        }
    }
    start = now_us();
    end = start + (uint64_t)(seconds * 1e6);
    while (rc == 0 && now_us() < end && r->commits < MAX_SAMPLES) {
        broker_store_batch b = {seq++, buf, encode_retained(buf, &id, group), group};
        uint64_t t0 = now_us();

        if (store_apply(s, &b, 1) != STORE_OK)
            rc = 1;
        lat[r->commits++] = now_us() - t0;
        r->rows += group;
        if (with_backup) {
            bool done = false;

            /* As the store thread: a step between commits; a new copy as
             * soon as one finishes, so the whole run overlaps a backup. */
            uint64_t b0 = now_us();

            if (!store_backup_running(s)) {
                if (store_backup_begin(s) != STORE_OK)
                    rc = 1;
                if (now_us() - b0 > backup_max[0])
                    backup_max[0] = now_us() - b0;
            } else if (store_backup_step(s, &done) != STORE_OK) {
                rc = 1;
            } else {
                uint64_t t = now_us() - b0;

                if (t > backup_max[done ? 2 : 1])
                    backup_max[done ? 2 : 1] = t;
            }
        }
    }
    r->seconds = (double)(now_us() - start) / 1e6;
    store_get_stats(s, st);
    store_close(s);
    free(buf);
    percentiles(lat, r->commits, r);
    remove_db(path);
    return rc;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name, *pragmas;
    } modes[] = {
        {"WAL, synchronous=FULL",
         "PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL"},
        {"WAL, synchronous=NORMAL",
         "PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL"},
        {"rollback (DELETE), synchronous=FULL",
         "PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=DELETE; PRAGMA synchronous=FULL"},
    };
    static const unsigned groups[] = {1, 16, 256};
    const char *dir = "build/store-bench";
    double seconds = 3.0;
    uint64_t *lat = malloc(MAX_SAMPLES * sizeof *lat);
    char path[400];
    run_result r;
    store_stats st;
    int rc = 0;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--dir") == 0)
            dir = argv[i + 1];
        else if (strcmp(argv[i], "--seconds") == 0)
            seconds = atof(argv[i + 1]);
    }
    if (lat == NULL)
        return 1;
    (void)mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/bench.db", dir);
    printf("SQLite %s, %s, %.1f s per run, 64-byte payloads\n", sqlite3_libversion(), path,
           seconds);
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++)
        for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
            rc |= raw_run(path, modes[m].pragmas, groups[g], seconds, lat, &r);
            print(modes[m].name, groups[g], &r);
        }
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        rc |= store_run(path, groups[g], seconds, false, false, lat, &r, &st);
        print("store (WAL, FULL), new WAL", groups[g], &r);
    }
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        rc |= store_run(path, groups[g], seconds, true, false, lat, &r, &st);
        print("store (WAL, FULL), WAL at full size", groups[g], &r);
    }
    rc |= store_run(path, 16, seconds, true, true, lat, &r, &st);
    print("store during backups (16 pages/step)", 16, &r);
    printf("  backups completed %llu; longest begin %.2f ms, copy step %.2f ms, final step "
           "%.2f ms\n",
           (unsigned long long)st.backups_done, (double)backup_max[0] / 1000.0,
           (double)backup_max[1] / 1000.0, (double)backup_max[2] / 1000.0);
    free(lat);
    return rc != 0;
}
