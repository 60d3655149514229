/*
 * test_broker_backpressure.c - slow subscribers hold the publishers that
 * feed them (src/broker/flow.c, ADR-028): QoS 1 is not dropped at
 * max_queued while the subscriber keeps moving, and the hold is bounded.
 */
#include "fake_client.h"
#include "test.h"

#include <stdio.h>
#include <string.h>

static fclient *connected(fworld *w, const char *id, bool clean, uint16_t keepalive)
{
    fclient *c = fw_open(w);
    fc_connect(w, c, id, clean, keepalive);
    fc_clear(c);
    return c;
}

/* Publish QoS 1 messages "m<first>".."m<first+n-1>" with those packet ids. */
static void publish_n(fworld *w, fclient *p, const char *topic, int first, int n)
{
    for (int i = first; i < first + n; i++) {
        char payload[16];
        snprintf(payload, sizeof payload, "m%d", i);
        fc_publish(w, p, topic, payload, 1, false, (uint16_t)i);
    }
}

typedef struct tally {
    int publishes;   /* PUBLISH packets received */
    int pubacks;     /* PUBACK packets received */
    int next;        /* payload number expected next ("m<next>"), in order */
    bool in_order;
} tally;

/* Read everything c received; acknowledge its PUBLISHes when ack is set
 * (after reading, as a client does). */
static void take(fworld *w, fclient *c, tally *t, bool ack)
{
    uint16_t ids[256];
    int n = 0;
    mqtt_packet pk;
    while (fc_next(c, &pk)) {
        if (pk.type == MQTT_PUBACK) {
            t->pubacks++;
            continue;
        }
        if (pk.type != MQTT_PUBLISH)
            continue;
        char want[16];
        snprintf(want, sizeof want, "m%d", t->next);
        if (!fc_payload_is(&pk, want))
            t->in_order = false;
        t->next++;
        t->publishes++;
        if (n < 256)
            ids[n++] = pk.u.publish.packet_id;
    }
    for (int i = 0; ack && i < n; i++)
        fc_ack(w, c, MQTT_PUBACK, ids[i]);
}

static uint64_t stat_dropped(fworld *w)
{
    broker_stats st;
    broker_get_stats(w->b, &st);
    return st.publish_dropped;
}

static uint64_t stat_held(fworld *w)
{
    broker_stats st;
    broker_get_stats(w->b, &st);
    return st.publishers_held;
}

static uint64_t stat_timeouts(fworld *w)
{
    broker_stats st;
    broker_get_stats(w->b, &st);
    return st.hold_timeouts;
}

/* Queue bound 8, so the high watermark is 4 unsent; window 2. */
static const broker_limits small = {.max_queued = 8, .max_inflight = 2};

TEST(slow_subscriber_holds_its_publisher_instead_of_dropping_qos1)
{
    fworld w;
    fw_init(&w, &small);
    fclient *s = connected(&w, "s", true, 0), *p = connected(&w, "p", true, 0);
    fc_subscribe(&w, s, 1, "t", 1);
    fc_clear(s);
    publish_n(&w, p, "t", 1, 20);
    /* 2 in flight to s, 4 waiting: p is held after the 6th. */
    tally ts = {.next = 1, .in_order = true}, tp = {.next = 1, .in_order = true};
    take(&w, p, &tp, false);
    CHECK(p->conn && broker_input_paused(p->conn));
    CHECK_EQ(tp.pubacks, 6);
    CHECK_EQ(stat_held(&w), 1);
    /* The subscriber keeps acknowledging: everything arrives, in order. */
    for (int round = 0; round < 100 && ts.publishes < 20; round++) {
        take(&w, s, &ts, true);
        take(&w, p, &tp, false);
    }
    take(&w, p, &tp, false);
    CHECK_EQ(ts.publishes, 20);
    CHECK(ts.in_order);
    CHECK_EQ(tp.pubacks, 20);
    CHECK_EQ(stat_dropped(&w), 0);
    CHECK(stat_held(&w) > 1);
    CHECK(!broker_input_paused(p->conn));
    CHECK(!s->closed && !p->closed);
    fw_free(&w);
}

TEST(subscriber_that_stops_acknowledging_releases_its_publisher_after_the_hold_time)
{
    broker_limits lim = small;
    lim.publisher_hold_ms = 1000;
    fworld w;
    fw_init(&w, &lim);
    fclient *s = connected(&w, "s", true, 0), *p = connected(&w, "p", true, 0);
    fc_subscribe(&w, s, 1, "t", 1);
    fc_clear(s);
    publish_n(&w, p, "t", 1, 20);
    CHECK(broker_input_paused(p->conn));
    CHECK(broker_next_deadline(w.b) <= w.now + 1000);
    fw_advance(&w, 900);
    CHECK(broker_input_paused(p->conn));
    CHECK_EQ(stat_timeouts(&w), 0);
    fw_advance(&w, 200);
    /* Released: the rest is routed; beyond the queue bound (2 in flight +
     * 8 queued) it is dropped and counted, as without back-pressure. */
    CHECK_EQ(stat_timeouts(&w), 1);
    CHECK(!broker_input_paused(p->conn));
    tally ts = {.next = 1, .in_order = true}, tp = {.next = 1, .in_order = true};
    take(&w, p, &tp, false);
    CHECK_EQ(tp.pubacks, 20);
    CHECK_EQ(stat_dropped(&w), 10);
    /* The stalled subscriber holds no one until it has drained. */
    publish_n(&w, p, "t", 21, 2);
    CHECK(!broker_input_paused(p->conn));
    CHECK_EQ(stat_dropped(&w), 12);
    for (int round = 0; round < 20; round++)
        take(&w, s, &ts, true);
    CHECK_EQ(ts.publishes, 10);
    CHECK(ts.in_order);
    /* Drained: it holds its publishers again. */
    uint64_t held = stat_held(&w);
    publish_n(&w, p, "t", 11, 8);
    CHECK(broker_input_paused(p->conn));
    CHECK_EQ(stat_held(&w), held + 1);
    CHECK(!s->closed && !p->closed);
    fw_free(&w);
}

TEST(publisher_is_not_held_by_its_own_slow_session)
{
    fworld w;
    fw_init(&w, &small);
    fclient *p = connected(&w, "p", true, 0);
    fc_subscribe(&w, p, 1, "t", 1);
    fc_clear(p);
    publish_n(&w, p, "t", 1, 20);
    CHECK(!broker_input_paused(p->conn));
    CHECK_EQ(stat_held(&w), 0);
    tally tp = {.next = 1, .in_order = true};
    take(&w, p, &tp, false);
    CHECK_EQ(tp.pubacks, 20);
    CHECK_EQ(stat_dropped(&w), 10);
    fw_free(&w);
}

TEST(offline_session_does_not_hold_publishers)
{
    fworld w;
    fw_init(&w, &small);
    fclient *s = connected(&w, "s", false, 0), *p = connected(&w, "p", true, 0);
    fc_subscribe(&w, s, 1, "t", 1);
    fc_disconnect(&w, s);
    publish_n(&w, p, "t", 1, 20);
    CHECK(!broker_input_paused(p->conn));
    CHECK_EQ(stat_held(&w), 0);
    CHECK_EQ(stat_dropped(&w), 12); /* offline: max_queued (8) is the bound */
    fw_free(&w);
}

TEST(subscriber_leaving_releases_its_held_publisher)
{
    fworld w;
    fw_init(&w, &small);
    fclient *s = connected(&w, "s", true, 0), *p = connected(&w, "p", true, 0);
    fc_subscribe(&w, s, 1, "t", 1);
    publish_n(&w, p, "t", 1, 20);
    CHECK(broker_input_paused(p->conn));
    fc_disconnect(&w, s);
    CHECK(!broker_input_paused(p->conn));
    tally tp = {.next = 1, .in_order = true};
    take(&w, p, &tp, false);
    CHECK_EQ(tp.pubacks, 20);
    CHECK_EQ(stat_dropped(&w), 0);
    /* Abrupt loss too. */
    fclient *s2 = connected(&w, "s2", true, 0);
    fc_subscribe(&w, s2, 1, "t", 1);
    publish_n(&w, p, "t", 21, 20);
    CHECK(broker_input_paused(p->conn));
    fw_drop(&w, s2);
    CHECK(!broker_input_paused(p->conn));
    take(&w, p, &tp, false);
    CHECK_EQ(tp.pubacks, 40);
    fw_free(&w);
}

TEST(held_publisher_is_not_timed_out_for_keepalive)
{
    broker_limits lim = small;
    lim.publisher_hold_ms = 10000;
    fworld w;
    fw_init(&w, &lim);
    fclient *s = connected(&w, "s", true, 0), *p = connected(&w, "p", true, 2);
    fc_subscribe(&w, s, 1, "t", 1);
    fc_clear(s);
    publish_n(&w, p, "t", 1, 10);
    CHECK(broker_input_paused(p->conn));
    /* Keepalive 2 s: 3 s of silence would close it, but we are the ones
     * not reading. */
    fw_advance(&w, 6000);
    CHECK(!p->closed);
    CHECK(broker_input_paused(p->conn));
    tally ts = {.next = 1, .in_order = true};
    for (int round = 0; round < 20; round++)
        take(&w, s, &ts, true);
    CHECK_EQ(ts.publishes, 10);
    CHECK(!broker_input_paused(p->conn));
    /* Released: its keepalive counts from now. */
    fw_advance(&w, 2000);
    CHECK(!p->closed);
    fw_advance(&w, 2000);
    CHECK(p->closed);
    fw_free(&w);
}

TEST(two_clients_holding_each_other_are_released_after_the_hold_time)
{
    broker_limits lim = small;
    lim.publisher_hold_ms = 1000;
    fworld w;
    fw_init(&w, &lim);
    fclient *a = connected(&w, "a", true, 0), *b = connected(&w, "b", true, 0);
    fc_subscribe(&w, a, 1, "to/a", 1);
    fc_subscribe(&w, b, 1, "to/b", 1);
    fc_clear(a);
    fc_clear(b);
    publish_n(&w, a, "to/b", 1, 20);
    publish_n(&w, b, "to/a", 1, 20);
    CHECK(broker_input_paused(a->conn) && broker_input_paused(b->conn));
    /* Each acknowledges what it got, but its acknowledgements wait behind
     * its own held publishes: neither queue can drain. */
    tally ta = {.next = 1, .in_order = true}, tb = {.next = 1, .in_order = true};
    take(&w, a, &ta, true);
    take(&w, b, &tb, true);
    CHECK(broker_input_paused(a->conn) && broker_input_paused(b->conn));
    fw_advance(&w, 1100);
    CHECK_EQ(stat_timeouts(&w), 2);
    for (int round = 0; round < 40; round++) {
        take(&w, a, &ta, true);
        take(&w, b, &tb, true);
    }
    CHECK(!broker_input_paused(a->conn) && !broker_input_paused(b->conn));
    CHECK_EQ(ta.pubacks, 20);
    CHECK_EQ(tb.pubacks, 20);
    CHECK(ta.in_order && tb.in_order);
    CHECK_EQ((uint64_t)(ta.publishes + tb.publishes) + stat_dropped(&w), 40);
    fw_free(&w);
}

TEST(hold_ends_with_the_held_connection)
{
    fworld w;
    fw_init(&w, &small);
    fclient *s = connected(&w, "s", true, 0), *p = connected(&w, "p", true, 0);
    fc_subscribe(&w, s, 1, "t", 1);
    publish_n(&w, p, "t", 1, 20);
    CHECK(broker_input_paused(p->conn));
    CHECK(broker_next_deadline(w.b) != UINT64_MAX);
    fw_drop(&w, p);
    fw_advance(&w, 1100); /* the pooled output buffers are released too */
    /* Nothing left to time out; the subscriber drains normally. */
    CHECK_EQ(broker_next_deadline(w.b), UINT64_MAX);
    tally ts = {.next = 1, .in_order = true};
    for (int round = 0; round < 20; round++)
        take(&w, s, &ts, true);
    CHECK_EQ(ts.publishes, 6);
    fw_free(&w);
}
