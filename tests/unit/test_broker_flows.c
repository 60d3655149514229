/*
 * test_broker_flows.c - the broker core driven by in-memory clients: QoS
 * 0/1/2 in both directions, retained messages, wills, sessions, takeover,
 * timeouts, wildcards and the $ rule.
 */
#include "fake_client.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool bytes_eq(mqtt_bytes b, const char *s)
{
    return b.len == strlen(s) && memcmp(b.p, s, b.len) == 0;
}

/* Next packet must exist and be of this type. */
#define EXPECT_PACKET(c, pkt, t)                                                              \
    do {                                                                                      \
        CHECK(fc_next((c), &(pkt)));                                                          \
        CHECK_EQ((pkt).type, (t));                                                            \
    } while (0)

static fclient *connected(fworld *w, const char *id, bool clean)
{
    fclient *c = fw_open(w);
    fc_connect(w, c, id, clean, 0);
    fc_clear(c);
    return c;
}

TEST(connect_gets_connack_accepted)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *c = fw_open(&w);
    fc_connect(&w, c, "a", true, 30);
    mqtt_packet p;
    EXPECT_PACKET(c, p, MQTT_CONNACK);
    CHECK_EQ(p.u.connack.return_code, 0);
    CHECK(!p.u.connack.session_present);
    fw_free(&w);
}

TEST(qos0_publish_reaches_subscriber)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = connected(&w, "s", true), *p = connected(&w, "p", true);
    fc_subscribe(&w, s, 1, "a/b", 0);
    mqtt_packet pk;
    EXPECT_PACKET(s, pk, MQTT_SUBACK);
    fc_publish(&w, p, "a/b", "hello", 0, false, 0);
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK(bytes_eq(pk.u.publish.topic, "a/b"));
    CHECK(bytes_eq(pk.u.publish.payload, "hello"));
    CHECK_EQ(pk.u.publish.qos, 0);
    CHECK(!pk.u.publish.retain);
    fw_free(&w);
}

TEST(qos1_publish_is_acknowledged_and_delivered_at_granted_qos)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s1 = connected(&w, "s1", true), *s0 = connected(&w, "s0", true);
    fclient *p = connected(&w, "p", true);
    fc_subscribe(&w, s1, 1, "t", 1);
    fc_subscribe(&w, s0, 1, "t", 0);
    fc_clear(s1);
    fc_clear(s0);
    fc_publish(&w, p, "t", "x", 1, false, 7);
    mqtt_packet pk;
    EXPECT_PACKET(p, pk, MQTT_PUBACK);
    CHECK_EQ(pk.u.ack.packet_id, 7);
    EXPECT_PACKET(s1, pk, MQTT_PUBLISH);
    CHECK_EQ(pk.u.publish.qos, 1);
    CHECK(pk.u.publish.packet_id != 0);
    EXPECT_PACKET(s0, pk, MQTT_PUBLISH);
    CHECK_EQ(pk.u.publish.qos, 0);
    fw_free(&w);
}

TEST(qos2_inbound_routes_once_despite_resent_publish)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = connected(&w, "s", true), *p = connected(&w, "p", true);
    fc_subscribe(&w, s, 1, "t", 2);
    fc_clear(s);
    mqtt_packet pk;
    fc_publish(&w, p, "t", "once", 2, false, 9);
    EXPECT_PACKET(p, pk, MQTT_PUBREC);
    CHECK_EQ(pk.u.ack.packet_id, 9);
    /* The publisher did not see PUBREC and resends: acknowledged, not routed. */
    fc_publish(&w, p, "t", "once", 2, false, 9);
    EXPECT_PACKET(p, pk, MQTT_PUBREC);
    fc_ack(&w, p, MQTT_PUBREL, 9);
    EXPECT_PACKET(p, pk, MQTT_PUBCOMP);
    CHECK_EQ(pk.u.ack.packet_id, 9);
    CHECK_EQ(fc_count_publish(s), 1);
    /* After PUBREL the id is free again: a new message with it is routed. */
    fc_publish(&w, p, "t", "twice", 2, false, 9);
    CHECK_EQ(fc_count_publish(s), 1);
    fw_free(&w);
}

TEST(qos2_outbound_flow_completes_with_pubrel_pubcomp)
{
    broker_limits lim = {.max_inflight = 1};
    fworld w;
    fw_init(&w, &lim);
    fclient *s = connected(&w, "s", true), *p = connected(&w, "p", true);
    fc_subscribe(&w, s, 1, "t", 2);
    fc_clear(s);
    fc_publish(&w, p, "t", "m1", 2, false, 1);
    fc_publish(&w, p, "t", "m2", 2, false, 2);
    mqtt_packet pk;
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK(bytes_eq(pk.u.publish.payload, "m1"));
    uint16_t id = pk.u.publish.packet_id;
    CHECK(!fc_next(s, &pk)); /* window of one */
    fc_ack(&w, s, MQTT_PUBREC, id);
    EXPECT_PACKET(s, pk, MQTT_PUBREL);
    CHECK_EQ(pk.u.ack.packet_id, id);
    CHECK(!fc_next(s, &pk)); /* still in flight until PUBCOMP */
    fc_ack(&w, s, MQTT_PUBCOMP, id);
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK(bytes_eq(pk.u.publish.payload, "m2"));
    fw_free(&w);
}

TEST(qos1_inflight_window_holds_back_until_puback)
{
    broker_limits lim = {.max_inflight = 2};
    fworld w;
    fw_init(&w, &lim);
    fclient *s = connected(&w, "s", true), *p = connected(&w, "p", true);
    fc_subscribe(&w, s, 1, "t", 1);
    fc_clear(s);
    for (uint16_t i = 1; i <= 5; i++)
        fc_publish(&w, p, "t", "m", 1, false, i);
    mqtt_packet pk;
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    uint16_t first = pk.u.publish.packet_id;
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK(!fc_next(s, &pk));
    fc_ack(&w, s, MQTT_PUBACK, first);
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK(!fc_next(s, &pk));
    fw_free(&w);
}

TEST(persistent_session_queues_qos1_and_qos2_while_offline)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = connected(&w, "sub", false), *p = connected(&w, "p", true);
    fc_subscribe(&w, s, 1, "q/1", 1);
    fc_subscribe(&w, s, 2, "q/2", 2);
    fc_subscribe(&w, s, 3, "q/0", 0);
    fc_disconnect(&w, s);
    CHECK(s->closed);
    fc_publish(&w, p, "q/1", "one", 1, false, 1);
    fc_publish(&w, p, "q/2", "two", 2, false, 2);
    fc_publish(&w, p, "q/0", "zero", 0, false, 0);
    fc_publish(&w, p, "q/1", "three", 1, false, 3);
    fclient *s2 = fw_open(&w);
    fc_connect(&w, s2, "sub", false, 0);
    mqtt_packet pk;
    EXPECT_PACKET(s2, pk, MQTT_CONNACK);
    CHECK(pk.u.connack.session_present);
    const char *want[] = {"one", "two", "three"};
    const uint8_t qos[] = {1, 2, 1};
    for (int i = 0; i < 3; i++) {
        EXPECT_PACKET(s2, pk, MQTT_PUBLISH);
        CHECK(bytes_eq(pk.u.publish.payload, want[i]));
        CHECK_EQ(pk.u.publish.qos, qos[i]);
    }
    CHECK(!fc_next(s2, &pk)); /* QoS 0 is not queued for offline sessions */
    fw_free(&w);
}

TEST(unacknowledged_qos1_is_resent_with_dup_after_reconnect)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = connected(&w, "sub", false), *p = connected(&w, "p", true);
    fc_subscribe(&w, s, 1, "t", 1);
    fc_clear(s);
    fc_publish(&w, p, "t", "m", 1, false, 1);
    mqtt_packet pk;
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    uint16_t id = pk.u.publish.packet_id;
    CHECK(!pk.u.publish.dup);
    fw_drop(&w, s);
    fclient *s2 = fw_open(&w);
    fc_connect(&w, s2, "sub", false, 0);
    EXPECT_PACKET(s2, pk, MQTT_CONNACK);
    EXPECT_PACKET(s2, pk, MQTT_PUBLISH);
    CHECK(pk.u.publish.dup);
    CHECK_EQ(pk.u.publish.packet_id, id);
    fc_ack(&w, s2, MQTT_PUBACK, id);
    fw_drop(&w, s2);
    fclient *s3 = fw_open(&w);
    fc_connect(&w, s3, "sub", false, 0);
    EXPECT_PACKET(s3, pk, MQTT_CONNACK);
    CHECK(!fc_next(s3, &pk)); /* acknowledged: not sent again */
    fw_free(&w);
}

TEST(pending_pubrel_is_resent_after_reconnect)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = connected(&w, "sub", false), *p = connected(&w, "p", true);
    fc_subscribe(&w, s, 1, "t", 2);
    fc_clear(s);
    fc_publish(&w, p, "t", "m", 2, false, 1);
    mqtt_packet pk;
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    uint16_t id = pk.u.publish.packet_id;
    fc_ack(&w, s, MQTT_PUBREC, id);
    EXPECT_PACKET(s, pk, MQTT_PUBREL);
    fw_drop(&w, s);
    fclient *s2 = fw_open(&w);
    fc_connect(&w, s2, "sub", false, 0);
    EXPECT_PACKET(s2, pk, MQTT_CONNACK);
    EXPECT_PACKET(s2, pk, MQTT_PUBREL);
    CHECK_EQ(pk.u.ack.packet_id, id);
    CHECK(!fc_next(s2, &pk)); /* the PUBLISH itself is not sent again */
    fw_free(&w);
}

TEST(clean_session_discards_previous_session)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = connected(&w, "sub", false), *p = connected(&w, "p", true);
    fc_subscribe(&w, s, 1, "t", 1);
    fc_disconnect(&w, s);
    fc_publish(&w, p, "t", "m", 1, false, 1);
    fclient *s2 = fw_open(&w);
    fc_connect(&w, s2, "sub", true, 0);
    mqtt_packet pk;
    EXPECT_PACKET(s2, pk, MQTT_CONNACK);
    CHECK(!pk.u.connack.session_present);
    CHECK(!fc_next(s2, &pk));
    fc_publish(&w, p, "t", "m", 1, false, 2);
    CHECK(!fc_next(s2, &pk)); /* the subscription went with the session */
    fw_free(&w);
}

TEST(retained_message_is_set_delivered_on_subscribe_and_cleared)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *p = connected(&w, "p", true);
    fc_publish(&w, p, "r/a", "keep", 1, true, 1);
    fc_publish(&w, p, "r/b", "also", 0, true, 0);
    fclient *s = connected(&w, "s", true);
    fc_subscribe(&w, s, 1, "r/+", 1);
    mqtt_packet pk;
    EXPECT_PACKET(s, pk, MQTT_SUBACK);
    int seen = 0;
    while (fc_next(s, &pk)) {
        CHECK_EQ(pk.type, MQTT_PUBLISH);
        CHECK(pk.u.publish.retain);
        if (bytes_eq(pk.u.publish.topic, "r/a")) {
            CHECK_EQ(pk.u.publish.qos, 1);
            fc_ack(&w, s, MQTT_PUBACK, pk.u.publish.packet_id);
        } else {
            CHECK(bytes_eq(pk.u.publish.topic, "r/b"));
            CHECK_EQ(pk.u.publish.qos, 0);
        }
        seen++;
    }
    CHECK_EQ(seen, 2);
    /* Live delivery of a retained publish to an existing subscriber has
     * the retain flag clear [MQTT-3.3.1-9]. */
    fc_publish(&w, p, "r/a", "new", 0, true, 0);
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK(!pk.u.publish.retain);
    /* An empty retained payload clears the topic. */
    fc_publish(&w, p, "r/a", "", 0, true, 0);
    fc_clear(s);
    fclient *s2 = connected(&w, "s2", true);
    fc_subscribe(&w, s2, 1, "r/#", 0);
    EXPECT_PACKET(s2, pk, MQTT_SUBACK);
    EXPECT_PACKET(s2, pk, MQTT_PUBLISH);
    CHECK(bytes_eq(pk.u.publish.topic, "r/b"));
    CHECK(!fc_next(s2, &pk));
    broker_stats st;
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.retained_count, 1);
    fw_free(&w);
}

TEST(will_is_published_on_abnormal_close_only)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = connected(&w, "s", true);
    fc_subscribe(&w, s, 1, "will/#", 1);
    fc_clear(s);
    fclient *a = fw_open(&w);
    fc_connect_will(&w, a, "a", true, 0, "will/a", "gone", 1, false);
    fw_drop(&w, a);
    mqtt_packet pk;
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK(bytes_eq(pk.u.publish.topic, "will/a"));
    CHECK(bytes_eq(pk.u.publish.payload, "gone"));
    fc_ack(&w, s, MQTT_PUBACK, pk.u.publish.packet_id);
    fclient *b = fw_open(&w);
    fc_connect_will(&w, b, "b", true, 0, "will/b", "gone", 1, false);
    fc_disconnect(&w, b);
    CHECK(b->closed);
    CHECK(!fc_next(s, &pk));
    fw_free(&w);
}

TEST(protocol_error_closes_connection_and_fires_will)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = connected(&w, "s", true);
    fc_subscribe(&w, s, 1, "will", 0);
    fc_clear(s);
    fclient *a = fw_open(&w);
    fc_connect_will(&w, a, "a", true, 0, "will", "bad", 0, false);
    const uint8_t bad[] = {0x30, 0x03, 0x00, 0x01, '#'}; /* '#' in a topic name */
    fw_send(&w, a, bad, sizeof bad);
    CHECK(a->closed);
    mqtt_packet pk;
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK(bytes_eq(pk.u.publish.payload, "bad"));
    broker_stats st;
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.protocol_errors, 1);
    CHECK(!s->closed);
    fw_free(&w);
}

TEST(takeover_closes_old_connection_and_keeps_session)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *a = connected(&w, "same", false);
    fc_subscribe(&w, a, 1, "t", 1);
    fclient *b = fw_open(&w);
    fc_connect(&w, b, "same", false, 0);
    CHECK(a->closed);
    mqtt_packet pk;
    EXPECT_PACKET(b, pk, MQTT_CONNACK);
    CHECK(pk.u.connack.session_present);
    fclient *p = connected(&w, "p", true);
    fc_publish(&w, p, "t", "m", 1, false, 1);
    EXPECT_PACKET(b, pk, MQTT_PUBLISH);
    fw_free(&w);
}

TEST(keepalive_silence_closes_after_one_and_a_half_periods)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = connected(&w, "s", true);
    fc_subscribe(&w, s, 1, "w", 0);
    fclient *a = fw_open(&w);
    fc_connect_will(&w, a, "a", true, 2, "w", "timeout", 0, false);
    fw_advance(&w, 2900);
    CHECK(!a->closed);
    fw_advance(&w, 400); /* 3.3 s > 1.5 x 2 s, plus one wheel tick */
    CHECK(a->closed);
    fc_clear(s);
    fw_free(&w);
}

TEST(keepalive_activity_keeps_connection_open)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *a = fw_open(&w);
    fc_connect(&w, a, "a", true, 1);
    for (int i = 0; i < 10; i++) {
        fw_advance(&w, 1000);
        uint8_t ping[2];
        fw_send(&w, a, ping, mqtt_encode_empty(ping, sizeof ping, MQTT_PINGREQ));
    }
    CHECK(!a->closed);
    mqtt_packet pk;
    EXPECT_PACKET(a, pk, MQTT_CONNACK);
    EXPECT_PACKET(a, pk, MQTT_PINGRESP);
    fw_free(&w);
}

TEST(connection_without_connect_times_out)
{
    broker_limits lim = {.connect_timeout_ms = 1000};
    fworld w;
    fw_init(&w, &lim);
    fclient *a = fw_open(&w);
    fw_advance(&w, 1600);
    CHECK(a->closed);
    fw_free(&w);
}

TEST(overlapping_subscriptions_deliver_one_copy_at_highest_qos)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = connected(&w, "s", true), *p = connected(&w, "p", true);
    fc_subscribe(&w, s, 1, "a/+", 1);
    fc_subscribe(&w, s, 2, "a/#", 2);
    fc_subscribe(&w, s, 3, "a/b", 0);
    fc_clear(s);
    fc_publish(&w, p, "a/b", "m", 2, false, 1);
    mqtt_packet pk;
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK_EQ(pk.u.publish.qos, 2);
    CHECK(!fc_next(s, &pk));
    fw_free(&w);
}

TEST(wildcards_at_top_level_do_not_match_dollar_topics)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *all = connected(&w, "all", true), *plus = connected(&w, "plus", true);
    fclient *dollar = connected(&w, "d", true), *p = connected(&w, "p", true);
    fc_subscribe(&w, all, 1, "#", 0);
    fc_subscribe(&w, plus, 1, "+/x", 0);
    fc_subscribe(&w, dollar, 1, "$app/#", 0);
    fc_clear(all);
    fc_clear(plus);
    fc_clear(dollar);
    fc_publish(&w, p, "$app/x", "m", 0, false, 0);
    mqtt_packet pk;
    CHECK(!fc_next(all, &pk));
    CHECK(!fc_next(plus, &pk));
    EXPECT_PACKET(dollar, pk, MQTT_PUBLISH);
    fc_publish(&w, p, "app/x", "m", 0, false, 0);
    EXPECT_PACKET(all, pk, MQTT_PUBLISH);
    EXPECT_PACKET(plus, pk, MQTT_PUBLISH);
    fw_free(&w);
}

TEST(clients_cannot_publish_to_sys)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = connected(&w, "s", true), *p = connected(&w, "p", true);
    fc_subscribe(&w, s, 1, "$SYS/#", 0);
    fc_clear(s);
    fc_publish(&w, p, "$SYS/broker/version", "fake", 1, true, 1);
    mqtt_packet pk;
    EXPECT_PACKET(p, pk, MQTT_PUBACK); /* acknowledged, not delivered */
    CHECK(!fc_next(s, &pk));
    fw_free(&w);
}

TEST(sys_topics_are_published_retained_on_tick)
{
    broker_limits lim = {.sys_interval_s = 1};
    fworld w;
    fw_init(&w, &lim);
    fclient *s = fw_open_as(&w, "ops", true);
    fc_connect(&w, s, "s", true, 0);
    fc_clear(s);
    fw_advance(&w, 1100);
    fc_subscribe(&w, s, 1, "$SYS/broker/memory/used", 0);
    mqtt_packet pk;
    EXPECT_PACKET(s, pk, MQTT_SUBACK);
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK(pk.u.publish.retain);
    CHECK(pk.u.publish.payload.len > 0);
    fw_free(&w);
}

static uint64_t fake_heap(void *ctx)
{
    return *(const uint64_t *)ctx;
}

/* The payload of the retained $SYS message a subscription to topic brings. */
static bool sys_value(fworld *w, fclient *s, const char *topic, char *out, size_t cap)
{
    mqtt_packet pk;
    fc_clear(s);
    fc_subscribe(w, s, 1, topic, 0);
    if (!fc_next(s, &pk) || pk.type != MQTT_SUBACK || !fc_next(s, &pk) ||
        pk.type != MQTT_PUBLISH || pk.u.publish.payload.len >= cap)
        return false;
    memcpy(out, pk.u.publish.payload.p, pk.u.publish.payload.len);
    out[pk.u.publish.payload.len] = '\0';
    return true;
}

TEST(sys_memory_used_comes_from_the_platform_when_it_says)
{
    /* The unikernel reports its whole heap (core, TLS, buffers) as
     * memory/used; memory/core stays the core's own count. */
    uint64_t heap = 987654321;
    broker_limits lim = {.sys_interval_s = 1};
    fworld w;
    fw_init(&w, &lim);
    broker_destroy(w.b);
    broker_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.limits = lim;
    cfg.allow_anonymous = true;
    cfg.memory_used = fake_heap;
    cfg.memory_ctx = &heap;
    w.b = broker_create(&cfg, w.now);
    CHECK(w.b != NULL);
    fclient *s = fw_open_as(&w, "ops", true);
    fc_connect(&w, s, "s", true, 0);
    fw_advance(&w, 1100);
    char used[32], core[32];
    CHECK(sys_value(&w, s, "$SYS/broker/memory/used", used, sizeof used));
    CHECK(strcmp(used, "987654321") == 0);
    CHECK(sys_value(&w, s, "$SYS/broker/memory/core", core, sizeof core));
    CHECK(strtoull(core, NULL, 10) > 0 && strcmp(core, used) != 0);
    fw_free(&w);
}

TEST(first_packet_other_than_connect_closes)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *a = fw_open(&w);
    uint8_t ping[2];
    fw_send(&w, a, ping, mqtt_encode_empty(ping, sizeof ping, MQTT_PINGREQ));
    CHECK(a->closed);
    fw_free(&w);
}

TEST(second_connect_closes)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *a = connected(&w, "a", true);
    fc_connect(&w, a, "a", true, 0);
    CHECK(a->closed);
    fw_free(&w);
}

TEST(unsupported_protocol_level_gets_connack_1_then_close)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *a = fw_open(&w);
    /* CONNECT "MQTT" level 9 */
    const uint8_t c[] = {0x10, 0x0d, 0x00, 0x04, 'M', 'Q', 'T', 'T', 9, 0x02, 0x00, 0x3c,
                         0x00, 0x01, 'x'};
    fw_send(&w, a, c, sizeof c);
    mqtt_packet pk;
    EXPECT_PACKET(a, pk, MQTT_CONNACK);
    CHECK_EQ(pk.u.connack.return_code, 1);
    CHECK(a->closed);
    fw_free(&w);
}

TEST(empty_client_id_is_assigned_for_clean_and_rejected_for_persistent)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *a = fw_open(&w);
    fc_connect(&w, a, "", true, 0);
    mqtt_packet pk;
    EXPECT_PACKET(a, pk, MQTT_CONNACK);
    CHECK_EQ(pk.u.connack.return_code, 0);
    fclient *b = fw_open(&w);
    fc_connect(&w, b, "", false, 0);
    EXPECT_PACKET(b, pk, MQTT_CONNACK);
    CHECK_EQ(pk.u.connack.return_code, 2);
    CHECK(b->closed);
    fw_free(&w);
}

TEST(mqtt31_client_connects_and_receives)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = fw_open(&w);
    s->level = 3;
    fc_connect(&w, s, "old", true, 0);
    mqtt_packet pk;
    EXPECT_PACKET(s, pk, MQTT_CONNACK);
    CHECK_EQ(pk.u.connack.return_code, 0);
    fc_subscribe(&w, s, 1, "t", 1);
    EXPECT_PACKET(s, pk, MQTT_SUBACK);
    fclient *p = connected(&w, "p", true);
    fc_publish(&w, p, "t", "m", 1, false, 1);
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    fw_free(&w);
}

TEST(unsubscribe_stops_delivery)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = connected(&w, "s", true), *p = connected(&w, "p", true);
    fc_subscribe(&w, s, 1, "t/#", 0);
    fc_unsubscribe(&w, s, 2, "t/#");
    mqtt_packet pk;
    EXPECT_PACKET(s, pk, MQTT_SUBACK);
    EXPECT_PACKET(s, pk, MQTT_UNSUBACK);
    CHECK_EQ(pk.u.ack.packet_id, 2);
    fc_publish(&w, p, "t/x", "m", 0, false, 0);
    CHECK(!fc_next(s, &pk));
    fw_free(&w);
}

TEST(subscription_changes_apply_to_a_topic_just_routed)
{
    /* The core keeps the last topic's match result (tree.c); every change
     * of subscriptions must show in the next routing of that topic. */
    fworld w;
    fw_init(&w, NULL);
    fclient *a = connected(&w, "a", true), *b = connected(&w, "b", true);
    fclient *p = connected(&w, "p", true);
    fc_subscribe(&w, a, 1, "t/x", 0);
    fc_clear(a);
    fc_publish(&w, p, "t/x", "1", 0, false, 0);
    CHECK_EQ(fc_count_publish(a), 1);
    fc_subscribe(&w, b, 1, "t/+", 0); /* new subscriber */
    fc_clear(b);
    fc_publish(&w, p, "t/x", "2", 0, false, 0);
    CHECK_EQ(fc_count_publish(a), 1);
    CHECK_EQ(fc_count_publish(b), 1);
    fc_subscribe(&w, a, 2, "t/x", 1); /* QoS raised */
    fc_clear(a);
    fc_publish(&w, p, "t/x", "3", 1, false, 7);
    mqtt_packet pk;
    CHECK(fc_next(a, &pk));
    CHECK_EQ(pk.type, MQTT_PUBLISH);
    CHECK_EQ(pk.u.publish.qos, 1);
    fc_unsubscribe(&w, b, 3, "t/+"); /* subscriber gone */
    fc_clear(b);
    fc_publish(&w, p, "t/x", "4", 0, false, 0);
    CHECK_EQ(fc_count_publish(b), 0);
    fc_disconnect(&w, a); /* session gone */
    fc_publish(&w, p, "t/x", "5", 0, false, 0);
    fclient *a2 = connected(&w, "a", true);
    fc_subscribe(&w, a2, 1, "t/x", 0);
    fc_clear(a2);
    fc_publish(&w, p, "t/x", "6", 0, false, 0);
    CHECK(fc_next(a2, &pk));
    CHECK(fc_payload_is(&pk, "6"));
    fw_free(&w);
}

TEST(qos0_fanout_gives_every_subscriber_the_same_packet)
{
    /* bk_route_publish encodes a QoS 0 PUBLISH once and copies it to the
     * other subscribers: check the copies, with 3.1 and 3.1.1 clients, a
     * slow reader whose copy is dropped, and output already pending. */
    broker_limits lim = {.max_out_bytes = 1024};
    fworld w;
    fw_init(&w, &lim);
    fclient *subs[5];
    for (int i = 0; i < 5; i++) {
        subs[i] = fw_open(&w);
        subs[i]->level = i == 2 ? 3 : 4;
        char id[3] = {'s', (char)('0' + i), '\0'};
        fc_connect(&w, subs[i], id, true, 0);
        fc_subscribe(&w, subs[i], 1, i % 2 ? "f/+" : "f/x", 0);
        fc_clear(subs[i]);
    }
    fclient *p = connected(&w, "p", true);
    subs[3]->reading = false;
    char big[1100];
    memset(big, 'b', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    fc_publish(&w, p, "f/x", big, 0, false, 0); /* fills s3's buffer */
    for (int i = 0; i < 5; i++)
        if (i != 3)
            fc_clear(subs[i]);
    fc_publish(&w, p, "f/x", "same", 0, false, 0);
    for (int i = 0; i < 5; i++) {
        mqtt_packet pk;
        if (i == 3) {
            subs[3]->reading = true;
            fw_flush(&w, subs[3]);
            CHECK(fc_next(subs[3], &pk)); /* the big one only */
            CHECK_EQ(pk.u.publish.payload.len, sizeof big - 1);
            CHECK(!fc_next(subs[3], &pk));
            continue;
        }
        CHECK(fc_next(subs[i], &pk));
        CHECK_EQ(pk.type, MQTT_PUBLISH);
        CHECK(bytes_eq(pk.u.publish.topic, "f/x"));
        CHECK(fc_payload_is(&pk, "same"));
        CHECK_EQ(pk.u.publish.qos, 0);
        CHECK(!pk.u.publish.retain && !pk.u.publish.dup);
        CHECK(!fc_next(subs[i], &pk));
    }
    broker_stats st;
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.publish_dropped, 1);
    fw_free(&w);
}

/* s starts reading: over 50 flushes, count the PUBLISHes it gets by QoS
 * (only QoS 0 and 1 are expected), acknowledging each QoS 1. */
static void read_publishes(fworld *w, fclient *s, int *qos1, int *qos0)
{
    s->reading = true;
    for (int round = 0; round < 50; round++) {
        fw_flush(w, s);
        mqtt_packet pk;
        while (fc_next(s, &pk)) {
            CHECK_EQ(pk.type, MQTT_PUBLISH);
            if (pk.u.publish.qos == 1) {
                (*qos1)++;
                fc_ack(w, s, MQTT_PUBACK, pk.u.publish.packet_id);
            } else {
                (*qos0)++;
            }
        }
    }
}

TEST(slow_reader_loses_qos0_but_keeps_every_qos1)
{
    broker_limits lim = {.max_out_bytes = 1024, .max_queued = 100};
    fworld w;
    fw_init(&w, &lim);
    fclient *s = connected(&w, "s", true), *p = connected(&w, "p", true);
    fc_subscribe(&w, s, 1, "t", 1);
    fc_clear(s);
    s->reading = false;
    char payload[101];
    memset(payload, 'x', 100);
    payload[100] = '\0';
    for (int i = 0; i < 50; i++)
        fc_publish(&w, p, "t", payload, 0, false, 0);
    for (uint16_t i = 1; i <= 20; i++)
        fc_publish(&w, p, "t", "q1", 1, false, i);
    broker_stats st;
    broker_get_stats(w.b, &st);
    CHECK(st.publish_dropped > 0);
    uint64_t dropped = st.publish_dropped;
    int qos1 = 0, qos0 = 0;
    read_publishes(&w, s, &qos1, &qos0);
    CHECK_EQ(qos1, 20);
    CHECK(qos0 < 50);
    CHECK_EQ((uint64_t)qos0 + dropped, 50);
    CHECK(!s->closed);
    fw_free(&w);
}

TEST(input_pauses_while_output_is_backed_up)
{
    broker_limits lim = {.max_out_bytes = 1024};
    fworld w;
    fw_init(&w, &lim);
    fclient *a = connected(&w, "a", true);
    a->reading = false;
    uint8_t buf[4 * 2000];
    size_t n = 0;
    for (uint16_t i = 1; i <= 2000; i++) {
        mqtt_publish p = {.qos = 1, .packet_id = i, .topic = {(const uint8_t *)"t", 1}};
        n += mqtt_encode_publish(buf + n, sizeof buf - n, 4, &p);
    }
    size_t used = 0;
    while (used < n && !broker_input_paused(a->conn))
        used += broker_input(w.b, a->conn, buf + used, n - used, w.now);
    CHECK(used < n);
    CHECK(broker_input_paused(a->conn));
    CHECK_EQ(broker_input(w.b, a->conn, buf + used, n - used, w.now), 0);
    a->reading = true;
    fw_flush(&w, a);
    CHECK(!broker_input_paused(a->conn));
    fw_free(&w);
}

TEST(packet_split_into_single_bytes_is_reassembled)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = connected(&w, "s", true), *p = connected(&w, "p", true);
    fc_subscribe(&w, s, 1, "t", 0);
    fc_clear(s);
    uint8_t buf[300];
    char payload[200];
    memset(payload, 'z', sizeof payload);
    mqtt_publish pub = {.topic = {(const uint8_t *)"t", 1},
                        .payload = {(const uint8_t *)payload, sizeof payload}};
    size_t n = mqtt_encode_publish(buf, sizeof buf, 4, &pub);
    for (size_t i = 0; i < n; i++)
        fw_send(&w, p, buf + i, 1);
    mqtt_packet pk;
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK_EQ(pk.u.publish.payload.len, sizeof payload);
    fw_free(&w);
}

TEST(oversized_packet_closes_connection)
{
    broker_limits lim = {.max_packet_size = 64};
    fworld w;
    fw_init(&w, &lim);
    fclient *p = connected(&w, "p", true);
    char payload[100];
    memset(payload, 'z', sizeof payload - 1);
    payload[sizeof payload - 1] = '\0';
    fc_publish(&w, p, "t", payload, 0, false, 0);
    CHECK(p->closed);
    fw_free(&w);
}

TEST(max_connections_refuses_extra_connection)
{
    broker_limits lim = {.max_connections = 2};
    fworld w;
    fw_init(&w, &lim);
    fclient *a = fw_open(&w), *b = fw_open(&w), *c = fw_open(&w);
    CHECK(a->conn && b->conn);
    CHECK(c->conn == NULL);
    fw_free(&w);
}

TEST(memory_returns_to_baseline_after_clients_leave)
{
    fworld w;
    fw_init(&w, NULL);
    broker_stats st;
    /* Warm up the matcher's reusable scratch space first. */
    fclient *warm = connected(&w, "warm", true);
    fc_subscribe(&w, warm, 1, "x/+", 0);
    fc_publish(&w, warm, "x/y", "m", 0, false, 0);
    fc_disconnect(&w, warm);
    broker_get_stats(w.b, &st);
    uint64_t base = st.memory_used;
    fclient *s = connected(&w, "s", true), *p = connected(&w, "p", true);
    fc_subscribe(&w, s, 1, "a/+/c", 2);
    fc_subscribe(&w, s, 2, "a/#", 1);
    for (uint16_t i = 1; i < 50; i++)
        fc_publish(&w, p, "a/b/c", "payload", 2, false, i);
    fw_drop(&w, s);
    fc_disconnect(&w, p);
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.memory_used, base);
    CHECK_EQ(st.subscriptions_count, 0);
    fw_free(&w);
}

TEST(retained_bytes_bound_refuses_new_retained_but_allows_smaller_replacement)
{
    broker_limits lim = {.max_retained_bytes = 40};
    fworld w;
    fw_init(&w, &lim);
    fclient *p = connected(&w, "p", true);
    fc_publish(&w, p, "a", "0123456789012345678", 0, true, 0); /* 20 bytes */
    fc_publish(&w, p, "b", "0123456789012345678", 0, true, 0); /* 40 in all */
    fc_publish(&w, p, "c", "x", 0, true, 0);                   /* would be 42 */
    broker_stats st;
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.retained_count, 2);
    CHECK_EQ(st.retained_bytes, 40);
    CHECK_EQ(st.publish_dropped, 1);
    fc_publish(&w, p, "a", "short", 0, true, 0); /* replaces 20 with 6 */
    fc_publish(&w, p, "c", "x", 0, true, 0);     /* now fits: 26 + 2 */
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.retained_count, 3);
    CHECK_EQ(st.retained_bytes, 28);
    fc_publish(&w, p, "a", "", 0, true, 0); /* clearing gives the bytes back */
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.retained_bytes, 22);
    fw_free(&w);
}

/* Regression: at the count limit a replacement was checked by clearing the
 * old value first; a replacement then refused by the bytes bound lost the
 * old value (and, in durable mode, memory no longer matched the store). */
TEST(refused_retained_replacement_keeps_the_old_value)
{
    broker_limits lim = {.max_retained = 1, .max_retained_bytes = 30};
    fworld w;
    fw_init(&w, &lim);
    fclient *p = connected(&w, "p", true);
    fc_publish(&w, p, "a", "old", 0, true, 0);
    fc_publish(&w, p, "a", "0123456789012345678901234567890123", 0, true, 0);
    broker_stats st;
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.retained_count, 1);
    CHECK_EQ(st.publish_dropped, 1);
    fclient *s = connected(&w, "s", true);
    fc_subscribe(&w, s, 1, "a", 0);
    mqtt_packet pk;
    CHECK(fc_next(s, &pk));
    CHECK_EQ(pk.type, MQTT_SUBACK);
    CHECK(fc_next(s, &pk));
    CHECK(bytes_eq(pk.u.publish.payload, "old"));
    fw_free(&w);
}

/* broker_set_qos0_out_max: the platform's bound in time on QoS 0 (the
 * connection layer's src/conn/drain.c) drops QoS 0 beyond it as beyond
 * max_out_bytes; QoS 1 is untouched; 0 gives max_out_bytes back. */
TEST(qos0_bound_of_the_platform_drops_qos0_earlier_and_keeps_qos1)
{
    broker_limits lim = {.max_out_bytes = 64 * 1024, .max_queued = 100};
    fworld w;
    fw_init(&w, &lim);
    fclient *s = connected(&w, "s", true), *p = connected(&w, "p", true);
    fc_subscribe(&w, s, 1, "t", 1);
    fc_clear(s);
    s->reading = false;
    char payload[101];
    memset(payload, 'x', 100);
    payload[100] = '\0';
    /* Without the bound 50 x ~110 bytes fit in 64 KiB: nothing dropped. */
    for (int i = 0; i < 50; i++)
        fc_publish(&w, p, "t", payload, 0, false, 0);
    broker_stats st;
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.publish_dropped, 0);
    /* Bounded below what is pending: every further QoS 0 is dropped. */
    broker_set_qos0_out_max(s->conn, 1024);
    for (int i = 0; i < 10; i++)
        fc_publish(&w, p, "t", payload, 0, false, 0);
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.publish_dropped, 10);
    for (uint16_t i = 1; i <= 5; i++)
        fc_publish(&w, p, "t", "q1", 1, false, i);
    /* The bound lifted: QoS 0 fits again under max_out_bytes. */
    broker_set_qos0_out_max(s->conn, 0);
    fc_publish(&w, p, "t", payload, 0, false, 0);
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.publish_dropped, 10);
    int qos1 = 0, qos0 = 0;
    read_publishes(&w, s, &qos1, &qos0);
    CHECK_EQ(qos1, 5);
    CHECK_EQ(qos0, 51);
    fw_free(&w);
}
