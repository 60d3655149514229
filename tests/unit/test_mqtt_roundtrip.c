/*
 * test_mqtt_roundtrip.c - every packet type encoded with the codec's own
 * encoders decodes back to the same fields, for both protocol levels and for
 * each role that may receive it; and the other role refuses it.
 */
#include "test.h"

#include "mqtt/mqtt.h"

enum { BUF = 4096 };

static const uint8_t levels[] = { MQTT_LEVEL_31, MQTT_LEVEL_311 };

static mqtt_bytes str(const char *s)
{
    return (mqtt_bytes){ (const uint8_t *)s, strlen(s) };
}

static int bytes_eq(mqtt_bytes a, mqtt_bytes b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

/* Decode a buffer that must hold exactly one valid packet. */
static mqtt_err decode_all(const uint8_t *buf, size_t n, mqtt_role role, uint8_t level,
                           mqtt_packet *pkt)
{
    size_t used = 0;
    mqtt_err e = mqtt_decode(buf, n, role, level, 0, pkt, &used);
    if (e == MQTT_OK && (used != n || pkt->size != n))
        return MQTT_ERR__COUNT; /* a value no decoder returns: flags the mismatch */
    return e;
}

static void connect_roundtrip(const mqtt_connect *in)
{
    uint8_t buf[BUF];
    mqtt_packet pkt;
    size_t n = mqtt_encode_connect(buf, sizeof buf, in);
    CHECK(n > 0);
    CHECK_EQ(decode_all(buf, n, MQTT_FROM_CLIENT, 0, &pkt), MQTT_OK);
    CHECK_EQ(pkt.type, MQTT_CONNECT);
    const mqtt_connect *c = &pkt.u.connect;
    CHECK_EQ(c->level, in->level);
    CHECK_EQ(c->clean_session, in->clean_session);
    CHECK_EQ(c->will_flag, in->will_flag);
    CHECK_EQ(c->will_retain, in->will_retain);
    CHECK_EQ(c->will_qos, in->will_qos);
    CHECK_EQ(c->username_flag, in->username_flag);
    CHECK_EQ(c->password_flag, in->password_flag);
    CHECK_EQ(c->keepalive, in->keepalive);
    CHECK(bytes_eq(c->client_id, in->client_id));
    if (in->will_flag) {
        CHECK(bytes_eq(c->will_topic, in->will_topic));
        CHECK(bytes_eq(c->will_payload, in->will_payload));
    }
    if (in->username_flag)
        CHECK(bytes_eq(c->username, in->username));
    if (in->password_flag)
        CHECK(bytes_eq(c->password, in->password));
    /* The level argument is irrelevant for CONNECT: it carries its own. */
    CHECK_EQ(decode_all(buf, n, MQTT_FROM_CLIENT, MQTT_LEVEL_31, &pkt), MQTT_OK);
    CHECK_EQ(decode_all(buf, n, MQTT_FROM_SERVER, 0, &pkt), MQTT_ERR_BAD_TYPE);
}

TEST(mqtt_connect_minimal_roundtrips_at_both_levels)
{
    for (size_t i = 0; i < sizeof levels; i++) {
        mqtt_connect c = { .level = levels[i], .client_id = str("") };
        connect_roundtrip(&c);
        c.clean_session = true;
        c.keepalive = 60;
        c.client_id = str("sensor-42");
        connect_roundtrip(&c);
    }
}

TEST(mqtt_connect_with_will_user_and_binary_password_roundtrips)
{
    static const uint8_t pw[] = { 0x00, 0xff, 0x80, 0x01 };
    static const uint8_t will[] = { 0x00, 0xc0, 0xaf };
    for (size_t i = 0; i < sizeof levels; i++) {
        for (uint8_t q = 0; q <= 2; q++) {
            mqtt_connect c = {
                .level = levels[i],
                .will_flag = true,
                .will_qos = q,
                .will_retain = q == 1,
                .username_flag = true,
                .password_flag = true,
                .keepalive = 65535,
                .client_id = str("cl\xc3\xa9nt"),
                .will_topic = str("dev/\xe2\x82\xac/status"),
                .will_payload = { will, sizeof will },
                .username = str("user"),
                .password = { pw, sizeof pw },
            };
            connect_roundtrip(&c);
        }
    }
}

TEST(mqtt_connect_username_without_password_and_empty_fields_roundtrip)
{
    mqtt_connect c = {
        .level = MQTT_LEVEL_311,
        .will_flag = true,
        .username_flag = true,
        .client_id = str("x"),
        .will_topic = str("/"),
        .will_payload = str(""),
        .username = str(""),
    };
    connect_roundtrip(&c);
}

TEST(mqtt_connack_roundtrips_every_return_code_at_both_levels)
{
    uint8_t buf[BUF];
    mqtt_packet pkt;
    for (size_t i = 0; i < sizeof levels; i++) {
        for (uint8_t rc = 0; rc <= MQTT_CONNACK_NOT_AUTHORIZED; rc++) {
            size_t n = mqtt_encode_connack(buf, sizeof buf, levels[i], false, rc);
            CHECK_EQ(n, 4);
            CHECK_EQ(decode_all(buf, n, MQTT_FROM_SERVER, levels[i], &pkt), MQTT_OK);
            CHECK_EQ(pkt.type, MQTT_CONNACK);
            CHECK_EQ(pkt.u.connack.return_code, rc);
            CHECK(!pkt.u.connack.session_present);
            CHECK_EQ(decode_all(buf, n, MQTT_FROM_CLIENT, levels[i], &pkt), MQTT_ERR_BAD_TYPE);
        }
    }
    size_t n = mqtt_encode_connack(buf, sizeof buf, MQTT_LEVEL_311, true, 0);
    CHECK_EQ(decode_all(buf, n, MQTT_FROM_SERVER, MQTT_LEVEL_311, &pkt), MQTT_OK);
    CHECK(pkt.u.connack.session_present);
}

static void publish_roundtrip(uint8_t level, const mqtt_publish *in)
{
    static uint8_t buf[1u << 22];
    mqtt_packet pkt;
    size_t want = mqtt_publish_size(level, in->topic.len, in->payload.len, in->qos);
    size_t n = mqtt_encode_publish(buf, sizeof buf, level, in);
    CHECK_EQ(n, want);
    const mqtt_role roles[] = { MQTT_FROM_CLIENT, MQTT_FROM_SERVER };
    for (size_t r = 0; r < 2; r++) {
        CHECK_EQ(decode_all(buf, n, roles[r], level, &pkt), MQTT_OK);
        CHECK_EQ(pkt.type, MQTT_PUBLISH);
        const mqtt_publish *p = &pkt.u.publish;
        CHECK_EQ(p->qos, in->qos);
        CHECK_EQ(p->dup, in->dup);
        CHECK_EQ(p->retain, in->retain);
        CHECK_EQ(p->packet_id, in->packet_id);
        CHECK(bytes_eq(p->topic, in->topic));
        CHECK(bytes_eq(p->payload, in->payload));
        CHECK(p->topic.p >= buf && p->topic.p < buf + n); /* a view, not a copy */
    }
}

TEST(mqtt_publish_roundtrips_every_qos_and_flag_at_both_levels)
{
    for (size_t i = 0; i < sizeof levels; i++) {
        for (uint8_t q = 0; q <= 2; q++) {
            for (int flags = 0; flags < 4; flags++) {
                mqtt_publish p = {
                    .qos = q,
                    .retain = flags & 1,
                    .dup = q > 0 && (flags & 2),
                    .packet_id = q ? (uint16_t)(q * 1000 + 1) : 0,
                    .topic = str("sport/tennis/\xf0\x9f\x8e\xbe"),
                    .payload = str("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"),
                };
                publish_roundtrip(levels[i], &p);
            }
        }
    }
}

TEST(mqtt_publish_roundtrips_empty_payload_and_max_packet_id)
{
    mqtt_publish p = { .qos = 2, .packet_id = 65535, .topic = str("t"), .payload = str("") };
    publish_roundtrip(MQTT_LEVEL_311, &p);
    p.qos = 0;
    p.packet_id = 0;
    publish_roundtrip(MQTT_LEVEL_31, &p);
}

/* Remaining Lengths that need 1, 2, 3 and 4 bytes, at each boundary. */
TEST(mqtt_publish_roundtrips_across_remaining_length_boundaries)
{
    static uint8_t payload[2200000];
    const size_t rls[] = { 127, 128, 16383, 16384, 2097151, 2097152 };
    memset(payload, 'x', sizeof payload);
    for (size_t i = 0; i < sizeof rls / sizeof rls[0]; i++) {
        mqtt_publish p = { .qos = 1, .packet_id = 7, .topic = str("a/b") };
        p.payload = (mqtt_bytes){ payload, rls[i] - 2 - 3 - 2 };
        publish_roundtrip(MQTT_LEVEL_311, &p);
    }
}

TEST(mqtt_acks_roundtrip_in_both_directions_at_both_levels)
{
    const mqtt_type both[] = { MQTT_PUBACK, MQTT_PUBREC, MQTT_PUBREL, MQTT_PUBCOMP };
    const uint16_t ids[] = { 1, 0x1234, 65535 };
    uint8_t buf[BUF];
    mqtt_packet pkt;
    for (size_t l = 0; l < sizeof levels; l++) {
        for (size_t t = 0; t < 4; t++) {
            for (size_t k = 0; k < 3; k++) {
                size_t n = mqtt_encode_ack(buf, sizeof buf, levels[l], both[t], ids[k]);
                CHECK_EQ(n, 4);
                CHECK_EQ(decode_all(buf, n, MQTT_FROM_CLIENT, levels[l], &pkt), MQTT_OK);
                CHECK_EQ(pkt.type, both[t]);
                CHECK_EQ(pkt.u.ack.packet_id, ids[k]);
                CHECK_EQ(decode_all(buf, n, MQTT_FROM_SERVER, levels[l], &pkt), MQTT_OK);
                CHECK_EQ(pkt.u.ack.packet_id, ids[k]);
            }
        }
        size_t n = mqtt_encode_ack(buf, sizeof buf, levels[l], MQTT_UNSUBACK, 99);
        CHECK_EQ(decode_all(buf, n, MQTT_FROM_SERVER, levels[l], &pkt), MQTT_OK);
        CHECK_EQ(pkt.type, MQTT_UNSUBACK);
        CHECK_EQ(pkt.u.ack.packet_id, 99);
        CHECK_EQ(decode_all(buf, n, MQTT_FROM_CLIENT, levels[l], &pkt), MQTT_ERR_BAD_TYPE);
    }
}

TEST(mqtt_subscribe_roundtrips_and_iterates_every_entry)
{
    const mqtt_bytes filters[] = { str("a/b"), str("+/x/#"), str("#"), str("$SYS/\xc3\xa9"),
                                   str("/") };
    const uint8_t qos[] = { 0, 1, 2, 1, 0 };
    uint8_t buf[BUF];
    mqtt_packet pkt;
    for (size_t l = 0; l < sizeof levels; l++) {
        size_t n = mqtt_encode_subscribe(buf, sizeof buf, levels[l], 42, filters, qos, 5);
        CHECK(n > 0);
        CHECK_EQ(decode_all(buf, n, MQTT_FROM_CLIENT, levels[l], &pkt), MQTT_OK);
        CHECK_EQ(pkt.type, MQTT_SUBSCRIBE);
        CHECK_EQ(pkt.u.subscribe.packet_id, 42);
        CHECK_EQ(pkt.u.subscribe.count, 5);
        size_t pos = 0, i = 0;
        mqtt_bytes f;
        uint8_t q;
        while (mqtt_subscribe_next(&pkt.u.subscribe, &pos, &f, &q)) {
            CHECK(i < 5);
            CHECK(bytes_eq(f, filters[i]));
            CHECK_EQ(q, qos[i]);
            i++;
        }
        CHECK_EQ(i, 5);
        CHECK(!mqtt_subscribe_next(&pkt.u.subscribe, &pos, &f, &q)); /* stays at the end */
        CHECK_EQ(decode_all(buf, n, MQTT_FROM_SERVER, levels[l], &pkt), MQTT_ERR_BAD_TYPE);
    }
}

TEST(mqtt_unsubscribe_roundtrips_and_iterates_every_filter)
{
    const mqtt_bytes filters[] = { str("a/+"), str("b/#") };
    uint8_t buf[BUF];
    mqtt_packet pkt;
    for (size_t l = 0; l < sizeof levels; l++) {
        size_t n = mqtt_encode_unsubscribe(buf, sizeof buf, levels[l], 7, filters, 2);
        CHECK(n > 0);
        CHECK_EQ(decode_all(buf, n, MQTT_FROM_CLIENT, levels[l], &pkt), MQTT_OK);
        CHECK_EQ(pkt.type, MQTT_UNSUBSCRIBE);
        CHECK_EQ(pkt.u.unsubscribe.packet_id, 7);
        CHECK_EQ(pkt.u.unsubscribe.count, 2);
        size_t pos = 0, i = 0;
        mqtt_bytes f;
        while (mqtt_unsubscribe_next(&pkt.u.unsubscribe, &pos, &f)) {
            CHECK(i < 2);
            CHECK(bytes_eq(f, filters[i]));
            i++;
        }
        CHECK_EQ(i, 2);
        CHECK_EQ(decode_all(buf, n, MQTT_FROM_SERVER, levels[l], &pkt), MQTT_ERR_BAD_TYPE);
    }
}

TEST(mqtt_suback_roundtrips_every_return_code)
{
    const uint8_t codes[] = { 0, 1, 2, MQTT_SUBACK_FAILURE };
    uint8_t buf[BUF];
    mqtt_packet pkt;
    for (size_t l = 0; l < sizeof levels; l++) {
        size_t n = mqtt_encode_suback(buf, sizeof buf, levels[l], 300, codes, 4);
        CHECK_EQ(n, 8);
        CHECK_EQ(decode_all(buf, n, MQTT_FROM_SERVER, levels[l], &pkt), MQTT_OK);
        CHECK_EQ(pkt.type, MQTT_SUBACK);
        CHECK_EQ(pkt.u.suback.packet_id, 300);
        CHECK_EQ(pkt.u.suback.count, 4);
        size_t pos = 0, i = 0;
        uint8_t c;
        while (mqtt_suback_next(&pkt.u.suback, &pos, &c)) {
            CHECK(i < 4);
            CHECK_EQ(c, codes[i]);
            i++;
        }
        CHECK_EQ(i, 4);
        CHECK_EQ(decode_all(buf, n, MQTT_FROM_CLIENT, levels[l], &pkt), MQTT_ERR_BAD_TYPE);
    }
}

TEST(mqtt_empty_packets_roundtrip_only_in_their_direction)
{
    uint8_t buf[BUF];
    mqtt_packet pkt;
    const struct {
        mqtt_type type;
        mqtt_role ok, bad;
    } cases[] = {
        { MQTT_PINGREQ, MQTT_FROM_CLIENT, MQTT_FROM_SERVER },
        { MQTT_PINGRESP, MQTT_FROM_SERVER, MQTT_FROM_CLIENT },
        { MQTT_DISCONNECT, MQTT_FROM_CLIENT, MQTT_FROM_SERVER },
    };
    for (size_t l = 0; l < sizeof levels; l++) {
        for (size_t i = 0; i < 3; i++) {
            size_t n = mqtt_encode_empty(buf, sizeof buf, cases[i].type);
            CHECK_EQ(n, 2);
            CHECK_EQ(decode_all(buf, n, cases[i].ok, levels[l], &pkt), MQTT_OK);
            CHECK_EQ(pkt.type, cases[i].type);
            CHECK_EQ(decode_all(buf, n, cases[i].bad, levels[l], &pkt), MQTT_ERR_BAD_TYPE);
        }
    }
}

TEST(mqtt_decode_consumes_only_the_first_of_two_packets)
{
    uint8_t buf[64];
    mqtt_packet pkt;
    size_t used = 0;
    mqtt_publish p = { .qos = 1, .packet_id = 5, .topic = str("t"), .payload = str("hello") };
    size_t n1 = mqtt_encode_publish(buf, sizeof buf, MQTT_LEVEL_311, &p);
    size_t n2 = mqtt_encode_empty(buf + n1, sizeof buf - n1, MQTT_PINGREQ);
    CHECK_EQ(mqtt_decode(buf, n1 + n2, MQTT_FROM_CLIENT, 4, 0, &pkt, &used), MQTT_OK);
    CHECK_EQ(used, n1);
    CHECK(bytes_eq(pkt.u.publish.payload, str("hello"))); /* payload stops at the packet */
    CHECK_EQ(mqtt_decode(buf + used, n2, MQTT_FROM_CLIENT, 4, 0, &pkt, &used), MQTT_OK);
    CHECK_EQ(pkt.type, MQTT_PINGREQ);
    CHECK_EQ(used, 2);
}
