/*
 * test_broker_durable.c - the core's persistence contract (journal.h):
 * acknowledgements wait for the commit of what they depend on, keep their
 * order, are withheld when a batch fails, and a restart restores sessions,
 * subscriptions, queued and inflight messages, QoS 2 state and retained
 * messages. The store is modelled in memory (model_store.c).
 */
#include "fake_client.h"
#include "model_store.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

TEST(puback_waits_for_commit_when_message_is_queued_for_an_offline_session)
{
    mstore *ms = calloc(1, sizeof *ms);
    fworld w;
    fw_init_model_store(&w, ms);
    fclient *s = fw_connect_as(&w, "sub", false);
    fc_subscribe(&w, s, 1, "t", 1);
    fc_disconnect(&w, s);
    ms_commit_all(ms, w.b);
    fclient *p = fw_connect_as(&w, "pub", true);
    fc_publish(&w, p, "t", "m", 1, false, 3);
    mqtt_packet pk;
    CHECK(!fc_next(p, &pk)); /* not yet durable */
    broker_store_batch batch;
    CHECK(broker_store_take(w.b, &batch));
    CHECK(ms_apply(ms, batch.data, batch.len));
    CHECK(!fc_next(p, &pk));
    broker_store_done(w.b, batch.seq, true);
    fw_drain(&w);
    CHECK(fc_next_is(p, MQTT_PUBACK, &pk));
    CHECK_EQ(pk.u.ack.packet_id, 3);
    CHECK_EQ(ms_count(ms, 'Q'), 1);
    CHECK_EQ(ms_count(ms, 'M'), 1);
    fw_free(&w);
    free(ms);
}

TEST(puback_is_immediate_when_nothing_durable_depends_on_it)
{
    fworld w;
    fw_init_durable(&w, NULL);
    fclient *s = fw_connect_as(&w, "sub", true);
    fc_subscribe(&w, s, 1, "t", 1);
    fclient *p = fw_connect_as(&w, "pub", true);
    fc_publish(&w, p, "t", "m", 1, false, 3);
    mqtt_packet pk;
    CHECK(fc_next_is(p, MQTT_PUBACK, &pk));
    fw_free(&w);
}

TEST(held_acknowledgement_keeps_later_ones_in_order)
{
    mstore *ms = calloc(1, sizeof *ms);
    fworld w;
    fw_init_model_store(&w, ms);
    fclient *p = fw_connect_as(&w, "pub", true);
    fc_publish(&w, p, "r", "retained", 1, true, 1); /* durable: held */
    fc_publish(&w, p, "x", "plain", 1, false, 2);   /* not durable, but after 1 */
    mqtt_packet pk;
    CHECK(!fc_next(p, &pk));
    ms_commit_all(ms, w.b);
    fw_drain(&w);
    CHECK(fc_next_is(p, MQTT_PUBACK, &pk));
    CHECK_EQ(pk.u.ack.packet_id, 1);
    CHECK(fc_next_is(p, MQTT_PUBACK, &pk));
    CHECK_EQ(pk.u.ack.packet_id, 2);
    CHECK_EQ(ms_count(ms, 'R'), 1);
    fw_free(&w);
    free(ms);
}

TEST(failed_batch_withholds_ack_closes_publisher_and_rewrites_the_store)
{
    mstore *ms = calloc(1, sizeof *ms);
    fworld w;
    fw_init_model_store(&w, ms);
    fclient *other = fw_connect_as(&w, "other", true);
    fclient *p = fw_connect_as(&w, "pub", true);
    fc_publish(&w, p, "r/1", "a", 1, true, 1);
    broker_store_batch batch;
    CHECK(broker_store_take(w.b, &batch));
    broker_store_done(w.b, batch.seq, false); /* disk full */
    fw_drain(&w);
    mqtt_packet pk;
    CHECK(!fc_next(p, &pk)); /* never acknowledged */
    CHECK(p->closed);
    CHECK(!other->closed);
    /* The next batch is a full snapshot: the retained message set in the
     * failed batch reaches the disk after all. */
    ms_commit_all(ms, w.b);
    CHECK_EQ(ms->resets, 1);
    CHECK_EQ(ms_count(ms, 'R'), 1);
    fw_free(&w);
    free(ms);
}

TEST(restart_restores_sessions_queues_retained_and_inbound_qos2_state)
{
    mstore *ms = calloc(1, sizeof *ms);
    fworld w;
    fw_init_model_store(&w, ms);
    fclient *s = fw_connect_as(&w, "sub", false);
    fc_subscribe(&w, s, 1, "q/1", 1);
    fc_subscribe(&w, s, 2, "q/2", 2);
    fc_disconnect(&w, s);
    fclient *p = fw_connect_as(&w, "pub", false);
    fc_publish(&w, p, "q/1", "one", 1, false, 1);
    fc_publish(&w, p, "q/2", "two", 2, false, 2);
    fc_publish(&w, p, "keep", "retained", 1, true, 3);
    ms_commit_all(ms, w.b);
    fw_drain(&w);
    mqtt_packet pk;
    CHECK(fc_next_is(p, MQTT_PUBACK, &pk));
    CHECK(fc_next_is(p, MQTT_PUBREC, &pk)); /* PUBREL not sent: id 2 stays pending */
    CHECK(fc_next_is(p, MQTT_PUBACK, &pk));

    fw_restart(&w);
    CHECK(ms_load(ms, w.b));

    fclient *s2 = fw_open(&w);
    fc_connect(&w, s2, "sub", false, 0);
    CHECK(fc_next_is(s2, MQTT_CONNACK, &pk));
    CHECK(pk.u.connack.session_present);
    CHECK(fc_next_is(s2, MQTT_PUBLISH, &pk));
    CHECK(fc_payload_is(&pk, "one"));
    /* The QoS 2 message gets its packet id now; it leaves once that id is
     * on disk. */
    CHECK(!fc_next(s2, &pk));
    ms_commit_all(ms, w.b);
    fw_drain(&w);
    CHECK(fc_next_is(s2, MQTT_PUBLISH, &pk));
    CHECK(fc_payload_is(&pk, "two"));
    CHECK_EQ(pk.u.publish.qos, 2);

    /* The publisher resends its unreleased QoS 2 message: acknowledged,
     * not routed again (exactly once across the restart). */
    fclient *p2 = fw_open(&w);
    fc_connect(&w, p2, "pub", false, 0);
    CHECK(fc_next_is(p2, MQTT_CONNACK, &pk));
    CHECK(pk.u.connack.session_present);
    fc_publish(&w, p2, "q/2", "two", 2, false, 2);
    ms_commit_all(ms, w.b);
    fw_drain(&w);
    CHECK(fc_next_is(p2, MQTT_PUBREC, &pk));
    CHECK(!fc_next(s2, &pk));

    fclient *n = fw_connect_as(&w, "new", true);
    fc_subscribe(&w, n, 1, "keep", 1);
    CHECK(fc_next_is(n, MQTT_SUBACK, &pk));
    CHECK(fc_next_is(n, MQTT_PUBLISH, &pk));
    CHECK(pk.u.publish.retain);
    CHECK(fc_payload_is(&pk, "retained"));
    fw_free(&w);
    free(ms);
}

TEST(outbound_qos2_after_pubrec_resumes_with_pubrel_after_restart)
{
    mstore *ms = calloc(1, sizeof *ms);
    fworld w;
    fw_init_model_store(&w, ms);
    fclient *s = fw_connect_as(&w, "sub", false);
    fc_subscribe(&w, s, 1, "t", 2);
    fc_clear(s);
    fclient *p = fw_connect_as(&w, "pub", true);
    fc_publish(&w, p, "t", "x", 2, false, 1);
    ms_commit_all(ms, w.b);
    fw_drain(&w);
    mqtt_packet pk;
    CHECK(fc_next_is(s, MQTT_SUBACK, &pk)); /* held for the subscription's commit */
    CHECK(fc_next_is(s, MQTT_PUBLISH, &pk));
    uint16_t id = pk.u.publish.packet_id;
    fc_ack(&w, s, MQTT_PUBREC, id);
    CHECK(!fc_next(s, &pk)); /* PUBREL waits for the state change's commit */
    ms_commit_all(ms, w.b);
    fw_drain(&w);
    CHECK(fc_next_is(s, MQTT_PUBREL, &pk));

    fw_restart(&w);
    CHECK(ms_load(ms, w.b));
    fclient *s2 = fw_open(&w);
    fc_connect(&w, s2, "sub", false, 0);
    CHECK(fc_next_is(s2, MQTT_CONNACK, &pk));
    CHECK(fc_next_is(s2, MQTT_PUBREL, &pk));
    CHECK_EQ(pk.u.ack.packet_id, id);
    CHECK(!fc_next(s2, &pk));
    fc_ack(&w, s2, MQTT_PUBCOMP, id);
    ms_commit_all(ms, w.b);
    CHECK_EQ(ms_count(ms, 'Q'), 0);
    CHECK_EQ(ms_count(ms, 'M'), 0);
    fw_free(&w);
    free(ms);
}

TEST(acknowledged_qos1_delivery_removes_queue_and_message_rows)
{
    mstore *ms = calloc(1, sizeof *ms);
    fworld w;
    fw_init_model_store(&w, ms);
    fclient *s = fw_connect_as(&w, "sub", false);
    fc_subscribe(&w, s, 1, "t", 1);
    fclient *s2 = fw_connect_as(&w, "sub2", false);
    fc_subscribe(&w, s2, 1, "t", 1);
    fc_clear(s);
    fc_clear(s2);
    fclient *p = fw_connect_as(&w, "pub", true);
    fc_publish(&w, p, "t", "m", 1, false, 1);
    ms_commit_all(ms, w.b);
    CHECK_EQ(ms_count(ms, 'M'), 1); /* one body shared by two queue rows */
    CHECK_EQ(ms_count(ms, 'Q'), 2);
    mqtt_packet pk;
    CHECK(fc_next_is(s, MQTT_PUBLISH, &pk));
    fc_ack(&w, s, MQTT_PUBACK, pk.u.publish.packet_id);
    ms_commit_all(ms, w.b);
    CHECK_EQ(ms_count(ms, 'M'), 1);
    CHECK_EQ(ms_count(ms, 'Q'), 1);
    CHECK(fc_next_is(s2, MQTT_PUBLISH, &pk));
    fc_ack(&w, s2, MQTT_PUBACK, pk.u.publish.packet_id);
    ms_commit_all(ms, w.b);
    CHECK_EQ(ms_count(ms, 'M'), 0);
    CHECK_EQ(ms_count(ms, 'Q'), 0);
    fw_free(&w);
    free(ms);
}

TEST(clean_session_connect_deletes_the_stored_session)
{
    mstore *ms = calloc(1, sizeof *ms);
    fworld w;
    fw_init_model_store(&w, ms);
    fclient *s = fw_connect_as(&w, "sub", false);
    fc_subscribe(&w, s, 1, "t", 1);
    fc_disconnect(&w, s);
    ms_commit_all(ms, w.b);
    CHECK_EQ(ms_count(ms, 'S'), 1);
    CHECK_EQ(ms_count(ms, 'B'), 1);
    fw_connect_as(&w, "sub", true);
    ms_commit_all(ms, w.b);
    CHECK_EQ(ms_count(ms, 'S'), 0);
    CHECK_EQ(ms_count(ms, 'B'), 0);
    fw_free(&w);
    free(ms);
}

TEST(store_failure_is_published_on_sys_at_once)
{
    fworld w;
    fw_init_durable(&w, NULL);
    fclient *op = fw_open_as(&w, "ops", true);
    fc_connect(&w, op, "op", true, 0);
    fc_subscribe(&w, op, 1, "$SYS/broker/store/state", 0);
    fc_clear(op);
    broker_store_status st = {.commits = 5, .failing = true};
    broker_set_store_status(w.b, &st);
    fw_drain(&w);
    mqtt_packet pk;
    CHECK(fc_next_is(op, MQTT_PUBLISH, &pk));
    CHECK(fc_payload_is(&pk, "failing"));
    st.failing = false;
    broker_set_store_status(w.b, &st);
    fw_drain(&w);
    CHECK(fc_next_is(op, MQTT_PUBLISH, &pk));
    CHECK(fc_payload_is(&pk, "ok"));
    st.commits = 6; /* counters alone wait for the next $SYS refresh */
    broker_set_store_status(w.b, &st);
    fw_drain(&w);
    CHECK(!fc_next(op, &pk));
    fw_free(&w);
}

TEST(store_full_is_published_on_sys_at_once_and_wins_over_failing)
{
    fworld w;
    fw_init_durable(&w, NULL);
    fclient *op = fw_open_as(&w, "ops", true);
    fc_connect(&w, op, "op", true, 0);
    fc_subscribe(&w, op, 1, "$SYS/broker/store/state", 0);
    fc_clear(op);
    broker_store_status st = {.commits = 5, .failing = true, .full = true};
    broker_set_store_status(w.b, &st);
    fw_drain(&w);
    mqtt_packet pk;
    CHECK(fc_next_is(op, MQTT_PUBLISH, &pk));
    CHECK(fc_payload_is(&pk, "full"));
    st.failing = false; /* commits go on, a checkpoint still finds no room */
    broker_set_store_status(w.b, &st);
    fw_drain(&w);
    CHECK(!fc_next(op, &pk));
    st.full = false;
    broker_set_store_status(w.b, &st);
    fw_drain(&w);
    CHECK(fc_next_is(op, MQTT_PUBLISH, &pk));
    CHECK(fc_payload_is(&pk, "ok"));
    fw_free(&w);
}

/* The bug the simulator found: a QoS 2 PUBLISH left before the record of
 * its packet id was committed; after a crash the restored session sent it
 * again under another id, and the receiver delivered it twice. */
TEST(outbound_qos2_publish_waits_for_its_packet_id_commit_and_keeps_it_after_crash)
{
    mstore *ms = calloc(1, sizeof *ms);
    fworld w;
    fw_init_model_store(&w, ms);
    fclient *s = fw_connect_as(&w, "sub", false);
    fc_subscribe(&w, s, 1, "t", 2);
    ms_commit_all(ms, w.b);
    fw_drain(&w);
    fc_clear(s);
    fclient *p = fw_connect_as(&w, "pub", true);
    fc_publish(&w, p, "t", "x", 2, false, 1);
    mqtt_packet pk;
    CHECK(!fc_next(s, &pk)); /* its packet id is not on disk yet */
    ms_commit_all(ms, w.b);
    fw_drain(&w);
    CHECK(fc_next_is(s, MQTT_PUBLISH, &pk));
    CHECK(!pk.u.publish.dup);
    uint16_t id = pk.u.publish.packet_id;

    /* Crash before the receiver's PUBREC: the restored session resends the
     * message under the same id, with DUP, so the receiver drops the copy. */
    fw_restart(&w);
    CHECK(ms_load(ms, w.b));
    fclient *s2 = fw_open(&w);
    fc_connect(&w, s2, "sub", false, 0);
    CHECK(fc_next_is(s2, MQTT_CONNACK, &pk));
    CHECK(fc_next_is(s2, MQTT_PUBLISH, &pk));
    CHECK_EQ(pk.u.publish.packet_id, id);
    CHECK(pk.u.publish.dup);
    CHECK(!fc_next(s2, &pk));
    fw_free(&w);
    free(ms);
}

TEST(qos1_behind_a_waiting_qos2_publish_keeps_delivery_order)
{
    mstore *ms = calloc(1, sizeof *ms);
    fworld w;
    fw_init_model_store(&w, ms);
    fclient *s = fw_connect_as(&w, "sub", false);
    fc_subscribe(&w, s, 1, "t", 2);
    ms_commit_all(ms, w.b);
    fw_drain(&w);
    fc_clear(s);
    fclient *p = fw_connect_as(&w, "pub", true);
    fc_publish(&w, p, "t", "two", 2, false, 1);
    fc_publish(&w, p, "t", "one", 1, false, 2);
    mqtt_packet pk;
    CHECK(!fc_next(s, &pk));
    ms_commit_all(ms, w.b);
    fw_drain(&w);
    CHECK(fc_next_is(s, MQTT_PUBLISH, &pk));
    CHECK(fc_payload_is(&pk, "two"));
    CHECK(fc_next_is(s, MQTT_PUBLISH, &pk));
    CHECK(fc_payload_is(&pk, "one"));
    fw_free(&w);
    free(ms);
}

/* A reconnect resends PUBREL only once the PUBREC that led to it is on
 * disk: released early, a crash would make the broker resend the PUBLISH
 * for an id the receiver had already forgotten (a second delivery). */
TEST(pubrel_resent_on_reconnect_waits_for_the_pubrec_commit)
{
    mstore *ms = calloc(1, sizeof *ms);
    fworld w;
    fw_init_model_store(&w, ms);
    fclient *s = fw_connect_as(&w, "sub", false);
    fc_subscribe(&w, s, 1, "t", 2);
    fclient *p = fw_connect_as(&w, "pub", true);
    fc_publish(&w, p, "t", "x", 2, false, 1);
    ms_commit_all(ms, w.b);
    fw_drain(&w);
    mqtt_packet pk;
    uint16_t id = 0;
    while (fc_next(s, &pk))
        if (pk.type == MQTT_PUBLISH)
            id = pk.u.publish.packet_id;
    CHECK(id != 0);
    fc_ack(&w, s, MQTT_PUBREC, id); /* WAIT_PUBCOMP recorded, not committed */
    CHECK(!fc_next(s, &pk));
    fw_drop(&w, s);
    fclient *s2 = fw_open(&w);
    fc_connect(&w, s2, "sub", false, 0);
    CHECK(fc_next_is(s2, MQTT_CONNACK, &pk));
    CHECK(!fc_next(s2, &pk)); /* nothing until the PUBREC's state commits */
    ms_commit_all(ms, w.b);
    fw_drain(&w);
    CHECK(fc_next_is(s2, MQTT_PUBREL, &pk));
    CHECK_EQ(pk.u.ack.packet_id, id);
    CHECK(!fc_next(s2, &pk));
    fw_free(&w);
    free(ms);
}

/* Found by the simulator: a clean CONNECT was answered before the deletion
 * of the old persistent session was on disk. After a crash the old session
 * came back, and its resent QoS 2 message reached a client that had
 * dropped its own half of the session: a second delivery. */
TEST(connack_of_a_clean_start_waits_until_the_old_session_is_deleted_on_disk)
{
    mstore *ms = calloc(1, sizeof *ms);
    fworld w;
    fw_init_model_store(&w, ms);
    fclient *s = fw_connect_as(&w, "sub", false);
    fc_subscribe(&w, s, 1, "t", 2);
    fc_disconnect(&w, s);
    ms_commit_all(ms, w.b);
    CHECK_EQ(ms_count(ms, 'S'), 1);

    fclient *c = fw_open(&w);
    fc_connect(&w, c, "sub", true, 0);
    static const uint8_t ping[] = {0xc0, 0x00};
    mqtt_packet pk;
    CHECK(!fc_next(c, &pk)); /* no CONNACK yet */
    /* A packet sent before the CONNACK arrives waits: its answer must not
     * overtake the CONNACK. */
    CHECK(broker_input_paused(c->conn));
    CHECK_EQ(broker_input(w.b, c->conn, ping, sizeof ping, w.now), 0);
    ms_commit_all(ms, w.b);
    fw_drain(&w);
    CHECK(!broker_input_paused(c->conn));
    CHECK(fc_next_is(c, MQTT_CONNACK, &pk));
    CHECK(!pk.u.connack.session_present);
    fw_send(&w, c, ping, sizeof ping);
    CHECK(fc_next_is(c, MQTT_PINGRESP, &pk));
    CHECK_EQ(ms_count(ms, 'B'), 0);
    fw_free(&w);
    free(ms);
}

TEST(clean_start_lost_in_a_crash_was_never_acknowledged)
{
    mstore *ms = calloc(1, sizeof *ms);
    fworld w;
    fw_init_model_store(&w, ms);
    fclient *s = fw_connect_as(&w, "sub", false);
    fc_subscribe(&w, s, 1, "t", 2);
    fc_disconnect(&w, s);
    ms_commit_all(ms, w.b);

    fclient *c = fw_open(&w);
    fc_connect(&w, c, "sub", true, 0);
    mqtt_packet pk;
    CHECK(!fc_next(c, &pk));
    fw_restart(&w); /* before the commit */
    CHECK(ms_load(ms, w.b));
    fclient *c2 = fw_open(&w);
    fc_connect(&w, c2, "sub", false, 0);
    CHECK(fc_next_is(c2, MQTT_CONNACK, &pk));
    CHECK(pk.u.connack.session_present); /* the client was never told otherwise */
    fw_free(&w);
    free(ms);
}

TEST(suback_and_unsuback_of_a_persistent_session_wait_for_their_commit)
{
    mstore *ms = calloc(1, sizeof *ms);
    fworld w;
    fw_init_model_store(&w, ms);
    fclient *s = fw_connect_as(&w, "sub", false);
    fc_subscribe(&w, s, 7, "t", 1);
    mqtt_packet pk;
    CHECK(!fc_next(s, &pk));
    ms_commit_all(ms, w.b);
    fw_drain(&w);
    CHECK(fc_next_is(s, MQTT_SUBACK, &pk));
    CHECK_EQ(pk.u.suback.packet_id, 7);
    CHECK_EQ(ms_count(ms, 'B'), 1);
    fc_unsubscribe(&w, s, 8, "t");
    CHECK(!fc_next(s, &pk));
    ms_commit_all(ms, w.b);
    fw_drain(&w);
    CHECK(fc_next_is(s, MQTT_UNSUBACK, &pk));
    CHECK_EQ(ms_count(ms, 'B'), 0);
    /* A clean session records nothing: its SUBACK is immediate. */
    fclient *c = fw_connect_as(&w, "clean", true);
    fc_subscribe(&w, c, 9, "t", 1);
    CHECK(fc_next_is(c, MQTT_SUBACK, &pk));
    fw_free(&w);
    free(ms);
}

/* ---- the gate only for what must reach the disk (issue 16 item 4) ----- */

/* Take every pending batch and report it failed (disk full). A failure
 * makes the next batch a snapshot: that one is left pending. */
static void fail_all(fworld *w)
{
    broker_store_batch batch;
    uint64_t seqs[8];
    int n = 0;
    while (n < 8 && broker_store_take(w->b, &batch))
        seqs[n++] = batch.seq;
    for (int i = 0; i < n; i++)
        broker_store_done(w->b, seqs[i], false);
    fw_drain(w);
}

/* A retained message whose batch fails: its publisher is closed and the
 * broker starts repairing the disk (the next batch is a snapshot). */
static void make_the_disk_fail(fworld *w)
{
    fclient *r = fw_connect_as(w, "retainer", true);
    fc_publish(w, r, "r/1", "kept", 1, true, 1);
    fail_all(w);
    CHECK(r->closed);
}

TEST(disk_failure_does_not_gate_a_clean_message_to_a_clean_subscriber)
{
    mstore *ms = calloc(1, sizeof *ms);
    fworld w;
    fw_init_model_store(&w, ms);
    fclient *s = fw_connect_as(&w, "sub", true);
    fc_subscribe(&w, s, 1, "t", 2);
    fclient *p = fw_connect_as(&w, "pub", true);
    fc_clear(s);
    make_the_disk_fail(&w);
    mqtt_packet pk;

    /* Straight after the failure (the journal is broken until the next
     * batch is taken), and while the repairing snapshot is being written. */
    fc_publish(&w, p, "t", "one", 1, false, 5);
    CHECK(fc_next_is(p, MQTT_PUBACK, &pk));
    CHECK_EQ(pk.u.ack.packet_id, 5);
    broker_store_batch repair;
    CHECK(broker_store_take(w.b, &repair));
    fc_publish(&w, p, "t", "two", 1, false, 6);
    CHECK(fc_next_is(p, MQTT_PUBACK, &pk));
    CHECK_EQ(pk.u.ack.packet_id, 6);
    fc_publish(&w, p, "t", "three", 2, false, 7);
    CHECK(fc_next_is(p, MQTT_PUBREC, &pk));
    fc_ack(&w, p, MQTT_PUBREL, 7);
    CHECK(fc_next_is(p, MQTT_PUBCOMP, &pk));
    CHECK_EQ(pk.u.ack.packet_id, 7);

    /* The subscriber got all three at once, and acknowledges them. */
    const char *want[] = {"one", "two", "three"};
    for (int i = 0; i < 3; i++) {
        CHECK(fc_next_is(s, MQTT_PUBLISH, &pk));
        CHECK(fc_payload_is(&pk, want[i]));
        uint16_t id = pk.u.publish.packet_id;
        if (pk.u.publish.qos == 1) {
            fc_ack(&w, s, MQTT_PUBACK, id);
        } else {
            fc_ack(&w, s, MQTT_PUBREC, id);
            CHECK(fc_next_is(s, MQTT_PUBREL, &pk));
            fc_ack(&w, s, MQTT_PUBCOMP, id);
        }
    }

    /* The repair fails too: neither client is closed for it. */
    broker_store_done(w.b, repair.seq, false);
    fail_all(&w);
    CHECK(!p->closed);
    CHECK(!s->closed);
    fc_publish(&w, p, "t", "four", 1, false, 8);
    CHECK(fc_next_is(p, MQTT_PUBACK, &pk));
    CHECK(fc_next_is(s, MQTT_PUBLISH, &pk));

    /* Once the disk works, the snapshot puts the retained message there. */
    ms_commit_all(ms, w.b);
    CHECK_EQ(ms_count(ms, 'R'), 1);
    fw_free(&w);
    free(ms);
}

TEST(disk_failure_does_not_gate_a_qos1_message_nobody_subscribes_to)
{
    mstore *ms = calloc(1, sizeof *ms);
    fworld w;
    fw_init_model_store(&w, ms);
    /* A persistent publisher: its own session does not make its QoS 1
     * messages durable, only where they go does. */
    fclient *p = fw_connect_as(&w, "pub", false);
    make_the_disk_fail(&w);
    mqtt_packet pk;
    fc_publish(&w, p, "nobody/listens", "x", 1, false, 3);
    CHECK(fc_next_is(p, MQTT_PUBACK, &pk));
    CHECK_EQ(pk.u.ack.packet_id, 3);
    fail_all(&w);
    fail_all(&w);
    CHECK(!p->closed);
    fw_free(&w);
    free(ms);
}

TEST(disk_failure_still_withholds_retained_and_persistent_session_messages)
{
    mstore *ms = calloc(1, sizeof *ms);
    fworld w;
    fw_init_model_store(&w, ms);
    fclient *keeper = fw_connect_as(&w, "keeper", false);
    fc_subscribe(&w, keeper, 1, "q", 1);
    ms_commit_all(ms, w.b);
    fw_drain(&w);
    fc_disconnect(&w, keeper);
    ms_commit_all(ms, w.b);
    fclient *p1 = fw_connect_as(&w, "p1", true);
    fclient *p2 = fw_connect_as(&w, "p2", true);
    fclient *p3 = fw_connect_as(&w, "p3", true);
    make_the_disk_fail(&w);
    mqtt_packet pk;
    fc_publish(&w, p1, "r/2", "retained", 1, true, 1); /* a retained value */
    fc_publish(&w, p2, "q", "queued", 1, false, 1);    /* a persistent session's queue */
    fc_publish(&w, p3, "q", "queued", 2, false, 1);    /* the same, QoS 2 */
    CHECK(!fc_next(p1, &pk));
    CHECK(!fc_next(p2, &pk));
    CHECK(!fc_next(p3, &pk));
    fail_all(&w);
    CHECK(p1->closed);
    CHECK(p2->closed);
    CHECK(p3->closed);
    fw_free(&w);
    free(ms);
}

/* A resent QoS 2 PUBLISH (its id already known) vouches for what the
 * first one recorded: its PUBREC waits for that, even though it records
 * nothing itself. */
TEST(pubrec_of_a_resent_qos2_publish_waits_for_the_first_ones_commit)
{
    mstore *ms = calloc(1, sizeof *ms);
    fworld w;
    fw_init_model_store(&w, ms);
    fclient *p = fw_connect_as(&w, "pub", false);
    fc_publish(&w, p, "t", "x", 2, false, 9);
    mqtt_packet pk;
    CHECK(!fc_next(p, &pk)); /* the inbound id is not on disk yet */
    fw_drop(&w, p);
    fclient *p2 = fw_open(&w);
    fc_connect(&w, p2, "pub", false, 0);
    CHECK(fc_next_is(p2, MQTT_CONNACK, &pk));
    CHECK(pk.u.connack.session_present);
    fc_publish(&w, p2, "t", "x", 2, false, 9); /* the resend, id still known */
    CHECK(!fc_next(p2, &pk));
    ms_commit_all(ms, w.b);
    fw_drain(&w);
    CHECK(fc_next_is(p2, MQTT_PUBREC, &pk));
    CHECK_EQ(pk.u.ack.packet_id, 9);
    CHECK_EQ(ms_count(ms, 'I'), 1);
    fw_free(&w);
    free(ms);
}
