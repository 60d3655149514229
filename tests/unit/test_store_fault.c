/*
 * test_store_fault.c - the store under injected disk faults (faultvfs.c):
 * a write or sync that fails makes the whole group fail with the right
 * error (disk full vs I/O error), leaves the file consistent without any
 * of the group's rows, and the next group commits normally, also when the
 * failure was a log that could not grow.
 */
#include "test.h"
#include "test_store_util.h"

#include <sqlite3.h>

static broker_store_batch retained_batch(jb *j, uint64_t seq, const char *topic, size_t pad)
{
    char payload[2048];

    if (pad >= sizeof payload)
        pad = sizeof payload - 1;
    memset(payload, 'p', pad);
    payload[pad] = '\0';
    jb_init(j, seq);
    jb_retain_set(j, topic, payload, 1);
    return jb_batch(j);
}

static int64_t has_topic(const char *path, const char *topic)
{
    char sql[128];

    snprintf(sql, sizeof sql, "SELECT count(*) FROM retained WHERE topic = CAST('%s' AS BLOB)",
             topic);
    return ts_query(path, sql);
}

/* One failure of kind op with code at the n-th operation, between two good
 * commits; then the file must hold exactly the good ones. */
static bool fault_round(store_fault_op op, uint32_t nth, int code, store_rc want, bool *hit)
{
    ts_env e;
    jb j;
    broker_store_batch b;
    store_rc rc;
    bool ok = false;

    if (!ts_init(&e) || !ts_open(&e, true))
        goto done;
    b = retained_batch(&j, 1, "before", 100);
    if (store_apply(e.s, &b, 1) != STORE_OK)
        goto done;
    store_fault_fail_nth(e.fault, op, nth, code);
    b = retained_batch(&j, 2, "failed", 1500);
    rc = store_apply(e.s, &b, 1);
    *hit = store_fault_injected(e.fault) > 0;
    store_fault_fail_nth(e.fault, op, 0, 0);
    if (*hit && (rc != want || store_last_error(e.s, NULL) != code)) {
        fprintf(stderr, "  nth %u: rc %d, sqlite %d\n", nth, rc, store_last_error(e.s, NULL));
        goto done;
    }
    b = retained_batch(&j, 3, "after", 100);
    if (store_apply(e.s, &b, 1) != STORE_OK)
        goto done;
    ts_close(&e);
    ok = ts_integrity_ok(e.path) && has_topic(e.path, "before") == 1 &&
         has_topic(e.path, "after") == 1 && has_topic(e.path, "failed") == (*hit ? 0 : 1);
done:
    ts_cleanup(&e);
    return ok;
}

TEST(store_fault_full_at_each_write_fails_only_that_group)
{
    bool hit = true;

    for (uint32_t n = 1; hit && n < 40; n++) {
        if (!fault_round(STORE_FAULT_WRITE, n, SQLITE_FULL, STORE_EFULL, &hit)) {
            fprintf(stderr, "  write %u\n", n);
            CHECK(false);
        }
    }
    CHECK(!hit); /* ran past the group's last write */
}

TEST(store_fault_ioerr_at_each_sync_fails_only_that_group)
{
    bool hit = true;

    for (uint32_t n = 1; hit && n < 10; n++) {
        if (!fault_round(STORE_FAULT_SYNC, n, SQLITE_IOERR_FSYNC, STORE_EIO, &hit)) {
            fprintf(stderr, "  sync %u\n", n);
            CHECK(false);
        }
    }
    CHECK(!hit);
}

TEST(store_fault_ioerr_write_is_reported_as_io_error)
{
    bool hit = false;

    CHECK(fault_round(STORE_FAULT_WRITE, 1, SQLITE_IOERR_WRITE, STORE_EIO, &hit));
    CHECK(hit);
}

TEST(store_fault_all_writes_failing_then_recovering)
{
    ts_env e;
    jb j;
    broker_store_batch b;
    store_stats st;

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, true));
    store_fault_fail_all(e.fault, true, SQLITE_FULL);
    for (int i = 0; i < 5; i++) {
        char topic[32];

        snprintf(topic, sizeof topic, "lost/%d", i);
        b = retained_batch(&j, (uint64_t)i + 1, topic, 10);
        CHECK_EQ(store_apply(e.s, &b, 1), STORE_EFULL);
    }
    store_get_stats(e.s, &st);
    CHECK(st.failing);
    CHECK_EQ(st.failed_commits, 5);
    CHECK_EQ(st.errors_full, 5);
    CHECK_EQ(st.commits, 0);
    store_fault_fail_all(e.fault, false, 0);
    b = retained_batch(&j, 6, "kept", 10);
    CHECK_EQ(store_apply(e.s, &b, 1), STORE_OK);
    store_get_stats(e.s, &st);
    CHECK(!st.failing);
    CHECK_EQ(st.commits, 1);
    /* Logged once when it started failing, once when it recovered. */
    CHECK_EQ(ts_log_count(&e, "store: commit of 1 batch(es) failed (disk full)"), 1);
    CHECK_EQ(ts_log_count(&e, "commits succeed again after 5 failed"), 1);
    ts_close(&e);
    CHECK(ts_integrity_ok(e.path));
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM retained"), 1);
    ts_cleanup(&e);
}

/* A full disk also fails the checkpoint the store runs after a full log
 * (the log holds a commit's frames): the store is "full". The first commit
 * once the disk has room again retries the checkpoint, so "full" ends with
 * it rather than at SQLite's next automatic checkpoint 1000 frames later. */
TEST(store_full_state_clears_at_the_first_commit_after_the_disk_recovers)
{
    ts_env e;
    jb j;
    broker_store_batch b;
    store_stats st;

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, true));
    b = retained_batch(&j, 1, "before", 10);
    CHECK_EQ(store_apply(e.s, &b, 1), STORE_OK); /* frames in the log */
    store_fault_fail_all(e.fault, true, SQLITE_FULL);
    b = retained_batch(&j, 2, "lost", 10);
    CHECK_EQ(store_apply(e.s, &b, 1), STORE_EFULL);
    store_get_stats(e.s, &st);
    CHECK(st.full && st.failing);
    CHECK(st.failed_checkpoints >= 1);
    CHECK(ts_log_count(&e, "failed: no room in the database") == 1);
    store_fault_fail_all(e.fault, false, 0);
    b = retained_batch(&j, 3, "kept", 10);
    CHECK_EQ(store_apply(e.s, &b, 1), STORE_OK);
    store_get_stats(e.s, &st);
    CHECK(!st.full && !st.failing);
    CHECK_EQ(ts_log_count(&e, "the database has room again"), 1);
    ts_close(&e);
    CHECK(ts_integrity_ok(e.path));
    ts_cleanup(&e);
}

/* A disk that gives the WAL no more blocks (it stays below 1 MiB, far
 * below SQLite's auto-checkpoint): after a group fails with a full log the
 * store checkpoints, so the next group succeeds instead of failing for
 * good; nothing of a failed group is kept. */
TEST(store_full_log_is_checkpointed_so_the_next_group_commits)
{
    enum { LOG_BYTES = 1024 * 1024 };
    ts_env e;
    ts_full_log r;
    store_stats st;

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, true));
    store_fault_limit_wal(e.fault, LOG_BYTES);
    CHECK(ts_full_log_run(e.s, LOG_BYTES, &r));
    store_get_stats(e.s, &st);
    CHECK_EQ(st.errors_full, r.small_full + r.big_full);
    CHECK_EQ(st.full_log_checkpoints, r.small_full + r.big_full);
    CHECK(ts_log_count(&e, "after a commit found the log full") > 0);
    ts_close(&e);
    CHECK(ts_integrity_ok(e.path));
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM retained WHERE topic LIKE 'f/%'"),
             r.small_ok);
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM retained WHERE topic LIKE 'big/%'"),
             (int64_t)r.big_ok * (LOG_BYTES * 6 / 10 / 10000));
    ts_cleanup(&e);
}

/* The durability claim itself: with synchronous = FULL every commit syncs
 * (the WAL) before store_apply returns, also while a backup is being copied
 * between commits. Counted through the shim, which sees every xSync. */
TEST(store_every_commit_syncs_even_during_a_backup)
{
    ts_env e;
    jb j;
    broker_store_batch b;
    bool done = false;
    uint64_t before;

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, true));
    for (int i = 0; i < 200; i++) {
        char topic[32];

        snprintf(topic, sizeof topic, "fill/%d", i);
        b = retained_batch(&j, (uint64_t)i + 1, topic, 1000);
        CHECK_EQ(store_apply(e.s, &b, 1), STORE_OK);
    }
    for (int i = 0; i < 20; i++) {
        char topic[32];

        snprintf(topic, sizeof topic, "plain/%d", i);
        b = retained_batch(&j, 1000 + (uint64_t)i, topic, 10);
        before = store_fault_count(e.fault, STORE_FAULT_SYNC);
        CHECK_EQ(store_apply(e.s, &b, 1), STORE_OK);
        CHECK(store_fault_count(e.fault, STORE_FAULT_SYNC) > before);
    }
    CHECK_EQ(store_backup_begin(e.s), STORE_OK);
    for (int i = 0; !done; i++) {
        char topic[32];

        CHECK(i < 1000);
        CHECK_EQ(store_backup_step(e.s, &done), STORE_OK);
        snprintf(topic, sizeof topic, "during/%d", i);
        b = retained_batch(&j, 2000 + (uint64_t)i, topic, 10);
        before = store_fault_count(e.fault, STORE_FAULT_SYNC);
        CHECK_EQ(store_apply(e.s, &b, 1), STORE_OK);
        CHECK(store_fault_count(e.fault, STORE_FAULT_SYNC) > before);
    }
    ts_cleanup(&e);
}
