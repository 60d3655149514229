/*
 * test_store_v5.c - the MQTT 5.0 state through the store (schema version
 * 2): message properties and expiry, session expiry interval and the time
 * an offline session expires, subscription options and identifiers, a
 * queue entry's identifiers, delayed wills. Records go through SQLite and
 * back into a core (whose fields are read directly: the 5.0 wire path is
 * tested elsewhere); recorded times are wall-clock times, so what expired
 * while the broker was down is dropped at restore and the rest keeps only
 * the time it had left.
 */
#include "fake_client.h"
#include "test.h"
#include "test_store_util.h"

#include "broker/broker-t.h"
#include "broker/msg.h"
#include "broker/persist.h"
#include "broker/session.h"
#include "broker/tree-t.h"
#include "broker/tree.h"

#include <stdlib.h>
#include <string.h>

/* The wall clock at restore: 2026-01-01T00:00:00Z. */
#define WALL UINT64_C(1767225600000)

/* Payload Format Indicator 1, Content Type "text", a User Property. */
static const uint8_t props[] = {0x01, 0x01, 0x03, 0x00, 0x04, 't', 'e', 'x', 't',
                                0x26, 0x00, 0x01, 'k', 0x00, 0x01, 'v'};

static session *find_session(broker *b, const char *id)
{
    return bk_session_find(&b->sessions, (const uint8_t *)id, strlen(id));
}

static bool props_are(const msg *m, const uint8_t *p, size_t n)
{
    return m->props_len == n && memcmp(bk_msg_props(m), p, n) == 0;
}

static void keep_retained(broker *b, void *ctx, msg *m)
{
    (void)b;
    *(msg **)ctx = m;
}

/* The one retained message of b, or NULL. */
static msg *the_retained(broker *b)
{
    msg *m = NULL;
    if (bk_tree_for_all_retained(b, &b->tree, keep_retained, &m) != 0)
        return NULL;
    return m;
}

/* Reopen the store and load it into a fresh durable world whose wall
 * clock reads wall now. */
static bool load_at(ts_env *e, fworld *w, uint64_t wall)
{
    char err[STORE_ERR_SIZE];

    fw_init_durable(w, NULL);
    broker_set_wall_clock(w->b, wall, w->now);
    if (store_load(e->s, w->b, err, sizeof err) != STORE_OK) {
        fprintf(stderr, "  store_load: %s\n", err);
        return false;
    }
    return true;
}

TEST(store_keeps_every_mqtt5_field_through_sqlite_and_restore)
{
    ts_env e;
    jb j;
    fworld w;
    const uint32_t more[] = {7, 9};
    const uint8_t opts = MQTT_SUBOPT_NO_LOCAL | MQTT_SUBOPT_RETAIN_AS_PUBLISHED |
                         2u << MQTT_SUBOPT_RETAIN_HANDLING_SHIFT;

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    jb_init(&j, 1);
    jb_session_put5(&j, "c5", "", 0, 3600, 0); /* online when recorded */
    jb_sub_put5(&j, "c5", "a/+", 1, opts, 42);
    jb_msg_put5(&j, 1, "a/b", "p", 1, 0, props, sizeof props, WALL + 60000);
    jb_queue_put5(&j, "c5", 1, 1, 1, 0, 42, more, 2);
    jb_will_put(&j, "c5", "will/c5", "bye", 1, 1, props, sizeof props, 0, WALL + 30000);
    jb_retain_set5(&j, "r/5", "rv", 1, props, sizeof props, WALL + 120000);
    broker_store_batch b = jb_batch(&j);
    CHECK_EQ(store_apply(e.s, &b, 1), STORE_OK);
    ts_close(&e);
    /* The columns hold them as recorded. */
    CHECK_EQ(ts_query(e.path, "SELECT expiry_interval FROM sessions"), 3600);
    CHECK_EQ(ts_query(e.path, "SELECT options FROM subs"), opts);
    CHECK_EQ(ts_query(e.path, "SELECT sub_id FROM subs"), 42);
    CHECK_EQ(ts_query(e.path, "SELECT expiry_at FROM messages"), (int64_t)(WALL + 60000));
    CHECK_EQ(ts_query(e.path, "SELECT length(props) FROM messages"), (int64_t)sizeof props);
    CHECK_EQ(ts_query(e.path, "SELECT sub_ids = x'0000000700000009' FROM queue"), 1);
    CHECK_EQ(ts_query(e.path, "SELECT fire_at FROM wills"), (int64_t)(WALL + 30000));
    CHECK_EQ(ts_query(e.path, "SELECT length(props) FROM retained"), (int64_t)sizeof props);

    CHECK(ts_open(&e, false));
    CHECK(load_at(&e, &w, WALL));
    broker *br = w.b;
    session *s = find_session(br, "c5");
    CHECK(s != NULL);
    CHECK_EQ(s->expiry_interval_s, 3600);
    CHECK_EQ(s->expires_at, w.now + 3600000u); /* the whole interval from now */
    CHECK(s->subs != NULL);
    CHECK_EQ(s->subs->options, opts);
    CHECK_EQ(s->subs->sub_id, 42);
    CHECK_EQ(s->q_count, 1);
    qentry *q = bk_session_entry(s, 0);
    CHECK_EQ(q->sub_id, 42);
    CHECK(q->sub_ids_more != NULL);
    CHECK_EQ(q->sub_ids_more[0], 2);
    CHECK_EQ(q->sub_ids_more[1], 7);
    CHECK_EQ(q->sub_ids_more[2], 9);
    CHECK(props_are(q->m, props, sizeof props));
    CHECK_EQ(q->m->expiry_ms, w.now + 60000u);
    CHECK(s->will != NULL);
    CHECK_EQ(s->will->topic_len, 7);
    CHECK(memcmp(bk_msg_topic(s->will), "will/c5", 7) == 0);
    CHECK(s->will->retain);
    CHECK(props_are(s->will, props, sizeof props));
    CHECK_EQ(s->will_at_ms, w.now + 30000u);
    msg *r = the_retained(br);
    CHECK(r != NULL);
    CHECK(props_are(r, props, sizeof props));
    CHECK_EQ(r->expiry_ms, w.now + 120000u);
    fw_free(&w);
    ts_cleanup(&e);
}

TEST(store_restore_drops_what_expired_while_the_broker_was_down)
{
    ts_env e;
    jb j;
    fworld w;

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    jb_init(&j, 1);
    /* "gone" went offline and expired a second before now; its will was
     * still delayed. "keep" expires in an hour and subscribes to wills. */
    jb_session_put5(&j, "gone", "", 0, 60, WALL - 1000);
    jb_will_put(&j, "gone", "will/gone", "bye", 1, 0, NULL, 0, 0, WALL + 10000);
    jb_session_put5(&j, "keep", "", 0, 7200, WALL + 3600000);
    jb_sub_put5(&j, "keep", "will/#", 1, 0, 0);
    jb_msg_put5(&j, 1, "t/1", "expired", 1, 0, NULL, 0, WALL - 1);
    jb_msg_put5(&j, 2, "t/2", "later", 1, 0, NULL, 0, WALL + 5000);
    jb_msg_put5(&j, 3, "t/3", "never", 1, 0, NULL, 0, 0);
    /* Sent entries first: seq 1 was sent before the crash (its delivery
     * began: kept), seq 2 was not (dropped). */
    jb_queue_put(&j, "keep", 1, 1, 1, 0);
    jb_queue_state(&j, "keep", 1, JOURNAL_Q_WAIT_PUBACK, 5);
    jb_queue_put(&j, "keep", 2, 1, 1, 0);
    jb_queue_put(&j, "keep", 3, 2, 1, 0);
    jb_queue_put(&j, "keep", 4, 3, 1, 0);
    jb_retain_set5(&j, "r/old", "x", 0, NULL, 0, WALL - 1);
    jb_retain_set5(&j, "r/new", "y", 0, NULL, 0, WALL + 1000);
    broker_store_batch b = jb_batch(&j);
    CHECK_EQ(store_apply(e.s, &b, 1), STORE_OK);
    ts_close(&e);

    CHECK(ts_open(&e, false));
    CHECK(load_at(&e, &w, WALL));
    broker *br = w.b;
    CHECK(find_session(br, "gone") == NULL);
    session *k = find_session(br, "keep");
    CHECK(k != NULL);
    CHECK_EQ(k->expires_at, w.now + 3600000u); /* only what it had left */
    /* seq 1 (sent), 3, 4, then gone's will, published when its session
     * ended [MQTT-3.1.3-9]. */
    CHECK_EQ(k->q_count, 4);
    CHECK_EQ(bk_session_entry(k, 0)->seq, 1);
    CHECK_EQ(bk_session_entry(k, 0)->state, Q_WAIT_PUBACK);
    CHECK_EQ(bk_session_entry(k, 1)->seq, 3);
    CHECK_EQ(bk_session_entry(k, 1)->m->expiry_ms, w.now + 5000u);
    CHECK_EQ(bk_session_entry(k, 2)->seq, 4);
    CHECK_EQ(bk_session_entry(k, 2)->m->expiry_ms, 0);
    CHECK(memcmp(bk_msg_topic(bk_session_entry(k, 3)->m), "will/gone", 9) == 0);
    msg *r = the_retained(br);
    CHECK(r != NULL);
    CHECK(memcmp(bk_msg_topic(r), "r/new", 5) == 0);
    /* The disk forgets them too: the removals were recorded. */
    CHECK_EQ(ts_commit_all(e.s, br), STORE_OK);
    fw_free(&w);
    ts_close(&e);
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM sessions"), 1);
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM wills"), 0);
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM queue WHERE client_id = CAST('keep' AS BLOB)"
                              " AND seq = 2"),
             0);
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM queue"), 4); /* 1, 3, 4 and the will */
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM retained"), 1);
    ts_cleanup(&e);
}

TEST(store_restore_publishes_a_will_whose_delay_passed_while_the_broker_was_down)
{
    ts_env e;
    jb j;
    fworld w;

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    jb_init(&j, 1);
    jb_session_put5(&j, "late", "", 0, 3600, WALL + 600000);
    jb_will_put(&j, "late", "will/late", "bye", 1, 0, NULL, 0, 0, WALL - 5000);
    jb_session_put5(&j, "early", "", 0, 3600, WALL + 600000);
    jb_will_put(&j, "early", "will/early", "bye", 1, 0, NULL, 0, 0, WALL + 5000);
    jb_session_put5(&j, "sub", "", 0, 3600, WALL + 600000);
    jb_sub_put5(&j, "sub", "will/#", 1, 0, 0);
    broker_store_batch b = jb_batch(&j);
    CHECK_EQ(store_apply(e.s, &b, 1), STORE_OK);
    ts_close(&e);

    CHECK(ts_open(&e, false));
    CHECK(load_at(&e, &w, WALL));
    session *late = find_session(w.b, "late"), *early = find_session(w.b, "early");
    CHECK(late != NULL && early != NULL);
    CHECK(late->will == NULL); /* published, session kept */
    CHECK(early->will != NULL);
    CHECK_EQ(early->will_at_ms, w.now + 5000u);
    session *subscriber = find_session(w.b, "sub");
    CHECK_EQ(subscriber->q_count, 1);
    CHECK(memcmp(bk_msg_topic(bk_session_entry(subscriber, 0)->m), "will/late", 9) == 0);
    CHECK_EQ(ts_commit_all(e.s, w.b), STORE_OK);
    fw_free(&w);
    ts_close(&e);
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM wills"), 1);
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM wills WHERE client_id = CAST('early' AS BLOB)"),
             1);
    ts_cleanup(&e);
}

TEST(store_times_recorded_without_a_wall_clock_count_from_the_restore)
{
    ts_env e;
    jb j;
    fworld w;

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    jb_init(&j, 1);
    jb_session_put5(&j, "c", "", 0, 3600, 0);
    jb_msg_put5(&j, 1, "t", "left", 1, 0, NULL, 0, JOURNAL_TIME_LEFT | 20000);
    jb_msg_put5(&j, 2, "t", "none-left", 1, 0, NULL, 0, JOURNAL_TIME_LEFT | 0);
    jb_queue_put(&j, "c", 1, 1, 1, 0);
    jb_queue_put(&j, "c", 2, 2, 1, 0);
    broker_store_batch b = jb_batch(&j);
    CHECK_EQ(store_apply(e.s, &b, 1), STORE_OK);
    ts_close(&e);
    CHECK(ts_open(&e, false));
    CHECK(load_at(&e, &w, 0)); /* no wall clock at restore either */
    session *s = find_session(w.b, "c");
    CHECK(s != NULL);
    CHECK_EQ(s->q_count, 1);
    CHECK_EQ(bk_session_entry(s, 0)->m->expiry_ms, w.now + 20000u);
    fw_free(&w);
    ts_cleanup(&e);
}

/* What the core records from its own state: a session that went offline
 * carries the wall-clock time it expires, a delayed will its firing time,
 * and a snapshot (after a failed batch) carries every 5.0 field; loaded
 * again later, everything comes back with the time that passed deducted. */
TEST(core_records_its_mqtt5_state_and_a_later_restore_deducts_the_time_down)
{
    ts_env e;
    fworld w;
    broker_store_batch b;
    journal_rec rec;
    size_t pos;

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    fw_init_durable(&w, NULL);
    broker_set_wall_clock(w.b, WALL, w.now);
    fclient *c = fw_connect_as(&w, "c5", false);
    fc_subscribe(&w, c, 1, "a/#", 1);
    CHECK_EQ(ts_commit_all(e.s, w.b), STORE_OK);
    session *s = find_session(w.b, "c5");
    CHECK(s != NULL && s->subs != NULL);
    /* What the 5.0 subscription path sets, and the connection's Session
     * Expiry Interval. */
    s->subs->options = MQTT_SUBOPT_NO_LOCAL;
    s->subs->sub_id = 5;
    bk_session_set_expiry(w.b, s, 600);
    CHECK_EQ(ts_commit_all(e.s, w.b), STORE_OK);
    /* Offline: the record says when it expires; a delayed will is kept. */
    fc_disconnect(&w, c);
    CHECK(s->conn == NULL);
    msg *will = bk_msg_new5(w.b, (const uint8_t *)"w/c5", 4, (const uint8_t *)"bye", 3, props,
                            sizeof props, 1, false, w.now + 900000u);
    CHECK(will != NULL);
    bk_session_keep_will(w.b, s, will, 30, w.now);
    CHECK(broker_store_take(w.b, &b));
    pos = 0;
    CHECK_EQ(journal_next(b.data, b.len, &pos, &rec), 1);
    CHECK_EQ(rec.type, J_SESSION_PUT);
    CHECK_EQ(rec.expiry_interval, 600);
    CHECK_EQ(rec.expiry_at, WALL + 600000u);
    CHECK_EQ(journal_next(b.data, b.len, &pos, &rec), 1);
    CHECK_EQ(rec.type, J_WILL_PUT);
    CHECK_EQ(rec.fire_at, WALL + 30000u);
    CHECK_EQ(rec.expiry_at, WALL + 900000u);
    CHECK_EQ(rec.props.len, sizeof props);
    /* That batch fails: the next one is the snapshot, with every field. */
    broker_store_done(w.b, b.seq, false);
    CHECK_EQ(ts_commit_all(e.s, w.b), STORE_OK);
    fw_free(&w);
    ts_close(&e);
    CHECK_EQ(ts_query(e.path, "SELECT sub_id FROM subs"), 5);
    CHECK_EQ(ts_query(e.path, "SELECT options FROM subs"), MQTT_SUBOPT_NO_LOCAL);
    CHECK_EQ(ts_query(e.path, "SELECT expiry_at FROM sessions"), (int64_t)(WALL + 600000u));
    CHECK_EQ(ts_query(e.path, "SELECT fire_at FROM wills"), (int64_t)(WALL + 30000u));

    /* Ten seconds later by the wall clock (the core's clock restarted). */
    CHECK(ts_open(&e, false));
    CHECK(load_at(&e, &w, WALL + 10000u));
    s = find_session(w.b, "c5");
    CHECK(s != NULL);
    CHECK_EQ(s->expiry_interval_s, 600);
    CHECK_EQ(s->expires_at, w.now + 590000u);
    CHECK_EQ(s->will_at_ms, w.now + 20000u);
    CHECK_EQ(s->will->expiry_ms, w.now + 890000u);
    CHECK_EQ(s->subs->sub_id, 5);
    CHECK_EQ(s->subs->options, MQTT_SUBOPT_NO_LOCAL);
    fw_free(&w);
    ts_cleanup(&e);
}

TEST(store_load_refuses_a_message_whose_stored_properties_are_malformed)
{
    ts_env e;
    jb j;
    fworld w;
    char err[STORE_ERR_SIZE];
    /* A Content Type whose length runs past the block, a Topic Alias
     * (never forwarded), and a Response Topic with a wildcard. */
    static const uint8_t truncated[] = {0x03, 0x00, 0x09, 'a'};
    static const uint8_t alias[] = {0x23, 0x00, 0x01};
    static const uint8_t wildcard[] = {0x08, 0x00, 0x03, 'a', '/', '#'};
    const struct {
        const uint8_t *p;
        size_t n;
    } bad[] = {{truncated, sizeof truncated}, {alias, sizeof alias}, {wildcard, sizeof wildcard}};

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(ts_init(&e));
        CHECK(ts_open(&e, false));
        jb_init(&j, 1);
        jb_session_put5(&j, "c", "", 0, 3600, 0);
        jb_msg_put5(&j, 1, "t", "p", 1, 0, bad[i].p, bad[i].n, 0);
        jb_queue_put(&j, "c", 1, 1, 1, 0);
        broker_store_batch b = jb_batch(&j);
        CHECK_EQ(store_apply(e.s, &b, 1), STORE_OK);
        fw_init_durable(&w, NULL);
        CHECK(store_load(e.s, w.b, err, sizeof err) != STORE_OK);
        CHECK(strstr(err, "message row 1") != NULL);
        fw_free(&w);
        ts_cleanup(&e);
    }
    /* The same message with well-formed properties loads. */
    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    jb_init(&j, 1);
    jb_session_put5(&j, "c", "", 0, 3600, 0);
    jb_msg_put5(&j, 1, "t", "p", 1, 0, props, sizeof props, 0);
    jb_queue_put(&j, "c", 1, 1, 1, 0);
    broker_store_batch ok = jb_batch(&j);
    CHECK_EQ(store_apply(e.s, &ok, 1), STORE_OK);
    fw_init_durable(&w, NULL);
    CHECK_EQ(store_load(e.s, w.b, err, sizeof err), STORE_OK);
    fw_free(&w);
    ts_cleanup(&e);
}
