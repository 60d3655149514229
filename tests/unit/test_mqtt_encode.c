/*
 * test_mqtt_encode.c - encoders produce the exact bytes of the spec, report
 * sizes exactly, never write past cap, and normalise the inputs they document
 * (DUP/packet id at QoS 0, Session Present). Also the error strings and the
 * list iterators' bounds.
 */
#include "test.h"

#include "mqtt/mqtt.h"

static mqtt_bytes str(const char *s)
{
    return (mqtt_bytes){ (const uint8_t *)s, strlen(s) };
}

#define EXPECT_BYTES(buf, n, lit)                                                \
    do {                                                                         \
        CHECK_EQ((n), sizeof(lit) - 1);                                          \
        CHECK_MEM((buf), (lit), sizeof(lit) - 1);                                \
    } while (0)

TEST(mqtt_encode_empty_packets_exact_bytes)
{
    uint8_t b[8];
    EXPECT_BYTES(b, mqtt_encode_empty(b, sizeof b, MQTT_PINGREQ), "\xc0\x00");
    EXPECT_BYTES(b, mqtt_encode_empty(b, sizeof b, MQTT_PINGRESP), "\xd0\x00");
    EXPECT_BYTES(b, mqtt_encode_empty(b, sizeof b, MQTT_DISCONNECT), "\xe0\x00");
}

TEST(mqtt_encode_ack_exact_bytes_with_pubrel_flags)
{
    uint8_t b[8];
    EXPECT_BYTES(b, mqtt_encode_ack(b, sizeof b, 4, MQTT_PUBACK, 0x1234), "\x40\x02\x12\x34");
    EXPECT_BYTES(b, mqtt_encode_ack(b, sizeof b, 4, MQTT_PUBREC, 1), "\x50\x02\x00\x01");
    EXPECT_BYTES(b, mqtt_encode_ack(b, sizeof b, 3, MQTT_PUBREL, 0xffff), "\x62\x02\xff\xff");
    EXPECT_BYTES(b, mqtt_encode_ack(b, sizeof b, 4, MQTT_PUBCOMP, 0x0100), "\x70\x02\x01\x00");
    EXPECT_BYTES(b, mqtt_encode_ack(b, sizeof b, 4, MQTT_UNSUBACK, 7), "\xb0\x02\x00\x07");
}

TEST(mqtt_encode_connack_session_present_only_where_allowed)
{
    uint8_t b[8];
    EXPECT_BYTES(b, mqtt_encode_connack(b, sizeof b, 4, true, 0), "\x20\x02\x01\x00");
    EXPECT_BYTES(b, mqtt_encode_connack(b, sizeof b, 4, false, 0), "\x20\x02\x00\x00");
    /* [MQTT-3.2.2-4]: refusal never carries Session Present. */
    EXPECT_BYTES(b, mqtt_encode_connack(b, sizeof b, 4, true, 5), "\x20\x02\x00\x05");
    /* 3.1 has no Session Present flag. */
    EXPECT_BYTES(b, mqtt_encode_connack(b, sizeof b, 3, true, 0), "\x20\x02\x00\x00");
    /* Level 0 (CONNECT refused before a level was known) encodes as 3.1.1. */
    EXPECT_BYTES(b, mqtt_encode_connack(b, sizeof b, 0, false, 1), "\x20\x02\x00\x01");
}

TEST(mqtt_encode_publish_exact_bytes)
{
    uint8_t b[64];
    mqtt_publish p = { .qos = 1, .retain = true, .packet_id = 10, .topic = str("a/b"),
                       .payload = str("hi") };
    EXPECT_BYTES(b, mqtt_encode_publish(b, sizeof b, 4, &p), "\x33\x09\x00\x03" "a/b\x00\x0a" "hi");
    p.qos = 2;
    p.dup = true;
    p.retain = false;
    EXPECT_BYTES(b, mqtt_encode_publish(b, sizeof b, 4, &p), "\x3c\x09\x00\x03" "a/b\x00\x0a" "hi");
}

TEST(mqtt_encode_publish_qos0_drops_dup_and_packet_id)
{
    uint8_t b[64];
    mqtt_publish p = { .qos = 0, .dup = true, .packet_id = 99, .topic = str("t"),
                       .payload = str("") };
    EXPECT_BYTES(b, mqtt_encode_publish(b, sizeof b, 4, &p), "\x30\x03\x00\x01t");
    CHECK_EQ(mqtt_publish_size(4, 1, 0, 0), 5);
}

/* The spec's Remaining Length examples: 321 is 0xC1 0x02, and the size of
 * each length boundary. */
TEST(mqtt_encode_publish_remaining_length_bytes_and_sizes)
{
    static uint8_t b[400];
    static uint8_t payload[400];
    mqtt_publish p = { .qos = 0, .topic = str("t"), .payload = { payload, 321 - 3 } };
    CHECK_EQ(mqtt_encode_publish(b, sizeof b, 4, &p), 1 + 2 + 321);
    CHECK_MEM(b, "\x30\xc1\x02", 3);

    CHECK_EQ(mqtt_publish_size(4, 1, 127 - 3, 0), 1 + 1 + 127);
    CHECK_EQ(mqtt_publish_size(4, 1, 128 - 3, 0), 1 + 2 + 128);
    CHECK_EQ(mqtt_publish_size(4, 1, 16383 - 5, 1), 1 + 2 + 16383);
    CHECK_EQ(mqtt_publish_size(4, 1, 16384 - 5, 2), 1 + 3 + 16384);
    CHECK_EQ(mqtt_publish_size(3, 1, 2097151 - 3, 0), 1 + 3 + 2097151);
    CHECK_EQ(mqtt_publish_size(3, 1, 2097152 - 3, 0), 1 + 4 + 2097152);
    CHECK_EQ(mqtt_publish_size(4, 1, MQTT_MAX_REMAINING - 3, 0), 1 + 4 + MQTT_MAX_REMAINING);
    /* Not encodable: 0, and the encoder refuses it whatever the capacity. */
    CHECK_EQ(mqtt_publish_size(4, 1, MQTT_MAX_REMAINING - 2, 0), 0);
    CHECK_EQ(mqtt_publish_size(4, 1, MQTT_MAX_REMAINING - 3, 1), 0);
    CHECK_EQ(mqtt_publish_size(4, 65536, 0, 0), 0);
    CHECK_EQ(mqtt_publish_size(4, 1, (size_t)-1, 0), 0);
}

/* SUBACK sizes across the Remaining Length boundaries (packet id + codes),
 * equal to what the encoder writes. */
TEST(mqtt_suback_size_matches_the_encoder_at_each_length_boundary)
{
    static uint8_t b[20000];
    static uint8_t codes[16384];
    const size_t counts[] = { 1, 125, 126, 16381, 16382 };
    const size_t sizes[] = { 1 + 1 + 3, 1 + 1 + 127, 1 + 2 + 128, 1 + 2 + 16383, 1 + 3 + 16384 };
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        CHECK_EQ(mqtt_suback_size(4, counts[i]), sizes[i]);
        CHECK_EQ(mqtt_encode_suback(b, sizeof b, 4, 1, codes, counts[i]), sizes[i]);
    }
    CHECK_EQ(mqtt_suback_size(3, MQTT_MAX_REMAINING - 2), 1 + 4 + MQTT_MAX_REMAINING);
    CHECK_EQ(mqtt_suback_size(4, MQTT_MAX_REMAINING - 1), 0);
    CHECK_EQ(mqtt_suback_size(4, (size_t)-1), 0);
}

TEST(mqtt_encode_connect_exact_bytes_at_both_levels)
{
    uint8_t b[64];
    mqtt_connect c = { .level = 4, .clean_session = true, .keepalive = 60, .client_id = str("c1") };
    EXPECT_BYTES(b, mqtt_encode_connect(b, sizeof b, &c),
                 "\x10\x0e\x00\x04MQTT\x04\x02\x00\x3c\x00\x02" "c1");
    c.level = 3;
    EXPECT_BYTES(b, mqtt_encode_connect(b, sizeof b, &c),
                 "\x10\x10\x00\x06MQIsdp\x03\x02\x00\x3c\x00\x02" "c1");
    mqtt_connect full = { .level = 4, .will_flag = true, .will_qos = 2, .will_retain = true,
                          .username_flag = true, .password_flag = true, .keepalive = 0x0102,
                          .client_id = str(""), .will_topic = str("w"), .will_payload = str("x"),
                          .username = str("u"), .password = str("p") };
    EXPECT_BYTES(b, mqtt_encode_connect(b, sizeof b, &full),
                 "\x10\x18\x00\x04MQTT\x04\xf4\x01\x02\x00\x00\x00\x01w\x00\x01x\x00\x01u\x00\x01p");
}

TEST(mqtt_encode_subscribe_unsubscribe_suback_exact_bytes)
{
    uint8_t b[64];
    const mqtt_bytes f[] = { str("a"), str("b/#") };
    const uint8_t q[] = { 1, 2 };
    EXPECT_BYTES(b, mqtt_encode_subscribe(b, sizeof b, 4, 1, f, q, 2),
                 "\x82\x0c\x00\x01\x00\x01" "a\x01\x00\x03" "b/#\x02");
    EXPECT_BYTES(b, mqtt_encode_unsubscribe(b, sizeof b, 4, 0x0203, f, 1), "\xa2\x05\x02\x03\x00\x01" "a");
    const uint8_t codes[] = { 0x80, 0 };
    EXPECT_BYTES(b, mqtt_encode_suback(b, sizeof b, 4, 1, codes, 2), "\x90\x04\x00\x01\x80\x00");
}

/* For each encoder: with cap one short of the size it returns 0 and leaves
 * the byte at out[cap] (a canary) alone; with cap == size it succeeds. */
TEST(mqtt_encoders_return_zero_and_stay_in_bounds_when_cap_is_short)
{
    uint8_t b[64];
    const mqtt_bytes f[] = { str("a/b") };
    const uint8_t q[] = { 1 };
    mqtt_connect c = { .level = 4, .username_flag = true, .client_id = str("id"), .username = str("u") };
    mqtt_publish p = { .qos = 1, .packet_id = 1, .topic = str("t"), .payload = str("data") };
    for (size_t which = 0; which < 8; which++) {
        size_t full = 0;
        for (size_t cap = 0; cap <= sizeof b - 1; cap++) {
            memset(b, 0xee, sizeof b);
            size_t n;
            switch (which) {
            case 0: n = mqtt_encode_connect(b, cap, &c); break;
            case 1: n = mqtt_encode_publish(b, cap, 4, &p); break;
            case 2: n = mqtt_encode_connack(b, cap, 4, false, 0); break;
            case 3: n = mqtt_encode_ack(b, cap, 4, MQTT_PUBREL, 1); break;
            case 4: n = mqtt_encode_suback(b, cap, 4, 1, q, 1); break;
            case 5: n = mqtt_encode_empty(b, cap, MQTT_PINGRESP); break;
            case 6: n = mqtt_encode_subscribe(b, cap, 4, 1, f, q, 1); break;
            default: n = mqtt_encode_unsubscribe(b, cap, 4, 1, f, 1); break;
            }
            for (size_t k = cap; k < sizeof b; k++)
                CHECK_EQ(b[k], 0xee);
            if (n) {
                full = n;
                CHECK_EQ(n, cap); /* the first cap that works is the exact size */
                break;
            }
        }
        CHECK(full > 0);
    }
}

TEST(mqtt_err_str_is_distinct_and_non_empty_for_every_code)
{
    for (int i = 0; i < MQTT_ERR__COUNT; i++) {
        const char *s = mqtt_err_str((mqtt_err)i);
        CHECK(s != NULL && s[0] != '\0');
        CHECK(strcmp(s, "unknown error") != 0);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(s, mqtt_err_str((mqtt_err)j)) != 0);
    }
    CHECK(strcmp(mqtt_err_str(MQTT_ERR__COUNT), "unknown error") == 0);
    CHECK(strcmp(mqtt_err_str((mqtt_err)1000), "unknown error") == 0);
}

/* Iterators stop at a corrupt entry instead of reading past raw (the sanitizer
 * build turns any overrun into a failure). */
TEST(mqtt_list_iterators_stop_at_corrupt_entries)
{
    static const uint8_t raw[] = { 0x00, 0x01, 'a', 0x01, 0x00, 0x09, 'b' };
    mqtt_list l = { .packet_id = 1, .count = 2, .raw = { raw, sizeof raw } };
    size_t pos = 0;
    mqtt_bytes f;
    uint8_t q;
    CHECK(mqtt_subscribe_next(&l, &pos, &f, &q));
    CHECK_EQ(f.len, 1);
    CHECK_EQ(q, 1);
    CHECK(!mqtt_subscribe_next(&l, &pos, &f, &q));
    /* A filter with its options byte missing. */
    mqtt_list l2 = { .packet_id = 1, .count = 1, .raw = { raw, 3 } };
    pos = 0;
    CHECK(!mqtt_subscribe_next(&l2, &pos, &f, &q));
    pos = 0;
    CHECK(mqtt_unsubscribe_next(&l2, &pos, &f));
    CHECK(!mqtt_unsubscribe_next(&l2, &pos, &f));
    /* A position past the end (never produced by the iterators). */
    pos = sizeof raw + 5;
    CHECK(!mqtt_subscribe_next(&l, &pos, &f, &q));
    CHECK(!mqtt_unsubscribe_next(&l, &pos, &f));
    CHECK(!mqtt_suback_next(&l, &pos, &q));
    mqtt_list l3 = { .packet_id = 1, .count = 0, .raw = { raw, 0 } };
    pos = 0;
    CHECK(!mqtt_suback_next(&l3, &pos, &q));
}
