/*
 * test_kvfs_full.c - a full database region (docs/STORE.md, "A full
 * database"): the store through the kernel's VFS on the fake disk with a
 * 1 MiB database region. Bounded to the region, commits that would outgrow
 * it fail (SQLITE_FULL, the store "full") before they reach the log, every
 * acknowledged one is there after a remount and the store opens again.
 * A disk an unbounded store (releases before this one) filled - the log
 * holding more pages than the database region can take - opens anyway,
 * "full", and serves everything acknowledged. A checkpoint that finds no
 * room is counted and reported while running, not only at the next open.
 */
#include "test.h"
#include "test_kvfs_util.h"
#include "test_store_util.h"

#include <sqlite3.h>
#include <stdlib.h>

enum {
    DB_KIB = 1024,      /* the database region: about 250 pages of 4 KiB */
    LOG_KIB = 6 * 1024, /* holds SQLite's auto-checkpoint threshold */
    PAD = 3000,         /* a row of about a page per commit */
    MAX_PUTS = 2000,    /* far beyond what either region holds */
};

static store *open_bounded(kv_env *e, bool bounded, store_open_info *info)
{
    struct kvfs_stats vs;
    char err[STORE_ERR_SIZE];

    kvfs_get_stats(e->fs, &vs);
    store_options opt = {.path = KV_PATH, .vfs = KV_VFS, .sync = STORE_SYNC_FULL,
                         .max_db_bytes = bounded ? vs.capacity[KVFS_DB] : 0};
    store *s = store_open(&opt, info, err, sizeof err);
    if (s == NULL)
        fprintf(stderr, "  store_open: %s\n", err);
    return s;
}

/* Topic "t/<n>" (payload n, padded) and "last" = n, in one batch. */
static store_rc put(store *s, uint32_t n)
{
    char topic[32], payload[PAD + 16];
    broker_store_batch b;
    jb j;

    snprintf(topic, sizeof topic, "t/%u", n);
    int len = snprintf(payload, sizeof payload, "%u", n);
    memset(payload + len, 'x', PAD);
    payload[len + PAD] = '\0';
    jb_init(&j, n);
    jb_retain_set(&j, topic, payload, 1);
    snprintf(payload, sizeof payload, "%u", n);
    jb_retain_set(&j, "last", payload, 1);
    b = jb_batch(&j);
    return store_apply(s, &b, 1);
}

/* Commit until one fails; the number acknowledged (1..n all succeeded). */
static uint32_t fill(store *s, store_rc *failure)
{
    uint32_t n = 1;
    store_rc rc;

    while ((rc = put(s, n)) == STORE_OK && n < MAX_PUTS)
        n++;
    *failure = rc;
    return rc == STORE_OK ? n : n - 1;
}

/* Every acknowledged topic and nothing else, read through the VFS. */
static bool holds_exactly(uint32_t acked)
{
    return kv_query(KV_PATH, "SELECT count(*) FROM retained WHERE topic LIKE 't/%'") ==
               (int64_t)acked &&
           kv_query(KV_PATH, "SELECT CAST(CAST(payload AS TEXT) AS INTEGER) FROM retained "
                             "WHERE topic = CAST('last' AS BLOB)") == (int64_t)acked;
}

TEST(kvfs_store_full_database_region_fails_commits_and_the_next_open_serves)
{
    kv_env e;
    store_open_info info;
    store_stats st;
    store_rc failure;
    store *s;

    CHECK(kv_setup_db(&e, 512, 4096, DB_KIB, LOG_KIB, 31));
    s = open_bounded(&e, true, &info);
    CHECK(s != NULL && info.created && !info.full);
    uint32_t acked = fill(s, &failure);
    CHECK_EQ(failure, STORE_EFULL);
    /* the region's pages, not the log's: a 6 MiB log would take ~4 times more */
    CHECK(acked > 100 && acked < 300);
    store_get_stats(s, &st);
    CHECK(st.full && st.failing);
    CHECK_EQ(st.failed_checkpoints, 0); /* every committed page fits the region */
    CHECK_EQ(put(s, acked + 1), STORE_EFULL); /* still no room: withheld again */
    store_close(s);
    CHECK(kv_remount(&e));
    s = open_bounded(&e, true, &info);
    CHECK(s != NULL && !info.check_failed && !info.full);
    store_get_stats(s, &st);
    CHECK(!st.full);
    store_close(s);
    CHECK(holds_exactly(acked));
    CHECK(kv_integrity_ok(KV_PATH));
    kv_teardown(&e);
}

/* The bug as found: without the bound, commits went on into the log while
 * the checkpoints into the database failed, and the next open failed on
 * its checkpoint ("database or disk is full") - the kernel halted. */
TEST(kvfs_store_log_larger_than_the_database_region_opens_full_and_serves)
{
    kv_env e;
    store_open_info info;
    store_stats st;
    store_rc failure;
    store *s;

    CHECK(kv_setup_db(&e, 512, 4096, DB_KIB, LOG_KIB, 32));
    s = open_bounded(&e, false, &info);
    CHECK(s != NULL);
    uint32_t acked = fill(s, &failure);
    CHECK_EQ(failure, STORE_EFULL); /* the log, at last */
    store_get_stats(s, &st);
    /* the checkpoint that found no room was seen while running */
    CHECK(st.full && st.failed_checkpoints > 0);
    CHECK(acked > 300); /* more than the region holds: the log has the rest */
    store_close(s);
    CHECK(kv_remount(&e));
    s = open_bounded(&e, true, &info);
    CHECK(s != NULL);
    CHECK(info.full && !info.check_failed);
    store_get_stats(s, &st);
    CHECK(st.full);
    /* A commit goes into the log while it has room, never beyond it; one
     * that succeeds is kept like every other. */
    store_rc rc = put(s, acked + 1);
    CHECK(rc == STORE_OK || rc == STORE_EFULL);
    acked += rc == STORE_OK;
    store_close(s);
    CHECK(holds_exactly(acked));
    CHECK(kv_integrity_ok(KV_PATH));
    kv_teardown(&e);
}
