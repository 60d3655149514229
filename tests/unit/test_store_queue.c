/*
 * test_store_queue.c - the store queue both platforms share
 * (src/store/queue.c): batches taken from a real durable core travel as
 * one group, come back in order and release the held acknowledgements; a
 * failed group fails every batch in it and paces the next one; the ring
 * holds at most SQUEUE_CAP batches and leaves the rest in the core; a stop
 * waits for what is queued; backups run on their interval between
 * commits, are skipped when nothing changed and not when asked for; the
 * store's counters map onto $SYS's. The store is the in-memory model
 * (model_store.c) behind a squeue_store, so failures are chosen at will.
 */
#include "fake_client.h"
#include "model_store.h"
#include "test.h"

#include "store/queue.h"

#include <stdlib.h>
#include <string.h>

/* A store double: the model store plus failure switch and backup counts. */
typedef struct fake_store {
    mstore *ms;
    bool fail;
    unsigned applies, batches;
    unsigned begins, steps, steps_per_backup;
    uint64_t commits, backups_done;
} fake_store;

static store_rc fs_apply(void *ctx, const broker_store_batch *b, size_t n)
{
    fake_store *f = ctx;
    f->applies++;
    if (f->fail)
        return STORE_EIO;
    for (size_t i = 0; i < n; i++)
        if (!ms_apply(f->ms, b[i].data, b[i].len))
            return STORE_EBATCH;
    f->batches += (unsigned)n;
    f->commits++;
    return STORE_OK;
}

static store_rc fs_backup_begin(void *ctx)
{
    fake_store *f = ctx;
    f->begins++;
    f->steps = 0;
    return STORE_OK;
}

static store_rc fs_backup_step(void *ctx, bool *done)
{
    fake_store *f = ctx;
    *done = ++f->steps == f->steps_per_backup;
    if (*done)
        f->backups_done++;
    return STORE_OK;
}

static void fs_get_stats(void *ctx, store_stats *out)
{
    const fake_store *f = ctx;
    memset(out, 0, sizeof *out);
    out->commits = f->commits;
    out->backups_done = f->backups_done;
}

static void fs_init(fake_store *f, squeue_store *st)
{
    memset(f, 0, sizeof *f);
    f->ms = calloc(1, sizeof *f->ms);
    f->steps_per_backup = 3;
    *st = (squeue_store){ fs_apply, fs_backup_begin, fs_backup_step, fs_get_stats, NULL, f, NULL, NULL,
                          NULL };
}

/* The worker's side of one commit, as both platforms do it. */
static store_rc work_commit(squeue *q, const squeue_store *st, uint64_t now)
{
    static broker_store_batch group[SQUEUE_CAP];
    size_t n = squeue_take_group(q, group);
    store_rc rc = st->apply(st->ctx, group, n);
    squeue_group_done(q, rc, now);
    return rc;
}

static bool report(squeue *q, broker *b)
{
    static squeue_result r[SQUEUE_CAP];
    return squeue_report(b, r, squeue_collect(q, r));
}

TEST(queued_batches_commit_as_one_group_and_release_acks_in_order)
{
    fake_store f;
    squeue_store st;
    squeue q;
    fworld w;
    mqtt_packet pk;
    uint64_t wake;
    fs_init(&f, &st);
    squeue_init(&q, 0, 0);
    fw_init_durable(&w, NULL);
    fclient *p = fw_connect_as(&w, "pub", true);
    /* Three loop turns, each leaving one batch with a held PUBACK. */
    for (uint16_t id = 1; id <= 3; id++) {
        fc_publish(&w, p, "r/t", "v", 1, true, id);
        CHECK(squeue_submit(&q, w.b));
    }
    CHECK(!fc_next(p, &pk));
    CHECK_EQ(squeue_next(&q, 0, &wake), SQUEUE_COMMIT);
    CHECK_EQ(work_commit(&q, &st, 0), STORE_OK);
    CHECK_EQ(f.applies, 1u);
    CHECK_EQ(f.batches, 3u);
    CHECK(squeue_idle(&q));
    CHECK(!squeue_empty(&q));
    CHECK(report(&q, w.b));
    CHECK(squeue_empty(&q));
    fw_drain(&w);
    for (uint16_t id = 1; id <= 3; id++) {
        CHECK(fc_next_is(p, MQTT_PUBACK, &pk));
        CHECK_EQ(pk.u.ack.packet_id, id);
    }
    CHECK_EQ(ms_count(f.ms, 'R'), 1);
    CHECK_EQ(squeue_next(&q, 0, &wake), SQUEUE_WAIT);
    CHECK_EQ(wake, UINT64_MAX);
    fw_free(&w);
    free(f.ms);
}

TEST(failed_group_fails_every_batch_and_paces_the_next_one)
{
    fake_store f;
    squeue_store st;
    squeue q;
    fworld w;
    mqtt_packet pk;
    uint64_t wake;
    fs_init(&f, &st);
    squeue_init(&q, 0, 0);
    fw_init_durable(&w, NULL);
    fclient *p = fw_connect_as(&w, "pub", true);
    fc_publish(&w, p, "r/a", "v", 1, true, 1);
    squeue_submit(&q, w.b);
    fc_publish(&w, p, "r/b", "v", 1, true, 2);
    squeue_submit(&q, w.b);
    f.fail = true;
    CHECK_EQ(work_commit(&q, &st, 1000), STORE_EIO);
    CHECK(!report(&q, w.b)); /* the core closes the publisher; no PUBACK */
    fw_drain(&w);
    CHECK(!fc_next_is(p, MQTT_PUBACK, &pk));
    /* The core's repair batch waits for the pause: 50 ms, then 100 ms. */
    CHECK(squeue_submit(&q, w.b));
    CHECK_EQ(squeue_next(&q, 1000, &wake), SQUEUE_WAIT);
    CHECK_EQ(wake, 1000u + SQUEUE_RETRY_MIN_US);
    CHECK_EQ(squeue_next(&q, wake, &wake), SQUEUE_COMMIT);
    CHECK_EQ(work_commit(&q, &st, 60000), STORE_EIO);
    CHECK(!report(&q, w.b));
    CHECK(squeue_submit(&q, w.b)); /* the core's next rewrite */
    CHECK_EQ(squeue_next(&q, 60000, &wake), SQUEUE_WAIT);
    CHECK_EQ(wake, 60000u + 2 * SQUEUE_RETRY_MIN_US);
    /* A stop does not wait for the pause: what is queued is tried now. */
    squeue_request_stop(&q);
    CHECK_EQ(squeue_next(&q, 60000, &wake), SQUEUE_COMMIT);
    f.fail = false;
    CHECK_EQ(work_commit(&q, &st, 70000), STORE_OK);
    CHECK(report(&q, w.b));
    CHECK_EQ(squeue_next(&q, 70000, &wake), SQUEUE_STOP);
    /* The rewrite that finally committed carries the core's whole state. */
    CHECK_EQ(f.ms->resets, 1u);
    CHECK_EQ(ms_count(f.ms, 'R'), 2);
    fw_free(&w);
    free(f.ms);
}

TEST(pause_after_failures_stops_doubling_at_its_maximum)
{
    squeue q;
    uint64_t now = 0, wake;
    squeue_init(&q, 0, 0);
    for (int i = 0; i < 12; i++) {
        q.tail++; /* a batch waits (its bytes do not matter here) */
        q.taken = q.tail;
        squeue_group_done(&q, STORE_EFULL, now);
        q.head = q.done;
        q.tail++;
        CHECK_EQ(squeue_next(&q, now, &wake), SQUEUE_WAIT);
        CHECK(wake - now <= SQUEUE_RETRY_MAX_US);
        now = wake;
        q.tail--;
    }
    CHECK_EQ(q.retry_pause_us, (uint64_t)SQUEUE_RETRY_MAX_US);
    q.taken = q.tail;
    squeue_group_done(&q, STORE_OK, now);
    CHECK_EQ(q.retry_pause_us, 0u);
}

TEST(ring_takes_at_most_its_capacity_and_leaves_the_rest_in_the_core)
{
    fake_store f;
    squeue_store st;
    squeue q;
    fworld w;
    fs_init(&f, &st);
    squeue_init(&q, 0, 0);
    fw_init_durable(&w, NULL);
    fclient *p = fw_connect_as(&w, "pub", true);
    char topic[32];
    for (unsigned i = 0; i < SQUEUE_CAP + 10; i++) {
        snprintf(topic, sizeof topic, "r/%u", i);
        fc_publish(&w, p, topic, "v", 1, true, (uint16_t)(i + 1));
        squeue_submit(&q, w.b);
    }
    CHECK_EQ(q.tail - q.head, (uint64_t)SQUEUE_CAP);
    CHECK(broker_store_pending_bytes(w.b) > 0);
    CHECK_EQ(work_commit(&q, &st, 0), STORE_OK);
    CHECK(!squeue_submit(&q, w.b)); /* still full until reported */
    CHECK(report(&q, w.b));
    CHECK(squeue_submit(&q, w.b));
    CHECK_EQ(work_commit(&q, &st, 0), STORE_OK);
    CHECK(report(&q, w.b));
    CHECK_EQ(ms_count(f.ms, 'R'), SQUEUE_CAP + 10);
    fw_drain(&w);
    CHECK_EQ(fc_count_publish(p), 0);
    fw_free(&w);
    free(f.ms);
}

TEST(backups_run_on_their_interval_between_commits_and_skip_an_unchanged_store)
{
    fake_store f;
    squeue_store st;
    squeue q;
    uint64_t wake, s = 1000000;
    fs_init(&f, &st);
    squeue_init(&q, 10, 0);
    CHECK_EQ(squeue_next(&q, 0, &wake), SQUEUE_WAIT);
    CHECK_EQ(wake, 10 * s);
    CHECK_EQ(squeue_next(&q, 10 * s, &wake), SQUEUE_BACKUP);
    /* begin, then steps until done; the next one is due 10 s later */
    for (int i = 0; i < 4; i++) {
        CHECK_EQ(squeue_next(&q, 10 * s, &wake), SQUEUE_BACKUP);
        squeue_backup_step(&q, &st, squeue_take_backup_request(&q), 10 * s);
    }
    CHECK_EQ(f.begins, 1u);
    CHECK_EQ(f.backups_done, 1u);
    CHECK_EQ(squeue_next(&q, 10 * s, &wake), SQUEUE_WAIT);
    CHECK_EQ(wake, 20 * s);
    /* Nothing committed since: the periodic one is skipped. */
    CHECK_EQ(squeue_next(&q, 20 * s, &wake), SQUEUE_BACKUP);
    squeue_backup_step(&q, &st, squeue_take_backup_request(&q), 20 * s);
    CHECK_EQ(f.begins, 1u);
    CHECK_EQ(squeue_next(&q, 20 * s, &wake), SQUEUE_WAIT);
    CHECK_EQ(wake, 30 * s);
    /* Asked for: runs anyway, and a waiting batch goes first. */
    squeue_request_backup(&q);
    q.tail++;
    CHECK_EQ(squeue_next(&q, 21 * s, &wake), SQUEUE_COMMIT);
    q.tail--;
    CHECK_EQ(squeue_next(&q, 21 * s, &wake), SQUEUE_BACKUP);
    CHECK(squeue_take_backup_request(&q));
    squeue_backup_step(&q, &st, true, 21 * s);
    CHECK_EQ(f.begins, 2u);
    free(f.ms);
}

TEST(store_counters_map_onto_the_cores_status)
{
    store_stats st;
    broker_store_status bs;
    memset(&st, 0, sizeof st);
    st.commits = 7;
    st.failed_commits = 2;
    st.records = 99;
    st.p50_commit_us = 120;
    st.p99_commit_us = 900;
    st.backups_done = 3;
    st.backups_failed = 1;
    st.restored_at_open = true;
    squeue_status_of(&st, true, &bs);
    CHECK_EQ(bs.commits, 7u);
    CHECK_EQ(bs.failed_commits, 2u);
    CHECK_EQ(bs.records, 99u);
    CHECK_EQ(bs.commit_p50_us, 120u);
    CHECK_EQ(bs.commit_p99_us, 900u);
    CHECK_EQ(bs.backups_done, 3u);
    CHECK_EQ(bs.backups_failed, 1u);
    CHECK(bs.failing);
    CHECK(bs.restored_at_open);
}
