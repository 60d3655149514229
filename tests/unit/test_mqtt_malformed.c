/*
 * test_mqtt_malformed.c - the decoder rejects each malformed input with the
 * specific error for that malformation, reports NEED_MORE on every strict
 * prefix of valid packets, and applies max_size from the header alone.
 */
#include "test.h"

#include "mqtt/mqtt.h"

#define C MQTT_FROM_CLIENT
#define S MQTT_FROM_SERVER

typedef struct bad_case {
    const char *name;
    mqtt_role role;
    uint8_t level;
    uint32_t max_size;
    const char *bytes;
    size_t len;
    mqtt_err want;
} bad_case;

/* sizeof a string literal counts its NUL; the packets may contain 0x00. */
#define ROW(name, role, level, max, bytes, want) { name, role, level, max, bytes, sizeof(bytes) - 1, want }

/* CONNECT variable header prefix: name "MQTT", level 4. */
#define MQTT4 "\x00\x04MQTT\x04"

static const bad_case bad_cases[] = {
    /* Fixed header: type and role. */
    ROW("type 0", C, 4, 0, "\x00\x00", MQTT_ERR_BAD_TYPE),
    ROW("type 15", C, 4, 0, "\xf0\x00", MQTT_ERR_BAD_TYPE),
    ROW("type 15 from server", S, 4, 0, "\xf0\x00", MQTT_ERR_BAD_TYPE),
    ROW("CONNACK from client", C, 4, 0, "\x20\x02\x00\x00", MQTT_ERR_BAD_TYPE),
    ROW("SUBACK from client", C, 4, 0, "\x90\x03\x00\x01\x00", MQTT_ERR_BAD_TYPE),
    ROW("UNSUBACK from client", C, 4, 0, "\xb0\x02\x00\x01", MQTT_ERR_BAD_TYPE),
    ROW("PINGRESP from client", C, 4, 0, "\xd0\x00", MQTT_ERR_BAD_TYPE),
    ROW("CONNECT from server", S, 4, 0, "\x10\x0c" MQTT4 "\x02\x00\x00\x00\x00", MQTT_ERR_BAD_TYPE),
    ROW("SUBSCRIBE from server", S, 4, 0, "\x82\x06\x00\x01\x00\x01" "a\x00", MQTT_ERR_BAD_TYPE),
    ROW("UNSUBSCRIBE from server", S, 4, 0, "\xa2\x05\x00\x01\x00\x01" "a", MQTT_ERR_BAD_TYPE),
    ROW("PINGREQ from server", S, 4, 0, "\xc0\x00", MQTT_ERR_BAD_TYPE),
    ROW("DISCONNECT from server", S, 4, 0, "\xe0\x00", MQTT_ERR_BAD_TYPE),
    ROW("bad type rejected from its first byte", C, 4, 0, "\x00", MQTT_ERR_BAD_TYPE),

    /* Fixed header: Remaining Length. */
    ROW("remaining length with a fifth byte", C, 4, 0, "\x30\xff\xff\xff\xff\x7f", MQTT_ERR_LENGTH_ENCODING),
    ROW("fifth length byte not yet arrived", C, 4, 0, "\x30\x80\x80\x80\x80", MQTT_ERR_LENGTH_ENCODING),
    ROW("non-minimal length 0x80 0x00", C, 4, 0, "\xc0\x80\x00", MQTT_ERR_LENGTH_ENCODING),
    ROW("non-minimal length 0x85 0x80 0x00", C, 4, 0, "\x30\x85\x80\x00", MQTT_ERR_LENGTH_ENCODING),
    ROW("header shows size over max_size", C, 4, 100, "\x30\xc8\x01", MQTT_ERR_TOO_LARGE),
    ROW("protocol-max length over max_size", C, 4, 1u << 20, "\x30\xff\xff\xff\x7f", MQTT_ERR_TOO_LARGE),
    ROW("two-byte PINGREQ over max_size 1", C, 4, 1, "\xc0\x00", MQTT_ERR_TOO_LARGE),

    /* Reserved flag bits, one row per type. */
    ROW("CONNECT flags 0x1", C, 0, 0, "\x11\x0c" MQTT4 "\x02\x00\x00\x00\x00", MQTT_ERR_BAD_FLAGS),
    ROW("CONNACK flags 0x2", S, 4, 0, "\x22\x02\x00\x00", MQTT_ERR_BAD_FLAGS),
    ROW("PUBACK flags 0x2", C, 4, 0, "\x42\x02\x00\x01", MQTT_ERR_BAD_FLAGS),
    ROW("PUBREC flags 0x1", C, 4, 0, "\x51\x02\x00\x01", MQTT_ERR_BAD_FLAGS),
    ROW("PUBREL flags 0x0", C, 4, 0, "\x60\x02\x00\x01", MQTT_ERR_BAD_FLAGS),
    ROW("PUBREL flags 0x3", S, 4, 0, "\x63\x02\x00\x01", MQTT_ERR_BAD_FLAGS),
    ROW("PUBCOMP flags 0x8", C, 4, 0, "\x78\x02\x00\x01", MQTT_ERR_BAD_FLAGS),
    ROW("SUBSCRIBE flags 0x0", C, 4, 0, "\x80\x06\x00\x01\x00\x01" "a\x00", MQTT_ERR_BAD_FLAGS),
    ROW("SUBSCRIBE with DUP at level 4", C, 4, 0, "\x8a\x06\x00\x01\x00\x01" "a\x00", MQTT_ERR_BAD_FLAGS),
    ROW("SUBACK flags 0x4", S, 4, 0, "\x94\x03\x00\x01\x00", MQTT_ERR_BAD_FLAGS),
    ROW("UNSUBSCRIBE flags 0x3", C, 4, 0, "\xa3\x05\x00\x01\x00\x01" "a", MQTT_ERR_BAD_FLAGS),
    ROW("UNSUBACK flags 0x1", S, 4, 0, "\xb1\x02\x00\x01", MQTT_ERR_BAD_FLAGS),
    ROW("PINGREQ flags 0x1", C, 4, 0, "\xc1\x00", MQTT_ERR_BAD_FLAGS),
    ROW("PINGRESP flags 0x8", S, 4, 0, "\xd8\x00", MQTT_ERR_BAD_FLAGS),
    ROW("DISCONNECT flags 0x2", C, 4, 0, "\xe2\x00", MQTT_ERR_BAD_FLAGS),
    ROW("PUBLISH QoS 3", C, 4, 0, "\x36\x05\x00\x01t\x00\x01", MQTT_ERR_BAD_QOS),
    ROW("PUBLISH DUP on QoS 0", C, 4, 0, "\x38\x03\x00\x01t", MQTT_ERR_BAD_FLAGS),
    ROW("PUBLISH DUP on QoS 0, level 0 acts as 4", C, 0, 0, "\x39\x03\x00\x01t", MQTT_ERR_BAD_FLAGS),

    /* PUBLISH body. */
    ROW("PUBLISH topic with +", C, 4, 0, "\x30\x05\x00\x03" "a/+", MQTT_ERR_BAD_TOPIC_NAME),
    ROW("PUBLISH topic with #", S, 4, 0, "\x30\x05\x00\x03" "a/#", MQTT_ERR_BAD_TOPIC_NAME),
    ROW("PUBLISH topic with + inside a level", C, 4, 0, "\x30\x04\x00\x02" "a+", MQTT_ERR_BAD_TOPIC_NAME),
    ROW("PUBLISH empty topic", C, 4, 0, "\x30\x04\x00\x00hi", MQTT_ERR_BAD_TOPIC_NAME),
    ROW("PUBLISH topic overlong UTF-8 '/'", C, 4, 0, "\x30\x05\x00\x03" "a\xc0\xaf", MQTT_ERR_BAD_UTF8),
    ROW("PUBLISH topic overlong 3-byte", C, 4, 0, "\x30\x05\x00\x03\xe0\x80\xaf", MQTT_ERR_BAD_UTF8),
    ROW("PUBLISH topic surrogate U+D800", C, 4, 0, "\x30\x05\x00\x03\xed\xa0\x80", MQTT_ERR_BAD_UTF8),
    ROW("PUBLISH topic U+0000", C, 4, 0, "\x30\x05\x00\x03" "a\x00" "b", MQTT_ERR_BAD_UTF8),
    ROW("PUBLISH topic above U+10FFFF", C, 4, 0, "\x30\x06\x00\x04\xf4\x90\x80\x80", MQTT_ERR_BAD_UTF8),
    ROW("PUBLISH topic cut inside a sequence", C, 4, 0, "\x30\x05\x00\x03" "a\xe2\x82", MQTT_ERR_BAD_UTF8),
    ROW("PUBLISH topic stray continuation byte", C, 4, 0, "\x30\x04\x00\x02\x80" "a", MQTT_ERR_BAD_UTF8),
    ROW("PUBLISH QoS 1 packet id 0", C, 4, 0, "\x32\x05\x00\x01t\x00\x00", MQTT_ERR_ZERO_PACKET_ID),
    ROW("PUBLISH QoS 2 packet id 0", S, 4, 0, "\x34\x06\x00\x01t\x00\x00x", MQTT_ERR_ZERO_PACKET_ID),
    ROW("PUBLISH QoS 1 without packet id", C, 4, 0, "\x32\x03\x00\x01t", MQTT_ERR_TRUNCATED),
    ROW("PUBLISH QoS 1 half a packet id", C, 4, 0, "\x32\x04\x00\x01t\x00", MQTT_ERR_TRUNCATED),
    ROW("PUBLISH topic longer than packet", C, 4, 0, "\x30\x04\x00\x05" "ab", MQTT_ERR_TRUNCATED),
    ROW("PUBLISH one byte of topic length", C, 4, 0, "\x30\x01\x00", MQTT_ERR_TRUNCATED),
    ROW("PUBLISH empty body", C, 4, 0, "\x30\x00", MQTT_ERR_TRUNCATED),
    ROW("PUBLISH at unsupported level 6", C, 6, 0, "\x30\x03\x00\x01t", MQTT_ERR_BAD_PROTOCOL_LEVEL),

    /* Fixed-size packets. */
    ROW("PUBACK packet id 0", C, 4, 0, "\x40\x02\x00\x00", MQTT_ERR_ZERO_PACKET_ID),
    ROW("PUBREC packet id 0", S, 4, 0, "\x50\x02\x00\x00", MQTT_ERR_ZERO_PACKET_ID),
    ROW("PUBREL packet id 0", C, 4, 0, "\x62\x02\x00\x00", MQTT_ERR_ZERO_PACKET_ID),
    ROW("PUBCOMP packet id 0", S, 4, 0, "\x70\x02\x00\x00", MQTT_ERR_ZERO_PACKET_ID),
    ROW("UNSUBACK packet id 0", S, 4, 0, "\xb0\x02\x00\x00", MQTT_ERR_ZERO_PACKET_ID),
    ROW("PUBACK remaining length 3", C, 4, 0, "\x40\x03\x00\x01\x00", MQTT_ERR_TRAILING_BYTES),
    ROW("PUBCOMP remaining length 1", C, 4, 0, "\x70\x01\x00", MQTT_ERR_TRUNCATED),
    ROW("PUBREC length judged from header", C, 4, 0, "\x50\x7f", MQTT_ERR_TRAILING_BYTES),
    ROW("PINGREQ remaining length 1", C, 4, 0, "\xc0\x01\x00", MQTT_ERR_TRAILING_BYTES),
    ROW("PINGRESP remaining length 2", S, 4, 0, "\xd0\x02\x00\x00", MQTT_ERR_TRAILING_BYTES),
    ROW("DISCONNECT body not yet arrived", C, 4, 0, "\xe0\x05", MQTT_ERR_TRAILING_BYTES),
    ROW("CONNACK remaining length 3", S, 4, 0, "\x20\x03\x00\x00\x00", MQTT_ERR_TRAILING_BYTES),
    ROW("CONNACK remaining length 1", S, 4, 0, "\x20\x01\x00", MQTT_ERR_TRUNCATED),
    ROW("CONNACK flags byte bit 1", S, 4, 0, "\x20\x02\x02\x00", MQTT_ERR_BAD_CONNACK),
    ROW("CONNACK return code 6", S, 4, 0, "\x20\x02\x00\x06", MQTT_ERR_BAD_CONNACK),
    ROW("CONNACK session present with refusal", S, 4, 0, "\x20\x02\x01\x05", MQTT_ERR_BAD_CONNACK),

    /* CONNECT. "\x10\x0c" MQTT4 flags keepalive(2) client-id "" is the valid base. */
    ROW("CONNECT name MQTT level 3", C, 0, 0, "\x10\x0c\x00\x04MQTT\x03\x02\x00\x00\x00\x00", MQTT_ERR_BAD_PROTOCOL_LEVEL),
    ROW("CONNECT name MQTT level 6", C, 0, 0, "\x10\x0d\x00\x04MQTT\x06\x02\x00\x00\x00\x00\x00", MQTT_ERR_BAD_PROTOCOL_LEVEL),
    ROW("CONNECT name MQIsdp level 4", C, 0, 0, "\x10\x0e\x00\x06MQIsdp\x04\x02\x00\x00\x00\x00", MQTT_ERR_BAD_PROTOCOL_LEVEL),
    ROW("CONNECT name MQTX", C, 0, 0, "\x10\x0c\x00\x04MQTX\x04\x02\x00\x00\x00\x00", MQTT_ERR_BAD_PROTOCOL_NAME),
    ROW("CONNECT name lowercase mqtt", C, 0, 0, "\x10\x0c\x00\x04mqtt\x04\x02\x00\x00\x00\x00", MQTT_ERR_BAD_PROTOCOL_NAME),
    ROW("CONNECT empty protocol name", C, 0, 0, "\x10\x08\x00\x00\x04\x02\x00\x00\x00\x00", MQTT_ERR_BAD_PROTOCOL_NAME),
    ROW("CONNECT protocol name runs past packet", C, 0, 0, "\x10\x04\x00\x04MQ", MQTT_ERR_TRUNCATED),
    ROW("CONNECT reserved flag bit 0", C, 0, 0, "\x10\x0c" MQTT4 "\x03\x00\x00\x00\x00", MQTT_ERR_BAD_CONNECT_FLAGS),
    ROW("CONNECT will QoS 3", C, 0, 0, "\x10\x0c" MQTT4 "\x1e\x00\x00\x00\x00", MQTT_ERR_BAD_QOS),
    ROW("CONNECT will QoS 1 without will flag", C, 0, 0, "\x10\x0c" MQTT4 "\x0a\x00\x00\x00\x00", MQTT_ERR_BAD_CONNECT_FLAGS),
    ROW("CONNECT will retain without will flag", C, 0, 0, "\x10\x0c" MQTT4 "\x22\x00\x00\x00\x00", MQTT_ERR_BAD_CONNECT_FLAGS),
    ROW("CONNECT password without username", C, 0, 0, "\x10\x0e" MQTT4 "\x42\x00\x00\x00\x00\x00\x00", MQTT_ERR_BAD_CONNECT_FLAGS),
    ROW("CONNECT trailing byte after client id", C, 0, 0, "\x10\x0d" MQTT4 "\x02\x00\x00\x00\x00\x00", MQTT_ERR_TRAILING_BYTES),
    ROW("CONNECT password bytes without password flag", C, 0, 0, "\x10\x10" MQTT4 "\x82\x00\x00\x00\x00\x00\x00\x00\x00", MQTT_ERR_TRAILING_BYTES),
    ROW("CONNECT ends after connect flags", C, 0, 0, "\x10\x08" MQTT4 "\x02", MQTT_ERR_TRUNCATED),
    ROW("CONNECT ends after keepalive", C, 0, 0, "\x10\x0a" MQTT4 "\x02\x00\x3c", MQTT_ERR_TRUNCATED),
    ROW("CONNECT client id runs past packet", C, 0, 0, "\x10\x0d" MQTT4 "\x02\x00\x00\x00\x05" "a", MQTT_ERR_TRUNCATED),
    ROW("CONNECT username flag without username", C, 0, 0, "\x10\x0c" MQTT4 "\x82\x00\x00\x00\x00", MQTT_ERR_TRUNCATED),
    ROW("CONNECT will flag without will message", C, 0, 0, "\x10\x0f" MQTT4 "\x06\x00\x00\x00\x00\x00\x01t", MQTT_ERR_TRUNCATED),
    ROW("CONNECT client id invalid UTF-8", C, 0, 0, "\x10\x0d" MQTT4 "\x02\x00\x00\x00\x01\xff", MQTT_ERR_BAD_UTF8),
    ROW("CONNECT will topic with #", C, 0, 0, "\x10\x11" MQTT4 "\x06\x00\x00\x00\x00\x00\x01#\x00\x00", MQTT_ERR_BAD_TOPIC_NAME),
    ROW("CONNECT empty will topic", C, 0, 0, "\x10\x10" MQTT4 "\x06\x00\x00\x00\x00\x00\x00\x00\x00", MQTT_ERR_BAD_TOPIC_NAME),
    ROW("CONNECT username with U+0000", C, 0, 0, "\x10\x0f" MQTT4 "\x82\x00\x00\x00\x00\x00\x01\x00", MQTT_ERR_BAD_UTF8),

    /* SUBSCRIBE. */
    ROW("SUBSCRIBE packet id 0", C, 4, 0, "\x82\x06\x00\x00\x00\x01" "a\x00", MQTT_ERR_ZERO_PACKET_ID),
    ROW("SUBSCRIBE without entries", C, 4, 0, "\x82\x02\x00\x01", MQTT_ERR_NO_TOPICS),
    ROW("SUBSCRIBE without packet id", C, 4, 0, "\x82\x00", MQTT_ERR_TRUNCATED),
    ROW("SUBSCRIBE filter a/#/b", C, 4, 0, "\x82\x0a\x00\x01\x00\x05" "a/#/b\x00", MQTT_ERR_BAD_TOPIC_FILTER),
    ROW("SUBSCRIBE filter a+", C, 4, 0, "\x82\x07\x00\x01\x00\x02" "a+\x00", MQTT_ERR_BAD_TOPIC_FILTER),
    ROW("SUBSCRIBE filter #a", C, 4, 0, "\x82\x07\x00\x01\x00\x02" "#a\x00", MQTT_ERR_BAD_TOPIC_FILTER),
    ROW("SUBSCRIBE filter a/b#", C, 4, 0, "\x82\x09\x00\x01\x00\x04" "a/b#\x01", MQTT_ERR_BAD_TOPIC_FILTER),
    ROW("SUBSCRIBE empty filter", C, 4, 0, "\x82\x05\x00\x01\x00\x00\x00", MQTT_ERR_BAD_TOPIC_FILTER),
    ROW("SUBSCRIBE filter invalid UTF-8", C, 4, 0, "\x82\x06\x00\x01\x00\x01\xc3\x00", MQTT_ERR_BAD_UTF8),
    ROW("SUBSCRIBE options upper bit 2", C, 4, 0, "\x82\x06\x00\x01\x00\x01" "a\x04", MQTT_ERR_BAD_FLAGS),
    ROW("SUBSCRIBE options upper bit 7", C, 4, 0, "\x82\x06\x00\x01\x00\x01" "a\x81", MQTT_ERR_BAD_FLAGS),
    ROW("SUBSCRIBE requested QoS 3", C, 4, 0, "\x82\x06\x00\x01\x00\x01" "a\x03", MQTT_ERR_BAD_QOS),
    ROW("SUBSCRIBE missing options byte", C, 4, 0, "\x82\x05\x00\x01\x00\x01" "a", MQTT_ERR_TRUNCATED),
    ROW("SUBSCRIBE second entry bad", C, 4, 0, "\x82\x0a\x00\x01\x00\x01" "a\x01\x00\x01+\x07", MQTT_ERR_BAD_FLAGS),
    ROW("SUBSCRIBE second entry truncated", C, 4, 0, "\x82\x08\x00\x01\x00\x01" "a\x01\x00\x01", MQTT_ERR_TRUNCATED),

    /* UNSUBSCRIBE. */
    ROW("UNSUBSCRIBE without filters", C, 4, 0, "\xa2\x02\x00\x01", MQTT_ERR_NO_TOPICS),
    ROW("UNSUBSCRIBE packet id 0", C, 4, 0, "\xa2\x05\x00\x00\x00\x01" "a", MQTT_ERR_ZERO_PACKET_ID),
    ROW("UNSUBSCRIBE filter +a", C, 4, 0, "\xa2\x06\x00\x01\x00\x02" "+a", MQTT_ERR_BAD_TOPIC_FILTER),
    ROW("UNSUBSCRIBE filter length past packet", C, 4, 0, "\xa2\x05\x00\x01\x00\x02" "a", MQTT_ERR_TRUNCATED),

    /* SUBACK. */
    ROW("SUBACK return code 3", S, 4, 0, "\x90\x03\x00\x01\x03", MQTT_ERR_BAD_SUBACK_CODE),
    ROW("SUBACK return code 0x81", S, 4, 0, "\x90\x04\x00\x01\x00\x81", MQTT_ERR_BAD_SUBACK_CODE),
    ROW("SUBACK without return codes", S, 4, 0, "\x90\x02\x00\x01", MQTT_ERR_NO_TOPICS),
    ROW("SUBACK packet id 0", S, 4, 0, "\x90\x03\x00\x00\x00", MQTT_ERR_ZERO_PACKET_ID),
};

enum { N_BAD = sizeof bad_cases / sizeof bad_cases[0] };

TEST(mqtt_decode_rejects_each_malformed_input_with_its_specific_error)
{
    CHECK(N_BAD >= 40);
    int failed = 0;
    for (size_t i = 0; i < N_BAD; i++) {
        const bad_case *bc = &bad_cases[i];
        mqtt_packet pkt;
        size_t used = 12345;
        mqtt_err got = mqtt_decode((const uint8_t *)bc->bytes, bc->len, bc->role, bc->level,
                                   bc->max_size, &pkt, &used);
        if (got != bc->want || used != 12345) {
            char msg[256];
            snprintf(msg, sizeof msg, "\"%s\": got \"%s\", want \"%s\"", bc->name,
                     mqtt_err_str(got), mqtt_err_str(bc->want));
            test_fail(__FILE__, __LINE__, msg);
            failed = 1;
        }
    }
    CHECK(!failed);
}

TEST(mqtt_malformed_table_names_are_unique)
{
    for (size_t i = 0; i < N_BAD; i++)
        for (size_t j = i + 1; j < N_BAD; j++)
            CHECK(strcmp(bad_cases[i].name, bad_cases[j].name) != 0);
}

/* Every strict prefix of a valid packet is NEED_MORE and leaves *consumed
 * alone; the whole packet decodes. */
static void check_prefixes(const uint8_t *pkt_bytes, size_t n, mqtt_role role)
{
    mqtt_packet pkt;
    for (size_t k = 0; k < n; k++) {
        size_t used = 777;
        mqtt_err e = mqtt_decode(pkt_bytes, k, role, 4, 0, &pkt, &used);
        if (e != MQTT_NEED_MORE || used != 777) {
            char msg[128];
            snprintf(msg, sizeof msg, "prefix %zu of %zu: %s", k, n, mqtt_err_str(e));
            test_fail(__FILE__, __LINE__, msg);
            return;
        }
    }
    size_t used = 0;
    CHECK_EQ(mqtt_decode(pkt_bytes, n, role, 4, 0, &pkt, &used), MQTT_OK);
    CHECK_EQ(used, n);
}

static mqtt_bytes str(const char *s)
{
    return (mqtt_bytes){ (const uint8_t *)s, strlen(s) };
}

TEST(mqtt_decode_needs_more_on_every_strict_prefix_of_valid_packets)
{
    static uint8_t payload[300];
    uint8_t buf[1024];
    size_t n;

    mqtt_connect c = { .level = 4, .will_flag = true, .will_qos = 1, .username_flag = true,
                       .password_flag = true, .client_id = str("id"), .will_topic = str("w/t"),
                       .will_payload = str("bye"), .username = str("u"), .password = str("p") };
    n = mqtt_encode_connect(buf, sizeof buf, &c);
    check_prefixes(buf, n, MQTT_FROM_CLIENT);

    mqtt_publish p = { .qos = 1, .packet_id = 3, .topic = str("a/b"),
                       .payload = { payload, sizeof payload } }; /* two-byte length */
    n = mqtt_encode_publish(buf, sizeof buf, 4, &p);
    check_prefixes(buf, n, MQTT_FROM_CLIENT);

    const mqtt_bytes filters[] = { str("a/+"), str("#") };
    const uint8_t qos[] = { 1, 2 };
    n = mqtt_encode_subscribe(buf, sizeof buf, 4, 9, filters, qos, 2);
    check_prefixes(buf, n, MQTT_FROM_CLIENT);
    n = mqtt_encode_unsubscribe(buf, sizeof buf, 4, 9, filters, 2);
    check_prefixes(buf, n, MQTT_FROM_CLIENT);
    n = mqtt_encode_ack(buf, sizeof buf, 4, MQTT_PUBREL, 9);
    check_prefixes(buf, n, MQTT_FROM_CLIENT);
    n = mqtt_encode_empty(buf, sizeof buf, MQTT_PINGREQ);
    check_prefixes(buf, n, MQTT_FROM_CLIENT);
    n = mqtt_encode_connack(buf, sizeof buf, 4, true, 0);
    check_prefixes(buf, n, MQTT_FROM_SERVER);
    n = mqtt_encode_suback(buf, sizeof buf, 4, 9, qos, 2);
    check_prefixes(buf, n, MQTT_FROM_SERVER);
}

TEST(mqtt_decode_accepts_packet_exactly_at_max_size)
{
    const uint8_t pub[] = { 0x30, 0x05, 0x00, 0x01, 't', 'h', 'i' };
    mqtt_packet pkt;
    size_t used = 0;
    CHECK_EQ(mqtt_decode(pub, sizeof pub, MQTT_FROM_CLIENT, 4, 7, &pkt, &used), MQTT_OK);
    CHECK_EQ(mqtt_decode(pub, sizeof pub, MQTT_FROM_CLIENT, 4, 6, &pkt, &used), MQTT_ERR_TOO_LARGE);
    /* max_size 0: the protocol maximum, so a large header is just NEED_MORE. */
    const uint8_t big[] = { 0x30, 0xff, 0xff, 0xff, 0x7f, 0x00 };
    CHECK_EQ(mqtt_decode(big, sizeof big, MQTT_FROM_CLIENT, 4, 0, &pkt, &used), MQTT_NEED_MORE);
}

TEST(mqtt_decode_level_3_tolerates_dup_where_31_clients_set_it)
{
    const uint8_t sub_dup[] = { 0x8a, 0x06, 0x00, 0x01, 0x00, 0x01, 'a', 0x01 };
    const uint8_t pubrel_dup[] = { 0x6a, 0x02, 0x00, 0x01 };
    const uint8_t unsub_dup[] = { 0xaa, 0x05, 0x00, 0x01, 0x00, 0x01, 'a' };
    const uint8_t pub_dup_qos0[] = { 0x38, 0x03, 0x00, 0x01, 't' };
    mqtt_packet pkt;
    size_t used = 0;
    CHECK_EQ(mqtt_decode(sub_dup, sizeof sub_dup, MQTT_FROM_CLIENT, 3, 0, &pkt, &used), MQTT_OK);
    CHECK_EQ(mqtt_decode(pubrel_dup, sizeof pubrel_dup, MQTT_FROM_CLIENT, 3, 0, &pkt, &used), MQTT_OK);
    CHECK_EQ(mqtt_decode(unsub_dup, sizeof unsub_dup, MQTT_FROM_CLIENT, 3, 0, &pkt, &used), MQTT_OK);
    CHECK_EQ(mqtt_decode(pub_dup_qos0, sizeof pub_dup_qos0, MQTT_FROM_CLIENT, 3, 0, &pkt, &used),
             MQTT_OK);
    CHECK(pkt.u.publish.dup);
    /* The same bytes are malformed at level 4 and at level 0 (decoded as 4). */
    CHECK_EQ(mqtt_decode(sub_dup, sizeof sub_dup, MQTT_FROM_CLIENT, 4, 0, &pkt, &used), MQTT_ERR_BAD_FLAGS);
    CHECK_EQ(mqtt_decode(pubrel_dup, sizeof pubrel_dup, MQTT_FROM_CLIENT, 0, 0, &pkt, &used),
             MQTT_ERR_BAD_FLAGS);
    CHECK_EQ(mqtt_decode(pub_dup_qos0, sizeof pub_dup_qos0, MQTT_FROM_CLIENT, 4, 0, &pkt, &used),
             MQTT_ERR_BAD_FLAGS);
}

TEST(mqtt_decode_accepts_control_characters_in_strings)
{
    /* U+0001 and U+007F in the topic, U+0085 in the payload's neighbour. */
    const uint8_t pub[] = { 0x30, 0x07, 0x00, 0x05, 'a', 0x01, 0x7f, 0xc2, 0x85 };
    mqtt_packet pkt;
    size_t used = 0;
    CHECK_EQ(mqtt_decode(pub, sizeof pub, MQTT_FROM_CLIENT, 4, 0, &pkt, &used), MQTT_OK);
    CHECK_EQ(pkt.u.publish.topic.len, 5);
}

TEST(mqtt_decode_connect_mqisdp_level_3_from_hand_built_bytes)
{
    const uint8_t b[] = { 0x10, 0x11, 0x00, 0x06, 'M', 'Q', 'I', 's', 'd', 'p', 0x03, 0x02, 0x00, 0x0a,
                          0x00, 0x03, 'a', 'b', 'c' };
    mqtt_packet pkt;
    size_t used = 0;
    CHECK_EQ(mqtt_decode(b, sizeof b, MQTT_FROM_CLIENT, 0, 0, &pkt, &used), MQTT_OK);
    CHECK_EQ(pkt.u.connect.level, 3);
    CHECK_EQ(pkt.u.connect.keepalive, 10);
    CHECK(pkt.u.connect.clean_session);
    CHECK_EQ(pkt.u.connect.client_id.len, 3);
    CHECK_MEM(pkt.u.connect.client_id.p, "abc", 3);
}
