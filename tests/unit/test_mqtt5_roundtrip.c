/*
 * test_mqtt5_roundtrip.c - every MQTT 5.0 packet encoded with the codec's
 * encoders decodes back to the same fields and properties; the short forms
 * come out at the sizes the spec allows; every prefix of each is "need
 * more"; and the level-3/4 encoders write the 5.0 forms at level 5.
 */
#include "test.h"

#include "mqtt5_build.h"

enum { BUF = 4096 };

static mqtt_bytes str(const char *s)
{
    return (mqtt_bytes){ (const uint8_t *)s, strlen(s) };
}

static bool eq(mqtt_bytes a, const char *s)
{
    return a.len == strlen(s) && (a.len == 0 || memcmp(a.p, s, a.len) == 0);
}

static bool same(mqtt_bytes a, mqtt_bytes b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

/* Decode exactly one packet from buf[0..n); every shorter prefix must be
 * MQTT_NEED_MORE (a packet is never judged on bytes it does not have). */
static mqtt_err decode_whole(const uint8_t *buf, size_t n, mqtt_role role, mqtt_packet *p)
{
    size_t used = 0;
    for (size_t k = 0; k < n; k++) {
        if (mqtt_decode(buf, k, role, MQTT_LEVEL_5, 0, p, &used) != MQTT_NEED_MORE)
            return MQTT_ERR__COUNT;
    }
    mqtt_err e = mqtt_decode(buf, n, role, MQTT_LEVEL_5, 0, p, &used);
    if (e == MQTT_OK && (used != n || p->size != n))
        return MQTT_ERR__COUNT;
    return e;
}

/* A property block used by several packets. */
static size_t user_block(uint8_t *b, size_t cap, const char *k, const char *v)
{
    return mqtt_prop_pair(b, cap, MQTT_PROP_USER_PROPERTY, (const uint8_t *)k, strlen(k),
                          (const uint8_t *)v, strlen(v));
}

/* Cut a packet's body at every length below its own (fixing the Remaining
 * Length) and require an error: for packets without optional tails every
 * such cut lands inside a required field. */
static bool cuts_fail_below(const uint8_t *buf, size_t n, mqtt_role role, size_t limit)
{
    size_t hdr = 2;
    while (buf[hdr - 1] & 0x80)
        hdr++;
    for (size_t body = 0; body < n - hdr && body < limit; body++) {
        bbuf b = { .n = 0 }, pkt;
        mqtt_packet p;
        bb_raw(&b, buf + hdr, body);
        bb_frame(&pkt, buf[0], &b);
        if (bb_decode(&pkt, role, MQTT_LEVEL_5, &p) == MQTT_OK)
            return false;
    }
    return true;
}

static bool every_cut_fails(const uint8_t *buf, size_t n, mqtt_role role)
{
    return cuts_fail_below(buf, n, role, SIZE_MAX);
}

TEST(mqtt5_connect_with_properties_will_properties_and_credentials_round_trips)
{
    uint8_t props[128], wprops[128], buf[BUF];
    size_t pn = 0, wn = 0;
    pn += mqtt_prop_u32(props + pn, sizeof props - pn, MQTT_PROP_SESSION_EXPIRY, 3600);
    pn += mqtt_prop_u16(props + pn, sizeof props - pn, MQTT_PROP_RECEIVE_MAXIMUM, 20);
    pn += mqtt_prop_u32(props + pn, sizeof props - pn, MQTT_PROP_MAXIMUM_PACKET_SIZE, 65536);
    pn += mqtt_prop_u16(props + pn, sizeof props - pn, MQTT_PROP_TOPIC_ALIAS_MAXIMUM, 10);
    pn += mqtt_prop_u8(props + pn, sizeof props - pn, MQTT_PROP_REQUEST_RESPONSE_INFO, 1);
    pn += mqtt_prop_u8(props + pn, sizeof props - pn, MQTT_PROP_REQUEST_PROBLEM_INFO, 0);
    pn += user_block(props + pn, sizeof props - pn, "client", "test");
    wn += mqtt_prop_u32(wprops + wn, sizeof wprops - wn, MQTT_PROP_WILL_DELAY, 30);
    wn += mqtt_prop_u8(wprops + wn, sizeof wprops - wn, MQTT_PROP_PAYLOAD_FORMAT, 1);
    wn += mqtt_prop_u32(wprops + wn, sizeof wprops - wn, MQTT_PROP_MESSAGE_EXPIRY, 120);
    wn += mqtt_prop_bytes(wprops + wn, sizeof wprops - wn, MQTT_PROP_CONTENT_TYPE,
                          (const uint8_t *)"text/plain", 10);
    wn += mqtt_prop_bytes(wprops + wn, sizeof wprops - wn, MQTT_PROP_RESPONSE_TOPIC,
                          (const uint8_t *)"r/t", 3);
    wn += mqtt_prop_bytes(wprops + wn, sizeof wprops - wn, MQTT_PROP_CORRELATION_DATA,
                          (const uint8_t *)"\x00\x01", 2);

    mqtt_connect in = {
        .level = MQTT_LEVEL_5, .clean_session = true, .will_flag = true, .will_qos = 2,
        .will_retain = true, .username_flag = true, .password_flag = true, .keepalive = 77,
        .client_id = str("dev-1"), .will_topic = str("w/t"), .will_payload = str("gone"),
        .username = str("u"), .password = str("p\xffw"),
    };
    in.props.raw = (mqtt_bytes){ props, pn };
    in.will_props.raw = (mqtt_bytes){ wprops, wn };
    size_t n = mqtt_encode_connect(buf, sizeof buf, &in);
    CHECK(n > 0);
    CHECK_EQ(mqtt_encode_connect(buf, n - 1, &in), 0);
    mqtt_packet p;
    CHECK_EQ(decode_whole(buf, n, MQTT_FROM_CLIENT, &p), MQTT_OK);
    const mqtt_connect *c = &p.u.connect;
    CHECK_EQ(c->level, 5);
    CHECK(c->clean_session && c->will_flag && c->will_retain && c->will_qos == 2);
    CHECK_EQ(c->keepalive, 77);
    CHECK(eq(c->client_id, "dev-1") && eq(c->will_topic, "w/t") && eq(c->will_payload, "gone"));
    CHECK(eq(c->username, "u") && eq(c->password, "p\xffw"));
    CHECK(same(c->props.raw, in.props.raw) && same(c->will_props.raw, in.will_props.raw));
    CHECK_EQ(c->props.session_expiry, 3600);
    CHECK_EQ(c->props.receive_maximum, 20);
    CHECK_EQ(c->props.maximum_packet_size, 65536);
    CHECK_EQ(c->props.topic_alias_maximum, 10);
    CHECK_EQ(c->props.user_property_count, 1);
    CHECK_EQ(c->will_props.will_delay, 30);
    CHECK_EQ(c->will_props.message_expiry, 120);
    CHECK(eq(c->will_props.content_type, "text/plain") && eq(c->will_props.response_topic, "r/t"));
    CHECK(every_cut_fails(buf, n, MQTT_FROM_CLIENT));
}

TEST(mqtt5_connect_allows_a_password_without_user_name_unlike_311)
{
    uint8_t buf[BUF];
    mqtt_connect in = { .level = MQTT_LEVEL_5, .password_flag = true, .client_id = str("x"),
                        .password = str("secret") };
    size_t n = mqtt_encode_connect(buf, sizeof buf, &in);
    mqtt_packet p;
    CHECK_EQ(decode_whole(buf, n, MQTT_FROM_CLIENT, &p), MQTT_OK);
    CHECK(p.u.connect.password_flag && !p.u.connect.username_flag);
    CHECK(eq(p.u.connect.password, "secret"));
    /* the same bytes with level 4 are refused: [MQTT-3.1.2-22] */
    buf[8] = 4;
    size_t used;
    CHECK_EQ(mqtt_decode(buf, n, MQTT_FROM_CLIENT, 0, 0, &p, &used), MQTT_ERR_BAD_CONNECT_FLAGS);
}

TEST(mqtt5_connect_level_5_needs_the_name_mqtt)
{
    /* "MQIsdp" with level 5 is a level this name does not have */
    static const uint8_t mqisdp5[] = { 0x10, 0x0f, 0, 6, 'M', 'Q', 'I', 's', 'd', 'p', 5, 2,
                                       0, 0, 0, 0, 0 };
    mqtt_packet p;
    size_t used;
    CHECK_EQ(mqtt_decode(mqisdp5, sizeof mqisdp5, MQTT_FROM_CLIENT, 0, 0, &p, &used),
             MQTT_ERR_BAD_PROTOCOL_LEVEL);
    CHECK_EQ(mqtt_err_reason(MQTT_ERR_BAD_PROTOCOL_LEVEL), MQTT_RC_UNSUPPORTED_PROTOCOL_VERSION);
    /* level 5 CONNECT without its property block: the client id's length
     * is read as Property Length 0, then the id is cut short */
    static const uint8_t no_block[] = { 0x10, 0x0c, 0, 4, 'M', 'Q', 'T', 'T', 5, 2, 0, 0, 0, 0 };
    CHECK(mqtt_decode(no_block, sizeof no_block, MQTT_FROM_CLIENT, 0, 0, &p, &used) != MQTT_OK);
}

TEST(mqtt5_connack_round_trips_with_capability_properties)
{
    uint8_t props[128], buf[BUF];
    size_t pn = 0;
    pn += mqtt_prop_u16(props + pn, sizeof props - pn, MQTT_PROP_RECEIVE_MAXIMUM, 100);
    pn += mqtt_prop_u8(props + pn, sizeof props - pn, MQTT_PROP_MAXIMUM_QOS, 1);
    pn += mqtt_prop_u8(props + pn, sizeof props - pn, MQTT_PROP_RETAIN_AVAILABLE, 0);
    pn += mqtt_prop_u8(props + pn, sizeof props - pn, MQTT_PROP_SHARED_SUB_AVAILABLE, 1);
    pn += mqtt_prop_bytes(props + pn, sizeof props - pn, MQTT_PROP_ASSIGNED_CLIENT_ID,
                          (const uint8_t *)"auto-1", 6);
    pn += mqtt_prop_u16(props + pn, sizeof props - pn, MQTT_PROP_SERVER_KEEP_ALIVE, 60);
    /* given in two pieces, as a broker does */
    mqtt_bytes pieces[2] = { { props, 9 }, { props + 9, pn - 9 } };
    size_t n = mqtt_encode_connack5(buf, sizeof buf, true, MQTT_RC_SUCCESS, pieces, 2);
    CHECK_EQ(n, 2 + 2 + 1 + pn);
    CHECK_EQ(mqtt_encode_connack5(buf, n - 1, true, MQTT_RC_SUCCESS, pieces, 2), 0);
    mqtt_packet p;
    CHECK_EQ(decode_whole(buf, n, MQTT_FROM_SERVER, &p), MQTT_OK);
    CHECK(p.u.connack.session_present && p.u.connack.return_code == 0);
    CHECK(same(p.u.connack.props.raw, (mqtt_bytes){ props, pn }));
    CHECK(eq(p.u.connack.props.assigned_client_id, "auto-1"));
    CHECK_EQ(p.u.connack.props.server_keep_alive, 60);
    CHECK(every_cut_fails(buf, n, MQTT_FROM_SERVER));

    /* a refusal never says session present ([MQTT-3.2.2-6]) */
    n = mqtt_encode_connack5(buf, sizeof buf, true, MQTT_RC_NOT_AUTHORIZED, NULL, 0);
    CHECK_EQ(n, 5);
    CHECK_EQ(decode_whole(buf, n, MQTT_FROM_SERVER, &p), MQTT_OK);
    CHECK(!p.u.connack.session_present && p.u.connack.return_code == MQTT_RC_NOT_AUTHORIZED);
}

TEST(mqtt5_connack_at_level_5_from_the_311_encoder_speaks_50_codes)
{
    static const uint8_t v311[] = { 0, 1, 2, 3, 4, 5 };
    static const uint8_t v5[] = { 0x00, 0x84, 0x85, 0x88, 0x86, 0x87 };
    for (size_t i = 0; i < sizeof v311; i++) {
        uint8_t buf[8];
        mqtt_packet p;
        size_t n = mqtt_encode_connack(buf, sizeof buf, MQTT_LEVEL_5, true, v311[i]);
        CHECK_EQ(n, 5);
        CHECK_EQ(decode_whole(buf, n, MQTT_FROM_SERVER, &p), MQTT_OK);
        CHECK_EQ(p.u.connack.return_code, v5[i]);
        CHECK_EQ(p.u.connack.session_present, i == 0);
    }
}

TEST(mqtt5_publish_round_trips_with_properties_in_pieces_at_every_qos)
{
    uint8_t fwd[128], own[32], buf[BUF];
    size_t fn = 0, on = 0;
    fn += mqtt_prop_u8(fwd + fn, sizeof fwd - fn, MQTT_PROP_PAYLOAD_FORMAT, 1);
    fn += mqtt_prop_bytes(fwd + fn, sizeof fwd - fn, MQTT_PROP_RESPONSE_TOPIC,
                          (const uint8_t *)"reply", 5);
    fn += mqtt_prop_bytes(fwd + fn, sizeof fwd - fn, MQTT_PROP_CORRELATION_DATA,
                          (const uint8_t *)"id-9", 4);
    fn += user_block(fwd + fn, sizeof fwd - fn, "a", "1");
    on += mqtt_prop_u32(own + on, sizeof own - on, MQTT_PROP_MESSAGE_EXPIRY, 59);
    on += mqtt_prop_varint(own + on, sizeof own - on, MQTT_PROP_SUBSCRIPTION_ID, 1000);
    on += mqtt_prop_varint(own + on, sizeof own - on, MQTT_PROP_SUBSCRIPTION_ID, 3);
    mqtt_bytes pieces[2] = { { fwd, fn }, { own, on } };

    for (uint8_t qos = 0; qos <= 2; qos++) {
        mqtt_publish in = { .qos = qos, .dup = qos > 0, .retain = true,
                            .packet_id = qos ? 513 : 0, .topic = str("a/b"),
                            .payload = str("hello") };
        size_t want = mqtt_publish5_size(3, 5, qos, fn + on);
        size_t n = mqtt_encode_publish5(buf, sizeof buf, &in, pieces, 2);
        CHECK_EQ(n, want);
        CHECK_EQ(mqtt_encode_publish5(buf, n - 1, &in, pieces, 2), 0);
        mqtt_packet p;
        CHECK_EQ(decode_whole(buf, n, MQTT_FROM_SERVER, &p), MQTT_OK);
        const mqtt_publish *o = &p.u.publish;
        CHECK(o->qos == qos && o->retain && o->dup == (qos > 0) && o->packet_id == in.packet_id);
        CHECK(eq(o->topic, "a/b") && eq(o->payload, "hello"));
        CHECK_EQ(o->props.raw.len, fn + on);
        CHECK_MEM(o->props.raw.p, fwd, fn);
        CHECK_MEM(o->props.raw.p + fn, own, on);
        CHECK_EQ(o->props.message_expiry, 59);
        CHECK_EQ(o->props.subscription_id, 1000);
        CHECK(eq(o->props.response_topic, "reply") && eq(o->props.correlation_data, "id-9"));
        /* a client may not send the subscription ids */
        size_t used;
        CHECK_EQ(mqtt_decode(buf, n, MQTT_FROM_CLIENT, 5, 0, &p, &used), MQTT_ERR_BAD_PROPERTY);
    }
}

TEST(mqtt5_empty_topic_is_allowed_only_with_a_topic_alias)
{
    uint8_t alias[8], buf[BUF];
    size_t an = mqtt_prop_u16(alias, sizeof alias, MQTT_PROP_TOPIC_ALIAS, 3);
    mqtt_bytes pr = { alias, an };
    mqtt_publish in = { .qos = 1, .packet_id = 2, .topic = { NULL, 0 }, .payload = str("x") };
    size_t n = mqtt_encode_publish5(buf, sizeof buf, &in, &pr, 1);
    mqtt_packet p;
    CHECK_EQ(decode_whole(buf, n, MQTT_FROM_CLIENT, &p), MQTT_OK);
    CHECK_EQ(p.u.publish.topic.len, 0);
    CHECK_EQ(p.u.publish.props.topic_alias, 3);
    /* topic and alias together: allowed (sets the alias) */
    in.topic = str("t");
    n = mqtt_encode_publish5(buf, sizeof buf, &in, &pr, 1);
    CHECK_EQ(decode_whole(buf, n, MQTT_FROM_CLIENT, &p), MQTT_OK);
    /* no topic, no alias: a Protocol Error */
    in.topic = (mqtt_bytes){ NULL, 0 };
    n = mqtt_encode_publish5(buf, sizeof buf, &in, NULL, 0);
    CHECK_EQ(decode_whole(buf, n, MQTT_FROM_CLIENT, &p), MQTT_ERR_BAD_TOPIC_NAME);
    CHECK_EQ(mqtt_err_reason(MQTT_ERR_BAD_TOPIC_NAME), MQTT_RC_PROTOCOL_ERROR);
    /* wildcards stay forbidden in a topic name */
    in.topic = str("a/+");
    n = mqtt_encode_publish5(buf, sizeof buf, &in, &pr, 1);
    CHECK_EQ(decode_whole(buf, n, MQTT_FROM_CLIENT, &p), MQTT_ERR_BAD_TOPIC_NAME);
}

TEST(mqtt5_publish_acks_use_the_shortest_form_and_round_trip)
{
    static const mqtt_type types[] = { MQTT_PUBACK, MQTT_PUBREC, MQTT_PUBREL, MQTT_PUBCOMP };
    uint8_t rs[64], buf[BUF];
    size_t rn = mqtt_prop_bytes(rs, sizeof rs, MQTT_PROP_REASON_STRING,
                                (const uint8_t *)"why", 3);
    rn += user_block(rs + rn, sizeof rs - rn, "k", "v");
    mqtt_bytes pr = { rs, rn };
    for (size_t i = 0; i < 4; i++) {
        mqtt_type t = types[i];
        uint8_t bad = t == MQTT_PUBREL || t == MQTT_PUBCOMP ? MQTT_RC_PACKET_ID_NOT_FOUND
                                                             : MQTT_RC_NOT_AUTHORIZED;
        mqtt_packet p;
        size_t n = mqtt_encode_ack5(buf, sizeof buf, t, 300, MQTT_RC_SUCCESS, NULL, 0);
        CHECK_EQ(n, 4);
        CHECK_EQ(buf[0], (uint8_t)(t << 4 | (t == MQTT_PUBREL ? 2 : 0)));
        CHECK_EQ(decode_whole(buf, n, MQTT_FROM_CLIENT, &p), MQTT_OK);
        CHECK(p.type == t && p.u.ack.packet_id == 300 && p.u.ack.reason == 0);
        n = mqtt_encode_ack5(buf, sizeof buf, t, 300, bad, NULL, 0);
        CHECK_EQ(n, 5);
        CHECK_EQ(decode_whole(buf, n, MQTT_FROM_SERVER, &p), MQTT_OK);
        CHECK_EQ(p.u.ack.reason, bad);
        n = mqtt_encode_ack5(buf, sizeof buf, t, 300, bad, &pr, 1);
        CHECK_EQ(n, 2 + 2 + 1 + 1 + rn);
        CHECK_EQ(mqtt_encode_ack5(buf, n - 1, t, 300, bad, &pr, 1), 0);
        CHECK_EQ(decode_whole(buf, n, MQTT_FROM_CLIENT, &p), MQTT_OK);
        CHECK(p.u.ack.reason == bad && eq(p.u.ack.props.reason_string, "why"));
        CHECK_EQ(p.u.ack.props.user_property_count, 1);
        /* Success with properties keeps its reason byte */
        n = mqtt_encode_ack5(buf, sizeof buf, t, 300, MQTT_RC_SUCCESS, &pr, 1);
        CHECK_EQ(n, 2 + 2 + 1 + 1 + rn);
        CHECK_EQ(decode_whole(buf, n, MQTT_FROM_CLIENT, &p), MQTT_OK);
        /* the 3.1.1 encoder at level 5 writes the 4-byte Success form */
        CHECK_EQ(mqtt_encode_ack(buf, sizeof buf, MQTT_LEVEL_5, t, 300), 4);
        CHECK_EQ(decode_whole(buf, 4, MQTT_FROM_CLIENT, &p), MQTT_OK);
    }
}

TEST(mqtt5_subscribe_with_options_and_subscription_id_round_trips)
{
    uint8_t sid[8], buf[BUF];
    size_t sn = mqtt_prop_varint(sid, sizeof sid, MQTT_PROP_SUBSCRIPTION_ID, 42);
    mqtt_bytes pr = { sid, sn };
    mqtt_bytes filters[4] = { str("a/+"), str("$share/g/b/#"), str("c"), str("d") };
    uint8_t opts[4] = {
        1 | MQTT_SUBOPT_NO_LOCAL | MQTT_SUBOPT_RETAIN_AS_PUBLISHED,
        2 | (2u << MQTT_SUBOPT_RETAIN_HANDLING_SHIFT),
        0 | (1u << MQTT_SUBOPT_RETAIN_HANDLING_SHIFT),
        2,
    };
    size_t n = mqtt_encode_subscribe5(buf, sizeof buf, 77, filters, opts, 4, &pr);
    CHECK(n > 0);
    CHECK_EQ(mqtt_encode_subscribe5(buf, n - 1, 77, filters, opts, 4, &pr), 0);
    mqtt_packet p;
    CHECK_EQ(decode_whole(buf, n, MQTT_FROM_CLIENT, &p), MQTT_OK);
    CHECK_EQ(p.u.subscribe.packet_id, 77);
    CHECK_EQ(p.u.subscribe.count, 4);
    CHECK_EQ(p.u.subscribe.props.subscription_id, 42);
    size_t pos = 0;
    mqtt_bytes f;
    uint8_t o;
    for (int i = 0; i < 4; i++) {
        CHECK(mqtt_subscribe_next(&p.u.subscribe, &pos, &f, &o));
        CHECK(same(f, filters[i]));
        CHECK_EQ(o, opts[i]);
    }
    CHECK(!mqtt_subscribe_next(&p.u.subscribe, &pos, &f, &o));
    /* a cut ending after a whole entry is a valid shorter SUBSCRIBE; one
     * inside the id, the block or the first entry is not */
    CHECK(cuts_fail_below(buf, n, MQTT_FROM_CLIENT, 2 + 1 + sn + 2 + filters[0].len + 1));

    /* without properties, and the 3.1.1 encoder at level 5 */
    uint8_t q = 1;
    n = mqtt_encode_subscribe(buf, sizeof buf, MQTT_LEVEL_5, 5, filters, &q, 1);
    CHECK_EQ(n, 2 + 2 + 1 + 2 + 3 + 1);
    CHECK_EQ(decode_whole(buf, n, MQTT_FROM_CLIENT, &p), MQTT_OK);
    CHECK_EQ(p.u.subscribe.props.raw.len, 0);
}

TEST(mqtt5_unsubscribe_and_unsuback_with_reason_codes_round_trip)
{
    uint8_t buf[BUF], up[32];
    size_t un = user_block(up, sizeof up, "x", "y");
    mqtt_bytes pr = { up, un };
    mqtt_bytes filters[2] = { str("a/#"), str("$share/g/c") };
    size_t n = mqtt_encode_unsubscribe5(buf, sizeof buf, 8, filters, 2, &pr);
    mqtt_packet p;
    CHECK_EQ(decode_whole(buf, n, MQTT_FROM_CLIENT, &p), MQTT_OK);
    CHECK_EQ(p.u.unsubscribe.count, 2);
    CHECK_EQ(p.u.unsubscribe.props.user_property_count, 1);
    size_t pos = 0;
    mqtt_bytes f;
    CHECK(mqtt_unsubscribe_next(&p.u.unsubscribe, &pos, &f) && same(f, filters[0]));
    CHECK(mqtt_unsubscribe_next(&p.u.unsubscribe, &pos, &f) && same(f, filters[1]));
    CHECK(!mqtt_unsubscribe_next(&p.u.unsubscribe, &pos, &f));
    n = mqtt_encode_unsubscribe(buf, sizeof buf, MQTT_LEVEL_5, 8, filters, 1);
    CHECK_EQ(decode_whole(buf, n, MQTT_FROM_CLIENT, &p), MQTT_OK);

    static const uint8_t codes[] = { MQTT_RC_SUCCESS, MQTT_RC_NO_SUBSCRIPTION_EXISTED };
    n = mqtt_encode_suback5(buf, sizeof buf, MQTT_UNSUBACK, 8, codes, 2, &pr, 1);
    CHECK_EQ(n, 2 + 2 + 1 + un + 2);
    CHECK_EQ(decode_whole(buf, n, MQTT_FROM_SERVER, &p), MQTT_OK);
    CHECK_EQ(p.type, MQTT_UNSUBACK);
    CHECK(p.u.unsuback.packet_id == 8 && p.u.unsuback.count == 2);
    pos = 0;
    uint8_t c;
    CHECK(mqtt_suback_next(&p.u.unsuback, &pos, &c) && c == 0);
    CHECK(mqtt_suback_next(&p.u.unsuback, &pos, &c) && c == 0x11);
    CHECK(!mqtt_suback_next(&p.u.unsuback, &pos, &c));
    CHECK(cuts_fail_below(buf, n, MQTT_FROM_SERVER, 2 + 1 + un + 1));
    /* an UNSUBACK at level 5 needs its codes */
    static const uint8_t bare[] = { 0xb0, 0x03, 0x00, 0x08, 0x00 };
    size_t used;
    CHECK_EQ(mqtt_decode(bare, sizeof bare, MQTT_FROM_SERVER, 5, 0, &p, &used), MQTT_ERR_NO_TOPICS);
}

TEST(mqtt5_suback_round_trips_with_reason_string)
{
    uint8_t buf[BUF], rs[32];
    size_t rn = mqtt_prop_bytes(rs, sizeof rs, MQTT_PROP_REASON_STRING, (const uint8_t *)"no", 2);
    mqtt_bytes pr = { rs, rn };
    static const uint8_t codes[] = { 0x02, 0x9E, 0x87, 0xA1, 0x00 };
    size_t n = mqtt_encode_suback5(buf, sizeof buf, MQTT_SUBACK, 9, codes, 5, &pr, 1);
    mqtt_packet p;
    CHECK_EQ(decode_whole(buf, n, MQTT_FROM_SERVER, &p), MQTT_OK);
    CHECK_EQ(p.u.suback.count, 5);
    CHECK(eq(p.u.suback.props.reason_string, "no"));
    CHECK_MEM(p.u.suback.raw.p, codes, 5);
    /* the 3.1.1 encoder at level 5: an empty property block */
    static const uint8_t granted[] = { 1, 0x80 };
    CHECK_EQ(mqtt_suback_size(MQTT_LEVEL_5, 2), 2 + 2 + 1 + 2);
    n = mqtt_encode_suback(buf, sizeof buf, MQTT_LEVEL_5, 9, granted, 2);
    CHECK_EQ(n, 7);
    CHECK_EQ(decode_whole(buf, n, MQTT_FROM_SERVER, &p), MQTT_OK);
    CHECK_EQ(p.u.suback.count, 2);
}

TEST(mqtt5_disconnect_and_auth_round_trip_in_their_short_and_long_forms)
{
    uint8_t buf[BUF], props[64];
    size_t pn = mqtt_prop_bytes(props, sizeof props, MQTT_PROP_AUTH_METHOD,
                                (const uint8_t *)"SCRAM", 5);
    pn += mqtt_prop_bytes(props + pn, sizeof props - pn, MQTT_PROP_AUTH_DATA,
                          (const uint8_t *)"\x01\x02", 2);
    mqtt_bytes pr = { props, pn };
    mqtt_packet p;

    CHECK_EQ(mqtt_encode_reason5(buf, sizeof buf, MQTT_DISCONNECT, 0, NULL, 0), 2);
    CHECK_EQ(decode_whole(buf, 2, MQTT_FROM_SERVER, &p), MQTT_OK);
    size_t n = mqtt_encode_reason5(buf, sizeof buf, MQTT_DISCONNECT,
                                   MQTT_RC_SESSION_TAKEN_OVER, NULL, 0);
    CHECK_EQ(n, 3);
    CHECK_EQ(decode_whole(buf, n, MQTT_FROM_SERVER, &p), MQTT_OK);
    CHECK_EQ(p.u.disconnect.reason, MQTT_RC_SESSION_TAKEN_OVER);
    uint8_t se[8];
    size_t sen = mqtt_prop_u32(se, sizeof se, MQTT_PROP_SESSION_EXPIRY, 0);
    mqtt_bytes sep = { se, sen };
    n = mqtt_encode_reason5(buf, sizeof buf, MQTT_DISCONNECT, 0, &sep, 1);
    CHECK_EQ(n, 2 + 1 + 1 + sen);
    CHECK_EQ(decode_whole(buf, n, MQTT_FROM_CLIENT, &p), MQTT_OK);
    CHECK(p.u.disconnect.props.present & MQTT_PROP_BIT(MQTT_PROP_SESSION_EXPIRY));

    n = mqtt_encode_reason5(buf, sizeof buf, MQTT_AUTH, MQTT_RC_CONTINUE_AUTHENTICATION, &pr, 1);
    CHECK_EQ(n, 2 + 1 + 1 + pn);
    CHECK_EQ(mqtt_encode_reason5(buf, n - 1, MQTT_AUTH, MQTT_RC_CONTINUE_AUTHENTICATION, &pr, 1), 0);
    CHECK_EQ(decode_whole(buf, n, MQTT_FROM_CLIENT, &p), MQTT_OK);
    CHECK_EQ(p.type, MQTT_AUTH);
    CHECK(eq(p.u.auth.props.auth_method, "SCRAM") && p.u.auth.props.auth_data.len == 2);
    /* an AUTH with a reason and no properties still writes Property Length 0 */
    n = mqtt_encode_reason5(buf, sizeof buf, MQTT_AUTH, MQTT_RC_RE_AUTHENTICATE, NULL, 0);
    CHECK_EQ(n, 4);
    CHECK_EQ(decode_whole(buf, n, MQTT_FROM_CLIENT, &p), MQTT_OK);
    CHECK_EQ(mqtt_encode_reason5(buf, sizeof buf, MQTT_AUTH, MQTT_RC_SUCCESS, NULL, 0), 2);
    CHECK_EQ(decode_whole(buf, 2, MQTT_FROM_SERVER, &p), MQTT_OK);
}

TEST(mqtt5_publish_from_the_311_encoder_at_level_5_has_an_empty_block)
{
    uint8_t buf[BUF];
    mqtt_publish in = { .qos = 1, .packet_id = 4, .topic = str("t"), .payload = str("pp") };
    size_t n = mqtt_encode_publish(buf, sizeof buf, MQTT_LEVEL_5, &in);
    CHECK_EQ(n, mqtt_publish_size(MQTT_LEVEL_5, 1, 2, 1));
    CHECK_EQ(n, mqtt_publish_size(MQTT_LEVEL_311, 1, 2, 1) + 1);
    mqtt_packet p;
    CHECK_EQ(decode_whole(buf, n, MQTT_FROM_CLIENT, &p), MQTT_OK);
    CHECK(eq(p.u.publish.payload, "pp") && p.u.publish.props.raw.len == 0);
}

/* A level-3/4 PUBLISH or PUBACK says "no properties" by `present` and
 * `raw` alone (mqtt.h: the 3.1.1 hot path does not zero the whole block);
 * the other packets' blocks are all zero. */
TEST(mqtt5_level_3_and_4_packets_decode_without_properties)
{
    static const uint8_t pub[] = { 0x32, 0x06, 0, 1, 't', 0, 1, 'x' };
    static const uint8_t ack[] = { 0x40, 0x02, 0, 1 };
    static const uint8_t sub[] = { 0x82, 0x06, 0, 1, 0, 1, 't', 1 };
    static const uint8_t unsuback[] = { 0xb0, 0x02, 0, 7 };
    static const uint8_t disc[] = { 0xe0, 0x00 };
    static const mqtt_props zero;
    mqtt_packet p;
    size_t used;
    memset(&p, 0xa5, sizeof p); /* garbage the decoder must overwrite */
    CHECK_EQ(mqtt_decode(pub, sizeof pub, MQTT_FROM_CLIENT, 4, 0, &p, &used), MQTT_OK);
    CHECK(p.u.publish.props.present == 0 && p.u.publish.props.raw.len == 0 &&
          p.u.publish.props.raw.p == NULL);
    memset(&p, 0xa5, sizeof p);
    CHECK_EQ(mqtt_decode(ack, sizeof ack, MQTT_FROM_CLIENT, 4, 0, &p, &used), MQTT_OK);
    CHECK_EQ(p.u.ack.reason, 0);
    CHECK(p.u.ack.props.present == 0 && p.u.ack.props.raw.len == 0 &&
          p.u.ack.props.raw.p == NULL);
    memset(&p, 0xa5, sizeof p);
    CHECK_EQ(mqtt_decode(sub, sizeof sub, MQTT_FROM_CLIENT, 3, 0, &p, &used), MQTT_OK);
    CHECK_MEM(&p.u.subscribe.props, &zero, sizeof zero);
    memset(&p, 0xa5, sizeof p);
    CHECK_EQ(mqtt_decode(unsuback, sizeof unsuback, MQTT_FROM_SERVER, 4, 0, &p, &used), MQTT_OK);
    CHECK(p.u.ack.packet_id == 7 && p.u.unsuback.count == 0);
    memset(&p, 0xa5, sizeof p);
    CHECK_EQ(mqtt_decode(disc, sizeof disc, MQTT_FROM_CLIENT, 4, 0, &p, &used), MQTT_OK);
    CHECK_EQ(p.u.disconnect.reason, 0);
    CHECK_MEM(&p.u.disconnect.props, &zero, sizeof zero);
}

/* The paths a message without properties takes (decode.c and encode.c
 * skip the general property code for them): the level-5 form of the
 * 3.1.1 encoder is the 5.0 encoder's packet byte for byte, and an empty
 * block decodes to "no properties" even into a packet that held some. */
TEST(mqtt5_publish_and_acks_without_properties_decode_as_empty_after_ones_with)
{
    uint8_t props[32], buf[BUF], buf2[BUF];
    size_t pn = mqtt_prop_u32(props, sizeof props, MQTT_PROP_MESSAGE_EXPIRY, 9);
    mqtt_bytes pr = { props, pn };
    mqtt_publish in = { .qos = 1, .packet_id = 7, .topic = str("a/b"), .payload = str("hi") };
    mqtt_packet p;
    size_t n = mqtt_encode_publish5(buf, sizeof buf, &in, &pr, 1);
    CHECK_EQ(decode_whole(buf, n, MQTT_FROM_CLIENT, &p), MQTT_OK);
    CHECK(p.u.publish.props.present != 0);

    n = mqtt_encode_publish5(buf, sizeof buf, &in, NULL, 0);
    size_t n2 = mqtt_encode_publish(buf2, sizeof buf2, MQTT_LEVEL_5, &in);
    CHECK_EQ(n2, n);
    CHECK_EQ(mqtt_publish_size(MQTT_LEVEL_5, 3, 2, 1), n);
    CHECK(n2 == n && memcmp(buf, buf2, n) == 0);
    CHECK_EQ(decode_whole(buf, n, MQTT_FROM_CLIENT, &p), MQTT_OK);
    CHECK_EQ(p.u.publish.props.present, 0);
    CHECK_EQ(p.u.publish.props.raw.len, 0);
    CHECK(eq(p.u.publish.topic, "a/b") && eq(p.u.publish.payload, "hi"));
    CHECK_EQ(p.u.publish.packet_id, 7);

    /* An ack with a reason and an empty block (Remaining Length 4), after
     * one with properties. */
    uint8_t rs[32];
    size_t rn = mqtt_prop_bytes(rs, sizeof rs, MQTT_PROP_REASON_STRING, (const uint8_t *)"w", 1);
    mqtt_bytes rpr = { rs, rn };
    n = mqtt_encode_ack5(buf, sizeof buf, MQTT_PUBACK, 7, MQTT_RC_NO_MATCHING_SUBSCRIBERS, &rpr, 1);
    CHECK_EQ(decode_whole(buf, n, MQTT_FROM_SERVER, &p), MQTT_OK);
    CHECK(p.u.ack.props.present != 0);
    const uint8_t empty[] = { MQTT_PUBACK << 4, 4, 0, 7, MQTT_RC_NO_MATCHING_SUBSCRIBERS, 0 };
    CHECK_EQ(decode_whole(empty, sizeof empty, MQTT_FROM_SERVER, &p), MQTT_OK);
    CHECK_EQ(p.u.ack.reason, MQTT_RC_NO_MATCHING_SUBSCRIBERS);
    CHECK_EQ(p.u.ack.props.present, 0);
    CHECK_EQ(p.u.ack.props.raw.len, 0);
}
