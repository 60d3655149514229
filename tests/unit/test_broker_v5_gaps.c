/*
 * test_broker_v5_gaps.c - MQTT 5.0 cases the first round left open, each
 * checked on its own: the window a reconnecting client's smaller Receive
 * Maximum sets for the resend, expired retained messages leaving the tree
 * (counts and store), a QoS 2 PUBLISH given its packet id but never
 * written dropped when its message expires, and a second CONNECT with a
 * bad protocol level on a level-5 connection.
 */
#include "broker/broker-t.h"
#include "fake_client.h"
#include "test.h"

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
    if (w->durable)
        commit_all(w);
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
