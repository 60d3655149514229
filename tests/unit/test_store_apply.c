/*
 * test_store_apply.c - journal records to rows: every record type, upserts
 * and deletes by key, the reset record, group commit of several batches in
 * one transaction, a malformed batch that leaves the file untouched, and
 * the progress callback a cooperative platform yields from.
 */
#include "test.h"
#include "test_store_util.h"

static bool apply_one(ts_env *e, const jb *j)
{
    broker_store_batch b = jb_batch(j);

    return store_apply(e->s, &b, 1) == STORE_OK;
}

static int64_t count(ts_env *e, const char *table)
{
    char sql[96];

    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
    return ts_query(e->path, sql);
}

TEST(store_apply_writes_a_row_for_every_record_type)
{
    ts_env e;
    jb j;

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    jb_init(&j, 1);
    jb_retain_set(&j, "r/1", "one", 1);
    jb_session_put(&j, "c1", "", 0);
    jb_sub_put(&j, "c1", "q/#", 2);
    jb_msg_put(&j, 7, "q/x", "", 2, 0); /* empty payload: a zero-length BLOB, not NULL */
    jb_queue_put(&j, "c1", 1, 7, 2, 0);
    jb_queue_state(&j, "c1", 1, JOURNAL_Q_WAIT_PUBREC, 42);
    jb_inqos2(&j, "c1", 9, true);
    CHECK(apply_one(&e, &j));
    ts_close(&e);
    CHECK_EQ(count(&e, "retained"), 1);
    CHECK_EQ(count(&e, "sessions"), 1);
    CHECK_EQ(count(&e, "subs"), 1);
    CHECK_EQ(count(&e, "messages"), 1);
    CHECK_EQ(count(&e, "queue"), 1);
    CHECK_EQ(count(&e, "inqos2"), 1);
    CHECK_EQ(ts_query(e.path, "SELECT state * 100000 + packet_id FROM queue"), 200042);
    CHECK_EQ(ts_query(e.path, "SELECT length(payload) FROM messages WHERE payload IS NOT NULL"),
             0);
    ts_cleanup(&e);
}

TEST(store_apply_upserts_and_deletes_by_key)
{
    ts_env e;
    jb j;

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    jb_init(&j, 1);
    jb_retain_set(&j, "r", "old", 0);
    jb_retain_set(&j, "r", "newer", 1);
    jb_retain_set(&j, "gone", "x", 1);
    jb_retain_del(&j, "gone");
    jb_sub_put(&j, "c", "f", 0);
    jb_sub_put(&j, "c", "f", 1);
    jb_sub_put(&j, "c", "g", 1);
    jb_sub_del(&j, "c", "g");
    jb_msg_put(&j, 1, "t", "a", 1, 0);
    jb_msg_put(&j, 1, "t", "a", 1, 0); /* a snapshot repeats shared messages */
    jb_msg_put(&j, 2, "t", "b", 1, 0);
    jb_msg_del(&j, 2);
    jb_queue_put(&j, "c", 5, 1, 1, 0);
    jb_queue_put(&j, "c", 6, 1, 1, 0);
    jb_queue_del(&j, "c", 6);
    jb_inqos2(&j, "c", 3, true);
    jb_inqos2(&j, "c", 3, true);
    jb_inqos2(&j, "c", 4, true);
    jb_inqos2(&j, "c", 4, false);
    CHECK(apply_one(&e, &j));
    ts_close(&e);
    CHECK_EQ(count(&e, "retained"), 1);
    CHECK_EQ(ts_query(e.path, "SELECT qos * 10 + length(payload) FROM retained"), 15);
    CHECK_EQ(ts_query(e.path, "SELECT qos FROM subs WHERE filter = CAST('f' AS BLOB)"), 1);
    CHECK_EQ(count(&e, "subs"), 1);
    CHECK_EQ(count(&e, "messages"), 1);
    CHECK_EQ(ts_query(e.path, "SELECT seq FROM queue"), 5);
    CHECK_EQ(ts_query(e.path, "SELECT packet_id FROM inqos2"), 3);
    CHECK_EQ(count(&e, "inqos2"), 1);
    ts_cleanup(&e);
}

TEST(store_session_delete_takes_its_rows_with_it)
{
    ts_env e;
    jb j;

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    jb_init(&j, 1);
    jb_session_put(&j, "a", "", 0);
    jb_session_put(&j, "b", "id-b", 1);
    jb_sub_put(&j, "a", "x", 1);
    jb_sub_put(&j, "b", "x", 1);
    jb_msg_put(&j, 1, "x", "m", 1, 0);
    jb_queue_put(&j, "a", 1, 1, 1, 0);
    jb_queue_put(&j, "b", 1, 1, 1, 0);
    jb_inqos2(&j, "a", 1, true);
    jb_inqos2(&j, "b", 1, true);
    CHECK(apply_one(&e, &j));
    jb_init(&j, 2);
    jb_session_del(&j, "a");
    CHECK(apply_one(&e, &j));
    ts_close(&e);
    CHECK_EQ(count(&e, "sessions"), 1);
    CHECK_EQ(count(&e, "subs"), 1);
    CHECK_EQ(count(&e, "queue"), 1);
    CHECK_EQ(count(&e, "inqos2"), 1);
    CHECK_EQ(ts_query(e.path, "SELECT flags FROM sessions"), 1);
    CHECK_EQ(count(&e, "messages"), 1); /* still referenced by b */
    ts_cleanup(&e);
}

TEST(store_reset_record_empties_every_table_before_the_snapshot)
{
    ts_env e;
    jb j;

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    jb_init(&j, 1);
    jb_retain_set(&j, "r1", "a", 1);
    jb_retain_set(&j, "r2", "b", 1);
    jb_session_put(&j, "c", "", 0);
    jb_msg_put(&j, 1, "x", "m", 1, 0);
    jb_queue_put(&j, "c", 1, 1, 1, 0);
    CHECK(apply_one(&e, &j));
    jb_init(&j, 2);
    jb_reset(&j);
    jb_retain_set(&j, "r2", "b", 1);
    CHECK(apply_one(&e, &j));
    ts_close(&e);
    CHECK_EQ(count(&e, "retained"), 1);
    CHECK_EQ(count(&e, "sessions"), 0);
    CHECK_EQ(count(&e, "messages"), 0);
    CHECK_EQ(count(&e, "queue"), 0);
    /* meta survives: the schema version and the backup generation */
    CHECK_EQ(count(&e, "meta"), 2);
    ts_cleanup(&e);
}

TEST(store_group_commit_applies_several_batches_in_one_transaction)
{
    ts_env e;
    jb j[3];
    broker_store_batch b[3];
    store_stats st;

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    for (int i = 0; i < 3; i++) {
        char topic[32];

        snprintf(topic, sizeof topic, "t/%d", i);
        jb_init(&j[i], (uint64_t)i + 1);
        jb_retain_set(&j[i], topic, "v", 1);
        jb_retain_set(&j[i], "shared", topic, 1);
        b[i] = jb_batch(&j[i]);
    }
    CHECK_EQ(store_apply(e.s, b, 3), STORE_OK);
    store_get_stats(e.s, &st);
    CHECK_EQ(st.commits, 1);
    CHECK_EQ(st.batches, 3);
    CHECK_EQ(st.records, 6);
    CHECK_EQ(st.bytes, b[0].len + b[1].len + b[2].len);
    CHECK(st.p50_commit_us > 0);
    CHECK(st.p99_commit_us >= st.p50_commit_us);
    ts_close(&e);
    CHECK_EQ(count(&e, "retained"), 4);
    /* batches apply in order: the last one's value wins */
    CHECK_EQ(ts_query(e.path, "SELECT payload = CAST('t/2' AS BLOB) FROM retained"
                              " WHERE topic = CAST('shared' AS BLOB)"),
             1);
    ts_cleanup(&e);
}

TEST(store_malformed_batch_fails_whole_group_and_store_goes_on)
{
    ts_env e;
    jb good, bad, later;
    broker_store_batch b[2];
    store_stats st;

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    jb_init(&good, 1);
    jb_retain_set(&good, "a", "1", 1);
    jb_init(&bad, 2);
    jb_retain_set(&bad, "b", "2", 1);
    bad.len -= 2; /* cut inside the last record */
    b[0] = jb_batch(&good);
    b[1] = jb_batch(&bad);
    CHECK_EQ(store_apply(e.s, b, 2), STORE_EBATCH);
    store_get_stats(e.s, &st);
    CHECK(st.failing);
    CHECK_EQ(st.failed_commits, 1);
    jb_init(&later, 3);
    jb_retain_set(&later, "c", "3", 1);
    CHECK(apply_one(&e, &later));
    store_get_stats(e.s, &st);
    CHECK(!st.failing);
    ts_close(&e);
    /* Neither batch of the failed group reached the file. */
    CHECK_EQ(count(&e, "retained"), 1);
    CHECK(ts_integrity_ok(e.path));
    ts_cleanup(&e);
}

typedef struct progress_count {
    unsigned calls;
    uint64_t last_us, longest_us; /* the longest stretch between two calls */
} progress_count;

static void count_progress(void *ctx)
{
    progress_count *p = ctx;
    uint64_t now = ts_clock_us(NULL);

    if (p->calls > 0 && now - p->last_us > p->longest_us)
        p->longest_us = now - p->last_us;
    p->last_us = now;
    p->calls++;
}

TEST(store_progress_callback_runs_during_a_long_commit_until_turned_off)
{
    static jb j;
    ts_env e;
    broker_store_batch b;
    progress_count p = {0, 0, 0};

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    jb_init(&j, 1);
    for (int i = 0; i < 200; i++) {
        char topic[32];

        snprintf(topic, sizeof topic, "t/%d", i);
        jb_retain_set(&j, topic, "value", 1);
    }
    b = jb_batch(&j);
    store_set_progress(e.s, 100, count_progress, &p);
    CHECK_EQ(store_apply(e.s, &b, 1), STORE_OK);
    CHECK(p.calls > 10); /* 200 upserts run thousands of instructions */
    store_set_progress(e.s, 100, NULL, NULL);
    p.calls = 0;
    b.seq = 2;
    CHECK_EQ(store_apply(e.s, &b, 1), STORE_OK);
    CHECK_EQ(p.calls, 0u);
    ts_close(&e);
    CHECK_EQ(count(&e, "retained"), 200);
    ts_cleanup(&e);
}
