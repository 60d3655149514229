/*
 * test_broker_v5_gaps.c - MQTT 5.0 cases the first round left open, each
 * checked on its own: the window a reconnecting client's smaller Receive
 * Maximum sets for the resend, expired retained messages leaving the tree
 * (counts and store), a QoS 2 PUBLISH given its packet id but never
 * written dropped when its message expires, and a second CONNECT with a
 * bad protocol level on a level-5 connection.
 */
#include "broker/broker-t.h"
#include "broker/tree.h"
#include "fake_client.h"
#include "model_store.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPECT_PACKET(c, pkt, t)                                                              \
    do {                                                                                      \
        CHECK(fc_next((c), &(pkt)));                                                          \
        CHECK_EQ((pkt).type, (t));                                                            \
    } while (0)

/* Everything the broker asked the store to write is reported written. */
static void commit_all(fworld *w)
{
    broker_store_batch batch;
    while (broker_store_take(w->b, &batch))
        broker_store_done(w->b, batch.seq, true);
    fw_drain(w);
}

/* A level-5 client whose session outlives its connection, with this
 * Receive Maximum (0: none sent); its CONNACK checked and skipped. */
static fclient *conn5_rm(fworld *w, const char *id, uint16_t receive_max)
{
    fprops cp = {.len = 0};
    fp_u32(&cp, MQTT_PROP_SESSION_EXPIRY, 3600);
    if (receive_max)
        fp_u16(&cp, MQTT_PROP_RECEIVE_MAXIMUM, receive_max);
    fclient *c = fw_open(w);
    fc_connect5(w, c, id, false, 0, &cp);
    if (w->commit) {
        w->commit(w); /* the test's store */
        fw_drain(w);
    } else if (w->durable) {
        commit_all(w);
    }
    mqtt_packet p;
    if (!fc_next(c, &p) || p.type != MQTT_CONNACK || p.u.connack.return_code != 0)
        abort(); /* the test cannot go on */
    return c;
}

static broker_stats stats(const fworld *w)
{
    broker_stats s;
    broker_get_stats(w->b, &s);
    return s;
}

static bool payload_digit(const mqtt_packet *p, int i)
{
    char s[2] = {(char)('0' + i), 0};
    return fc_payload_is(p, s);
}

TEST(v5_resend_after_reconnect_keeps_within_the_new_smaller_receive_maximum)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = conn5_rm(&w, "s", 5);
    fc_subscribe5(&w, s, 1, "t", 1, NULL);
    fc_clear(s);
    fclient *p = conn5_rm(&w, "p", 0);
    for (int i = 0; i < 5; i++) {
        char pl[2] = {(char)('0' + i), 0};
        fc_publish5(&w, p, "t", pl, 1, false, (uint16_t)(i + 1), NULL);
    }
    CHECK_EQ(fc_count_publish(s), 5); /* all five unacknowledged */
    fw_drop(&w, s);
    fclient *s2 = conn5_rm(&w, "s", 2);
    mqtt_packet pk;
    uint16_t ids[5];
    /* [MQTT-3.3.4-9]: no more than the new Receive Maximum at once. */
    for (int i = 0; i < 2; i++) {
        EXPECT_PACKET(s2, pk, MQTT_PUBLISH);
        CHECK(pk.u.publish.dup);
        CHECK(payload_digit(&pk, i));
        ids[i] = pk.u.publish.packet_id;
    }
    CHECK(!fc_next(s2, &pk));
    /* The rest follow one per acknowledgement, in their order. */
    for (int i = 2; i < 5; i++) {
        fc_ack5(&w, s2, MQTT_PUBACK, ids[i - 2], 0, NULL);
        EXPECT_PACKET(s2, pk, MQTT_PUBLISH);
        CHECK(pk.u.publish.dup);
        CHECK(payload_digit(&pk, i));
        ids[i] = pk.u.publish.packet_id;
        CHECK(!fc_next(s2, &pk));
    }
    fc_ack5(&w, s2, MQTT_PUBACK, ids[3], 0, NULL);
    fc_ack5(&w, s2, MQTT_PUBACK, ids[4], 0, NULL);
    /* A new message now goes out at once. */
    fc_publish5(&w, p, "t", "n", 1, false, 9, NULL);
    EXPECT_PACKET(s2, pk, MQTT_PUBLISH);
    CHECK(!pk.u.publish.dup);
    CHECK(fc_payload_is(&pk, "n"));
    fw_free(&w);
}

TEST(v5_resend_window_counts_pubrels_awaiting_pubcomp)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = conn5_rm(&w, "s", 3);
    fc_subscribe5(&w, s, 1, "t", 2, NULL);
    fc_clear(s);
    fclient *p = conn5_rm(&w, "p", 0);
    for (int i = 0; i < 3; i++) {
        char pl[2] = {(char)('0' + i), 0};
        fc_publish5(&w, p, "t", pl, 2, false, (uint16_t)(i + 1), NULL);
        fc_ack5(&w, p, MQTT_PUBREL, (uint16_t)(i + 1), 0, NULL);
    }
    mqtt_packet pk;
    uint16_t first = 0;
    for (int i = 0; i < 3; i++) {
        EXPECT_PACKET(s, pk, MQTT_PUBLISH);
        if (i == 0)
            first = pk.u.publish.packet_id;
    }
    fc_ack5(&w, s, MQTT_PUBREC, first, 0, NULL);
    EXPECT_PACKET(s, pk, MQTT_PUBREL);
    fw_drop(&w, s);
    fclient *s2 = conn5_rm(&w, "s", 1);
    /* [MQTT-4.4.0-1] the PUBREL first; the message it completes still
     * holds the one slot until its PUBCOMP [MQTT-3.3.4-9]. */
    EXPECT_PACKET(s2, pk, MQTT_PUBREL);
    CHECK_EQ(pk.u.ack.packet_id, first);
    CHECK(!fc_next(s2, &pk));
    fc_ack5(&w, s2, MQTT_PUBCOMP, first, 0, NULL);
    EXPECT_PACKET(s2, pk, MQTT_PUBLISH);
    CHECK(payload_digit(&pk, 1));
    CHECK(!fc_next(s2, &pk));
    fw_free(&w);
}

TEST(v5_qos2_publish_given_an_id_but_not_yet_written_is_dropped_once_expired)
{
    fworld w;
    fw_init_durable(&w, NULL);
    fclient *s = conn5_rm(&w, "s", 0);
    fc_subscribe5(&w, s, 1, "t", 2, NULL);
    commit_all(&w);
    fc_clear(s);
    fclient *p = conn5_rm(&w, "p", 0);
    fprops pr = {.len = 0};
    fp_u32(&pr, MQTT_PROP_MESSAGE_EXPIRY, 1);
    fc_publish5(&w, p, "t", "old", 2, false, 1, &pr);
    fc_ack5(&w, p, MQTT_PUBREL, 1, 0, NULL);
    /* Its QoS 2 PUBLISH waits for its packet id to be on disk. */
    mqtt_packet pk;
    CHECK(!fc_next(s, &pk));
    fw_advance(&w, 1500);
    commit_all(&w);
    /* [MQTT-3.3.2-5]: expired before it went out: never sent. */
    CHECK(!fc_next(s, &pk));
    CHECK_EQ(stats(&w).msgs_expired, 1);
    /* Its window slot and its place in the queue are free again. */
    fc_publish5(&w, p, "t", "new", 2, false, 2, NULL);
    fc_ack5(&w, p, MQTT_PUBREL, 2, 0, NULL);
    commit_all(&w);
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK(fc_payload_is(&pk, "new"));
    CHECK(!pk.u.publish.dup);
    fw_free(&w);
}

TEST(v5_second_connect_with_a_bad_protocol_level_is_disconnect_0x82)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *c = conn5_rm(&w, "c", 0);
    /* CONNECT, protocol "MQTT" level 9, clean start, client id "c". */
    static const uint8_t bad[] = {0x10, 13,   0, 4, 'M', 'Q', 'T', 'T', 9,
                                  0x02, 0,    0, 0, 1,   'c'};
    fw_send(&w, c, bad, sizeof bad);
    mqtt_packet pk;
    /* [MQTT-3.1.0-2]: a second CONNECT is a Protocol Error; 0x84 belongs
     * to CONNACK alone. */
    EXPECT_PACKET(c, pk, MQTT_DISCONNECT);
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_PROTOCOL_ERROR);
    CHECK(c->closed);
    fw_free(&w);
}

/* ---- expired retained messages leave the tree -------------------------- */

static void retain5(fworld *w, fclient *p, const char *topic, const char *payload,
                    uint32_t expiry_s)
{
    fprops pr = {.len = 0};
    if (expiry_s)
        fp_u32(&pr, MQTT_PROP_MESSAGE_EXPIRY, expiry_s);
    fc_publish5(w, p, topic, payload, 0, true, 0, &pr);
}

/* The sweep's slices come a second apart from the first retained message
 * with an expiry; message expiries are whole seconds from their arrival.
 * One with a long expiry set now, and the test's messages published half
 * a second later, expire half a second before a slice: a window in which
 * only a subscribe can meet them. */
static void sweep_phase_then_half_a_second(fworld *w, fclient *p)
{
    retain5(w, p, "z", "phase", 3600);
    fw_advance(w, 500);
}

TEST(v5_expired_retained_message_met_by_a_subscribe_leaves_the_tree_counts_and_store)
{
    mstore *ms = calloc(1, sizeof *ms);
    fworld w;
    fw_init_model_store(&w, ms);
    fclient *p = conn5_rm(&w, "p", 0);
    sweep_phase_then_half_a_second(&w, p);
    retain5(&w, p, "r/a", "gone", 2);
    retain5(&w, p, "r/b", "kept", 0);
    retain5(&w, p, "x", "gone", 2);
    ms_commit_all(ms, w.b);
    CHECK_EQ(ms_count(ms, 'R'), 4);
    /* Past the expiry, before the sweep's next slice: still there, so
     * what follows is the subscribe's doing. */
    fw_advance(&w, 2100);
    CHECK_EQ(stats(&w).retained_count, 4);
    fclient *s = conn5_rm(&w, "s", 0);
    fc_subscribe5(&w, s, 1, "r/#", 1, NULL);
    ms_commit_all(ms, w.b);
    fw_drain(&w);
    /* A SUBACK held for its commit may follow the retained messages
     * (subscribe.c): the order is not what is checked here. */
    int subacks = 0, kept = 0, others = 0;
    mqtt_packet pk;
    while (fc_next(s, &pk)) {
        if (pk.type == MQTT_SUBACK)
            subacks++;
        else if (pk.type == MQTT_PUBLISH && fc_payload_is(&pk, "kept"))
            kept++;
        else
            others++;
    }
    CHECK_EQ(subacks, 1);
    CHECK_EQ(kept, 1);
    CHECK_EQ(others, 0);
    CHECK_EQ(stats(&w).retained_count, 3);
    fc_subscribe5(&w, s, 2, "x", 1, NULL); /* a filter with no wildcard */
    ms_commit_all(ms, w.b);
    fw_drain(&w);
    EXPECT_PACKET(s, pk, MQTT_SUBACK);
    CHECK(!fc_next(s, &pk));
    broker_stats st = stats(&w);
    CHECK_EQ(st.retained_count, 2);
    CHECK_EQ(st.retained_bytes, strlen("r/b") + strlen("kept") + strlen("z") + strlen("phase"));
    CHECK_EQ(st.msgs_expired, 2); /* the two copies not sent */
    ms_commit_all(ms, w.b);
    CHECK_EQ(ms_count(ms, 'R'), 2);
    fw_free(&w);
    free(ms);
}

TEST(v5_expired_retained_message_nobody_subscribes_to_is_swept_from_tree_and_store)
{
    mstore *ms = calloc(1, sizeof *ms);
    fworld w;
    fw_init_model_store(&w, ms);
    fclient *p = conn5_rm(&w, "p", 0);
    retain5(&w, p, "a/b/c", "gone", 1);
    retain5(&w, p, "a/k", "kept", 0);
    ms_commit_all(ms, w.b);
    size_t nodes = w.b->tree.node_count;
    fw_advance(&w, 2500);
    broker_stats st = stats(&w);
    CHECK_EQ(st.retained_count, 1);
    CHECK_EQ(st.retained_bytes, strlen("a/k") + strlen("kept"));
    CHECK_EQ(st.msgs_expired, 0); /* no copy was due to anyone */
    CHECK_EQ(w.b->tree.node_count, nodes - 2); /* "a/b" and "a/b/c" freed */
    ms_commit_all(ms, w.b);
    CHECK_EQ(ms_count(ms, 'R'), 1);
    /* Nothing left with an expiry: no more slices are asked for. */
    CHECK_EQ(bk_tree_sweep_deadline(&w.b->tree), UINT64_MAX);
    fw_free(&w);
    free(ms);
}

TEST(v5_node_a_subscribe_left_empty_is_freed_by_the_next_sweep)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *p = conn5_rm(&w, "p", 0);
    sweep_phase_then_half_a_second(&w, p);
    retain5(&w, p, "q/1", "gone", 2);
    size_t nodes = w.b->tree.node_count; /* "z", "q", "q/1" */
    fw_advance(&w, 2100);
    fclient *s = conn5_rm(&w, "s", 0);
    fc_subscribe5(&w, s, 1, "q/+", 1, NULL);
    CHECK_EQ(stats(&w).retained_count, 1);
    CHECK_EQ(w.b->tree.node_count, nodes); /* "q/1" is left empty */
    fw_advance(&w, 1000);
    /* "q" stays (its '+' is subscribed); "q/1" is freed. */
    CHECK_EQ(w.b->tree.node_count, nodes - 1);
    fw_free(&w);
}

TEST(v5_retained_sweep_removes_a_bounded_number_per_slice_and_all_in_the_end)
{
    enum { N = 3000 };
    fworld w;
    fw_init(&w, NULL);
    fclient *p = conn5_rm(&w, "p", 0);
    for (int i = 0; i < N; i++) {
        char topic[16];
        snprintf(topic, sizeof topic, "s/%d", i);
        retain5(&w, p, topic, "v", 1);
    }
    CHECK_EQ(stats(&w).retained_count, N);
    uint64_t prev = N;
    int slices = 0;
    for (int step = 0; step < 100 && prev > 0; step++) {
        fw_advance(&w, 100);
        uint64_t now = stats(&w).retained_count;
        CHECK(prev - now <= 1024); /* one slice per step at most */
        if (now != prev)
            slices++;
        prev = now;
    }
    CHECK_EQ(prev, 0);
    CHECK(slices >= 3);
    CHECK_EQ(w.b->tree.node_count, 0); /* the root alone (not counted) */
    fw_free(&w);
}

/* ---- one source for the Topic Alias Maximum ---------------------------- */

TEST(v5_connack_topic_alias_maximum_is_the_one_the_broker_accepts)
{
    broker_limits lim = {0};
    lim.max_topic_alias = 70000; /* beyond what the property can say */
    fworld w;
    fw_init(&w, &lim);
    fclient *c = fw_open(&w);
    fc_connect5(&w, c, "c", true, 0, NULL);
    mqtt_packet pk;
    EXPECT_PACKET(c, pk, MQTT_CONNACK);
    mqtt_prop pr;
    CHECK(fc_prop_find(fc_props_of(&pk), MQTT_PROP_TOPIC_ALIAS_MAXIMUM, 0, &pr));
    CHECK_EQ(pr.value, UINT16_MAX);
    /* The highest alias it announced is taken. */
    fprops a = {.len = 0};
    fp_u16(&a, MQTT_PROP_TOPIC_ALIAS, UINT16_MAX);
    fc_publish5(&w, c, "t", "x", 0, false, 0, &a);
    CHECK(!fc_next(c, &pk));
    CHECK(!c->closed);
    fw_free(&w);
}

TEST(v5_resend_within_a_smaller_receive_maximum_does_not_hold_back_a_pubrel)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = conn5_rm(&w, "s", 3);
    fc_subscribe5(&w, s, 1, "t", 2, NULL);
    fc_clear(s);
    fclient *p = conn5_rm(&w, "p", 0);
    fc_publish5(&w, p, "t", "0", 1, false, 1, NULL); /* QoS 1 copy */
    fc_publish5(&w, p, "t", "1", 2, false, 2, NULL); /* QoS 2 copy */
    fc_ack5(&w, p, MQTT_PUBREL, 2, 0, NULL);
    mqtt_packet pk;
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    uint16_t second = pk.u.publish.packet_id;
    fc_ack5(&w, s, MQTT_PUBREC, second, 0, NULL);
    EXPECT_PACKET(s, pk, MQTT_PUBREL);
    fw_drop(&w, s);
    fclient *s2 = conn5_rm(&w, "s", 1);
    /* The QoS 1 message fills the window of 1; the PUBREL still goes
     * [MQTT-3.3.4-10]. */
    EXPECT_PACKET(s2, pk, MQTT_PUBLISH);
    CHECK(payload_digit(&pk, 0));
    EXPECT_PACKET(s2, pk, MQTT_PUBREL);
    CHECK_EQ(pk.u.ack.packet_id, second);
    CHECK(!fc_next(s2, &pk));
    fw_free(&w);
}
