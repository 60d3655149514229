/*
 * test_store_load.c - round trips through SQLite and the real core: a
 * durable broker's batches are committed with store_apply(), the broker
 * "crashes" (fw_restart), the store is closed and reopened, store_load()
 * rebuilds the new broker, and clients find their sessions, queued and
 * inflight messages, QoS 2 state and retained messages.
 */
#include "fake_client.h"
#include "test.h"
#include "test_store_util.h"

#include <stdlib.h>

static void commit_to_sqlite(fworld *w)
{
    if (ts_commit_all(w->commit_ctx, w->b) != STORE_OK)
        abort();
}

/* Crash the broker, reopen the store and load it into the new broker. */
static bool restart(ts_env *e, fworld *w)
{
    char err[STORE_ERR_SIZE];

    fw_restart(w);
    ts_close(e);
    if (!ts_open(e, false))
        return false;
    w->commit_ctx = e->s;
    if (store_load(e->s, w->b, err, sizeof err) != STORE_OK) {
        fprintf(stderr, "  store_load: %s\n", err);
        return false;
    }
    return true;
}

TEST(store_roundtrip_restores_sessions_queues_retained_and_qos2_state)
{
    ts_env e;
    fworld w;
    mqtt_packet pk;
    fclient *s, *p, *s2, *p2, *n;

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    fw_init_durable(&w, NULL);
    w.commit = commit_to_sqlite;
    w.commit_ctx = e.s;
    s = fw_connect_as(&w, "sub", false);
    fc_subscribe(&w, s, 1, "q/1", 1);
    fc_subscribe(&w, s, 2, "q/2", 2);
    fc_disconnect(&w, s);
    p = fw_connect_as(&w, "pub", false);
    fc_publish(&w, p, "q/1", "one", 1, false, 1);
    fc_publish(&w, p, "q/2", "two", 2, false, 2);
    fc_publish(&w, p, "keep", "retained", 1, true, 3);
    CHECK(!fc_next(p, &pk)); /* nothing acknowledged before the commit */
    CHECK_EQ(ts_commit_all(e.s, w.b), STORE_OK);
    fw_drain(&w);
    CHECK(fc_next_is(p, MQTT_PUBACK, &pk));
    CHECK(fc_next_is(p, MQTT_PUBREC, &pk)); /* no PUBREL: id 2 stays pending */
    CHECK(fc_next_is(p, MQTT_PUBACK, &pk));

    CHECK(restart(&e, &w));
    s2 = fw_open(&w);
    fc_connect(&w, s2, "sub", false, 0);
    CHECK(fc_next_is(s2, MQTT_CONNACK, &pk));
    CHECK(pk.u.connack.session_present);
    CHECK(fc_next_is(s2, MQTT_PUBLISH, &pk));
    CHECK(fc_payload_is(&pk, "one"));
    CHECK(!fc_next(s2, &pk)); /* QoS 2: out once its packet id is on disk */
    CHECK_EQ(ts_commit_all(e.s, w.b), STORE_OK);
    fw_drain(&w);
    CHECK(fc_next_is(s2, MQTT_PUBLISH, &pk));
    CHECK(fc_payload_is(&pk, "two"));
    CHECK_EQ(pk.u.publish.qos, 2);

    /* The unreleased QoS 2 message, resent: acknowledged, not routed again. */
    p2 = fw_open(&w);
    fc_connect(&w, p2, "pub", false, 0);
    CHECK(fc_next_is(p2, MQTT_CONNACK, &pk));
    CHECK(pk.u.connack.session_present);
    fc_publish(&w, p2, "q/2", "two", 2, false, 2);
    CHECK_EQ(ts_commit_all(e.s, w.b), STORE_OK);
    fw_drain(&w);
    CHECK(fc_next_is(p2, MQTT_PUBREC, &pk));
    CHECK(!fc_next(s2, &pk));

    n = fw_connect_as(&w, "new", true);
    fc_subscribe(&w, n, 1, "keep", 1);
    CHECK(fc_next_is(n, MQTT_SUBACK, &pk));
    CHECK(fc_next_is(n, MQTT_PUBLISH, &pk));
    CHECK(pk.u.publish.retain);
    CHECK(fc_payload_is(&pk, "retained"));
    fw_free(&w);
    ts_cleanup(&e);
}

TEST(store_roundtrip_resumes_outbound_qos2_with_pubrel)
{
    ts_env e;
    fworld w;
    mqtt_packet pk;
    fclient *s, *p, *s2;
    uint16_t id;

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    fw_init_durable(&w, NULL);
    w.commit = commit_to_sqlite;
    w.commit_ctx = e.s;
    s = fw_connect_as(&w, "sub", false);
    fc_subscribe(&w, s, 1, "t", 2);
    fc_clear(s);
    p = fw_connect_as(&w, "pub", true);
    fc_publish(&w, p, "t", "x", 2, false, 1);
    CHECK_EQ(ts_commit_all(e.s, w.b), STORE_OK);
    fw_drain(&w);
    CHECK(fc_next_is(s, MQTT_SUBACK, &pk)); /* held for the subscription's commit */
    CHECK(fc_next_is(s, MQTT_PUBLISH, &pk));
    id = pk.u.publish.packet_id;
    fc_ack(&w, s, MQTT_PUBREC, id);
    CHECK_EQ(ts_commit_all(e.s, w.b), STORE_OK);
    fw_drain(&w);
    CHECK(fc_next_is(s, MQTT_PUBREL, &pk));

    CHECK(restart(&e, &w));
    s2 = fw_open(&w);
    fc_connect(&w, s2, "sub", false, 0);
    CHECK(fc_next_is(s2, MQTT_CONNACK, &pk));
    CHECK(fc_next_is(s2, MQTT_PUBREL, &pk));
    CHECK_EQ(pk.u.ack.packet_id, id);
    CHECK(!fc_next(s2, &pk));
    fc_ack(&w, s2, MQTT_PUBCOMP, id);
    CHECK_EQ(ts_commit_all(e.s, w.b), STORE_OK);
    fw_free(&w);
    ts_close(&e);
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM queue"), 0);
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM messages"), 0);
    ts_cleanup(&e);
}

TEST(store_failed_batch_then_reset_snapshot_brings_the_file_back_in_step)
{
    ts_env e;
    fworld w;
    mqtt_packet pk;
    fclient *p, *n;
    broker_store_batch b;

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    fw_init_durable(&w, NULL);
    w.commit = commit_to_sqlite;
    w.commit_ctx = e.s;
    p = fw_connect_as(&w, "pub", true);
    fc_publish(&w, p, "r/1", "a", 1, true, 1);
    CHECK(broker_store_take(w.b, &b));
    broker_store_done(w.b, b.seq, false); /* as if the disk had been full */
    fw_drain(&w);
    CHECK(p->closed);
    CHECK_EQ(ts_commit_all(e.s, w.b), STORE_OK); /* reset + snapshot */
    CHECK(restart(&e, &w));
    n = fw_connect_as(&w, "new", true);
    fc_subscribe(&w, n, 1, "r/#", 1);
    CHECK(fc_next_is(n, MQTT_SUBACK, &pk));
    CHECK(fc_next_is(n, MQTT_PUBLISH, &pk));
    CHECK(fc_payload_is(&pk, "a"));
    fw_free(&w);
    ts_cleanup(&e);
}

TEST(store_load_drops_messages_no_queue_row_references)
{
    ts_env e;
    fworld w;
    jb j;
    broker_store_batch b;
    char err[STORE_ERR_SIZE];

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    jb_init(&j, 1);
    jb_session_put(&j, "c", "", 0);
    jb_msg_put(&j, 1, "t", "kept", 1, 0);
    jb_msg_put(&j, 2, "t", "orphan", 1, 0);
    jb_queue_put(&j, "c", 1, 1, 1, 0);
    b = jb_batch(&j);
    CHECK_EQ(store_apply(e.s, &b, 1), STORE_OK);
    fw_init_durable(&w, NULL);
    w.commit = commit_to_sqlite;
    w.commit_ctx = e.s;
    CHECK_EQ(store_load(e.s, w.b, err, sizeof err), STORE_OK);
    fw_free(&w);
    ts_close(&e);
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM messages"), 1);
    CHECK_EQ(ts_query(e.path, "SELECT msg_id FROM messages"), 1);
    ts_cleanup(&e);
}

TEST(store_load_names_a_row_the_core_refuses)
{
    ts_env e;
    fworld w;
    jb j;
    broker_store_batch b;
    char err[STORE_ERR_SIZE];

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    jb_init(&j, 1);
    jb_msg_put(&j, 1, "t", "m", 1, 0);
    jb_queue_put(&j, "ghost", 1, 1, 1, 0); /* its session is missing */
    b = jb_batch(&j);
    CHECK_EQ(store_apply(e.s, &b, 1), STORE_OK);
    fw_init_durable(&w, NULL);
    w.commit = commit_to_sqlite;
    w.commit_ctx = e.s;
    CHECK(store_load(e.s, w.b, err, sizeof err) != STORE_OK);
    CHECK(strstr(err, "queue entry row 1") != NULL);
    fw_free(&w);
    ts_cleanup(&e);
}
