/*
 * test_broker_window.c - the outbound QoS 1/2 window (issue 21): at the
 * default max_inflight a 5.0 client's Receive Maximum still caps it, the
 * payload in flight is bounded by max_queued_bytes whatever the count
 * allows (PUBACK, and for QoS 2 the PUBREC, give the bytes back), and the
 * packet ids handed out without a scan of the window are never ones still
 * in use (a full cycle of ids, restored ids).
 */
#include "broker/broker-t.h"
#include "broker/session.h"
#include "fake_client.h"
#include "test.h"

#include <string.h>

/* Subscriber s on "t" at qos, publisher p; s's SUBACK consumed. */
static void pair(fworld *w, fclient **s, fclient **p, uint8_t qos)
{
    *s = fw_connect_as(w, "s", true);
    *p = fw_connect_as(w, "p", true);
    fc_subscribe(w, *s, 1, "t", qos);
    fc_clear(*s);
}

/* PUBLISHes pending for c now; their ids in ids[] (up to n_ids). */
static int publishes(fclient *c, uint16_t *ids, int n_ids)
{
    mqtt_packet pk;
    int n = 0;
    while (fc_next(c, &pk))
        if (pk.type == MQTT_PUBLISH) {
            if (n < n_ids)
                ids[n] = pk.u.publish.packet_id;
            n++;
        }
    return n;
}

TEST(window_default_lets_many_qos1_messages_out_before_an_ack)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s, *p;
    pair(&w, &s, &p, 1);
    for (uint16_t i = 1; i <= 100; i++)
        fc_publish(&w, p, "t", "m", 1, false, i);
    uint16_t ids[100];
    CHECK_EQ(publishes(s, ids, 100), 100); /* 32 with the old default */
    fw_free(&w);
}

TEST(window_default_is_still_capped_by_a_v5_clients_receive_maximum)
{
    fworld w;
    fw_init(&w, NULL);
    fprops cp = {.len = 0};
    fp_u16(&cp, MQTT_PROP_RECEIVE_MAXIMUM, 10);
    fclient *s = fw_open(&w);
    fc_connect5(&w, s, "s", true, 0, &cp);
    fclient *p = fw_connect_as(&w, "p", true);
    fc_subscribe5(&w, s, 1, "t", 1, NULL);
    fc_clear(s);
    for (uint16_t i = 1; i <= 30; i++)
        fc_publish(&w, p, "t", "m", 1, false, i);
    uint16_t ids[30];
    CHECK_EQ(publishes(s, ids, 30), 10);
    fc_ack5(&w, s, MQTT_PUBACK, ids[0], 0, NULL);
    CHECK_EQ(publishes(s, ids, 30), 1); /* one slot freed, one more sent */
    fw_free(&w);
}

TEST(window_closes_when_the_payload_in_flight_reaches_max_queued_bytes)
{
    /* 400-byte messages and a 1000-byte bound: three fit (the third
     * crosses it), the count (100) is not what stops them. */
    broker_limits lim = {.max_inflight = 100, .max_queued = 100, .max_queued_bytes = 1000};
    fworld w;
    fw_init(&w, &lim);
    fclient *s, *p;
    pair(&w, &s, &p, 1);
    char big[401];
    memset(big, 'x', 400);
    big[400] = '\0';
    for (uint16_t i = 1; i <= 5; i++)
        fc_publish(&w, p, "t", big, 1, false, i);
    uint16_t ids[5];
    CHECK_EQ(publishes(s, ids, 5), 3);
    fc_ack(&w, s, MQTT_PUBACK, ids[0]);
    uint16_t more[5];
    CHECK_EQ(publishes(s, more, 5), 1); /* 800 in flight: one more, then 1200 */
    fc_ack(&w, s, MQTT_PUBACK, ids[1]);
    CHECK_EQ(publishes(s, more, 5), 1);
    fw_free(&w);
}

TEST(window_byte_bound_counts_a_qos2_message_only_until_its_pubrec)
{
    broker_limits lim = {.max_inflight = 100, .max_queued = 100, .max_queued_bytes = 1000};
    fworld w;
    fw_init(&w, &lim);
    fclient *s, *p;
    pair(&w, &s, &p, 2);
    char big[401];
    memset(big, 'x', 400);
    big[400] = '\0';
    for (uint16_t i = 1; i <= 4; i++) {
        fc_publish(&w, p, "t", big, 2, false, i);
        fc_ack(&w, p, MQTT_PUBREL, i);
    }
    uint16_t ids[4];
    CHECK_EQ(publishes(s, ids, 4), 3);
    /* The receiver owns the first now: its bytes leave the bound, its
     * packet id still holds a slot until PUBCOMP. */
    fc_ack(&w, s, MQTT_PUBREC, ids[0]);
    mqtt_packet pk;
    int pubrel = 0, pub = 0;
    while (fc_next(s, &pk)) {
        pubrel += pk.type == MQTT_PUBREL;
        pub += pk.type == MQTT_PUBLISH;
    }
    CHECK_EQ(pubrel, 1);
    CHECK_EQ(pub, 1);
    fw_free(&w);
}

/* A session with `n` sent entries holding packet ids first..first+n-1 in
 * queue order (restored, QoS 2 awaiting PUBCOMP, so without a message);
 * NULL when out of memory. */
static session *restored(fworld *w, uint16_t first, uint32_t n)
{
    session *s = bk_session_create(w->b, &w->b->sessions, (const uint8_t *)"r", 1, false);
    for (uint32_t i = 0; s && i < n; i++) {
        if (!bk_session_restore_entry(w->b, s, NULL, i + 1, 2, false, Q_WAIT_PUBCOMP,
                                      (uint16_t)(first + i)))
            return NULL;
        /* What restore.c sets after it: no Subscription Identifiers. */
        qentry *e = bk_session_entry(s, i);
        e->sub_id = 0;
        e->sub_ids_more = NULL;
    }
    return s;
}

TEST(packet_id_after_a_full_cycle_skips_the_one_still_unacknowledged)
{
    /* Ids 1..65535 went out in sequence and only id 1 is still
     * unacknowledged (the others are holes behind it): the sequence wraps
     * to 1, which is busy, so 2 is the next. Taken as "in sequence" (as
     * if sent on this run, not restored), this is exactly where the
     * shortcut must not be used. */
    fworld w;
    fw_init(&w, NULL);
    session *s = restored(&w, 1, UINT16_MAX);
    CHECK(s != NULL);
    for (uint32_t i = 1; i < UINT16_MAX; i++)
        bk_session_complete(w.b, s, bk_session_entry(s, i));
    CHECK_EQ(s->inflight, 1u);
    CHECK_EQ(s->q_sent, (uint32_t)UINT16_MAX);
    s->ids_scattered = false;
    s->next_packet_id = 1;
    CHECK_EQ(bk_session_next_packet_id(s), 2);
    fw_free(&w);
}

TEST(packet_id_never_repeats_one_held_by_a_restored_entry)
{
    fworld w;
    fw_init(&w, NULL);
    session *s = restored(&w, 5, 2); /* ids 5 and 6 busy */
    CHECK(s != NULL);
    s->next_packet_id = 5;
    CHECK_EQ(bk_session_next_packet_id(s), 7);
    CHECK_EQ(bk_session_next_packet_id(s), 8);
    fw_free(&w);
}
