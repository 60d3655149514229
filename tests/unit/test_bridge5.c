/*
 * test_bridge5.c - the portable bridge (src/broker/bridge.c) speaking MQTT
 * 5.0 to the remote, driven with encoded packets: the CONNECT it sends, the
 * remote's CONNACK properties honoured (Receive Maximum and Maximum Packet
 * Size passed on to the local CONNECT, Maximum QoS, Retain Available,
 * Server Keep Alive), No Local on the remote subscriptions, properties
 * carried across, reason codes relayed, a negative PUBACK ending the
 * delivery, and a DISCONNECT's reason in the error.
 */
#include "test.h"

#include "broker/bridge.h"
#include "mqtt/mqtt.h"

static bridge_settings settings5(void)
{
    bridge_settings s;

    memset(&s, 0, sizeof s);
    strcpy(s.client_id, "tb5");
    s.keepalive_s = 10;
    s.protocol = MQTT_LEVEL_5;
    s.receive_max = 50;
    s.max_packet = 100000;
    s.backoff_min_ms = 1000;
    s.backoff_max_ms = 8000;
    strcpy(s.maps[0].pattern, "out/#");
    s.maps[0].dir = BRIDGE_OUT;
    s.maps[0].qos = 2;
    strcpy(s.maps[0].local_prefix, "site/");
    strcpy(s.maps[0].remote_prefix, "hq/site/");
    strcpy(s.maps[1].pattern, "in/#");
    s.maps[1].dir = BRIDGE_IN;
    s.maps[1].qos = 2;
    strcpy(s.maps[2].pattern, "cmd/#"); /* grows by 6 coming in */
    s.maps[2].dir = BRIDGE_IN;
    s.maps[2].qos = 1;
    strcpy(s.maps[2].local_prefix, "local/");
    s.nmaps = 3;
    return s;
}

/* The next packet of a side's output (consumed), decoded at 5.0 as a
 * server reads it; false when there is none. */
static bool next5(bridge *b, bridge_side side, mqtt_packet *pk, uint8_t *copy)
{
    size_t n, used = 0;
    const uint8_t *p = broker_bridge_output(b, side, &n);

    if (p == NULL)
        return false;
    memcpy(copy, p, n < 4096 ? n : 4096);
    if (mqtt_decode(copy, n, MQTT_FROM_CLIENT, MQTT_LEVEL_5, 0, pk, &used) != MQTT_OK)
        return false;
    broker_bridge_output_taken(b, side, used);
    return true;
}

static bool feed(bridge *b, bridge_side side, const uint8_t *p, size_t n, uint64_t now)
{
    return n > 0 && broker_bridge_input(b, side, p, n, now);
}

/* The prime (bridge.h), then the remote link opened: its CONNECT is the
 * next remote output. */
static bool prime_and_dial(bridge *b, uint64_t now)
{
    uint8_t buf[64], copy[4096], code = 2;
    mqtt_packet pk;

    if (!broker_bridge_tick(b, 0, now))
        return false;
    broker_bridge_opened(b, BRIDGE_LOCAL, now);
    if (!next5(b, BRIDGE_LOCAL, &pk, copy) ||
        !feed(b, BRIDGE_LOCAL, buf, mqtt_encode_connack5(buf, sizeof buf, false, 0, NULL, 0),
              now) ||
        !next5(b, BRIDGE_LOCAL, &pk, copy) ||
        !feed(b, BRIDGE_LOCAL, buf,
              mqtt_encode_suback5(buf, sizeof buf, MQTT_SUBACK, 1, &code, 1, NULL, 0), now) ||
        broker_bridge_get_state(b) != BRIDGE_DIAL_REMOTE)
        return false;
    broker_bridge_opened(b, BRIDGE_REMOTE, now);
    return true;
}

/* Prime, then connect to the remote with a CONNACK carrying props[0..np):
 * the bridge is then waiting for the local link (DIAL_LOCAL). */
static bool to_local(bridge *b, const uint8_t *props, size_t np, uint64_t now)
{
    uint8_t buf[128], copy[4096], code = 2;
    mqtt_bytes block = {props, np};
    mqtt_packet pk;

    if (!prime_and_dial(b, now))
        return false;
    if (!next5(b, BRIDGE_REMOTE, &pk, copy) || pk.type != MQTT_CONNECT ||
        !feed(b, BRIDGE_REMOTE, buf,
              mqtt_encode_connack5(buf, sizeof buf, true, 0, &block, np ? 1 : 0), now) ||
        !next5(b, BRIDGE_REMOTE, &pk, copy) || pk.type != MQTT_SUBSCRIBE ||
        !feed(b, BRIDGE_REMOTE, buf,
              mqtt_encode_suback5(buf, sizeof buf, MQTT_SUBACK, 1, &code, 1, NULL, 0), now))
        return false;
    return broker_bridge_get_state(b) == BRIDGE_DIAL_LOCAL;
}

/* ... and on to UP, the local CONNECT returned in *connect's copy. */
static bool up(bridge *b, const uint8_t *props, size_t np, mqtt_packet *connect, uint8_t *copy,
               uint64_t now)
{
    uint8_t buf[64], code = 2;
    mqtt_packet pk;
    uint8_t scratch[4096];

    if (!to_local(b, props, np, now))
        return false;
    broker_bridge_opened(b, BRIDGE_LOCAL, now);
    if (!next5(b, BRIDGE_LOCAL, connect, copy) || connect->type != MQTT_CONNECT ||
        !feed(b, BRIDGE_LOCAL, buf, mqtt_encode_connack5(buf, sizeof buf, true, 0, NULL, 0),
              now) ||
        !next5(b, BRIDGE_LOCAL, &pk, scratch) || pk.type != MQTT_SUBSCRIBE ||
        !feed(b, BRIDGE_LOCAL, buf,
              mqtt_encode_suback5(buf, sizeof buf, MQTT_SUBACK, 1, &code, 1, NULL, 0), now))
        return false;
    return broker_bridge_get_state(b) == BRIDGE_UP;
}

static size_t publish5(uint8_t *buf, size_t cap, const char *topic, uint8_t qos, uint16_t id,
                       const uint8_t *props, size_t np)
{
    mqtt_publish p = {.qos = qos, .packet_id = id,
                      .topic = {(const uint8_t *)topic, strlen(topic)},
                      .payload = {(const uint8_t *)"hi", 2}};
    mqtt_bytes block = {props, np};

    return mqtt_encode_publish5(buf, cap, &p, &block, np ? 1 : 0);
}

TEST(bridge5_connects_at_level_5_with_a_persistent_session_and_no_local_subscriptions)
{
    bridge_settings s = settings5();
    bridge *b = broker_bridge_create(&s);
    uint8_t buf[64], copy[4096];
    mqtt_packet pk;
    size_t n, pos = 0;
    mqtt_bytes f;
    uint8_t opt;

    CHECK(prime_and_dial(b, 0));
    CHECK(next5(b, BRIDGE_REMOTE, &pk, copy));
    CHECK_EQ(pk.type, MQTT_CONNECT);
    CHECK_EQ(pk.u.connect.level, MQTT_LEVEL_5);
    CHECK(!pk.u.connect.bridge); /* no 0x80 bit at 5.0: No Local does its work */
    CHECK(!pk.u.connect.clean_session);
    CHECK_EQ(pk.u.connect.keepalive, 10);
    CHECK_EQ(pk.u.connect.props.session_expiry, UINT32_MAX);
    CHECK_EQ(pk.u.connect.props.receive_maximum, 50);
    /* limits.max_packet_size less what "cmd/" -> "local/cmd/" adds (6 + 3). */
    CHECK_EQ(pk.u.connect.props.maximum_packet_size, 100000 - 6 - 3);
    CHECK(!(pk.u.connect.props.present & MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS_MAXIMUM)));
    n = mqtt_encode_connack5(buf, sizeof buf, false, 0, NULL, 0);
    CHECK(feed(b, BRIDGE_REMOTE, buf, n, 1));
    CHECK(next5(b, BRIDGE_REMOTE, &pk, copy));
    CHECK_EQ(pk.type, MQTT_SUBSCRIBE);
    CHECK(mqtt_subscribe_next(&pk.u.subscribe, &pos, &f, &opt));
    CHECK(f.len == 4 && memcmp(f.p, "in/#", 4) == 0);
    CHECK_EQ(opt, 2 | MQTT_SUBOPT_NO_LOCAL | MQTT_SUBOPT_RETAIN_AS_PUBLISHED);
    broker_bridge_destroy(b);
}

TEST(bridge5_passes_the_remote_receive_maximum_and_packet_size_to_the_local_connect)
{
    bridge_settings s = settings5();
    bridge *b = broker_bridge_create(&s);
    uint8_t props[32], copy[4096];
    size_t np = 0;
    mqtt_packet connect;

    np += mqtt_prop_u16(props + np, sizeof props - np, MQTT_PROP_RECEIVE_MAXIMUM, 7);
    np += mqtt_prop_u32(props + np, sizeof props - np, MQTT_PROP_MAXIMUM_PACKET_SIZE, 1000);
    CHECK(up(b, props, np, &connect, copy, 0));
    CHECK_EQ(connect.u.connect.props.receive_maximum, 7);
    /* "site/" becomes "hq/site/": 3 bytes longer, and up to 3 of length. */
    CHECK_EQ(connect.u.connect.props.maximum_packet_size, 1000 - 3 - 3);
    CHECK_EQ(connect.u.connect.props.session_expiry, UINT32_MAX);
    broker_bridge_destroy(b);

    /* A remote without them: the local CONNECT has neither. */
    b = broker_bridge_create(&s);
    CHECK(up(b, NULL, 0, &connect, copy, 0));
    CHECK(!(connect.u.connect.props.present & MQTT_PROP_BIT(MQTT_PROP_RECEIVE_MAXIMUM)));
    CHECK(!(connect.u.connect.props.present & MQTT_PROP_BIT(MQTT_PROP_MAXIMUM_PACKET_SIZE)));
    broker_bridge_destroy(b);
}

TEST(bridge5_negative_puback_from_the_remote_ends_the_delivery_and_is_counted)
{
    bridge_settings s = settings5();
    bridge *b = broker_bridge_create(&s);
    uint8_t buf[128], copy[4096];
    mqtt_packet pk;

    CHECK(up(b, NULL, 0, &pk, copy, 0));
    CHECK(feed(b, BRIDGE_LOCAL, buf, publish5(buf, sizeof buf, "site/out/a", 1, 77, NULL, 0), 1));
    CHECK(next5(b, BRIDGE_REMOTE, &pk, copy));
    CHECK_EQ(pk.type, MQTT_PUBLISH);
    CHECK_EQ(pk.u.publish.packet_id, 77);
    CHECK(feed(b, BRIDGE_REMOTE, buf,
               mqtt_encode_ack5(buf, sizeof buf, MQTT_PUBACK, 77, MQTT_RC_NOT_AUTHORIZED, NULL,
                                0),
               2));
    /* The local broker hears the reason, and so ends the delivery (a
     * 5.0 PUBACK with any reason completes it): not retried. */
    CHECK(next5(b, BRIDGE_LOCAL, &pk, copy));
    CHECK_EQ(pk.type, MQTT_PUBACK);
    CHECK_EQ(pk.u.ack.packet_id, 77);
    CHECK_EQ(pk.u.ack.reason, MQTT_RC_NOT_AUTHORIZED);
    CHECK_EQ(broker_bridge_get_stats(b)->rejected, 1);
    CHECK_EQ(broker_bridge_get_state(b), BRIDGE_UP);

    /* A negative PUBREC too (QoS 2): relayed, counted, no PUBREL awaited. */
    CHECK(feed(b, BRIDGE_LOCAL, buf, publish5(buf, sizeof buf, "site/out/b", 2, 78, NULL, 0), 3));
    CHECK(next5(b, BRIDGE_REMOTE, &pk, copy));
    CHECK_EQ(pk.u.publish.qos, 2);
    CHECK(feed(b, BRIDGE_REMOTE, buf,
               mqtt_encode_ack5(buf, sizeof buf, MQTT_PUBREC, 78, MQTT_RC_QUOTA_EXCEEDED, NULL,
                                0),
               4));
    CHECK(next5(b, BRIDGE_LOCAL, &pk, copy));
    CHECK_EQ(pk.type, MQTT_PUBREC);
    CHECK_EQ(pk.u.ack.reason, MQTT_RC_QUOTA_EXCEEDED);
    CHECK_EQ(broker_bridge_get_stats(b)->rejected, 2);

    /* The other way, the local broker's reason reaches the remote. */
    CHECK(feed(b, BRIDGE_REMOTE, buf, publish5(buf, sizeof buf, "in/x", 1, 9, NULL, 0), 5));
    CHECK(next5(b, BRIDGE_LOCAL, &pk, copy));
    CHECK(feed(b, BRIDGE_LOCAL, buf,
               mqtt_encode_ack5(buf, sizeof buf, MQTT_PUBACK, 9, MQTT_RC_NO_MATCHING_SUBSCRIBERS,
                                NULL, 0),
               6));
    CHECK(next5(b, BRIDGE_REMOTE, &pk, copy));
    CHECK_EQ(pk.type, MQTT_PUBACK);
    CHECK_EQ(pk.u.ack.reason, MQTT_RC_NO_MATCHING_SUBSCRIBERS);
    broker_bridge_destroy(b);
}

TEST(bridge5_carries_message_properties_both_ways)
{
    bridge_settings s = settings5();
    bridge *b = broker_bridge_create(&s);
    uint8_t buf[256], copy[4096], props[128];
    size_t np = 0, pos = 0;
    mqtt_packet pk;
    mqtt_prop pr;

    np += mqtt_prop_pair(props + np, sizeof props - np, MQTT_PROP_USER_PROPERTY,
                         (const uint8_t *)"k", 1, (const uint8_t *)"v", 1);
    np += mqtt_prop_u32(props + np, sizeof props - np, MQTT_PROP_MESSAGE_EXPIRY, 30);
    np += mqtt_prop_bytes(props + np, sizeof props - np, MQTT_PROP_CONTENT_TYPE,
                          (const uint8_t *)"text/plain", 10);
    np += mqtt_prop_bytes(props + np, sizeof props - np, MQTT_PROP_CORRELATION_DATA,
                          (const uint8_t *)"\x01\x02", 2);
    CHECK(up(b, NULL, 0, &pk, copy, 0));
    CHECK(feed(b, BRIDGE_LOCAL, buf,
               publish5(buf, sizeof buf, "site/out/p", 1, 5, props, np), 1));
    CHECK(next5(b, BRIDGE_REMOTE, &pk, copy));
    CHECK(pk.u.publish.topic.len == 13 && memcmp(pk.u.publish.topic.p, "hq/site/out/p", 13) == 0);
    CHECK_EQ(pk.u.publish.props.message_expiry, 30);
    CHECK(pk.u.publish.props.content_type.len == 10);
    CHECK(pk.u.publish.props.correlation_data.len == 2);
    CHECK(mqtt_prop_next(&pk.u.publish.props.raw, &pos, &pr));
    CHECK_EQ(pr.id, MQTT_PROP_USER_PROPERTY);
    CHECK(pr.data.len == 1 && pr.data.p[0] == 'k' && pr.data2.len == 1 && pr.data2.p[0] == 'v');

    /* Remote to local, a Subscription Identifier (the link's own) dropped. */
    np += mqtt_prop_varint(props + np, sizeof props - np, MQTT_PROP_SUBSCRIPTION_ID, 3);
    CHECK(feed(b, BRIDGE_REMOTE, buf, publish5(buf, sizeof buf, "in/p", 0, 0, props, np), 2));
    {
        size_t n, used = 0;
        const uint8_t *p = broker_bridge_output(b, BRIDGE_LOCAL, &n);
        CHECK(p != NULL);
        memcpy(copy, p, n);
        /* Read as a client reads a server's PUBLISH. */
        CHECK_EQ(mqtt_decode(copy, n, MQTT_FROM_SERVER, MQTT_LEVEL_5, 0, &pk, &used), MQTT_OK);
        broker_bridge_output_taken(b, BRIDGE_LOCAL, used);
    }
    CHECK_EQ(pk.u.publish.props.message_expiry, 30);
    CHECK_EQ(pk.u.publish.props.user_property_count, 1);
    CHECK(!(pk.u.publish.props.present & MQTT_PROP_BIT(MQTT_PROP_SUBSCRIPTION_ID)));
    broker_bridge_destroy(b);
}

TEST(bridge5_lowers_qos_to_the_remote_maximum_and_completes_the_local_flow_itself)
{
    bridge_settings s = settings5();
    bridge *b = broker_bridge_create(&s);
    uint8_t buf[128], copy[4096], props[16];
    size_t np = 0;
    mqtt_packet pk;

    np += mqtt_prop_u8(props + np, sizeof props - np, MQTT_PROP_MAXIMUM_QOS, 1);
    np += mqtt_prop_u8(props + np, sizeof props - np, MQTT_PROP_RETAIN_AVAILABLE, 0);
    CHECK(up(b, props, np, &pk, copy, 0));
    {
        mqtt_publish p = {.qos = 2, .packet_id = 12, .retain = true,
                          .topic = {(const uint8_t *)"site/out/q", 10},
                          .payload = {(const uint8_t *)"x", 1}};
        CHECK(feed(b, BRIDGE_LOCAL, buf, mqtt_encode_publish5(buf, sizeof buf, &p, NULL, 0), 1));
    }
    CHECK(next5(b, BRIDGE_REMOTE, &pk, copy));
    CHECK_EQ(pk.type, MQTT_PUBLISH);
    CHECK_EQ(pk.u.publish.qos, 1);   /* the remote's Maximum QoS */
    CHECK(!pk.u.publish.retain);     /* Retain Available 0 */
    CHECK(feed(b, BRIDGE_REMOTE, buf, mqtt_encode_ack5(buf, sizeof buf, MQTT_PUBACK, 12, 0, NULL, 0),
               2));
    CHECK(next5(b, BRIDGE_LOCAL, &pk, copy));
    CHECK_EQ(pk.type, MQTT_PUBREC); /* the local QoS 2 flow goes on */
    CHECK_EQ(pk.u.ack.packet_id, 12);
    CHECK(feed(b, BRIDGE_LOCAL, buf, mqtt_encode_ack5(buf, sizeof buf, MQTT_PUBREL, 12, 0, NULL, 0),
               3));
    CHECK(next5(b, BRIDGE_LOCAL, &pk, copy));
    CHECK_EQ(pk.type, MQTT_PUBCOMP); /* answered here: the remote has no QoS 2 state */
    CHECK(broker_bridge_output(b, BRIDGE_REMOTE, &np) == NULL);
    broker_bridge_destroy(b);
}

TEST(bridge5_server_keep_alive_replaces_ours_and_disconnect_reason_is_kept)
{
    bridge_settings s = settings5();
    bridge *b = broker_bridge_create(&s);
    uint8_t buf[128], copy[4096], props[64];
    size_t np = 0;
    mqtt_packet pk;

    np += mqtt_prop_u16(props + np, sizeof props - np, MQTT_PROP_SERVER_KEEP_ALIVE, 4);
    CHECK(up(b, props, np, &pk, copy, 0));
    while (next5(b, BRIDGE_REMOTE, &pk, copy))
        ;
    CHECK(broker_bridge_tick(b, 0, 4000)); /* ours was 10 s: the server's 4 s rules */
    CHECK(next5(b, BRIDGE_REMOTE, &pk, copy));
    CHECK_EQ(pk.type, MQTT_PINGREQ);

    np = mqtt_prop_bytes(props, sizeof props, MQTT_PROP_REASON_STRING,
                         (const uint8_t *)"going\ndown", 10);
    np += mqtt_prop_bytes(props + np, sizeof props - np, MQTT_PROP_SERVER_REFERENCE,
                          (const uint8_t *)"elsewhere", 9);
    {
        mqtt_bytes block = {props, np};
        size_t n = mqtt_encode_reason5(buf, sizeof buf, MQTT_DISCONNECT,
                                       MQTT_RC_SERVER_SHUTTING_DOWN, &block, 1);
        CHECK(!broker_bridge_input(b, BRIDGE_REMOTE, buf, n, 4001));
    }
    CHECK_EQ(broker_bridge_get_state(b), BRIDGE_WAIT);
    /* The reason code, and the peer's text with its control byte masked. */
    CHECK(strstr(broker_bridge_last_error(b), "reason 0x8b: going?down") != NULL);
    broker_bridge_destroy(b);
}

TEST(bridge5_refused_connack_names_its_reason_code)
{
    bridge_settings s = settings5();
    bridge *b = broker_bridge_create(&s);
    uint8_t buf[64], copy[4096];
    mqtt_packet pk;

    CHECK(prime_and_dial(b, 0));
    CHECK(next5(b, BRIDGE_REMOTE, &pk, copy)); /* the CONNECT */
    CHECK(!broker_bridge_input(b, BRIDGE_REMOTE, buf,
                               mqtt_encode_connack5(buf, sizeof buf, false,
                                                    MQTT_RC_NOT_AUTHORIZED, NULL, 0),
                               1));
    CHECK(strstr(broker_bridge_last_error(b), "CONNACK reason 0x87") != NULL);
    broker_bridge_destroy(b);
}

TEST(bridge5_maximum_qos_0_settles_locally_and_too_large_is_dropped_and_counted)
{
    bridge_settings s = settings5();
    bridge *b = broker_bridge_create(&s);
    uint8_t buf[512], copy[4096], props[16], big[300];
    size_t np = 0;
    mqtt_packet pk;

    np += mqtt_prop_u8(props + np, sizeof props - np, MQTT_PROP_MAXIMUM_QOS, 0);
    np += mqtt_prop_u32(props + np, sizeof props - np, MQTT_PROP_MAXIMUM_PACKET_SIZE, 200);
    CHECK(up(b, props, np, &pk, copy, 0));
    /* QoS 1 at a QoS 0 remote: sent at QoS 0, the PUBACK is ours. */
    CHECK(feed(b, BRIDGE_LOCAL, buf, publish5(buf, sizeof buf, "site/out/a", 1, 21, NULL, 0), 1));
    CHECK(next5(b, BRIDGE_REMOTE, &pk, copy));
    CHECK_EQ(pk.u.publish.qos, 0);
    CHECK(next5(b, BRIDGE_LOCAL, &pk, copy));
    CHECK_EQ(pk.type, MQTT_PUBACK);
    CHECK_EQ(pk.u.ack.packet_id, 21);
    /* QoS 2: PUBREC at once, and its PUBREL answered here. */
    CHECK(feed(b, BRIDGE_LOCAL, buf, publish5(buf, sizeof buf, "site/out/b", 2, 22, NULL, 0), 2));
    CHECK(next5(b, BRIDGE_REMOTE, &pk, copy));
    CHECK_EQ(pk.u.publish.qos, 0);
    CHECK(next5(b, BRIDGE_LOCAL, &pk, copy));
    CHECK_EQ(pk.type, MQTT_PUBREC);
    CHECK(feed(b, BRIDGE_LOCAL, buf, mqtt_encode_ack5(buf, sizeof buf, MQTT_PUBREL, 22, 0, NULL, 0),
               3));
    CHECK(next5(b, BRIDGE_LOCAL, &pk, copy));
    CHECK_EQ(pk.type, MQTT_PUBCOMP);
    CHECK(broker_bridge_output(b, BRIDGE_REMOTE, &np) == NULL);
    /* Above the remote's 200 bytes (the local broker should not have sent
     * it): not sent, the local delivery ended with an error PUBACK. */
    memset(big, 'x', sizeof big);
    {
        mqtt_publish p = {.qos = 1, .packet_id = 23,
                          .topic = {(const uint8_t *)"site/out/c", 10},
                          .payload = {big, sizeof big}};
        CHECK(feed(b, BRIDGE_LOCAL, buf, mqtt_encode_publish5(buf, sizeof buf, &p, NULL, 0), 4));
    }
    CHECK(broker_bridge_output(b, BRIDGE_REMOTE, &np) == NULL);
    CHECK(next5(b, BRIDGE_LOCAL, &pk, copy));
    CHECK_EQ(pk.type, MQTT_PUBACK);
    CHECK(pk.u.ack.reason >= 0x80);
    CHECK_EQ(broker_bridge_get_stats(b)->dropped, 1);
    CHECK_EQ(broker_bridge_get_state(b), BRIDGE_UP);
    broker_bridge_destroy(b);
}
