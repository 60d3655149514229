/*
 * test_mqtt5_props.c - MQTT 5.0 properties in the decoder: every property
 * identifier in every place a property block appears (allowed or refused,
 * against the table of section 2.2.2.2 restated here), "at most once",
 * the value rules, the reason code each error maps to, and the walkers
 * and writers (mqtt_prop_next, mqtt_props_filter, mqtt_prop_*).
 */
#include "test.h"

#include "mqtt5_build.h"

enum place {
    P_CONNECT, P_WILL, P_CONNACK, P_PUBLISH_C, P_PUBLISH_S, P_PUBACK, P_PUBREC, P_PUBREL,
    P_PUBCOMP, P_SUBSCRIBE, P_SUBACK, P_UNSUBSCRIBE, P_UNSUBACK, P_DISCONNECT_C,
    P_DISCONNECT_S, P_AUTH, P__COUNT
};

static const char *const place_name[P__COUNT] = {
    "CONNECT", "will", "CONNACK", "client PUBLISH", "server PUBLISH", "PUBACK", "PUBREC",
    "PUBREL", "PUBCOMP", "SUBSCRIBE", "SUBACK", "UNSUBSCRIBE", "UNSUBACK",
    "client DISCONNECT", "server DISCONNECT", "AUTH",
};

/* Table 2-4 of the specification: which places each identifier may appear
 * in. A client's PUBLISH may not carry a Subscription Identifier
 * ([MQTT-3.3.4-6]). */
#define B(p) (1u << (p))
#define ACKS (B(P_PUBACK) | B(P_PUBREC) | B(P_PUBREL) | B(P_PUBCOMP))
#define MSG (B(P_PUBLISH_C) | B(P_PUBLISH_S) | B(P_WILL))
#define DISC (B(P_DISCONNECT_C) | B(P_DISCONNECT_S))
static const struct {
    uint8_t id;
    char type; /* b u16 U u32 v varint s string d binary p pair */
    uint32_t places;
} spec_table[] = {
    { 0x01, 'b', MSG },
    { 0x02, 'U', MSG },
    { 0x03, 's', MSG },
    { 0x08, 's', MSG },
    { 0x09, 'd', MSG },
    { 0x0B, 'v', B(P_PUBLISH_S) | B(P_SUBSCRIBE) },
    { 0x11, 'U', B(P_CONNECT) | B(P_CONNACK) | DISC },
    { 0x12, 's', B(P_CONNACK) },
    { 0x13, 'u', B(P_CONNACK) },
    { 0x15, 's', B(P_CONNECT) | B(P_CONNACK) | B(P_AUTH) },
    { 0x16, 'd', B(P_CONNECT) | B(P_CONNACK) | B(P_AUTH) },
    { 0x17, 'b', B(P_CONNECT) },
    { 0x18, 'U', B(P_WILL) },
    { 0x19, 'b', B(P_CONNECT) },
    { 0x1A, 's', B(P_CONNACK) },
    { 0x1C, 's', B(P_CONNACK) | DISC },
    { 0x1F, 's', B(P_CONNACK) | ACKS | B(P_SUBACK) | B(P_UNSUBACK) | DISC | B(P_AUTH) },
    { 0x21, 'u', B(P_CONNECT) | B(P_CONNACK) },
    { 0x22, 'u', B(P_CONNECT) | B(P_CONNACK) },
    { 0x23, 'u', B(P_PUBLISH_C) | B(P_PUBLISH_S) },
    { 0x24, 'b', B(P_CONNACK) },
    { 0x25, 'b', B(P_CONNACK) },
    { 0x26, 'p', (1u << P__COUNT) - 1 },
    { 0x27, 'U', B(P_CONNECT) | B(P_CONNACK) },
    { 0x28, 'b', B(P_CONNACK) },
    { 0x29, 'b', B(P_CONNACK) },
    { 0x2A, 'b', B(P_CONNACK) },
};
#define NSPEC (sizeof spec_table / sizeof spec_table[0])

/* Append one property with a valid value of its type (val for numbers). */
static void put_prop(bbuf *x, uint8_t id, char type, uint32_t val)
{
    bb_u8(x, id);
    switch (type) {
    case 'b': bb_u8(x, (uint8_t)val); break;
    case 'u': bb_u16(x, (uint16_t)val); break;
    case 'U': bb_u16(x, (uint16_t)(val >> 16)); bb_u16(x, (uint16_t)val); break;
    case 'v': bb_varint(x, val); break;
    case 's':
    case 'd': bb_str(x, "a"); break;
    case 'p': bb_str(x, "k"); bb_str(x, "v"); break;
    default: abort();
    }
}

/* A packet of the given place whose (only interesting) property block is
 * content; sets the role and first byte to decode it with. */
static void build(enum place pl, const bbuf *content, bbuf *out, mqtt_role *role)
{
    bbuf body = { .n = 0 };
    bbuf empty = { .n = 0 };
    uint8_t first;
    *role = MQTT_FROM_CLIENT;
    switch (pl) {
    case P_CONNECT:
    case P_WILL:
        first = 0x10;
        bb_str(&body, "MQTT");
        bb_u8(&body, 5);
        bb_u8(&body, pl == P_WILL ? 0x06 : 0x02);
        bb_u16(&body, 0);
        bb_block(&body, pl == P_CONNECT ? content : &empty);
        bb_str(&body, "id");
        if (pl == P_WILL) {
            bb_block(&body, content);
            bb_str(&body, "w");
            bb_str(&body, "m");
        }
        break;
    case P_CONNACK:
        first = 0x20;
        *role = MQTT_FROM_SERVER;
        bb_u8(&body, 0);
        bb_u8(&body, 0);
        bb_block(&body, content);
        break;
    case P_PUBLISH_C:
    case P_PUBLISH_S:
        first = 0x30;
        *role = pl == P_PUBLISH_S ? MQTT_FROM_SERVER : MQTT_FROM_CLIENT;
        bb_str(&body, "t");
        bb_block(&body, content);
        bb_raw(&body, "pay", 3);
        break;
    case P_PUBACK:
    case P_PUBREC:
    case P_PUBREL:
    case P_PUBCOMP:
        first = (uint8_t)((MQTT_PUBACK + (pl - P_PUBACK)) << 4 | (pl == P_PUBREL ? 2 : 0));
        bb_u16(&body, 1);
        bb_u8(&body, 0);
        bb_block(&body, content);
        break;
    case P_SUBSCRIBE:
    case P_UNSUBSCRIBE:
        first = pl == P_SUBSCRIBE ? 0x82 : 0xa2;
        bb_u16(&body, 1);
        bb_block(&body, content);
        bb_str(&body, "t");
        if (pl == P_SUBSCRIBE)
            bb_u8(&body, 1);
        break;
    case P_SUBACK:
    case P_UNSUBACK:
        first = pl == P_SUBACK ? 0x90 : 0xb0;
        *role = MQTT_FROM_SERVER;
        bb_u16(&body, 1);
        bb_block(&body, content);
        bb_u8(&body, 0);
        break;
    case P_DISCONNECT_C:
    case P_DISCONNECT_S:
        first = 0xe0;
        *role = pl == P_DISCONNECT_S ? MQTT_FROM_SERVER : MQTT_FROM_CLIENT;
        bb_u8(&body, 0);
        bb_block(&body, content);
        break;
    case P_AUTH:
        first = 0xf0;
        bb_u8(&body, MQTT_RC_CONTINUE_AUTHENTICATION);
        bb_block(&body, content);
        break;
    default:
        abort();
    }
    bb_frame(out, first, &body);
}

static mqtt_err decode_place(enum place pl, const bbuf *content, mqtt_packet *p)
{
    bbuf pkt;
    mqtt_role role;
    build(pl, content, &pkt, &role);
    return bb_decode(&pkt, role, MQTT_LEVEL_5, p);
}

/* The decoded block of a place. */
static const mqtt_props *props_of(enum place pl, const mqtt_packet *p)
{
    switch (pl) {
    case P_CONNECT: return &p->u.connect.props;
    case P_WILL: return &p->u.connect.will_props;
    case P_CONNACK: return &p->u.connack.props;
    case P_PUBLISH_C:
    case P_PUBLISH_S: return &p->u.publish.props;
    case P_SUBSCRIBE:
    case P_UNSUBSCRIBE:
    case P_SUBACK:
    case P_UNSUBACK: return &p->u.subscribe.props;
    case P_DISCONNECT_C:
    case P_DISCONNECT_S:
    case P_AUTH: return &p->u.disconnect.props;
    default: return &p->u.ack.props;
    }
}

/* Authentication Data needs an Authentication Method beside it. */
static void put_valid(bbuf *c, uint8_t id, char type)
{
    if (id == MQTT_PROP_AUTH_DATA)
        put_prop(c, MQTT_PROP_AUTH_METHOD, 's', 0);
    put_prop(c, id, type, 1);
}

TEST(mqtt5_every_property_is_accepted_exactly_where_the_spec_allows_it)
{
    for (size_t i = 0; i < NSPEC; i++) {
        for (int pl = 0; pl < P__COUNT; pl++) {
            bbuf c = { .n = 0 };
            mqtt_packet p;
            put_valid(&c, spec_table[i].id, spec_table[i].type);
            mqtt_err e = decode_place((enum place)pl, &c, &p);
            bool allowed = spec_table[i].places & B(pl);
            if ((e == MQTT_OK) != allowed || (!allowed && e != MQTT_ERR_BAD_PROPERTY)) {
                char msg[160];
                snprintf(msg, sizeof msg, "property 0x%02x in %s: %s", spec_table[i].id,
                         place_name[pl], mqtt_err_str(e));
                test_fail(__FILE__, __LINE__, msg);
                return;
            }
            if (allowed) {
                const mqtt_props *pr = props_of((enum place)pl, &p);
                CHECK(pr->present & MQTT_PROP_BIT(spec_table[i].id));
                CHECK_EQ(pr->raw.len, c.n);
            }
        }
    }
}

TEST(mqtt5_unknown_property_ids_are_malformed_everywhere)
{
    for (unsigned id = 0; id < 256; id++) {
        bool known = false;
        for (size_t i = 0; i < NSPEC; i++)
            known |= spec_table[i].id == id;
        if (known)
            continue;
        for (int pl = 0; pl < P__COUNT; pl++) {
            bbuf c = { .n = 0 };
            mqtt_packet p;
            bb_u8(&c, (uint8_t)id);
            bb_u8(&c, 0);
            CHECK_EQ(decode_place((enum place)pl, &c, &p), MQTT_ERR_BAD_PROPERTY);
        }
    }
    CHECK_EQ(mqtt_err_reason(MQTT_ERR_BAD_PROPERTY), MQTT_RC_MALFORMED_PACKET);
}

TEST(mqtt5_a_property_allowed_once_twice_is_a_protocol_error)
{
    for (size_t i = 0; i < NSPEC; i++) {
        for (int pl = 0; pl < P__COUNT; pl++) {
            if (!(spec_table[i].places & B(pl)))
                continue;
            uint8_t id = spec_table[i].id;
            bbuf c = { .n = 0 };
            mqtt_packet p;
            put_valid(&c, id, spec_table[i].type);
            put_prop(&c, id, spec_table[i].type, 1);
            mqtt_err e = decode_place((enum place)pl, &c, &p);
            bool repeatable = id == MQTT_PROP_USER_PROPERTY ||
                              (id == MQTT_PROP_SUBSCRIPTION_ID && pl == P_PUBLISH_S);
            if (repeatable) {
                CHECK_EQ(e, MQTT_OK);
            } else {
                CHECK_EQ(e, MQTT_ERR_DUP_PROPERTY);
            }
        }
    }
    CHECK_EQ(mqtt_err_reason(MQTT_ERR_DUP_PROPERTY), MQTT_RC_PROTOCOL_ERROR);
}

TEST(mqtt5_user_properties_and_server_subscription_ids_repeat_in_order)
{
    bbuf c = { .n = 0 };
    mqtt_packet p;
    put_prop(&c, MQTT_PROP_SUBSCRIPTION_ID, 'v', 7);
    bb_u8(&c, MQTT_PROP_USER_PROPERTY);
    bb_str(&c, "k1");
    bb_str(&c, "v1");
    put_prop(&c, MQTT_PROP_SUBSCRIPTION_ID, 'v', 200000);
    bb_u8(&c, MQTT_PROP_USER_PROPERTY);
    bb_str(&c, "k1");
    bb_str(&c, "v2");
    CHECK_EQ(decode_place(P_PUBLISH_S, &c, &p), MQTT_OK);
    const mqtt_props *pr = &p.u.publish.props;
    CHECK_EQ(pr->subscription_id, 7);
    CHECK_EQ(pr->user_property_count, 2);

    size_t pos = 0;
    mqtt_prop q;
    CHECK(mqtt_prop_next(&pr->raw, &pos, &q) && q.id == MQTT_PROP_SUBSCRIPTION_ID && q.value == 7);
    CHECK(mqtt_prop_next(&pr->raw, &pos, &q) && q.id == MQTT_PROP_USER_PROPERTY);
    CHECK(q.data.len == 2 && memcmp(q.data.p, "k1", 2) == 0);
    CHECK(q.data2.len == 2 && memcmp(q.data2.p, "v1", 2) == 0);
    CHECK(mqtt_prop_next(&pr->raw, &pos, &q) && q.value == 200000);
    CHECK(mqtt_prop_next(&pr->raw, &pos, &q) && memcmp(q.data2.p, "v2", 2) == 0);
    CHECK(!mqtt_prop_next(&pr->raw, &pos, &q));
    CHECK_EQ(pos, pr->raw.len);
}

/* One property of a place with a raw value; the decoder's answer. */
static mqtt_err one(enum place pl, uint8_t id, const void *value, size_t n)
{
    bbuf c = { .n = 0 };
    mqtt_packet p;
    bb_u8(&c, id);
    bb_raw(&c, value, n);
    return decode_place(pl, &c, &p);
}

TEST(mqtt5_byte_properties_other_than_0_or_1_are_a_protocol_error)
{
    static const struct { uint8_t id; enum place pl; } bytes[] = {
        { MQTT_PROP_PAYLOAD_FORMAT, P_PUBLISH_C },
        { MQTT_PROP_PAYLOAD_FORMAT, P_WILL },
        { MQTT_PROP_REQUEST_PROBLEM_INFO, P_CONNECT },
        { MQTT_PROP_REQUEST_RESPONSE_INFO, P_CONNECT },
        { MQTT_PROP_MAXIMUM_QOS, P_CONNACK },
        { MQTT_PROP_RETAIN_AVAILABLE, P_CONNACK },
        { MQTT_PROP_WILDCARD_SUB_AVAILABLE, P_CONNACK },
        { MQTT_PROP_SUB_ID_AVAILABLE, P_CONNACK },
        { MQTT_PROP_SHARED_SUB_AVAILABLE, P_CONNACK },
    };
    for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++) {
        for (unsigned v = 0; v < 256; v++) {
            uint8_t b = (uint8_t)v;
            CHECK_EQ(one(bytes[i].pl, bytes[i].id, &b, 1),
                     v <= 1 ? MQTT_OK : MQTT_ERR_BAD_PROPERTY_VALUE);
        }
    }
    CHECK_EQ(mqtt_err_reason(MQTT_ERR_BAD_PROPERTY_VALUE), MQTT_RC_PROTOCOL_ERROR);
}

TEST(mqtt5_zero_receive_maximum_packet_size_and_subscription_id_are_protocol_errors)
{
    static const uint8_t z2[] = { 0, 0 }, one2[] = { 0, 1 };
    static const uint8_t z4[] = { 0, 0, 0, 0 }, one4[] = { 0, 0, 0, 1 };
    static const uint8_t zv[] = { 0 }, max_v[] = { 0xff, 0xff, 0xff, 0x7f };
    CHECK_EQ(one(P_CONNECT, MQTT_PROP_RECEIVE_MAXIMUM, z2, 2), MQTT_ERR_BAD_PROPERTY_VALUE);
    CHECK_EQ(one(P_CONNACK, MQTT_PROP_RECEIVE_MAXIMUM, z2, 2), MQTT_ERR_BAD_PROPERTY_VALUE);
    CHECK_EQ(one(P_CONNECT, MQTT_PROP_RECEIVE_MAXIMUM, one2, 2), MQTT_OK);
    CHECK_EQ(one(P_CONNECT, MQTT_PROP_MAXIMUM_PACKET_SIZE, z4, 4), MQTT_ERR_BAD_PROPERTY_VALUE);
    CHECK_EQ(one(P_CONNACK, MQTT_PROP_MAXIMUM_PACKET_SIZE, z4, 4), MQTT_ERR_BAD_PROPERTY_VALUE);
    CHECK_EQ(one(P_CONNECT, MQTT_PROP_MAXIMUM_PACKET_SIZE, one4, 4), MQTT_OK);
    CHECK_EQ(one(P_SUBSCRIBE, MQTT_PROP_SUBSCRIPTION_ID, zv, 1), MQTT_ERR_BAD_PROPERTY_VALUE);
    CHECK_EQ(one(P_PUBLISH_S, MQTT_PROP_SUBSCRIPTION_ID, zv, 1), MQTT_ERR_BAD_PROPERTY_VALUE);
    CHECK_EQ(one(P_SUBSCRIBE, MQTT_PROP_SUBSCRIPTION_ID, max_v, 4), MQTT_OK);
    /* Topic Alias Maximum 0 means "no aliases": allowed */
    CHECK_EQ(one(P_CONNECT, MQTT_PROP_TOPIC_ALIAS_MAXIMUM, z2, 2), MQTT_OK);
}

TEST(mqtt5_topic_alias_zero_is_topic_alias_invalid)
{
    static const uint8_t z2[] = { 0, 0 }, max2[] = { 0xff, 0xff };
    CHECK_EQ(one(P_PUBLISH_C, MQTT_PROP_TOPIC_ALIAS, z2, 2), MQTT_ERR_BAD_TOPIC_ALIAS);
    CHECK_EQ(one(P_PUBLISH_S, MQTT_PROP_TOPIC_ALIAS, z2, 2), MQTT_ERR_BAD_TOPIC_ALIAS);
    CHECK_EQ(one(P_PUBLISH_C, MQTT_PROP_TOPIC_ALIAS, max2, 2), MQTT_OK);
    CHECK_EQ(mqtt_err_reason(MQTT_ERR_BAD_TOPIC_ALIAS), MQTT_RC_TOPIC_ALIAS_INVALID);
}

TEST(mqtt5_subscription_id_must_be_a_minimal_varint)
{
    static const uint8_t padded[] = { 0x81, 0x00 };
    static const uint8_t five[] = { 0xff, 0xff, 0xff, 0xff, 0x01 };
    static const uint8_t cut[] = { 0x81 };
    CHECK_EQ(one(P_SUBSCRIBE, MQTT_PROP_SUBSCRIPTION_ID, padded, 2), MQTT_ERR_LENGTH_ENCODING);
    CHECK_EQ(one(P_SUBSCRIBE, MQTT_PROP_SUBSCRIPTION_ID, five, 5), MQTT_ERR_LENGTH_ENCODING);
    /* runs past the block (the filter follows it in the packet) */
    CHECK_EQ(one(P_SUBSCRIBE, MQTT_PROP_SUBSCRIPTION_ID, cut, 1), MQTT_ERR_BAD_PROPERTY);
}

TEST(mqtt5_client_publish_with_a_subscription_id_is_refused)
{
    static const uint8_t v[] = { 5 };
    CHECK_EQ(one(P_PUBLISH_C, MQTT_PROP_SUBSCRIPTION_ID, v, 1), MQTT_ERR_BAD_PROPERTY);
    CHECK_EQ(one(P_PUBLISH_S, MQTT_PROP_SUBSCRIPTION_ID, v, 1), MQTT_OK);
    CHECK_EQ(one(P_WILL, MQTT_PROP_SUBSCRIPTION_ID, v, 1), MQTT_ERR_BAD_PROPERTY);
}

TEST(mqtt5_response_topic_must_be_a_topic_name_without_wildcards)
{
    static const char *const bad[] = { "", "a/+", "#", "a/#", "+" };
    static const char *const good[] = { "a", "reply/to/me", "$x", "a b" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bbuf v = { .n = 0 };
        bb_str(&v, bad[i]);
        CHECK_EQ(one(P_PUBLISH_C, MQTT_PROP_RESPONSE_TOPIC, v.b, v.n), MQTT_ERR_BAD_PROPERTY_VALUE);
        CHECK_EQ(one(P_WILL, MQTT_PROP_RESPONSE_TOPIC, v.b, v.n), MQTT_ERR_BAD_PROPERTY_VALUE);
    }
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        bbuf v = { .n = 0 };
        bb_str(&v, good[i]);
        CHECK_EQ(one(P_PUBLISH_C, MQTT_PROP_RESPONSE_TOPIC, v.b, v.n), MQTT_OK);
    }
    static const uint8_t bad_utf8[] = { 0, 2, 0xc3, 0x28 };
    CHECK_EQ(one(P_PUBLISH_C, MQTT_PROP_RESPONSE_TOPIC, bad_utf8, 4), MQTT_ERR_BAD_UTF8);
}

TEST(mqtt5_string_properties_and_user_property_halves_must_be_utf8)
{
    static const uint8_t bad[] = { 0, 2, 0xed, 0xa0 };       /* a surrogate */
    static const uint8_t nul[] = { 0, 1, 0x00 };            /* U+0000 */
    static const uint8_t strs[] = { MQTT_PROP_CONTENT_TYPE, MQTT_PROP_REASON_STRING };
    for (size_t i = 0; i < sizeof strs; i++) {
        enum place pl = strs[i] == MQTT_PROP_CONTENT_TYPE ? P_PUBLISH_C : P_PUBACK;
        CHECK_EQ(one(pl, strs[i], bad, sizeof bad), MQTT_ERR_BAD_UTF8);
        CHECK_EQ(one(pl, strs[i], nul, sizeof nul), MQTT_ERR_BAD_UTF8);
    }
    /* binary data is not checked */
    CHECK_EQ(one(P_PUBLISH_C, MQTT_PROP_CORRELATION_DATA, nul, sizeof nul), MQTT_OK);
    bbuf kv = { .n = 0 };
    bb_raw(&kv, bad, sizeof bad);
    bb_str(&kv, "v");
    CHECK_EQ(one(P_PUBACK, MQTT_PROP_USER_PROPERTY, kv.b, kv.n), MQTT_ERR_BAD_UTF8);
    kv.n = 0;
    bb_str(&kv, "k");
    bb_raw(&kv, nul, sizeof nul);
    CHECK_EQ(one(P_PUBACK, MQTT_PROP_USER_PROPERTY, kv.b, kv.n), MQTT_ERR_BAD_UTF8);
    CHECK_EQ(mqtt_err_reason(MQTT_ERR_BAD_UTF8), MQTT_RC_MALFORMED_PACKET);
}

TEST(mqtt5_authentication_data_without_a_method_is_a_protocol_error)
{
    static const enum place pls[] = { P_CONNECT, P_CONNACK, P_AUTH };
    for (size_t i = 0; i < sizeof pls / sizeof pls[0]; i++) {
        bbuf c = { .n = 0 };
        mqtt_packet p;
        put_prop(&c, MQTT_PROP_AUTH_DATA, 'd', 0);
        CHECK_EQ(decode_place(pls[i], &c, &p), MQTT_ERR_BAD_PROPERTY_VALUE);
        /* the method after the data is fine: order is free */
        put_prop(&c, MQTT_PROP_AUTH_METHOD, 's', 0);
        CHECK_EQ(decode_place(pls[i], &c, &p), MQTT_OK);
    }
}

TEST(mqtt5_property_block_running_past_its_packet_or_values_past_the_block_are_refused)
{
    /* PUBACK: id 1, reason 0, Property Length 5 with only 3 bytes left */
    static const uint8_t past_packet[] = { 0x40, 0x07, 0, 1, 0, 5, 0x1f, 0, 0 };
    mqtt_packet p;
    size_t used;
    CHECK_EQ(mqtt_decode(past_packet, sizeof past_packet, MQTT_FROM_CLIENT, 5, 0, &p, &used),
             MQTT_ERR_TRUNCATED);
    /* a u32 whose last two bytes lie outside the block (but in the packet) */
    static const uint8_t past_block[] = { 0x30, 0x0b, 0, 1, 't', 3, 0x02, 0, 0, 0, 0, 'x', 'y' };
    CHECK_EQ(mqtt_decode(past_block, sizeof past_block, MQTT_FROM_CLIENT, 5, 0, &p, &used),
             MQTT_ERR_BAD_PROPERTY);
    /* a Property Length in five bytes */
    static const uint8_t long_len[] = { 0xe0, 0x06, 0, 0x80, 0x80, 0x80, 0x80, 0x00 };
    CHECK_EQ(mqtt_decode(long_len, sizeof long_len, MQTT_FROM_CLIENT, 5, 0, &p, &used),
             MQTT_ERR_LENGTH_ENCODING);
    /* a padded Property Length: [MQTT-1.5.5-1] */
    static const uint8_t padded[] = { 0xe0, 0x03, 0, 0x80, 0x00 };
    CHECK_EQ(mqtt_decode(padded, sizeof padded, MQTT_FROM_CLIENT, 5, 0, &p, &used),
             MQTT_ERR_LENGTH_ENCODING);
}

TEST(mqtt5_decoded_single_valued_properties_land_in_their_fields)
{
    bbuf c = { .n = 0 };
    mqtt_packet p;
    put_prop(&c, MQTT_PROP_SESSION_EXPIRY, 'U', 0xfffffffe);
    put_prop(&c, MQTT_PROP_ASSIGNED_CLIENT_ID, 's', 0);
    put_prop(&c, MQTT_PROP_SERVER_KEEP_ALIVE, 'u', 30);
    put_prop(&c, MQTT_PROP_RECEIVE_MAXIMUM, 'u', 10);
    put_prop(&c, MQTT_PROP_TOPIC_ALIAS_MAXIMUM, 'u', 11);
    put_prop(&c, MQTT_PROP_MAXIMUM_QOS, 'b', 1);
    put_prop(&c, MQTT_PROP_RETAIN_AVAILABLE, 'b', 0);
    put_prop(&c, MQTT_PROP_MAXIMUM_PACKET_SIZE, 'U', 70000);
    put_prop(&c, MQTT_PROP_WILDCARD_SUB_AVAILABLE, 'b', 1);
    put_prop(&c, MQTT_PROP_SUB_ID_AVAILABLE, 'b', 0);
    put_prop(&c, MQTT_PROP_SHARED_SUB_AVAILABLE, 'b', 1);
    put_prop(&c, MQTT_PROP_REASON_STRING, 's', 0);
    put_prop(&c, MQTT_PROP_RESPONSE_INFO, 's', 0);
    put_prop(&c, MQTT_PROP_SERVER_REFERENCE, 's', 0);
    CHECK_EQ(decode_place(P_CONNACK, &c, &p), MQTT_OK);
    const mqtt_props *pr = &p.u.connack.props;
    CHECK_EQ(pr->session_expiry, 0xfffffffe);
    CHECK_EQ(pr->server_keep_alive, 30);
    CHECK_EQ(pr->receive_maximum, 10);
    CHECK_EQ(pr->topic_alias_maximum, 11);
    CHECK_EQ(pr->maximum_qos, 1);
    CHECK_EQ(pr->retain_available, 0);
    CHECK_EQ(pr->maximum_packet_size, 70000);
    CHECK_EQ(pr->wildcard_sub_available, 1);
    CHECK_EQ(pr->sub_id_available, 0);
    CHECK_EQ(pr->shared_sub_available, 1);
    CHECK(pr->assigned_client_id.len == 1 && pr->assigned_client_id.p[0] == 'a');
    CHECK(pr->reason_string.len == 1 && pr->response_info.len == 1);
    CHECK(pr->server_reference.len == 1);
    CHECK(pr->present & MQTT_PROP_BIT(MQTT_PROP_RETAIN_AVAILABLE));
    CHECK(!(pr->present & MQTT_PROP_BIT(MQTT_PROP_AUTH_METHOD)));

    c.n = 0;
    put_prop(&c, MQTT_PROP_PAYLOAD_FORMAT, 'b', 1);
    put_prop(&c, MQTT_PROP_MESSAGE_EXPIRY, 'U', 3600);
    put_prop(&c, MQTT_PROP_CONTENT_TYPE, 's', 0);
    put_prop(&c, MQTT_PROP_RESPONSE_TOPIC, 's', 0);
    put_prop(&c, MQTT_PROP_CORRELATION_DATA, 'd', 0);
    put_prop(&c, MQTT_PROP_WILL_DELAY, 'U', 99);
    CHECK_EQ(decode_place(P_WILL, &c, &p), MQTT_OK);
    pr = &p.u.connect.will_props;
    CHECK_EQ(pr->payload_format, 1);
    CHECK_EQ(pr->message_expiry, 3600);
    CHECK_EQ(pr->will_delay, 99);
    CHECK(pr->content_type.len == 1 && pr->response_topic.len == 1 &&
          pr->correlation_data.len == 1);
    CHECK_EQ(p.u.connect.props.present, 0); /* the CONNECT's own block is empty */

    c.n = 0;
    put_prop(&c, MQTT_PROP_REQUEST_PROBLEM_INFO, 'b', 0);
    put_prop(&c, MQTT_PROP_REQUEST_RESPONSE_INFO, 'b', 1);
    put_prop(&c, MQTT_PROP_AUTH_METHOD, 's', 0);
    put_prop(&c, MQTT_PROP_AUTH_DATA, 'd', 0);
    CHECK_EQ(decode_place(P_CONNECT, &c, &p), MQTT_OK);
    pr = &p.u.connect.props;
    CHECK(pr->present & MQTT_PROP_BIT(MQTT_PROP_REQUEST_PROBLEM_INFO));
    CHECK_EQ(pr->request_problem_info, 0);
    CHECK_EQ(pr->request_response_info, 1);
    CHECK(pr->auth_method.len == 1 && pr->auth_data.len == 1);

    c.n = 0;
    put_prop(&c, MQTT_PROP_TOPIC_ALIAS, 'u', 9);
    CHECK_EQ(decode_place(P_PUBLISH_C, &c, &p), MQTT_OK);
    CHECK_EQ(p.u.publish.props.topic_alias, 9);
}

TEST(mqtt5_props_filter_drops_exactly_the_masked_ids_in_order)
{
    uint8_t blk[256];
    size_t n = 0;
    n += mqtt_prop_u16(blk + n, sizeof blk - n, MQTT_PROP_TOPIC_ALIAS, 4);
    n += mqtt_prop_pair(blk + n, sizeof blk - n, MQTT_PROP_USER_PROPERTY,
                        (const uint8_t *)"a", 1, (const uint8_t *)"b", 1);
    n += mqtt_prop_u32(blk + n, sizeof blk - n, MQTT_PROP_MESSAGE_EXPIRY, 60);
    n += mqtt_prop_bytes(blk + n, sizeof blk - n, MQTT_PROP_CONTENT_TYPE,
                         (const uint8_t *)"text", 4);
    n += mqtt_prop_varint(blk + n, sizeof blk - n, MQTT_PROP_SUBSCRIPTION_ID, 300);
    CHECK_EQ(n, 3 + 7 + 5 + 7 + 3);
    mqtt_bytes raw = { blk, n };

    uint8_t out[256];
    uint64_t drop = MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS) | MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY) |
                    MQTT_PROP_BIT(MQTT_PROP_SUBSCRIPTION_ID);
    size_t m = mqtt_props_filter(&raw, drop, out, sizeof out);
    CHECK_EQ(m, 7 + 7);
    CHECK_MEM(out, blk + 3, 7);
    CHECK_MEM(out + 7, blk + 15, 7);
    /* nothing dropped: a copy; everything: empty */
    CHECK_EQ(mqtt_props_filter(&raw, 0, out, sizeof out), n);
    CHECK_MEM(out, blk, n);
    CHECK_EQ(mqtt_props_filter(&raw, ~(uint64_t)0, out, sizeof out), 0);
    /* too small for what is kept */
    CHECK_EQ(mqtt_props_filter(&raw, drop, out, 13), SIZE_MAX);
    CHECK_EQ(mqtt_props_filter(&raw, drop, out, 14), 14);
    /* the kept block decodes as a PUBLISH block */
    bbuf c = { .n = 0 };
    mqtt_packet p;
    bb_raw(&c, out, 14);
    CHECK_EQ(decode_place(P_PUBLISH_S, &c, &p), MQTT_OK);
    CHECK_EQ(p.u.publish.props.user_property_count, 1);
}

TEST(mqtt5_prop_writers_write_identifier_and_value_or_nothing_when_short)
{
    uint8_t b[16];
    CHECK_EQ(mqtt_prop_u8(b, 2, MQTT_PROP_PAYLOAD_FORMAT, 1), 2);
    CHECK(b[0] == 0x01 && b[1] == 1);
    CHECK_EQ(mqtt_prop_u8(b, 1, MQTT_PROP_PAYLOAD_FORMAT, 1), 0);
    CHECK_EQ(mqtt_prop_u16(b, 3, MQTT_PROP_RECEIVE_MAXIMUM, 0x1234), 3);
    CHECK(b[0] == 0x21 && b[1] == 0x12 && b[2] == 0x34);
    CHECK_EQ(mqtt_prop_u16(b, 2, MQTT_PROP_RECEIVE_MAXIMUM, 1), 0);
    CHECK_EQ(mqtt_prop_u32(b, 5, MQTT_PROP_SESSION_EXPIRY, 0x01020304), 5);
    CHECK(b[0] == 0x11 && b[1] == 1 && b[2] == 2 && b[3] == 3 && b[4] == 4);
    CHECK_EQ(mqtt_prop_u32(b, 4, MQTT_PROP_SESSION_EXPIRY, 1), 0);
    CHECK_EQ(mqtt_prop_varint(b, 5, MQTT_PROP_SUBSCRIPTION_ID, MQTT_MAX_SUBSCRIPTION_ID), 5);
    CHECK(b[0] == 0x0b && b[1] == 0xff && b[4] == 0x7f);
    CHECK_EQ(mqtt_prop_varint(b, 2, MQTT_PROP_SUBSCRIPTION_ID, 128), 0);
    CHECK_EQ(mqtt_prop_bytes(b, 5, MQTT_PROP_CORRELATION_DATA, (const uint8_t *)"xy", 2), 5);
    CHECK(b[0] == 0x09 && b[1] == 0 && b[2] == 2 && b[3] == 'x');
    CHECK_EQ(mqtt_prop_bytes(b, 4, MQTT_PROP_CORRELATION_DATA, (const uint8_t *)"xy", 2), 0);
    CHECK_EQ(mqtt_prop_pair(b, 7, MQTT_PROP_USER_PROPERTY, (const uint8_t *)"k", 1,
                            (const uint8_t *)"v", 1), 7);
    CHECK_EQ(mqtt_prop_pair(b, 6, MQTT_PROP_USER_PROPERTY, (const uint8_t *)"k", 1,
                            (const uint8_t *)"v", 1), 0);
    CHECK_EQ(mqtt_varint_size(0), 1);
    CHECK_EQ(mqtt_varint_size(127), 1);
    CHECK_EQ(mqtt_varint_size(128), 2);
    CHECK_EQ(mqtt_varint_size(16383), 2);
    CHECK_EQ(mqtt_varint_size(16384), 3);
    CHECK_EQ(mqtt_varint_size(2097151), 3);
    CHECK_EQ(mqtt_varint_size(2097152), 4);
    CHECK_EQ(mqtt_varint_size(MQTT_MAX_SUBSCRIPTION_ID), 4);
}

TEST(mqtt5_prop_next_stops_at_a_corrupt_block_instead_of_overrunning)
{
    static const uint8_t blk[] = { 0x26, 0, 1, 'k', 0, 9, 'v' }; /* value length 9, 1 byte */
    mqtt_bytes raw = { blk, sizeof blk };
    size_t pos = 0;
    mqtt_prop q;
    CHECK(!mqtt_prop_next(&raw, &pos, &q));
    CHECK_EQ(pos, 0);
    static const uint8_t unknown[] = { 0x7f, 0 };
    raw = (mqtt_bytes){ unknown, sizeof unknown };
    CHECK(!mqtt_prop_next(&raw, &pos, &q));
}
