/*
 * test_mqtt5_reasons.c - MQTT 5.0 reason codes in the decoder: every value
 * 0..255 in every packet that carries one, from each side, against the
 * tables of section 3 restated here; the short forms of the acks,
 * DISCONNECT and AUTH; the CONNACK rules; and mqtt_err_reason().
 */
#include "test.h"

#include "mqtt5_build.h"

typedef struct rc_table {
    const char *name;
    mqtt_type type;
    const uint8_t *codes;
    size_t n;
} rc_table;

#define T(name, type, ...)                                                                      \
    { name, type, (const uint8_t[]){ __VA_ARGS__ }, sizeof((const uint8_t[]){ __VA_ARGS__ }) }

/* Tables 3-1 (CONNACK), 3-4 (PUBACK), 3-5 (PUBREC), 3-6 (PUBREL),
 * 3-7 (PUBCOMP), 3-8 (SUBACK), 3-9 (UNSUBACK). */
static const rc_table tables[] = {
    T("CONNACK", MQTT_CONNACK, 0x00, 0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89,
      0x8A, 0x8C, 0x90, 0x95, 0x97, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9F),
    T("PUBACK", MQTT_PUBACK, 0x00, 0x10, 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99),
    T("PUBREC", MQTT_PUBREC, 0x00, 0x10, 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99),
    T("PUBREL", MQTT_PUBREL, 0x00, 0x92),
    T("PUBCOMP", MQTT_PUBCOMP, 0x00, 0x92),
    T("SUBACK", MQTT_SUBACK, 0x00, 0x01, 0x02, 0x80, 0x83, 0x87, 0x8F, 0x91, 0x97, 0x9E, 0xA1,
      0xA2),
    T("UNSUBACK", MQTT_UNSUBACK, 0x00, 0x11, 0x80, 0x83, 0x87, 0x8F, 0x91),
};

/* Table 3-10 (DISCONNECT) split by its "Sent by" column. */
static const uint8_t disc_both[] = { 0x00, 0x80, 0x81, 0x82, 0x83, 0x90, 0x93, 0x94,
                                     0x95, 0x96, 0x97, 0x99 };
static const uint8_t disc_server[] = { 0x87, 0x89, 0x8B, 0x8D, 0x8E, 0x8F, 0x98, 0x9A,
                                       0x9B, 0x9C, 0x9D, 0x9E, 0x9F, 0xA0, 0xA1, 0xA2 };

static bool has(const uint8_t *set, size_t n, unsigned v)
{
    return memchr(set, (int)v, n) != NULL;
}

/* A level-5 packet of type t carrying reason rc, as the sender would. */
static void with_reason(mqtt_type t, uint8_t rc, bbuf *out)
{
    bbuf body = { .n = 0 };
    uint8_t first = (uint8_t)(t << 4);
    switch (t) {
    case MQTT_CONNACK:
        bb_u8(&body, 0);
        bb_u8(&body, rc);
        bb_u8(&body, 0);
        break;
    case MQTT_SUBACK:
    case MQTT_UNSUBACK:
        bb_u16(&body, 1);
        bb_u8(&body, 0);
        bb_u8(&body, 0); /* a valid code first: each one is checked */
        bb_u8(&body, rc);
        break;
    case MQTT_PUBREL:
        first |= 2;
        /* fall through */
    default:
        if (t >= MQTT_PUBACK && t <= MQTT_PUBCOMP)
            bb_u16(&body, 7);
        bb_u8(&body, rc);
        if (t == MQTT_AUTH)
            bb_u8(&body, 0); /* AUTH's Property Length is not optional */
        break;
    }
    bb_frame(out, first, &body);
}

TEST(mqtt5_each_ack_and_connack_accepts_exactly_its_reason_codes)
{
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        const rc_table *t = &tables[i];
        bool server_only = t->type == MQTT_CONNACK || t->type == MQTT_SUBACK ||
                           t->type == MQTT_UNSUBACK;
        for (unsigned rc = 0; rc < 256; rc++) {
            bbuf pkt;
            mqtt_packet p;
            with_reason(t->type, (uint8_t)rc, &pkt);
            mqtt_err want = has(t->codes, t->n, rc) ? MQTT_OK : MQTT_ERR_BAD_REASON_CODE;
            mqtt_err got = bb_decode(&pkt, MQTT_FROM_SERVER, MQTT_LEVEL_5, &p);
            if (got == MQTT_OK && want == MQTT_OK)
                got = server_only ? MQTT_OK : (p.u.ack.reason == rc ? MQTT_OK : MQTT_ERR__COUNT);
            if (got != want) {
                char msg[128];
                snprintf(msg, sizeof msg, "%s reason 0x%02x: %s", t->name, rc, mqtt_err_str(got));
                test_fail(__FILE__, __LINE__, msg);
                return;
            }
            if (!server_only)
                CHECK_EQ(bb_decode(&pkt, MQTT_FROM_CLIENT, MQTT_LEVEL_5, &p), want);
        }
    }
    CHECK_EQ(mqtt_err_reason(MQTT_ERR_BAD_REASON_CODE), MQTT_RC_MALFORMED_PACKET);
}

TEST(mqtt5_disconnect_reason_codes_follow_the_sent_by_column)
{
    for (unsigned rc = 0; rc < 256; rc++) {
        bbuf pkt;
        mqtt_packet p;
        with_reason(MQTT_DISCONNECT, (uint8_t)rc, &pkt);
        bool from_server = has(disc_both, sizeof disc_both, rc) ||
                           has(disc_server, sizeof disc_server, rc);
        bool from_client = has(disc_both, sizeof disc_both, rc) || rc == 0x04;
        CHECK_EQ(bb_decode(&pkt, MQTT_FROM_SERVER, MQTT_LEVEL_5, &p),
                 from_server ? MQTT_OK : MQTT_ERR_BAD_REASON_CODE);
        CHECK_EQ(bb_decode(&pkt, MQTT_FROM_CLIENT, MQTT_LEVEL_5, &p),
                 from_client ? MQTT_OK : MQTT_ERR_BAD_REASON_CODE);
        if (from_client)
            CHECK_EQ(p.u.disconnect.reason, rc);
    }
}

TEST(mqtt5_auth_reason_codes_follow_the_sent_by_column)
{
    for (unsigned rc = 0; rc < 256; rc++) {
        bbuf pkt;
        mqtt_packet p;
        with_reason(MQTT_AUTH, (uint8_t)rc, &pkt);
        CHECK_EQ(bb_decode(&pkt, MQTT_FROM_SERVER, MQTT_LEVEL_5, &p),
                 rc == 0x00 || rc == 0x18 ? MQTT_OK : MQTT_ERR_BAD_REASON_CODE);
        CHECK_EQ(bb_decode(&pkt, MQTT_FROM_CLIENT, MQTT_LEVEL_5, &p),
                 rc == 0x18 || rc == 0x19 ? MQTT_OK : MQTT_ERR_BAD_REASON_CODE);
    }
    /* AUTH has no one-byte form, unlike DISCONNECT */
    static const uint8_t one[] = { 0xf0, 0x01, 0x18 };
    mqtt_packet q;
    size_t n;
    CHECK_EQ(mqtt_decode(one, 3, MQTT_FROM_CLIENT, 5, 0, &q, &n), MQTT_ERR_TRUNCATED);
    /* the empty AUTH means Success: a server's only */
    static const uint8_t empty[] = { 0xf0, 0x00 };
    mqtt_packet p;
    size_t used;
    CHECK_EQ(mqtt_decode(empty, 2, MQTT_FROM_SERVER, 5, 0, &p, &used), MQTT_OK);
    CHECK_EQ(p.type, MQTT_AUTH);
    CHECK_EQ(p.u.auth.reason, 0);
    CHECK_EQ(mqtt_decode(empty, 2, MQTT_FROM_CLIENT, 5, 0, &p, &used), MQTT_ERR_BAD_REASON_CODE);
}

TEST(mqtt5_auth_exists_only_at_level_5_and_server_disconnect_only_at_level_5)
{
    static const uint8_t auth[] = { 0xf0, 0x02, 0x18, 0x00 };
    static const uint8_t disc[] = { 0xe0, 0x00 };
    static const uint8_t levels[] = { 0, 3, 4 };
    mqtt_packet p;
    size_t used;
    for (size_t i = 0; i < sizeof levels; i++) {
        CHECK_EQ(mqtt_decode(auth, 4, MQTT_FROM_CLIENT, levels[i], 0, &p, &used), MQTT_ERR_BAD_TYPE);
        CHECK_EQ(mqtt_decode(auth, 4, MQTT_FROM_SERVER, levels[i], 0, &p, &used), MQTT_ERR_BAD_TYPE);
        CHECK_EQ(mqtt_decode(disc, 2, MQTT_FROM_SERVER, levels[i], 0, &p, &used), MQTT_ERR_BAD_TYPE);
    }
    CHECK_EQ(mqtt_decode(auth, 4, MQTT_FROM_CLIENT, 5, 0, &p, &used), MQTT_OK);
    CHECK_EQ(mqtt_decode(disc, 2, MQTT_FROM_SERVER, 5, 0, &p, &used), MQTT_OK);
    /* AUTH's reserved flag bits */
    static const uint8_t flags[] = { 0xf1, 0x02, 0x18, 0x00 };
    CHECK_EQ(mqtt_decode(flags, 4, MQTT_FROM_CLIENT, 5, 0, &p, &used), MQTT_ERR_BAD_FLAGS);
}

TEST(mqtt5_ack_short_forms_decode_as_success_without_properties)
{
    mqtt_packet p;
    size_t used;
    static const uint8_t rl2[] = { 0x40, 0x02, 0x00, 0x09 };
    CHECK_EQ(mqtt_decode(rl2, sizeof rl2, MQTT_FROM_CLIENT, 5, 0, &p, &used), MQTT_OK);
    CHECK(p.u.ack.packet_id == 9 && p.u.ack.reason == 0 && p.u.ack.props.raw.len == 0);
    static const uint8_t rl3[] = { 0x50, 0x03, 0x00, 0x09, 0x10 };
    CHECK_EQ(mqtt_decode(rl3, sizeof rl3, MQTT_FROM_CLIENT, 5, 0, &p, &used), MQTT_OK);
    CHECK(p.type == MQTT_PUBREC && p.u.ack.reason == 0x10 && p.u.ack.props.present == 0);
    static const uint8_t rl4[] = { 0x62, 0x04, 0x00, 0x09, 0x92, 0x00 };
    CHECK_EQ(mqtt_decode(rl4, sizeof rl4, MQTT_FROM_CLIENT, 5, 0, &p, &used), MQTT_OK);
    CHECK(p.type == MQTT_PUBREL && p.u.ack.reason == 0x92);
    /* at level 5 a 1-byte ack is cut short, a zero id still refused, and
     * bytes after the property block are trailing */
    static const uint8_t rl1[] = { 0x40, 0x01, 0x00 };
    CHECK_EQ(mqtt_decode(rl1, sizeof rl1, MQTT_FROM_CLIENT, 5, 0, &p, &used), MQTT_ERR_TRUNCATED);
    static const uint8_t zero[] = { 0x40, 0x02, 0x00, 0x00 };
    CHECK_EQ(mqtt_decode(zero, sizeof zero, MQTT_FROM_CLIENT, 5, 0, &p, &used),
             MQTT_ERR_ZERO_PACKET_ID);
    static const uint8_t trail[] = { 0x70, 0x05, 0x00, 0x09, 0x00, 0x00, 0x00 };
    CHECK_EQ(mqtt_decode(trail, sizeof trail, MQTT_FROM_CLIENT, 5, 0, &p, &used),
             MQTT_ERR_TRAILING_BYTES);
    /* the same 3-byte PUBACK at level 4 is refused as before */
    CHECK_EQ(mqtt_decode(rl3, sizeof rl3, MQTT_FROM_CLIENT, 4, 0, &p, &used),
             MQTT_ERR_TRAILING_BYTES);
}

TEST(mqtt5_disconnect_short_forms_and_trailing_bytes)
{
    mqtt_packet p;
    size_t used;
    static const uint8_t rl0[] = { 0xe0, 0x00 };
    CHECK_EQ(mqtt_decode(rl0, 2, MQTT_FROM_CLIENT, 5, 0, &p, &used), MQTT_OK);
    CHECK(p.u.disconnect.reason == 0 && p.u.disconnect.props.raw.len == 0);
    static const uint8_t rl1[] = { 0xe0, 0x01, 0x04 };
    CHECK_EQ(mqtt_decode(rl1, 3, MQTT_FROM_CLIENT, 5, 0, &p, &used), MQTT_OK);
    CHECK_EQ(p.u.disconnect.reason, MQTT_RC_DISCONNECT_WITH_WILL);
    static const uint8_t props[] = { 0xe0, 0x07, 0x00, 0x05, 0x11, 0x00, 0x00, 0x00, 0x3c };
    CHECK_EQ(mqtt_decode(props, sizeof props, MQTT_FROM_CLIENT, 5, 0, &p, &used), MQTT_OK);
    CHECK_EQ(p.u.disconnect.props.session_expiry, 60);
    static const uint8_t trail[] = { 0xe0, 0x03, 0x00, 0x00, 0x00 };
    CHECK_EQ(mqtt_decode(trail, sizeof trail, MQTT_FROM_CLIENT, 5, 0, &p, &used),
             MQTT_ERR_TRAILING_BYTES);
    /* level 4 DISCONNECT stays two bytes */
    CHECK_EQ(mqtt_decode(rl1, 3, MQTT_FROM_CLIENT, 4, 0, &p, &used), MQTT_ERR_TRAILING_BYTES);
}

TEST(mqtt5_connack_session_present_needs_success_and_flag_bits_are_reserved)
{
    mqtt_packet p;
    size_t used;
    static const uint8_t sp_ok[] = { 0x20, 0x03, 0x01, 0x00, 0x00 };
    CHECK_EQ(mqtt_decode(sp_ok, 5, MQTT_FROM_SERVER, 5, 0, &p, &used), MQTT_OK);
    CHECK(p.u.connack.session_present && p.u.connack.return_code == 0);
    static const uint8_t sp_fail[] = { 0x20, 0x03, 0x01, 0x87, 0x00 };
    CHECK_EQ(mqtt_decode(sp_fail, 5, MQTT_FROM_SERVER, 5, 0, &p, &used), MQTT_ERR_BAD_CONNACK);
    static const uint8_t reserved[] = { 0x20, 0x03, 0x02, 0x00, 0x00 };
    CHECK_EQ(mqtt_decode(reserved, 5, MQTT_FROM_SERVER, 5, 0, &p, &used), MQTT_ERR_BAD_CONNACK);
    /* the Property Length is not optional in CONNACK */
    static const uint8_t no_props[] = { 0x20, 0x02, 0x00, 0x00 };
    CHECK_EQ(mqtt_decode(no_props, 4, MQTT_FROM_SERVER, 5, 0, &p, &used), MQTT_ERR_TRUNCATED);
    /* a 3.1.1 return code that 5.0 does not define */
    static const uint8_t v311[] = { 0x20, 0x03, 0x00, 0x05, 0x00 };
    CHECK_EQ(mqtt_decode(v311, 5, MQTT_FROM_SERVER, 5, 0, &p, &used), MQTT_ERR_BAD_REASON_CODE);
    CHECK_EQ(mqtt_err_reason(MQTT_ERR_BAD_CONNACK), MQTT_RC_PROTOCOL_ERROR);
}

TEST(mqtt5_err_reason_maps_every_decode_error_to_the_code_the_spec_names)
{
    static const struct { mqtt_err e; uint8_t rc; } map[] = {
        { MQTT_ERR_LENGTH_ENCODING, 0x81 },   { MQTT_ERR_TOO_LARGE, 0x95 },
        { MQTT_ERR_BAD_TYPE, 0x82 },          { MQTT_ERR_BAD_FLAGS, 0x81 },
        { MQTT_ERR_TRUNCATED, 0x81 },         { MQTT_ERR_TRAILING_BYTES, 0x81 },
        { MQTT_ERR_BAD_UTF8, 0x81 },          { MQTT_ERR_BAD_PROTOCOL_NAME, 0x84 },
        { MQTT_ERR_BAD_PROTOCOL_LEVEL, 0x84 },{ MQTT_ERR_BAD_CONNECT_FLAGS, 0x81 },
        { MQTT_ERR_BAD_QOS, 0x81 },           { MQTT_ERR_BAD_TOPIC_NAME, 0x82 },
        { MQTT_ERR_BAD_TOPIC_FILTER, 0x82 },  { MQTT_ERR_ZERO_PACKET_ID, 0x82 },
        { MQTT_ERR_NO_TOPICS, 0x82 },         { MQTT_ERR_BAD_SUBACK_CODE, 0x82 },
        { MQTT_ERR_BAD_CONNACK, 0x82 },       { MQTT_ERR_BAD_PROPERTY, 0x81 },
        { MQTT_ERR_DUP_PROPERTY, 0x82 },      { MQTT_ERR_BAD_PROPERTY_VALUE, 0x82 },
        { MQTT_ERR_BAD_TOPIC_ALIAS, 0x94 },   { MQTT_ERR_BAD_REASON_CODE, 0x81 },
        { MQTT_ERR_BAD_SUB_OPTIONS, 0x82 },
    };
    /* every error below MQTT_ERR__COUNT except OK/NEED_MORE/BUFFER_FULL */
    CHECK_EQ(sizeof map / sizeof map[0], MQTT_ERR__COUNT - 3);
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        if (mqtt_err_reason(map[i].e) != map[i].rc) {
            char msg[96];
            snprintf(msg, sizeof msg, "%s -> 0x%02x", mqtt_err_str(map[i].e),
                     mqtt_err_reason(map[i].e));
            test_fail(__FILE__, __LINE__, msg);
            return;
        }
    }
    for (int e = 0; e < MQTT_ERR__COUNT; e++)
        CHECK(strcmp(mqtt_err_str((mqtt_err)e), "unknown error") != 0);
}
