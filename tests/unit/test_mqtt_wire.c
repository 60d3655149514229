/*
 * test_mqtt_wire.c - the codec's internal reader and writer (src/mqtt/wire.h):
 * they report running out instead of touching bytes outside their buffer, and
 * the Remaining Length writer emits the spec's minimal encodings.
 */
#include "test.h"

#include "mqtt/wire.h"

TEST(mqtt_wire_reader_reports_truncation_at_every_field_boundary)
{
    static const uint8_t b[] = { 0x01, 0x00, 0x02, 'h', 'i', 0x7f };
    mqtt_reader r = { b, sizeof b, 0 };
    uint8_t u8;
    uint16_t u16;
    mqtt_bytes v;
    CHECK_EQ(rd_u8(&r, &u8), MQTT_OK);
    CHECK_EQ(u8, 1);
    CHECK_EQ(rd_prefixed(&r, &v), MQTT_OK);
    CHECK_EQ(v.len, 2);
    CHECK(v.p == b + 3);
    CHECK_EQ(rd_left(&r), 1);
    CHECK_EQ(rd_u16(&r, &u16), MQTT_ERR_TRUNCATED);
    CHECK_EQ(rd_prefixed(&r, &v), MQTT_ERR_TRUNCATED);
    CHECK_EQ(rd_u8(&r, &u8), MQTT_OK);
    CHECK_EQ(u8, 0x7f);
    CHECK_EQ(rd_u8(&r, &u8), MQTT_ERR_TRUNCATED);
    CHECK_EQ(r.pos, sizeof b);

    /* A length prefix that promises one byte more than is left. */
    static const uint8_t p[] = { 0x00, 0x03, 'a', 'b' };
    mqtt_reader r2 = { p, sizeof p, 0 };
    CHECK_EQ(rd_prefixed(&r2, &v), MQTT_ERR_TRUNCATED);

    mqtt_reader r3 = { p, sizeof p, 1 };
    v = rd_rest(&r3);
    CHECK_EQ(v.len, 3);
    CHECK_EQ(rd_left(&r3), 0);
}

TEST(mqtt_wire_writer_never_writes_past_cap)
{
    uint8_t b[8];
    for (size_t cap = 0; cap <= 4; cap++) {
        memset(b, 0xee, sizeof b);
        mqtt_writer w = { b, cap, 0 };
        mqtt_err e1 = wr_u16(&w, 0x0102);
        mqtt_err e2 = wr_raw(&w, (const uint8_t *)"xy", 2);
        CHECK_EQ(e1, cap >= 2 ? MQTT_OK : MQTT_ERR_BUFFER_FULL);
        CHECK_EQ(e2, cap >= 4 ? MQTT_OK : MQTT_ERR_BUFFER_FULL);
        CHECK(w.len <= cap);
        for (size_t k = cap; k < sizeof b; k++)
            CHECK_EQ(b[k], 0xee);
    }
    mqtt_writer w = { b, 3, 0 };
    CHECK_EQ(wr_prefixed(&w, (const uint8_t *)"ab", 2), MQTT_ERR_BUFFER_FULL);
    CHECK_EQ(w.len, 0);
    CHECK_EQ(wr_u8(&w, 1), MQTT_OK);
    CHECK_EQ(wr_varint(&w, 200), MQTT_OK);
    CHECK_EQ(wr_varint(&w, 0), MQTT_ERR_BUFFER_FULL);
}

TEST(mqtt_wire_varint_writes_minimal_encodings)
{
    static const struct {
        size_t v;
        const char *bytes;
        size_t n;
    } cases[] = {
        { 0, "\x00", 1 },
        { 127, "\x7f", 1 },
        { 128, "\x80\x01", 2 },
        { 321, "\xc1\x02", 2 },
        { 16383, "\xff\x7f", 2 },
        { 16384, "\x80\x80\x01", 3 },
        { 2097151, "\xff\xff\x7f", 3 },
        { 2097152, "\x80\x80\x80\x01", 4 },
        { MQTT_MAX_REMAINING, "\xff\xff\xff\x7f", 4 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t b[8];
        mqtt_writer w = { b, sizeof b, 0 };
        CHECK_EQ(varint_size(cases[i].v), cases[i].n);
        CHECK_EQ(wr_varint(&w, cases[i].v), MQTT_OK);
        CHECK_EQ(w.len, cases[i].n);
        CHECK_MEM(b, cases[i].bytes, cases[i].n);
    }
    CHECK_EQ(packet_size(MQTT_MAX_REMAINING + 1ul), 0);
}
