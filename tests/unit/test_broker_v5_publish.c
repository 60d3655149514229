/*
 * test_broker_v5_publish.c - the MQTT 5.0 publish path of the broker core,
 * driven by in-memory clients: properties carried to subscribers (and
 * dropped for 3.1.1 ones), message expiry, topic aliases both ways,
 * Receive Maximum both ways, the client's Maximum Packet Size, reason
 * codes in the acknowledgements, and mixed 3.1.1 / 5.0 exchanges.
 */
#include "broker/broker-t.h"
#include "fake_client.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPECT_PACKET(c, pkt, t)                                                              \
    do {                                                                                      \
        CHECK(fc_next((c), &(pkt)));                                                          \
        CHECK_EQ((pkt).type, (t));                                                            \
    } while (0)

/* A level-5 client connected with these CONNECT properties (NULL: none),
 * its CONNACK checked and skipped (what a resumed session resends is
 * left to read). */
static fclient *conn5(fworld *w, const char *id, bool clean, const fprops *props)
{
    fclient *c = fw_open(w);
    fc_connect5(w, c, id, clean, 0, props);
    mqtt_packet p;
    if (!fc_next(c, &p) || p.type != MQTT_CONNACK || p.u.connack.return_code != 0)
        abort(); /* the test cannot go on */
    return c;
}

static fclient *conn311(fworld *w, const char *id, bool clean)
{
    fclient *c = fw_open(w);
    fc_connect(w, c, id, clean, 0);
    fc_clear(c);
    return c;
}

/* A level-5 client whose session outlives its connection. */
static fclient *conn5_persistent(fworld *w, const char *id, bool clean)
{
    fprops cp = {.len = 0};
    fp_u32(&cp, MQTT_PROP_SESSION_EXPIRY, 3600);
    return conn5(w, id, clean, &cp);
}

static void sub5(fworld *w, fclient *c, const char *filter, uint8_t qos)
{
    fc_subscribe5(w, c, 1, filter, qos, NULL);
    fc_clear(c);
}

static bool has_prop(const mqtt_packet *p, uint8_t id)
{
    return (fc_props_of(p)->present & MQTT_PROP_BIT(id)) != 0;
}

static broker_stats stats(const fworld *w)
{
    broker_stats s;
    broker_get_stats(w->b, &s);
    return s;
}

TEST(v5_publish_properties_reach_a_v5_subscriber_unaltered_in_order)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = conn5(&w, "s", true, NULL), *p = conn5(&w, "p", true, NULL);
    sub5(&w, s, "req/#", 1);
    fprops pr = {.len = 0};
    fp_user(&pr, "k", "1");
    fp_u8(&pr, MQTT_PROP_PAYLOAD_FORMAT, 1);
    fp_str(&pr, MQTT_PROP_CONTENT_TYPE, "text/plain");
    fp_user(&pr, "k", "2");
    fp_str(&pr, MQTT_PROP_RESPONSE_TOPIC, "resp/x");
    fp_str(&pr, MQTT_PROP_CORRELATION_DATA, "c0rr");
    fp_user(&pr, "a", "3");
    fc_publish5(&w, p, "req/1", "hi", 1, false, 5, &pr);
    mqtt_packet pk;
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK(fc_payload_is(&pk, "hi"));
    const mqtt_props *got = fc_props_of(&pk);
    CHECK_EQ(got->payload_format, 1);
    CHECK(fc_bytes_is(got->content_type, "text/plain"));
    CHECK(fc_bytes_is(got->response_topic, "resp/x"));
    CHECK(fc_bytes_is(got->correlation_data, "c0rr"));
    /* [MQTT-3.3.2-17], [MQTT-3.3.2-18]: every user property, in order. */
    mqtt_prop u;
    CHECK(fc_prop_find(got, MQTT_PROP_USER_PROPERTY, 0, &u));
    CHECK(fc_bytes_is(u.data, "k") && fc_bytes_is(u.data2, "1"));
    CHECK(fc_prop_find(got, MQTT_PROP_USER_PROPERTY, 1, &u));
    CHECK(fc_bytes_is(u.data, "k") && fc_bytes_is(u.data2, "2"));
    CHECK(fc_prop_find(got, MQTT_PROP_USER_PROPERTY, 2, &u));
    CHECK(fc_bytes_is(u.data, "a") && fc_bytes_is(u.data2, "3"));
    CHECK(!fc_prop_find(got, MQTT_PROP_USER_PROPERTY, 3, &u));
    CHECK(!has_prop(&pk, MQTT_PROP_MESSAGE_EXPIRY));
    CHECK(!has_prop(&pk, MQTT_PROP_TOPIC_ALIAS));
    fw_free(&w);
}

TEST(v5_publish_to_a_311_subscriber_arrives_without_properties)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = conn311(&w, "s", true), *p = conn5(&w, "p", true, NULL);
    fc_subscribe(&w, s, 1, "t", 1);
    fc_clear(s);
    fprops pr = {.len = 0};
    fp_user(&pr, "k", "v");
    fp_u32(&pr, MQTT_PROP_MESSAGE_EXPIRY, 60);
    fp_str(&pr, MQTT_PROP_CONTENT_TYPE, "x");
    fc_publish5(&w, p, "t", "m", 1, false, 3, &pr);
    fc_publish5(&w, p, "t", "n", 0, false, 0, &pr);
    mqtt_packet pk;
    /* Decoded at level 4: a property block would make it malformed. */
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK(fc_payload_is(&pk, "m"));
    CHECK(fc_bytes_is(pk.u.publish.topic, "t"));
    CHECK_EQ(pk.u.publish.qos, 1);
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK(fc_payload_is(&pk, "n"));
    CHECK(!fc_next(s, &pk));
    fw_free(&w);
}

TEST(v311_publish_to_a_v5_subscriber_arrives_with_no_properties)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = conn5(&w, "s", true, NULL), *p = conn311(&w, "p", true);
    sub5(&w, s, "t", 1);
    fc_publish(&w, p, "t", "hello", 1, false, 9);
    mqtt_packet pk;
    EXPECT_PACKET(p, pk, MQTT_PUBACK);
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK(fc_payload_is(&pk, "hello"));
    CHECK_EQ(fc_props_of(&pk)->raw.len, 0);
    fw_free(&w);
}

TEST(v5_message_expiry_is_forwarded_as_the_interval_left)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = conn5_persistent(&w, "s", false);
    sub5(&w, s, "t", 1);
    fw_drop(&w, s);
    fclient *p = conn5(&w, "p", true, NULL);
    fprops pr = {.len = 0};
    fp_u32(&pr, MQTT_PROP_MESSAGE_EXPIRY, 10);
    fc_publish5(&w, p, "t", "x", 1, false, 1, &pr);
    fw_advance(&w, 3500);
    fclient *s2 = conn5_persistent(&w, "s", false);
    mqtt_packet pk;
    EXPECT_PACKET(s2, pk, MQTT_PUBLISH);
    /* [MQTT-3.3.2-6]: 10 s less the 3.5 s it waited, rounded up. */
    CHECK(has_prop(&pk, MQTT_PROP_MESSAGE_EXPIRY));
    CHECK_EQ(fc_props_of(&pk)->message_expiry, 7);
    fw_free(&w);
}

TEST(v5_expired_queued_message_is_never_sent_and_is_counted)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = conn5_persistent(&w, "s", false);
    sub5(&w, s, "t", 1);
    fw_drop(&w, s);
    fclient *p = conn5(&w, "p", true, NULL);
    fprops pr = {.len = 0};
    fp_u32(&pr, MQTT_PROP_MESSAGE_EXPIRY, 2);
    fc_publish5(&w, p, "t", "old", 1, false, 1, &pr);
    fc_publish5(&w, p, "t", "new", 1, false, 2, NULL);
    fw_advance(&w, 2500);
    fclient *s2 = conn5_persistent(&w, "s", false);
    mqtt_packet pk;
    /* [MQTT-3.3.2-5]: only the one without an expiry arrives. */
    EXPECT_PACKET(s2, pk, MQTT_PUBLISH);
    CHECK(fc_payload_is(&pk, "new"));
    CHECK(!fc_next(s2, &pk));
    CHECK_EQ(stats(&w).msgs_expired, 1);
    fw_free(&w);
}

TEST(v5_expired_retained_message_is_not_sent_on_subscribe)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *p = conn5(&w, "p", true, NULL);
    fprops pr = {.len = 0};
    /* The sweep of expired retained messages runs a slice a second from
     * the first one with an expiry: this one sets its phase, so "r/a"
     * expires half a second before a slice and the subscribe meets it. */
    fp_u32(&pr, MQTT_PROP_MESSAGE_EXPIRY, 3600);
    fc_publish5(&w, p, "z", "phase", 0, true, 0, &pr);
    fw_advance(&w, 500);
    pr.len = 0;
    fp_u32(&pr, MQTT_PROP_MESSAGE_EXPIRY, 1);
    fc_publish5(&w, p, "r/a", "gone", 0, true, 0, &pr);
    fc_publish5(&w, p, "r/b", "kept", 0, true, 0, NULL);
    fw_advance(&w, 1200);
    fclient *s = conn5(&w, "s", true, NULL);
    fc_subscribe5(&w, s, 1, "r/#", 1, NULL);
    mqtt_packet pk;
    EXPECT_PACKET(s, pk, MQTT_SUBACK);
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK(fc_payload_is(&pk, "kept"));
    CHECK(!fc_next(s, &pk));
    CHECK_EQ(stats(&w).msgs_expired, 1);
    fw_free(&w);
}

TEST(v5_retained_message_keeps_its_properties_and_expiry_left)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *p = conn5(&w, "p", true, NULL);
    fprops pr = {.len = 0};
    fp_u32(&pr, MQTT_PROP_MESSAGE_EXPIRY, 100);
    fp_user(&pr, "src", "p");
    fc_publish5(&w, p, "r", "v", 1, true, 1, &pr);
    fw_advance(&w, 40000);
    fclient *s = conn5(&w, "s", true, NULL);
    fc_subscribe5(&w, s, 1, "r", 1, NULL);
    mqtt_packet pk;
    EXPECT_PACKET(s, pk, MQTT_SUBACK);
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK(pk.u.publish.retain);
    CHECK_EQ(fc_props_of(&pk)->message_expiry, 60);
    mqtt_bytes v;
    CHECK(fc_user_prop(fc_props_of(&pk), "src", &v) && fc_bytes_is(v, "p"));
    fw_free(&w);
}

TEST(v5_inbound_topic_alias_is_set_by_a_topic_and_used_by_an_empty_one)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = conn311(&w, "s", true), *p = conn5(&w, "p", true, NULL);
    fc_subscribe(&w, s, 1, "long/topic/name", 0);
    fc_subscribe(&w, s, 2, "other", 0);
    fc_clear(s);
    fprops a1 = {.len = 0};
    fp_u16(&a1, MQTT_PROP_TOPIC_ALIAS, 1);
    fc_publish5(&w, p, "long/topic/name", "1", 0, false, 0, &a1);
    fc_publish5(&w, p, "", "2", 0, false, 0, &a1);
    /* A topic with a known alias replaces its mapping. */
    fc_publish5(&w, p, "other", "3", 0, false, 0, &a1);
    fc_publish5(&w, p, "", "4", 0, false, 0, &a1);
    const char *want[][2] = {{"long/topic/name", "1"}, {"long/topic/name", "2"},
                             {"other", "3"},           {"other", "4"}};
    for (int i = 0; i < 4; i++) {
        mqtt_packet pk;
        EXPECT_PACKET(s, pk, MQTT_PUBLISH);
        CHECK(fc_bytes_is(pk.u.publish.topic, want[i][0]));
        CHECK(fc_payload_is(&pk, want[i][1]));
    }
    CHECK(!p->closed);
    fw_free(&w);
}

TEST(v5_topic_alias_above_the_maximum_is_disconnect_0x94)
{
    broker_limits lim = {0};
    lim.max_topic_alias = 2;
    fworld w;
    fw_init(&w, &lim);
    fclient *p = conn5(&w, "p", true, NULL);
    fprops a = {.len = 0};
    fp_u16(&a, MQTT_PROP_TOPIC_ALIAS, 3);
    fc_publish5(&w, p, "t", "x", 0, false, 0, &a);
    mqtt_packet pk;
    EXPECT_PACKET(p, pk, MQTT_DISCONNECT);
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_TOPIC_ALIAS_INVALID);
    CHECK(p->closed);
    fw_free(&w);
}

TEST(v5_empty_topic_with_an_unset_alias_is_disconnect_protocol_error)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *p = conn5(&w, "p", true, NULL);
    fprops a = {.len = 0};
    fp_u16(&a, MQTT_PROP_TOPIC_ALIAS, 1);
    fc_publish5(&w, p, "", "x", 0, false, 0, &a);
    mqtt_packet pk;
    EXPECT_PACKET(p, pk, MQTT_DISCONNECT);
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_PROTOCOL_ERROR);
    CHECK(p->closed);
    fw_free(&w);
}

TEST(v5_topic_alias_does_not_survive_a_new_connection)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *p = conn5_persistent(&w, "p", false);
    fprops a = {.len = 0};
    fp_u16(&a, MQTT_PROP_TOPIC_ALIAS, 1);
    fc_publish5(&w, p, "t", "x", 0, false, 0, &a);
    CHECK(!p->closed);
    fw_drop(&w, p);
    /* [MQTT-3.3.2-7]: the session is resumed, its aliases are not. */
    fclient *p2 = conn5_persistent(&w, "p", false);
    fc_publish5(&w, p2, "", "y", 0, false, 0, &a);
    mqtt_packet pk;
    EXPECT_PACKET(p2, pk, MQTT_DISCONNECT);
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_PROTOCOL_ERROR);
    fw_free(&w);
}

TEST(v5_more_unacknowledged_qos2_publishes_than_receive_maximum_is_disconnect_0x93)
{
    broker_limits lim = {0};
    lim.receive_maximum = 2;
    fworld w;
    fw_init(&w, &lim);
    fclient *p = conn5(&w, "p", true, NULL);
    fc_publish5(&w, p, "t", "1", 2, false, 1, NULL);
    fc_publish5(&w, p, "t", "2", 2, false, 2, NULL);
    /* A PUBCOMP gives one back [MQTT-3.3.4-7]. */
    fc_ack5(&w, p, MQTT_PUBREL, 1, 0, NULL);
    fc_publish5(&w, p, "t", "3", 2, false, 3, NULL);
    CHECK(!p->closed);
    fc_publish5(&w, p, "t", "4", 2, false, 4, NULL);
    mqtt_packet pk;
    for (;;) {
        CHECK(fc_next(p, &pk));
        if (pk.type == MQTT_DISCONNECT)
            break;
        CHECK(pk.type == MQTT_PUBREC || pk.type == MQTT_PUBCOMP);
    }
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_RECEIVE_MAXIMUM_EXCEEDED);
    CHECK(p->closed);
    fw_free(&w);
}

TEST(v5_qos0_publishes_do_not_count_against_receive_maximum)
{
    broker_limits lim = {0};
    lim.receive_maximum = 1;
    fworld w;
    fw_init(&w, &lim);
    fclient *p = conn5(&w, "p", true, NULL);
    fc_publish5(&w, p, "t", "1", 2, false, 1, NULL);
    for (int i = 0; i < 5; i++)
        fc_publish5(&w, p, "t", "q0", 0, false, 0, NULL);
    /* A PUBREC with an error code also gives the slot back (4.9). */
    fprops bad = {.len = 0};
    fp_u8(&bad, MQTT_PROP_PAYLOAD_FORMAT, 1);
    fc_ack5(&w, p, MQTT_PUBREL, 1, 0, NULL);
    fc_publish5(&w, p, "t", "\xff", 2, false, 2, &bad);
    fc_publish5(&w, p, "t", "ok", 1, false, 3, NULL);
    CHECK(!p->closed);
    fw_free(&w);
}

TEST(v5_puback_says_no_matching_subscribers_or_success)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *p = conn5(&w, "p", true, NULL);
    fc_publish5(&w, p, "nobody", "x", 1, false, 1, NULL);
    mqtt_packet pk;
    EXPECT_PACKET(p, pk, MQTT_PUBACK);
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_NO_MATCHING_SUBSCRIBERS);
    fclient *s = conn5(&w, "s", true, NULL);
    sub5(&w, s, "somebody", 0);
    fc_publish5(&w, p, "somebody", "x", 1, false, 2, NULL);
    EXPECT_PACKET(p, pk, MQTT_PUBACK);
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_SUCCESS);
    /* QoS 2: 0x10 is a success, the flow goes on to PUBREL / PUBCOMP. */
    fc_publish5(&w, p, "nobody", "x", 2, false, 3, NULL);
    EXPECT_PACKET(p, pk, MQTT_PUBREC);
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_NO_MATCHING_SUBSCRIBERS);
    fc_ack5(&w, p, MQTT_PUBREL, 3, 0, NULL);
    EXPECT_PACKET(p, pk, MQTT_PUBCOMP);
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_SUCCESS);
    fw_free(&w);
}

static void install_acl(fworld *w, const char *text)
{
    char err[128];
    broker_acl *a = broker_acl_parse(NULL, "acl", text, strlen(text), err, sizeof err);
    if (!a)
        abort();
    broker_set_acl(w->b, a);
}

TEST(v5_publish_the_acl_denies_gets_0x87_with_a_reason_string_and_311_a_plain_ack)
{
    fworld w;
    fw_init(&w, NULL);
    install_acl(&w, "topic read #\nuser writer\ntopic write data/#\n");
    fclient *s = fw_open_as(&w, "reader", false);
    fc_connect5(&w, s, "s", true, 0, NULL);
    fc_subscribe5(&w, s, 1, "#", 1, NULL);
    fc_clear(s);
    fclient *p = fw_open_as(&w, "writer", false);
    fc_connect5(&w, p, "p", true, 0, NULL);
    fc_clear(p);
    fc_publish5(&w, p, "secret", "x", 1, false, 1, NULL);
    mqtt_packet pk;
    EXPECT_PACKET(p, pk, MQTT_PUBACK);
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_NOT_AUTHORIZED);
    CHECK(fc_props_of(&pk)->reason_string.len > 0);
    /* QoS 2: refused at PUBREC, the id is not kept [MQTT-4.3.3-9]. */
    fc_publish5(&w, p, "secret", "x", 2, false, 2, NULL);
    EXPECT_PACKET(p, pk, MQTT_PUBREC);
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_NOT_AUTHORIZED);
    fc_ack5(&w, p, MQTT_PUBREL, 2, 0, NULL);
    EXPECT_PACKET(p, pk, MQTT_PUBCOMP);
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_PACKET_ID_NOT_FOUND);
    CHECK(!fc_next(s, &pk));
    /* 3.1.1: acknowledged as a success, as before. */
    fclient *q = fw_open_as(&w, "writer", false);
    fc_connect(&w, q, "q", true, 0);
    fc_clear(q);
    fc_publish(&w, q, "secret", "x", 1, false, 3);
    EXPECT_PACKET(q, pk, MQTT_PUBACK);
    CHECK_EQ(pk.u.ack.reason, 0);
    CHECK(!fc_next(s, &pk));
    fw_free(&w);
}

TEST(v5_no_reason_string_when_the_client_asks_for_no_problem_information)
{
    fworld w;
    fw_init(&w, NULL);
    install_acl(&w, "user writer\ntopic write data/#\n");
    fprops cp = {.len = 0};
    fp_u8(&cp, MQTT_PROP_REQUEST_PROBLEM_INFO, 0);
    fclient *p = fw_open_as(&w, "writer", false);
    fc_connect5(&w, p, "p", true, 0, &cp);
    fc_clear(p);
    fc_publish5(&w, p, "secret", "x", 1, false, 1, NULL);
    mqtt_packet pk;
    EXPECT_PACKET(p, pk, MQTT_PUBACK);
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_NOT_AUTHORIZED);
    /* [MQTT-3.1.2-29] */
    CHECK(!has_prop(&pk, MQTT_PROP_REASON_STRING));
    fw_free(&w);
}

TEST(v5_payload_not_utf8_with_format_indicator_gets_0x99_and_is_not_delivered)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = conn5(&w, "s", true, NULL), *p = conn5(&w, "p", true, NULL);
    sub5(&w, s, "t", 1);
    fprops text = {.len = 0};
    fp_u8(&text, MQTT_PROP_PAYLOAD_FORMAT, 1);
    fc_publish5(&w, p, "t", "bad \xc3\x28", 1, false, 1, &text);
    mqtt_packet pk;
    EXPECT_PACKET(p, pk, MQTT_PUBACK);
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_PAYLOAD_FORMAT_INVALID);
    CHECK(!fc_next(s, &pk));
    /* Well-formed UTF-8 passes, a NUL character included; without the
     * indicator any bytes do. */
    static const uint8_t nul_payload[] = {'a', 0, 0xc3, 0xa9};
    mqtt_publish pub = {.qos = 1, .packet_id = 2, .topic = {(const uint8_t *)"t", 1},
                        .payload = {nul_payload, sizeof nul_payload}};
    uint8_t buf[64];
    mqtt_bytes blk = {text.buf, text.len};
    size_t n = mqtt_encode_publish5(buf, sizeof buf, &pub, &blk, 1);
    CHECK(n > 0);
    fw_send(&w, p, buf, n);
    EXPECT_PACKET(p, pk, MQTT_PUBACK);
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_SUCCESS);
    fc_publish5(&w, p, "t", "\xff", 1, false, 3, NULL);
    EXPECT_PACKET(p, pk, MQTT_PUBACK);
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_SUCCESS);
    CHECK_EQ(fc_count_publish(s), 2);
    fw_free(&w);
}

TEST(v5_pubrel_for_an_unknown_id_gets_pubcomp_0x92_and_311_a_plain_pubcomp)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *p = conn5(&w, "p", true, NULL), *q = conn311(&w, "q", true);
    fc_ack5(&w, p, MQTT_PUBREL, 77, 0, NULL);
    mqtt_packet pk;
    EXPECT_PACKET(p, pk, MQTT_PUBCOMP);
    CHECK_EQ(pk.u.ack.packet_id, 77);
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_PACKET_ID_NOT_FOUND);
    fc_ack(&w, q, MQTT_PUBREL, 77);
    EXPECT_PACKET(q, pk, MQTT_PUBCOMP);
    CHECK_EQ(pk.u.ack.packet_id, 77);
    fw_free(&w);
}

TEST(v5_pubrec_with_an_error_ends_the_qos2_flow_without_pubrel)
{
    fworld w;
    fw_init(&w, NULL);
    fprops cp = {.len = 0};
    fp_u16(&cp, MQTT_PROP_RECEIVE_MAXIMUM, 1);
    fclient *s = conn5(&w, "s", true, &cp), *p = conn5(&w, "p", true, NULL);
    sub5(&w, s, "t", 2);
    fc_publish5(&w, p, "t", "1", 2, false, 1, NULL);
    fc_publish5(&w, p, "t", "2", 2, false, 2, NULL);
    mqtt_packet pk;
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK(fc_payload_is(&pk, "1"));
    uint16_t id = pk.u.publish.packet_id;
    CHECK(!fc_next(s, &pk)); /* its Receive Maximum is 1 */
    fc_ack5(&w, s, MQTT_PUBREC, id, MQTT_RC_UNSPECIFIED_ERROR, NULL);
    /* [MQTT-4.3.3-4]: no PUBREL; the slot is free for the next one
     * [MQTT-3.3.4-9]. */
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK(fc_payload_is(&pk, "2"));
    CHECK(!pk.u.publish.dup);
    fw_free(&w);
}

TEST(v5_puback_with_an_error_still_completes_the_message)
{
    fworld w;
    fw_init(&w, NULL);
    fprops cp = {.len = 0};
    fp_u16(&cp, MQTT_PROP_RECEIVE_MAXIMUM, 1);
    fp_u32(&cp, MQTT_PROP_SESSION_EXPIRY, 3600);
    fclient *s = conn5(&w, "s", false, &cp), *p = conn5(&w, "p", true, NULL);
    sub5(&w, s, "t", 1);
    fc_publish5(&w, p, "t", "1", 1, false, 1, NULL);
    fc_publish5(&w, p, "t", "2", 1, false, 2, NULL);
    mqtt_packet pk;
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    fc_ack5(&w, s, MQTT_PUBACK, pk.u.publish.packet_id, MQTT_RC_IMPLEMENTATION_SPECIFIC, NULL);
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK(fc_payload_is(&pk, "2"));
    fc_ack5(&w, s, MQTT_PUBACK, pk.u.publish.packet_id, 0, NULL);
    /* [MQTT-4.4.0-2]: never sent again, also not after a reconnect. */
    fw_drop(&w, s);
    fclient *s2 = conn5(&w, "s", false, &cp);
    CHECK(!fc_next(s2, &pk));
    fw_free(&w);
}

TEST(v5_outbound_window_is_the_clients_receive_maximum)
{
    fworld w;
    fw_init(&w, NULL);
    fprops cp = {.len = 0};
    fp_u16(&cp, MQTT_PROP_RECEIVE_MAXIMUM, 2);
    fclient *s = conn5(&w, "s", true, &cp), *p = conn5(&w, "p", true, NULL);
    sub5(&w, s, "t", 1);
    for (int i = 0; i < 4; i++)
        fc_publish5(&w, p, "t", "m", 1, false, (uint16_t)(i + 1), NULL);
    mqtt_packet pk;
    uint16_t ids[2];
    for (int i = 0; i < 2; i++) {
        EXPECT_PACKET(s, pk, MQTT_PUBLISH);
        ids[i] = pk.u.publish.packet_id;
    }
    CHECK(!fc_next(s, &pk)); /* [MQTT-3.3.4-9] */
    fc_ack5(&w, s, MQTT_PUBACK, ids[0], 0, NULL);
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK(!fc_next(s, &pk));
    fw_free(&w);
}

TEST(v5_message_above_the_clients_maximum_packet_size_is_dropped_and_counted)
{
    fworld w;
    fw_init(&w, NULL);
    fprops cp = {.len = 0};
    fp_u32(&cp, MQTT_PROP_MAXIMUM_PACKET_SIZE, 40);
    fclient *s = conn5(&w, "s", true, &cp), *p = conn5(&w, "p", true, NULL);
    sub5(&w, s, "t", 1);
    const char *big = "0123456789012345678901234567890123456789";
    fc_publish5(&w, p, "t", big, 0, false, 0, NULL);
    fc_publish5(&w, p, "t", big, 1, false, 1, NULL);
    fc_publish5(&w, p, "t", "small", 1, false, 2, NULL);
    mqtt_packet pk;
    /* [MQTT-3.1.2-24]: never sent; [MQTT-3.1.2-25]: as if delivered, so
     * the next one goes out at once. */
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK(fc_payload_is(&pk, "small"));
    CHECK(pk.size <= 40);
    CHECK(!fc_next(s, &pk));
    CHECK_EQ(stats(&w).msgs_over_client_max, 2);
    /* The publisher is told it reached a subscriber. */
    EXPECT_PACKET(p, pk, MQTT_PUBACK);
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_SUCCESS);
    fw_free(&w);
}

TEST(v5_outbound_topic_aliases_go_to_the_first_topics_and_are_reused)
{
    fworld w;
    fw_init(&w, NULL);
    fprops cp = {.len = 0};
    fp_u16(&cp, MQTT_PROP_TOPIC_ALIAS_MAXIMUM, 2);
    fclient *s = conn5(&w, "s", true, &cp), *p = conn5(&w, "p", true, NULL);
    sub5(&w, s, "#", 0);
    const char *seq[] = {"a/one", "a/one", "b/two", "c/three", "b/two", "c/three"};
    for (int i = 0; i < 6; i++)
        fc_publish5(&w, p, seq[i], "x", 0, false, 0, NULL);
    /* topic sent, alias sent */
    const struct {
        const char *topic;
        int alias;
    } want[] = {{"a/one", 1}, {"", 1}, {"b/two", 2}, {"c/three", 0}, {"", 2}, {"c/three", 0}};
    for (int i = 0; i < 6; i++) {
        mqtt_packet pk;
        EXPECT_PACKET(s, pk, MQTT_PUBLISH);
        CHECK(fc_bytes_is(pk.u.publish.topic, want[i].topic));
        if (want[i].alias) {
            CHECK(has_prop(&pk, MQTT_PROP_TOPIC_ALIAS));
            CHECK_EQ(fc_props_of(&pk)->topic_alias, want[i].alias);
        } else {
            CHECK(!has_prop(&pk, MQTT_PROP_TOPIC_ALIAS));
        }
    }
    fw_free(&w);
}

TEST(v5_no_topic_alias_for_a_client_that_allows_none)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = conn5(&w, "s", true, NULL), *p = conn5(&w, "p", true, NULL);
    sub5(&w, s, "t", 0);
    fc_publish5(&w, p, "t", "x", 0, false, 0, NULL);
    fc_publish5(&w, p, "t", "y", 0, false, 0, NULL);
    mqtt_packet pk;
    for (int i = 0; i < 2; i++) {
        EXPECT_PACKET(s, pk, MQTT_PUBLISH);
        CHECK(fc_bytes_is(pk.u.publish.topic, "t")); /* [MQTT-3.1.2-27] */
        CHECK(!has_prop(&pk, MQTT_PROP_TOPIC_ALIAS));
    }
    fw_free(&w);
}

TEST(v5_retransmission_after_reconnect_carries_the_topic_and_no_alias)
{
    fworld w;
    fw_init(&w, NULL);
    fprops cp = {.len = 0};
    fp_u16(&cp, MQTT_PROP_TOPIC_ALIAS_MAXIMUM, 5);
    fp_u32(&cp, MQTT_PROP_SESSION_EXPIRY, 3600);
    fclient *s = conn5(&w, "s", false, &cp), *p = conn5(&w, "p", true, NULL);
    sub5(&w, s, "t/#", 1);
    fc_publish5(&w, p, "t/1", "a", 1, false, 1, NULL);
    fc_publish5(&w, p, "t/1", "b", 1, false, 2, NULL);
    mqtt_packet pk;
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK(fc_bytes_is(pk.u.publish.topic, "")); /* the alias was in use */
    fw_drop(&w, s);
    fclient *s2 = conn5(&w, "s", false, &cp);
    for (int i = 0; i < 2; i++) {
        EXPECT_PACKET(s2, pk, MQTT_PUBLISH);
        CHECK(pk.u.publish.dup);
        CHECK(fc_bytes_is(pk.u.publish.topic, "t/1"));
        CHECK(!has_prop(&pk, MQTT_PROP_TOPIC_ALIAS));
    }
    fw_free(&w);
}

TEST(v5_retained_publish_while_retain_is_off_is_disconnect_0x9a)
{
    fworld w;
    fw_init(&w, NULL);
    w.b->retain_disabled = true;
    fclient *p = conn5(&w, "p", true, NULL);
    fc_publish5(&w, p, "t", "x", 1, true, 1, NULL);
    mqtt_packet pk;
    EXPECT_PACKET(p, pk, MQTT_DISCONNECT);
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_RETAIN_NOT_SUPPORTED);
    CHECK(p->closed);
    CHECK_EQ(stats(&w).retained_count, 0);
    fw_free(&w);
}

TEST(v5_topic_beyond_the_limits_gets_0x90_at_qos1_and_disconnect_at_qos0)
{
    broker_limits lim = {0};
    lim.max_topic_levels = 2;
    fworld w;
    fw_init(&w, &lim);
    fclient *p = conn5(&w, "p", true, NULL);
    fc_publish5(&w, p, "a/b/c", "x", 1, false, 1, NULL);
    mqtt_packet pk;
    EXPECT_PACKET(p, pk, MQTT_PUBACK);
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_TOPIC_NAME_INVALID);
    CHECK(!p->closed);
    fc_publish5(&w, p, "a/b/c", "x", 0, false, 0, NULL);
    EXPECT_PACKET(p, pk, MQTT_DISCONNECT);
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_TOPIC_NAME_INVALID);
    CHECK(p->closed);
    fw_free(&w);
}

TEST(v5_qos1_and_qos2_dropped_for_every_subscriber_by_a_limit_get_0x97)
{
    broker_limits lim = {0};
    lim.max_queued = 1;
    fworld w;
    fw_init(&w, &lim);
    fclient *s = conn5_persistent(&w, "s", false);
    sub5(&w, s, "t", 1);
    fw_drop(&w, s);
    fclient *p = conn5(&w, "p", true, NULL);
    fc_publish5(&w, p, "t", "1", 1, false, 1, NULL);
    fc_publish5(&w, p, "t", "2", 1, false, 2, NULL);
    mqtt_packet pk;
    EXPECT_PACKET(p, pk, MQTT_PUBACK);
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_SUCCESS);
    EXPECT_PACKET(p, pk, MQTT_PUBACK);
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_QUOTA_EXCEEDED);
    /* QoS 2: the error PUBREC ends the flow, the id is not kept
     * [MQTT-4.3.3-9], so a PUBREL for it is answered 0x92. */
    fc_publish5(&w, p, "t", "3", 2, false, 3, NULL);
    EXPECT_PACKET(p, pk, MQTT_PUBREC);
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_QUOTA_EXCEEDED);
    fc_ack5(&w, p, MQTT_PUBREL, 3, 0, NULL);
    EXPECT_PACKET(p, pk, MQTT_PUBCOMP);
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_PACKET_ID_NOT_FOUND);
    fw_free(&w);
}

TEST(v5_qos0_copy_is_shared_between_v5_subscribers_and_carries_the_properties)
{
    fworld w;
    fw_init(&w, NULL);
    fprops al = {.len = 0};
    fp_u16(&al, MQTT_PROP_TOPIC_ALIAS_MAXIMUM, 4);
    fclient *s1 = conn5(&w, "s1", true, NULL), *s2 = conn5(&w, "s2", true, NULL);
    fclient *s3 = conn5(&w, "s3", true, &al), *s4 = conn311(&w, "s4", true);
    sub5(&w, s1, "t", 0);
    sub5(&w, s2, "t", 0);
    sub5(&w, s3, "t", 0);
    fc_subscribe(&w, s4, 1, "t", 0);
    fc_clear(s4);
    fclient *p = conn5(&w, "p", true, NULL);
    fprops pr = {.len = 0};
    fp_user(&pr, "u", "v");
    fc_publish5(&w, p, "t", "x", 0, false, 0, &pr);
    fclient *subs[] = {s1, s2, s3};
    for (int i = 0; i < 3; i++) {
        mqtt_packet pk;
        EXPECT_PACKET(subs[i], pk, MQTT_PUBLISH);
        mqtt_bytes v;
        CHECK(fc_user_prop(fc_props_of(&pk), "u", &v) && fc_bytes_is(v, "v"));
        CHECK_EQ(has_prop(&pk, MQTT_PROP_TOPIC_ALIAS), i == 2);
    }
    mqtt_packet pk;
    EXPECT_PACKET(s4, pk, MQTT_PUBLISH);
    CHECK(fc_payload_is(&pk, "x"));
    fw_free(&w);
}

/* The Subscription Identifiers a PUBLISH carries, as a bit set of ids < 32. */
static uint32_t sub_ids_of(const mqtt_packet *p)
{
    uint32_t set = 0;
    mqtt_prop x;
    for (unsigned i = 0; fc_prop_find(fc_props_of(p), MQTT_PROP_SUBSCRIPTION_ID, i, &x); i++)
        set |= 1u << x.value;
    return set;
}

TEST(v5_publish_carries_every_matching_subscription_identifier_at_qos0_and_qos1)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = conn5(&w, "s", true, NULL), *p = conn5(&w, "p", true, NULL);
    fprops id7 = {.len = 0}, id9 = {.len = 0};
    fp_varint(&id7, MQTT_PROP_SUBSCRIPTION_ID, 7);
    fp_varint(&id9, MQTT_PROP_SUBSCRIPTION_ID, 9);
    fc_subscribe5(&w, s, 1, "a/#", 1, &id7);
    fc_subscribe5(&w, s, 2, "a/b", 1, &id9);
    fc_subscribe5(&w, s, 3, "+/b", 1, NULL);
    fc_clear(s);
    fc_publish5(&w, p, "a/b", "q0", 0, false, 0, NULL);
    fc_publish5(&w, p, "a/b", "q1", 1, false, 1, NULL);
    fc_publish5(&w, p, "a/c", "one", 1, false, 2, NULL);
    mqtt_packet pk;
    /* [MQTT-3.3.4-3], [MQTT-3.3.4-4]: one copy with both identifiers. */
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK(fc_payload_is(&pk, "q0"));
    CHECK_EQ(sub_ids_of(&pk), (1u << 7) | (1u << 9));
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK(fc_payload_is(&pk, "q1"));
    CHECK_EQ(sub_ids_of(&pk), (1u << 7) | (1u << 9));
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK(fc_payload_is(&pk, "one"));
    CHECK_EQ(sub_ids_of(&pk), 1u << 7);
    CHECK(!fc_next(s, &pk));
    fw_free(&w);
}

TEST(v5_subscription_identifiers_are_kept_for_a_resend_after_reconnect)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = conn5_persistent(&w, "s", false), *p = conn5(&w, "p", true, NULL);
    fprops id5 = {.len = 0};
    fp_varint(&id5, MQTT_PROP_SUBSCRIPTION_ID, 5);
    fc_subscribe5(&w, s, 1, "t", 1, &id5);
    fc_clear(s);
    fc_publish5(&w, p, "t", "x", 1, false, 1, NULL);
    fw_drop(&w, s);
    fclient *s2 = conn5_persistent(&w, "s", false);
    mqtt_packet pk;
    EXPECT_PACKET(s2, pk, MQTT_PUBLISH);
    CHECK(pk.u.publish.dup);
    CHECK_EQ(sub_ids_of(&pk), 1u << 5);
    fw_free(&w);
}

TEST(v5_topic_alias_is_not_used_when_it_would_exceed_the_maximum_packet_size)
{
    fworld w;
    fw_init(&w, NULL);
    fprops cp = {.len = 0};
    fp_u16(&cp, MQTT_PROP_TOPIC_ALIAS_MAXIMUM, 4);
    /* 2 fixed header + 5 topic + 1 property length + 1 payload: the
     * message fits in full, not with the 3 bytes of an alias beside it. */
    fp_u32(&cp, MQTT_PROP_MAXIMUM_PACKET_SIZE, 9);
    fclient *s = conn5(&w, "s", true, &cp), *p = conn5(&w, "p", true, NULL);
    sub5(&w, s, "t/x", 0);
    fc_publish5(&w, p, "t/x", "1", 0, false, 0, NULL);
    fc_publish5(&w, p, "t/x", "2", 0, false, 0, NULL);
    for (int i = 0; i < 2; i++) {
        mqtt_packet pk;
        EXPECT_PACKET(s, pk, MQTT_PUBLISH);
        CHECK_EQ(pk.size, 9);
        CHECK(fc_bytes_is(pk.u.publish.topic, "t/x"));
        CHECK(!has_prop(&pk, MQTT_PROP_TOPIC_ALIAS));
    }
    CHECK_EQ(stats(&w).msgs_over_client_max, 0);
    fw_free(&w);
}

TEST(v5_known_topic_alias_is_not_used_when_the_full_topic_is_smaller_and_only_that_fits)
{
    fworld w;
    fw_init(&w, NULL);
    fprops cp = {.len = 0};
    fp_u16(&cp, MQTT_PROP_TOPIC_ALIAS_MAXIMUM, 4);
    fp_u32(&cp, MQTT_PROP_MAXIMUM_PACKET_SIZE, 20);
    fclient *s = conn5(&w, "s", true, &cp), *p = conn5(&w, "p", true, NULL);
    sub5(&w, s, "t", 0);
    fc_publish5(&w, p, "t", "1", 0, false, 0, NULL);
    /* 6 bytes + 14 of payload in full; with the alias (3 bytes for the
     * 1-byte topic) 22. */
    fc_publish5(&w, p, "t", "0123456789abcd", 0, false, 0, NULL);
    mqtt_packet pk;
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK(has_prop(&pk, MQTT_PROP_TOPIC_ALIAS)); /* the alias is set */
    EXPECT_PACKET(s, pk, MQTT_PUBLISH);
    CHECK_EQ(pk.size, 20);
    CHECK(fc_bytes_is(pk.u.publish.topic, "t"));
    CHECK(!has_prop(&pk, MQTT_PROP_TOPIC_ALIAS));
    fw_free(&w);
}

TEST(v5_message_expiry_interval_0_is_never_delivered_nor_retained)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = conn5(&w, "s", true, NULL), *p = conn5(&w, "p", true, NULL);
    sub5(&w, s, "t", 1);
    fprops pr = {.len = 0};
    fp_u32(&pr, MQTT_PROP_MESSAGE_EXPIRY, 0);
    fc_publish5(&w, p, "t", "x", 1, true, 1, &pr);
    mqtt_packet pk;
    EXPECT_PACKET(p, pk, MQTT_PUBACK);
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_NO_MATCHING_SUBSCRIBERS);
    CHECK(!fc_next(s, &pk));
    CHECK_EQ(stats(&w).retained_count, 0);
    CHECK_EQ(stats(&w).msgs_expired, 1);
    fw_free(&w);
}

/* Everything the broker asked the store to write is reported written. */
static void commit_all(fworld *w)
{
    broker_store_batch batch;
    while (broker_store_take(w->b, &batch))
        broker_store_done(w->b, batch.seq, true);
    fw_drain(w);
}

TEST(v5_reason_code_of_an_acknowledgement_held_for_a_commit_is_kept)
{
    fworld w;
    fw_init_durable(&w, NULL);
    fclient *p = fw_open(&w);
    fc_connect5(&w, p, "p", true, 0, NULL);
    commit_all(&w);
    fc_clear(p);
    /* A retained message nobody subscribes to: its PUBACK waits for the
     * retained value's commit, and says 0x10 when it goes. */
    fc_publish5(&w, p, "r", "v", 1, true, 1, NULL);
    mqtt_packet pk;
    CHECK(!fc_next(p, &pk));
    commit_all(&w);
    EXPECT_PACKET(p, pk, MQTT_PUBACK);
    CHECK_EQ(pk.u.ack.packet_id, 1);
    CHECK_EQ(fc_reason_of(&pk), MQTT_RC_NO_MATCHING_SUBSCRIBERS);
    fw_free(&w);
}

/* A small deterministic generator for the randomized test below. */
static uint32_t next_rand(uint32_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

/* The client side of the randomized test: what it was sent per QoS, and
 * what a client library keeps (its aliases, its unacknowledged ids). */
typedef struct rx_model {
    char payload[2][200][48]; /* per QoS, the messages that fit, in order */
    int nwant[2], ngot[2];
    char alias[8][16];        /* topic of each alias, "" = unset */
    uint16_t unacked[64];
    int nunacked;
    uint16_t alias_max, recv_max;
    uint32_t max_packet;
} rx_model;

/* Read everything s received, checking it against m; false on a
 * violation (reported through CHECK in the caller's name). */
static bool rx_drain(fclient *s, rx_model *m)
{
    mqtt_packet pk;
    while (fc_next(s, &pk)) {
        if (pk.type != MQTT_PUBLISH || pk.size > m->max_packet)
            return false;
        const mqtt_props *pr = fc_props_of(&pk);
        const char *topic;
        char plain[16] = {0};
        if (pr->present & MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS)) {
            uint16_t a = pr->topic_alias;
            if (a < 1 || a > m->alias_max) /* [MQTT-3.3.2-11] */
                return false;
            if (pk.u.publish.topic.len) {
                if (pk.u.publish.topic.len >= sizeof m->alias[a])
                    return false;
                memcpy(m->alias[a], pk.u.publish.topic.p, pk.u.publish.topic.len);
                m->alias[a][pk.u.publish.topic.len] = 0;
            }
            topic = m->alias[a];
        } else {
            if (pk.u.publish.topic.len == 0 || pk.u.publish.topic.len >= sizeof plain)
                return false;
            memcpy(plain, pk.u.publish.topic.p, pk.u.publish.topic.len);
            topic = plain;
        }
        if (strncmp(topic, "top/", 4) != 0)
            return false;
        /* In order within its QoS [MQTT-4.6.0-5]. */
        int q = pk.u.publish.qos;
        if (q > 1 || m->ngot[q] >= m->nwant[q] || !fc_payload_is(&pk, m->payload[q][m->ngot[q]]))
            return false;
        m->ngot[q]++;
        if (q == 1) {
            m->unacked[m->nunacked++] = pk.u.publish.packet_id;
            if (m->nunacked > m->recv_max) /* [MQTT-3.3.4-9] */
                return false;
        }
    }
    return true;
}

/*
 * Randomized: a 5.0 subscriber with a random Topic Alias Maximum, Receive
 * Maximum and Maximum Packet Size, acknowledging late and at random, is
 * sent messages on several topics at QoS 0 and 1. As a client library
 * would, it resolves the aliases it receives. Every message that fits
 * arrives, in order within its QoS, under its topic; none that does not
 * [MQTT-3.1.2-24] (counted); no alias above its maximum; never more
 * unacknowledged QoS 1 PUBLISHes than its Receive Maximum.
 */
TEST(v5_random_traffic_keeps_aliases_receive_maximum_and_packet_size)
{
    for (uint32_t seed = 1; seed <= 30; seed++) {
        uint32_t r = seed * 2654435761u;
        rx_model *m = calloc(1, sizeof *m);
        CHECK(m != NULL);
        m->alias_max = (uint16_t)(next_rand(&r) % 6);
        m->recv_max = (uint16_t)(1 + next_rand(&r) % 4);
        m->max_packet = 30 + next_rand(&r) % 40;
        fworld w;
        fw_init(&w, NULL);
        fprops cp = {.len = 0};
        if (m->alias_max)
            fp_u16(&cp, MQTT_PROP_TOPIC_ALIAS_MAXIMUM, m->alias_max);
        fp_u16(&cp, MQTT_PROP_RECEIVE_MAXIMUM, m->recv_max);
        fp_u32(&cp, MQTT_PROP_MAXIMUM_PACKET_SIZE, m->max_packet);
        fclient *s = conn5(&w, "s", true, &cp), *p = conn5(&w, "p", true, NULL);
        sub5(&w, s, "top/#", 1);
        int too_large = 0;
        for (int i = 0; i < 200; i++) {
            char topic[16], payload[48];
            snprintf(topic, sizeof topic, "top/%u", (unsigned)(next_rand(&r) % 8) * 7);
            int plen = (int)(next_rand(&r) % 40);
            memset(payload, 'x', (size_t)plen);
            snprintf(payload + plen, sizeof payload - (size_t)plen, "%d", i);
            uint8_t qos = (uint8_t)(next_rand(&r) % 2);
            /* It fits if its packet without an alias does (publish5.c). */
            if (mqtt_publish5_size(strlen(topic), strlen(payload), qos, 0) <= m->max_packet)
                memcpy(m->payload[qos][m->nwant[qos]++], payload, sizeof payload);
            else
                too_large++;
            fc_publish5(&w, p, topic, payload, qos, false, (uint16_t)(i + 1), NULL);
            fc_clear(p);
            CHECK(rx_drain(s, m));
            /* Acknowledge some, oldest first. */
            while (m->nunacked > 0 && next_rand(&r) % 3 != 0) {
                fc_ack5(&w, s, MQTT_PUBACK, m->unacked[0], 0, NULL);
                memmove(m->unacked, m->unacked + 1, (size_t)(--m->nunacked) * sizeof *m->unacked);
                CHECK(rx_drain(s, m));
            }
        }
        while (m->nunacked > 0) {
            fc_ack5(&w, s, MQTT_PUBACK, m->unacked[0], 0, NULL);
            memmove(m->unacked, m->unacked + 1, (size_t)(--m->nunacked) * sizeof *m->unacked);
            CHECK(rx_drain(s, m));
        }
        CHECK_EQ(m->ngot[0], m->nwant[0]);
        CHECK_EQ(m->ngot[1], m->nwant[1]);
        CHECK_EQ(stats(&w).msgs_over_client_max, (uint64_t)too_large);
        fw_free(&w);
        free(m);
    }
}
