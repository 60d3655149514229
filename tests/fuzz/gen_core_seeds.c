/*
 * gen_core_seeds.c - fuzz_core's seeds: scripts of connections, packets
 * and clock steps as fuzz_core.c reads them, at MQTT 3.1.1 and 5.0 (QoS
 * flows, sessions, wills, retained messages, shared subscriptions, aliases
 * and the failures it injects). Part of gen_seeds (gen_seeds.h).
 */
#include "fuzz/gen_seeds.h"

#include <string.h>

/* ---- fuzz_core --------------------------------------------------------- */

/* Script ops, as fuzz_core.c reads them. */
enum { OP_OPEN = 0, OP_DROP, OP_BYTES, OP_BYTES16, OP_TIME, OP_READING, OP_FAIL, OP_READ };

static void op(seed *s, unsigned conn, unsigned kind, unsigned arg)
{
    put_u8(s, (uint8_t)(conn | kind << 2 | arg << 5));
}

static void send_pk(seed *s, unsigned conn, const uint8_t *pk, size_t n)
{
    if (n < 256) {
        op(s, conn, OP_BYTES, 0);
        put_u8(s, (uint8_t)n);
    } else {
        op(s, conn, OP_BYTES16, 0);
        put_u8(s, (uint8_t)(n >> 8));
        put_u8(s, (uint8_t)n);
    }
    put(s, pk, n);
}

void gen_core(const char *dir)
{
    uint8_t o[512];
    seed s;

    /* Subscriber and publisher, every QoS, acks from the subscriber. */
    s.len = 0;
    put_u8(&s, 0x00);
    op(&s, 0, OP_OPEN, 0);
    send_pk(&s, 0, o, pk_connect(o, 4, "sub", false, false, false));
    send_pk(&s, 0, o, pk_subscribe(o, 1, "a/+", 2, "#", 1));
    op(&s, 1, OP_OPEN, 0);
    send_pk(&s, 1, o, pk_connect(o, 4, "pub", true, true, false));
    send_pk(&s, 1, o, pk_publish(o, 4, "a/b", "zero", 0, false, 0));
    send_pk(&s, 1, o, pk_publish(o, 4, "a/b", "one", 1, true, 1));
    send_pk(&s, 1, o, pk_publish(o, 4, "a/c", "two", 2, false, 2));
    send_pk(&s, 1, o, mqtt_encode_ack(o, 4, 4, MQTT_PUBREL, 2));
    send_pk(&s, 0, o, mqtt_encode_ack(o, 4, 4, MQTT_PUBACK, 1));
    send_pk(&s, 0, o, mqtt_encode_ack(o, 4, 4, MQTT_PUBREC, 2));
    send_pk(&s, 0, o, mqtt_encode_ack(o, 4, 4, MQTT_PUBCOMP, 2));
    op(&s, 1, OP_DROP, 0);
    send_pk(&s, 0, o, mqtt_encode_empty(o, 2, MQTT_DISCONNECT));
    write_seed(dir, "core", "pubsub-qos012", &s);

    /* Persistent session offline, messages queued, reconnect, takeover. */
    s.len = 0;
    put_u8(&s, 0x01); /* tiny limits */
    op(&s, 0, OP_OPEN, 0);
    send_pk(&s, 0, o, pk_connect(o, 4, "p", false, false, false));
    send_pk(&s, 0, o, pk_subscribe(o, 1, "t/#", 1, NULL, 0));
    op(&s, 0, OP_DROP, 0);
    op(&s, 1, OP_OPEN, 0);
    send_pk(&s, 1, o, pk_connect(o, 3, "q", true, false, false));
    for (uint16_t i = 1; i <= 6; i++)
        send_pk(&s, 1, o, pk_publish(o, 3, "t/x", "queued", 1, false, i));
    op(&s, 0, OP_OPEN, 0);
    send_pk(&s, 0, o, pk_connect(o, 4, "p", false, false, false));
    op(&s, 2, OP_OPEN, 0);
    send_pk(&s, 2, o, pk_connect(o, 4, "p", false, false, false));
    op(&s, 2, OP_TIME, 3);
    put_u8(&s, 200);
    write_seed(dir, "core", "persistent-takeover", &s);

    /* Slow reader: output backs up, input pauses, partial reads. */
    s.len = 0;
    put_u8(&s, 0x01);
    op(&s, 0, OP_OPEN, 0);
    send_pk(&s, 0, o, pk_connect(o, 4, "slow", true, false, false));
    send_pk(&s, 0, o, pk_subscribe(o, 1, "#", 0, NULL, 0));
    op(&s, 0, OP_READING, 0);
    for (int i = 0; i < 8; i++)
        send_pk(&s, 0, o, pk_publish(o, 4, "loop", "0123456789012345678901234567890123456789", 0,
                                     false, 0));
    op(&s, 0, OP_READ, 0);
    put_u8(&s, 100);
    op(&s, 0, OP_READING, 0);
    write_seed(dir, "core", "slow-reader", &s);

    /* Retained messages, will, $SYS, timeouts, session expiry. */
    s.len = 0;
    put_u8(&s, 0x06);
    op(&s, 0, OP_OPEN, 0);
    send_pk(&s, 0, o, pk_connect(o, 4, "w", true, true, true));
    send_pk(&s, 0, o, pk_publish(o, 4, "r/1", "keep", 1, true, 1));
    send_pk(&s, 0, o, pk_publish(o, 4, "r/2", "keep", 0, true, 0));
    send_pk(&s, 0, o, pk_publish(o, 4, "r/2", "", 0, true, 0));
    op(&s, 1, OP_OPEN, 0);
    send_pk(&s, 1, o, pk_connect(o, 4, "x", false, false, false));
    send_pk(&s, 1, o, pk_subscribe(o, 9, "r/#", 2, "$SYS/#", 0));
    send_pk(&s, 1, o, pk_unsubscribe(o, 10, "r/#"));
    op(&s, 0, OP_DROP, 0);
    op(&s, 2, OP_OPEN, 0);
    op(&s, 1, OP_TIME, 5);
    put_u8(&s, 255);
    write_seed(dir, "core", "retained-will-expiry", &s);

    /* Allocation failures in the middle of a flow. */
    s.len = 0;
    put_u8(&s, 0x00);
    op(&s, 0, OP_OPEN, 0);
    op(&s, 0, OP_FAIL, 0);
    send_pk(&s, 0, o, pk_connect(o, 4, "f", false, false, false));
    op(&s, 1, OP_OPEN, 0);
    send_pk(&s, 1, o, pk_connect(o, 4, "g", false, false, false));
    send_pk(&s, 1, o, pk_subscribe(o, 1, "a/#", 2, NULL, 0));
    op(&s, 1, OP_FAIL, 1);
    send_pk(&s, 1, o, pk_publish(o, 4, "a/b", "x", 2, true, 3));
    write_seed(dir, "core", "alloc-fail", &s);

    /* Tiny limits (work budget 2, 3 subscriptions, 4 levels, 32 bytes): a
     * SUBSCRIBE of 8 filters worked through in slices, some refused by
     * each limit, retained messages behind its SUBACK, a slow reader so it
     * stalls half done and another connection takes the session over; an
     * UNSUBSCRIBE in slices; a PUBLISH and a will beyond the topic limits. */
    static const char *const fl[] = {"r/#", "r/+", "a/b/c/d/e", "0123456789012345678901234567890123",
                                     "r/1", "s", "t/u", "r/+/+/+"};
    s.len = 0;
    put_u8(&s, 0x01);
    op(&s, 0, OP_OPEN, 0);
    send_pk(&s, 0, o, pk_connect(o, 4, "ret", true, false, false));
    send_pk(&s, 0, o, pk_publish(o, 4, "r/1", "one", 1, true, 1));
    send_pk(&s, 0, o, pk_publish(o, 4, "r/2", "two", 0, true, 0));
    op(&s, 1, OP_OPEN, 0);
    send_pk(&s, 1, o, pk_connect(o, 4, "subs", false, false, false));
    send_pk(&s, 1, o, pk_subscribe_n(o, 5, fl, 1, 8));
    send_pk(&s, 1, o, pk_unsubscribe_n(o, 6, fl, 8));
    op(&s, 1, OP_READING, 0);
    send_pk(&s, 1, o, pk_subscribe_n(o, 7, fl, 2, 8));
    op(&s, 2, OP_OPEN, 0);
    send_pk(&s, 2, o, pk_connect(o, 4, "subs", false, false, false));
    send_pk(&s, 0, o, pk_publish(o, 4, "a/b/c/d/e", "deep", 1, false, 2));
    op(&s, 3, OP_OPEN, 0);
    {
        mqtt_connect c = {.level = 4, .clean_session = true, .keepalive = 30,
                          .client_id = str("w"), .will_flag = true,
                          .will_topic = str("w/x/y/z/deep"), .will_payload = str("bye")};
        send_pk(&s, 3, o, mqtt_encode_connect(o, 512, &c));
    }
    write_seed(dir, "core", "subscribe-limits-slices", &s);

    /* The operator console: an operator (identity + role) asking every
     * command, a refused non-operator, bad requests (docs/CONSOLE.md). */
    static const char *const reqs[] = {
        "{\"command\":\"status\"}",
        "{\"command\":\"clients\",\"limit\":1,\"offset\":1}",
        "{\"command\":\"retained-list\",\"filter\":\"r/#\"}",
        "{\"command\":\"retained-clear\",\"filter\":\"r/+\",\"confirm\":true}",
        "{\"command\":\"kick\",\"client\":\"n\",\"session\":\"delete\"}",
        "{\"command\":\"session-delete\",\"client\":\"n\"}",
        "{\"command\":\"log-level\",\"level\":\"debug\"}",
        "{\"command\":\"config-show\"}",
        "{\"command\":\"status\",",
        "{\"command\":\"nope\",\"x\":[1,{\"y\":null}]}",
    };
    s.len = 0;
    put_u8(&s, 0x00);
    op(&s, 0, OP_OPEN, 3); /* identity, operator */
    send_pk(&s, 0, o, pk_connect(o, 4, "op", true, false, false));
    send_pk(&s, 0, o, pk_subscribe(o, 1, "$SYS/console/response/#", 1, NULL, 0));
    op(&s, 1, OP_OPEN, 1); /* identity, not an operator */
    send_pk(&s, 1, o, pk_connect(o, 4, "n", false, false, false));
    send_pk(&s, 1, o, pk_publish(o, 4, "r/1", "keep", 1, true, 1));
    send_pk(&s, 1, o, pk_publish(o, 4, "$SYS/console/request", reqs[0], 1, false, 2));
    for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++)
        send_pk(&s, 0, o,
                pk_publish(o, 4, "$SYS/console/request", reqs[i], (uint8_t)(i % 3), false,
                           (uint16_t)(i + 1)));
    write_seed(dir, "core", "console-requests", &s);

    /* broker_create with its 5th allocation (the topic tree's hash table)
     * failing: once freed the tree root twice. */
    s.len = 0;
    put_u8(&s, 0x10 | 4u << 5);
    op(&s, 0, OP_OPEN, 0);
    write_seed(dir, "core", "create-fail-tree-init", &s);
}

/* ---- fuzz_core at MQTT 5.0 --------------------------------------------- */

static size_t c5(uint8_t *o, const char *id, bool clean, const pblock *props, bool will,
                 const pblock *will_props)
{
    mqtt_connect c = {.level = MQTT_LEVEL_5, .clean_session = clean, .keepalive = 30,
                      .client_id = str(id)};
    if (props)
        c.props.raw = pb_view(props);
    if (will) {
        c.will_flag = true;
        c.will_qos = 1;
        c.will_topic = str("will/5");
        c.will_payload = str("gone");
        if (will_props)
            c.will_props.raw = pb_view(will_props);
    }
    return mqtt_encode_connect(o, 512, &c);
}

static size_t pub5(uint8_t *o, const char *topic, const char *payload, uint8_t qos, bool retain,
                   uint16_t id, const pblock *props)
{
    mqtt_publish p = {.qos = qos, .retain = retain, .packet_id = qos ? id : 0,
                      .topic = str(topic), .payload = str(payload)};
    mqtt_bytes v = props ? pb_view(props) : (mqtt_bytes){NULL, 0};
    return mqtt_encode_publish5(o, 512, &p, &v, props ? 1 : 0);
}

static size_t sub5(uint8_t *o, uint16_t id, const char *filter, uint8_t options, uint32_t sub_id)
{
    pblock pb = {.n = 0};
    if (sub_id)
        pb_add(&pb, mqtt_prop_varint(PB_CAP(&pb), MQTT_PROP_SUBSCRIPTION_ID, sub_id));
    mqtt_bytes f = str(filter), v = pb_view(&pb);
    return mqtt_encode_subscribe5(o, 512, id, &f, &options, 1, &v);
}

static size_t reason5(uint8_t *o, mqtt_type type, uint8_t reason, const pblock *props)
{
    mqtt_bytes v = props ? pb_view(props) : (mqtt_bytes){NULL, 0};
    return mqtt_encode_reason5(o, 512, type, reason, &v, props ? 1 : 0);
}

static size_t ack5(uint8_t *o, mqtt_type type, uint16_t id, uint8_t reason)
{
    return mqtt_encode_ack5(o, 512, type, id, reason, NULL, 0);
}

/* Seeds that reach the core's MQTT 5.0 paths: CONNECT properties (session
 * expiry, receive maximum, maximum packet size, topic alias maximum),
 * topic aliases both ways, message expiry with time passing, subscription
 * options and identifiers, shared subscriptions with members of both
 * versions leaving, the inbound receive maximum, AUTH, DISCONNECT with
 * reasons and a session expiry change, wills with a delay. */
void gen_core5(const char *dir)
{
    uint8_t o[512];
    seed s;
    pblock pb;

    /* Properties, aliases, expiry, a small Maximum Packet Size, a
     * Receive Maximum of 1, DISCONNECT changing the session's expiry,
     * reconnecting to it after time passed. */
    s.len = 0;
    put_u8(&s, 0x04);
    op(&s, 0, OP_OPEN, 0);
    pb.n = 0;
    pb_add(&pb, mqtt_prop_u32(PB_CAP(&pb), MQTT_PROP_SESSION_EXPIRY, 10));
    pb_add(&pb, mqtt_prop_u16(PB_CAP(&pb), MQTT_PROP_RECEIVE_MAXIMUM, 1));
    pb_add(&pb, mqtt_prop_u32(PB_CAP(&pb), MQTT_PROP_MAXIMUM_PACKET_SIZE, 64));
    pb_add(&pb, mqtt_prop_u16(PB_CAP(&pb), MQTT_PROP_TOPIC_ALIAS_MAXIMUM, 2));
    send_pk(&s, 0, o, c5(o, "s5", false, &pb, false, NULL));
    send_pk(&s, 0, o, sub5(o, 1, "t/#", 2 | MQTT_SUBOPT_RETAIN_AS_PUBLISHED, 7));
    send_pk(&s, 0, o, sub5(o, 2, "t/a", 1 | MQTT_SUBOPT_NO_LOCAL, 9));
    op(&s, 1, OP_OPEN, 0);
    pb.n = 0;
    pb_add(&pb, mqtt_prop_u16(PB_CAP(&pb), MQTT_PROP_TOPIC_ALIAS_MAXIMUM, 4));
    send_pk(&s, 1, o, c5(o, "p5", true, &pb, false, NULL));
    pb.n = 0;
    pb_add(&pb, mqtt_prop_u16(PB_CAP(&pb), MQTT_PROP_TOPIC_ALIAS, 1));
    pb_add(&pb, mqtt_prop_u32(PB_CAP(&pb), MQTT_PROP_MESSAGE_EXPIRY, 2));
    send_pk(&s, 1, o, pub5(o, "t/a", "aliased", 1, false, 1, &pb));
    pb.n = 0;
    pb_add(&pb, mqtt_prop_u16(PB_CAP(&pb), MQTT_PROP_TOPIC_ALIAS, 1));
    send_pk(&s, 1, o, pub5(o, "", "by alias", 2, true, 2, &pb));
    send_pk(&s, 1, o, ack5(o, MQTT_PUBREL, 2, 0));
    send_pk(&s, 1, o,
            pub5(o, "t/big", "0123456789012345678901234567890123456789012345678901234567890123",
                 1, false, 3, NULL));
    pb.n = 0;
    pb_add(&pb, mqtt_prop_u32(PB_CAP(&pb), MQTT_PROP_MESSAGE_EXPIRY, 1));
    pb_str(&pb, MQTT_PROP_CONTENT_TYPE, "text/plain");
    pb_user(&pb, "k", "v");
    send_pk(&s, 1, o, pub5(o, "t/b", "soon", 1, false, 4, &pb));
    op(&s, 0, OP_TIME, 2);
    put_u8(&s, 10);
    send_pk(&s, 0, o, ack5(o, MQTT_PUBACK, 1, 0));
    send_pk(&s, 0, o, ack5(o, MQTT_PUBREC, 2, 0));
    send_pk(&s, 0, o, ack5(o, MQTT_PUBCOMP, 2, 0x92));
    pb.n = 0;
    pb_add(&pb, mqtt_prop_u32(PB_CAP(&pb), MQTT_PROP_SESSION_EXPIRY, 3));
    send_pk(&s, 0, o, reason5(o, MQTT_DISCONNECT, 0x04, &pb));
    send_pk(&s, 1, o, pub5(o, "t/a", "queued", 1, false, 5, NULL));
    op(&s, 1, OP_TIME, 2);
    put_u8(&s, 20);
    op(&s, 0, OP_OPEN, 0);
    send_pk(&s, 0, o, c5(o, "s5", false, NULL, false, NULL));
    write_seed(dir, "core", "v5-props-alias-expiry", &s);

    /* A shared group of a 5.0 and a 3.1.1 member; the 5.0 one reads
     * nothing (its window fills), the 3.1.1 one leaves abruptly with
     * messages unacknowledged, which go to the other. */
    s.len = 0;
    put_u8(&s, 0x01);
    op(&s, 0, OP_OPEN, 0);
    pb.n = 0;
    pb_add(&pb, mqtt_prop_u16(PB_CAP(&pb), MQTT_PROP_RECEIVE_MAXIMUM, 2));
    send_pk(&s, 0, o, c5(o, "m5", true, &pb, false, NULL));
    send_pk(&s, 0, o, sub5(o, 1, "$share/g/s/#", 1, 3));
    op(&s, 1, OP_OPEN, 0);
    send_pk(&s, 1, o, pk_connect(o, 4, "m4", false, false, false));
    send_pk(&s, 1, o, pk_subscribe(o, 1, "$share/g/s/#", 2, "$share/h/#", 0));
    op(&s, 2, OP_OPEN, 0);
    send_pk(&s, 2, o, c5(o, "pub", true, NULL, false, NULL));
    op(&s, 0, OP_READING, 0);
    for (uint16_t i = 1; i <= 5; i++)
        send_pk(&s, 2, o, pub5(o, "s/x", "shared", (uint8_t)(i % 3), false, i, NULL));
    op(&s, 1, OP_DROP, 0);
    op(&s, 0, OP_READING, 0);
    send_pk(&s, 0, o, ack5(o, MQTT_PUBACK, 1, 0));
    send_pk(&s, 0, o, ack5(o, MQTT_PUBACK, 2, 0x10));
    {
        mqtt_bytes f = str("$share/g/s/#");
        mqtt_bytes none = {NULL, 0};
        send_pk(&s, 0, o, mqtt_encode_unsubscribe5(o, 512, 9, &f, 1, &none));
    }
    send_pk(&s, 2, o, pub5(o, "s/y", "after", 1, false, 7, NULL));
    op(&s, 1, OP_OPEN, 0);
    send_pk(&s, 1, o, pk_connect(o, 4, "m4", false, false, false));
    write_seed(dir, "core", "v5-shared-leave", &s);

    /* AUTH and DISCONNECT: an unsupported authentication method, AUTH on
     * a connection that started none, a DISCONNECT giving a session
     * expiry to a session that had 0, more QoS 2 PUBLISHes than the
     * broker's receive maximum, an unknown topic alias. */
    s.len = 0;
    put_u8(&s, 0x01);
    op(&s, 0, OP_OPEN, 0);
    pb.n = 0;
    pb_str(&pb, MQTT_PROP_AUTH_METHOD, "SCRAM-SHA-1");
    send_pk(&s, 0, o, c5(o, "a1", true, &pb, false, NULL));
    op(&s, 1, OP_OPEN, 0);
    send_pk(&s, 1, o, c5(o, "a2", true, NULL, false, NULL));
    pb.n = 0;
    pb_str(&pb, MQTT_PROP_AUTH_METHOD, "SCRAM-SHA-1");
    send_pk(&s, 1, o, reason5(o, MQTT_AUTH, 0x18, &pb));
    op(&s, 2, OP_OPEN, 0);
    send_pk(&s, 2, o, c5(o, "a3", true, NULL, false, NULL));
    pb.n = 0;
    pb_add(&pb, mqtt_prop_u32(PB_CAP(&pb), MQTT_PROP_SESSION_EXPIRY, 60));
    send_pk(&s, 2, o, reason5(o, MQTT_DISCONNECT, 0, &pb));
    op(&s, 3, OP_OPEN, 0);
    send_pk(&s, 3, o, c5(o, "a4", true, NULL, false, NULL));
    for (uint16_t i = 1; i <= 4; i++)
        send_pk(&s, 3, o, pub5(o, "q/2", "x", 2, false, i, NULL));
    pb.n = 0;
    pb_add(&pb, mqtt_prop_u16(PB_CAP(&pb), MQTT_PROP_TOPIC_ALIAS, 3));
    send_pk(&s, 3, o, pub5(o, "", "unknown alias", 0, false, 0, &pb));
    write_seed(dir, "core", "v5-auth-disconnect-limits", &s);

    /* Mixed versions: a 5.0 will with a delay and a message expiry, a
     * retained 5.0 message with request/response properties to a 3.1.1
     * subscriber, the will published once the delay passed. */
    s.len = 0;
    put_u8(&s, 0x06);
    op(&s, 0, OP_OPEN, 0);
    send_pk(&s, 0, o, pk_connect(o, 4, "old", true, false, false));
    send_pk(&s, 0, o, pk_subscribe(o, 1, "#", 2, "will/#", 1));
    op(&s, 1, OP_OPEN, 0);
    pb.n = 0;
    pb_add(&pb, mqtt_prop_u32(PB_CAP(&pb), MQTT_PROP_SESSION_EXPIRY, 30));
    pblock wp = {.n = 0};
    pb_add(&wp, mqtt_prop_u32(PB_CAP(&wp), MQTT_PROP_WILL_DELAY, 2));
    pb_add(&wp, mqtt_prop_u32(PB_CAP(&wp), MQTT_PROP_MESSAGE_EXPIRY, 60));
    pb_add(&wp, mqtt_prop_u8(PB_CAP(&wp), MQTT_PROP_PAYLOAD_FORMAT, 1));
    send_pk(&s, 1, o, c5(o, "new", false, &pb, true, &wp));
    pb.n = 0;
    pb_str(&pb, MQTT_PROP_RESPONSE_TOPIC, "reply/here");
    pb_add(&pb, mqtt_prop_bytes(PB_CAP(&pb), MQTT_PROP_CORRELATION_DATA, (const uint8_t *)"\1\2", 2));
    pb_add(&pb, mqtt_prop_u32(PB_CAP(&pb), MQTT_PROP_MESSAGE_EXPIRY, 5));
    send_pk(&s, 1, o, pub5(o, "r/5", "retained five", 1, true, 1, &pb));
    op(&s, 1, OP_DROP, 0);
    op(&s, 0, OP_TIME, 3);
    put_u8(&s, 30);
    op(&s, 2, OP_OPEN, 0);
    send_pk(&s, 2, o, c5(o, "late", true, NULL, false, NULL));
    send_pk(&s, 2, o, sub5(o, 1, "r/#", 1 | 1u << MQTT_SUBOPT_RETAIN_HANDLING_SHIFT, 0));
    write_seed(dir, "core", "v5-mixed-will-retained", &s);
}
