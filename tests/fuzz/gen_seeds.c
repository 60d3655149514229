/*
 * gen_seeds.c - writes the seed corpora under tests/fuzz/corpus/<target>/
 * (make fuzz-seeds). Packets come from the codec's own encoders, so the
 * seeds stay valid when the codec changes; the fuzzers start from well-formed
 * input of every kind and mutate from there.
 *
 * Usage: gen_seeds CORPUS_DIR
 */
#include "mqtt/mqtt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SEED_MAX = 8192 };

/* A seed being assembled. */
typedef struct seed {
    uint8_t b[SEED_MAX];
    size_t len;
} seed;

static void put(seed *s, const void *p, size_t n)
{
    if (n == 0 || s->len + n > sizeof s->b) {
        fprintf(stderr, "gen_seeds: seed overflow or failed encoder\n");
        exit(1);
    }
    memcpy(s->b + s->len, p, n);
    s->len += n;
}

static void put_u8(seed *s, uint8_t v)
{
    put(s, &v, 1);
}

static void write_seed(const char *dir, const char *target, const char *name, const seed *s)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s/%s", dir, target, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(s->b, 1, s->len, f) != s->len || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

static mqtt_bytes str(const char *s)
{
    return (mqtt_bytes){(const uint8_t *)s, strlen(s)};
}

/* ---- packets ----------------------------------------------------------- */

static size_t pk_connect(uint8_t *o, uint8_t level, const char *id, bool clean, bool will,
                         bool user)
{
    mqtt_connect c = {
        .level = level, .clean_session = clean, .keepalive = 30, .client_id = str(id)};
    if (will) {
        c.will_flag = true;
        c.will_qos = 1;
        c.will_retain = true;
        c.will_topic = str("will/t");
        c.will_payload = str("gone");
    }
    if (user) {
        c.username_flag = c.password_flag = true;
        c.username = str("user");
        c.password = str("pw");
    }
    return mqtt_encode_connect(o, 512, &c);
}

static size_t pk_publish(uint8_t *o, uint8_t level, const char *topic, const char *payload,
                         uint8_t qos, bool retain, uint16_t id)
{
    mqtt_publish p = {.qos = qos,
                      .retain = retain,
                      .dup = false,
                      .packet_id = qos ? id : 0,
                      .topic = str(topic),
                      .payload = str(payload)};
    return mqtt_encode_publish(o, 512, level, &p);
}

static size_t pk_subscribe(uint8_t *o, uint16_t id, const char *f1, uint8_t q1, const char *f2,
                           uint8_t q2)
{
    mqtt_bytes f[2] = {str(f1), f2 ? str(f2) : str("x")};
    uint8_t q[2] = {q1, q2};
    return mqtt_encode_subscribe(o, 512, MQTT_LEVEL_311, id, f, q, f2 ? 2 : 1);
}

/* n filters with their QoS, into o (at most 512 bytes). */
static size_t pk_subscribe_n(uint8_t *o, uint16_t id, const char *const *fl, uint8_t qos, size_t n)
{
    mqtt_bytes f[16];
    uint8_t q[16];
    for (size_t i = 0; i < n && i < 16; i++) {
        f[i] = str(fl[i]);
        q[i] = qos;
    }
    return mqtt_encode_subscribe(o, 512, MQTT_LEVEL_311, id, f, q, n);
}

static size_t pk_unsubscribe_n(uint8_t *o, uint16_t id, const char *const *fl, size_t n)
{
    mqtt_bytes f[16];
    for (size_t i = 0; i < n && i < 16; i++)
        f[i] = str(fl[i]);
    return mqtt_encode_unsubscribe(o, 512, MQTT_LEVEL_311, id, f, n);
}

static size_t pk_unsubscribe(uint8_t *o, uint16_t id, const char *f1)
{
    mqtt_bytes f = str(f1);
    return mqtt_encode_unsubscribe(o, 512, MQTT_LEVEL_311, id, &f, 1);
}

/* ---- fuzz_decode ------------------------------------------------------- */

/* Control bytes: role in bit 0, level in bits 1-2 (0, 3, 4, 5), then a
 * two-byte maximum size (0 = protocol maximum). */
static void decode_seed(const char *dir, const char *name, bool server, uint8_t level_sel,
                        const uint8_t *pk, size_t n)
{
    seed s = {.len = 0};
    put_u8(&s, (uint8_t)((server ? 1 : 0) | level_sel << 1));
    put_u8(&s, 0);
    put_u8(&s, 0);
    put(&s, pk, n);
    write_seed(dir, "decode", name, &s);
}

static void gen_decode(const char *dir)
{
    uint8_t o[512];
    const uint8_t L4 = 2, L3 = 1;
    decode_seed(dir, "connect-311", false, L4, o, pk_connect(o, 4, "cid", true, false, false));
    decode_seed(dir, "connect-311-will-user", false, L4, o, pk_connect(o, 4, "c", false, true, true));
    decode_seed(dir, "connect-31", false, 0, o, pk_connect(o, 3, "old", true, true, false));
    decode_seed(dir, "publish-q0", false, L4, o, pk_publish(o, 4, "a/b", "hi", 0, false, 0));
    decode_seed(dir, "publish-q1-retain", false, L4, o, pk_publish(o, 4, "a/b/c", "x", 1, true, 7));
    decode_seed(dir, "publish-q2-l3", false, L3, o, pk_publish(o, 3, "t", "", 2, false, 65535));
    decode_seed(dir, "publish-server", true, L4, o, pk_publish(o, 4, "$SYS/x", "1", 1, false, 3));
    decode_seed(dir, "puback", false, L4, o, mqtt_encode_ack(o, 4, 4, MQTT_PUBACK, 1));
    decode_seed(dir, "pubrel", false, L3, o, mqtt_encode_ack(o, 4, 3, MQTT_PUBREL, 2));
    decode_seed(dir, "pubcomp-server", true, L4, o, mqtt_encode_ack(o, 4, 4, MQTT_PUBCOMP, 9));
    decode_seed(dir, "subscribe", false, L4, o, pk_subscribe(o, 5, "a/+/c", 1, "#", 2));
    decode_seed(dir, "unsubscribe", false, L4, o, pk_unsubscribe(o, 6, "sport/#"));
    decode_seed(dir, "pingreq", false, L4, o, mqtt_encode_empty(o, 2, MQTT_PINGREQ));
    decode_seed(dir, "disconnect", false, L4, o, mqtt_encode_empty(o, 2, MQTT_DISCONNECT));
    decode_seed(dir, "connack", true, L4, o, mqtt_encode_connack(o, 4, 4, true, 0));
    decode_seed(dir, "connack-refused-31", true, L3, o, mqtt_encode_connack(o, 4, 3, false, 5));
    const uint8_t codes[3] = {0, 2, MQTT_SUBACK_FAILURE};
    decode_seed(dir, "suback", true, L4, o, mqtt_encode_suback(o, 16, 4, 5, codes, 3));
    decode_seed(dir, "unsuback", true, L4, o, mqtt_encode_ack(o, 4, 4, MQTT_UNSUBACK, 6));
    decode_seed(dir, "pingresp", true, L4, o, mqtt_encode_empty(o, 2, MQTT_PINGRESP));
}

/* MQTT 5.0 packets: every packet type with properties, the short forms, a
 * will with properties, subscription options and a shared filter. Each
 * property block is assembled with the codec's writers. */
typedef struct pblock {
    uint8_t b[256];
    size_t n;
} pblock;

static void pb_add(pblock *p, size_t n)
{
    if (n == 0) {
        fprintf(stderr, "gen_seeds: property block overflow\n");
        exit(1);
    }
    p->n += n;
}
#define PB_CAP(p) ((p)->b + (p)->n), (sizeof (p)->b - (p)->n)

static mqtt_bytes pb_view(const pblock *p)
{
    return (mqtt_bytes){p->b, p->n};
}

static void pb_user(pblock *p, const char *k, const char *v)
{
    pb_add(p, mqtt_prop_pair(PB_CAP(p), MQTT_PROP_USER_PROPERTY, (const uint8_t *)k, strlen(k),
                             (const uint8_t *)v, strlen(v)));
}

static void pb_str(pblock *p, uint8_t id, const char *v)
{
    pb_add(p, mqtt_prop_bytes(PB_CAP(p), id, (const uint8_t *)v, strlen(v)));
}

static void gen_decode5(const char *dir)
{
    uint8_t o[512];
    const uint8_t L5 = 3;
    pblock a = {.n = 0}, w = {.n = 0};

    pb_add(&a, mqtt_prop_u32(PB_CAP(&a), MQTT_PROP_SESSION_EXPIRY, 3600));
    pb_add(&a, mqtt_prop_u16(PB_CAP(&a), MQTT_PROP_RECEIVE_MAXIMUM, 10));
    pb_add(&a, mqtt_prop_u32(PB_CAP(&a), MQTT_PROP_MAXIMUM_PACKET_SIZE, 4096));
    pb_add(&a, mqtt_prop_u16(PB_CAP(&a), MQTT_PROP_TOPIC_ALIAS_MAXIMUM, 8));
    pb_add(&a, mqtt_prop_u8(PB_CAP(&a), MQTT_PROP_REQUEST_PROBLEM_INFO, 1));
    pb_str(&a, MQTT_PROP_AUTH_METHOD, "PLAIN");
    pb_user(&a, "k", "v");
    pb_add(&w, mqtt_prop_u32(PB_CAP(&w), MQTT_PROP_WILL_DELAY, 5));
    pb_add(&w, mqtt_prop_u8(PB_CAP(&w), MQTT_PROP_PAYLOAD_FORMAT, 1));
    pb_str(&w, MQTT_PROP_RESPONSE_TOPIC, "r/t");
    pb_str(&w, MQTT_PROP_CORRELATION_DATA, "cd");
    mqtt_connect c = {.level = 5, .clean_session = true, .keepalive = 30, .client_id = str("c5"),
                      .will_flag = true, .will_qos = 1, .will_topic = str("will/t"),
                      .will_payload = str("gone"), .password_flag = true,
                      .password = str("pw")};
    c.props.raw = pb_view(&a);
    c.will_props.raw = pb_view(&w);
    decode_seed(dir, "connect-5-will-props", false, 0, o, mqtt_encode_connect(o, 512, &c));

    pblock pp = {.n = 0};
    pb_add(&pp, mqtt_prop_u8(PB_CAP(&pp), MQTT_PROP_PAYLOAD_FORMAT, 1));
    pb_add(&pp, mqtt_prop_u32(PB_CAP(&pp), MQTT_PROP_MESSAGE_EXPIRY, 60));
    pb_add(&pp, mqtt_prop_u16(PB_CAP(&pp), MQTT_PROP_TOPIC_ALIAS, 2));
    pb_str(&pp, MQTT_PROP_CONTENT_TYPE, "text/plain");
    pb_user(&pp, "a", "b");
    mqtt_bytes ppv = pb_view(&pp);
    mqtt_publish p = {.qos = 1, .packet_id = 4, .topic = str("a/b"), .payload = str("hi")};
    decode_seed(dir, "publish-5-props", false, L5, o, mqtt_encode_publish5(o, 512, &p, &ppv, 1));
    p.topic = (mqtt_bytes){NULL, 0};
    decode_seed(dir, "publish-5-alias-only", false, L5, o,
                mqtt_encode_publish5(o, 512, &p, &ppv, 1));
    pblock sid = {.n = 0};
    pb_add(&sid, mqtt_prop_varint(PB_CAP(&sid), MQTT_PROP_SUBSCRIPTION_ID, 1));
    pb_add(&sid, mqtt_prop_varint(PB_CAP(&sid), MQTT_PROP_SUBSCRIPTION_ID, 300000));
    mqtt_bytes two[2] = {ppv, pb_view(&sid)};
    p.topic = str("x");
    p.qos = 2;
    decode_seed(dir, "publish-5-server-subids", true, L5, o,
                mqtt_encode_publish5(o, 512, &p, two, 2));

    pblock rs = {.n = 0};
    pb_str(&rs, MQTT_PROP_REASON_STRING, "why");
    pb_user(&rs, "x", "y");
    mqtt_bytes rsv = pb_view(&rs);
    decode_seed(dir, "puback-5-short", false, L5, o,
                mqtt_encode_ack5(o, 512, MQTT_PUBACK, 1, 0, NULL, 0));
    decode_seed(dir, "pubrec-5-reason", false, L5, o,
                mqtt_encode_ack5(o, 512, MQTT_PUBREC, 2, MQTT_RC_NO_MATCHING_SUBSCRIBERS, NULL, 0));
    decode_seed(dir, "pubrel-5-props", false, L5, o,
                mqtt_encode_ack5(o, 512, MQTT_PUBREL, 3, MQTT_RC_PACKET_ID_NOT_FOUND, &rsv, 1));
    decode_seed(dir, "pubcomp-5-server", true, L5, o,
                mqtt_encode_ack5(o, 512, MQTT_PUBCOMP, 3, 0, &rsv, 1));

    pblock si = {.n = 0};
    pb_add(&si, mqtt_prop_varint(PB_CAP(&si), MQTT_PROP_SUBSCRIPTION_ID, 77));
    mqtt_bytes siv = pb_view(&si);
    mqtt_bytes f[3] = {str("a/+"), str("$share/grp/b/#"), str("c")};
    uint8_t opts[3] = {1 | MQTT_SUBOPT_NO_LOCAL | MQTT_SUBOPT_RETAIN_AS_PUBLISHED,
                       2 | 2u << MQTT_SUBOPT_RETAIN_HANDLING_SHIFT,
                       1u << MQTT_SUBOPT_RETAIN_HANDLING_SHIFT};
    decode_seed(dir, "subscribe-5-options", false, L5, o,
                mqtt_encode_subscribe5(o, 512, 9, f, opts, 3, &siv));
    decode_seed(dir, "unsubscribe-5", false, L5, o,
                mqtt_encode_unsubscribe5(o, 512, 10, f, 3, &rsv));

    pblock se = {.n = 0};
    pb_add(&se, mqtt_prop_u32(PB_CAP(&se), MQTT_PROP_SESSION_EXPIRY, 0));
    mqtt_bytes sev = pb_view(&se);
    decode_seed(dir, "disconnect-5-will", false, L5, o,
                mqtt_encode_reason5(o, 512, MQTT_DISCONNECT, MQTT_RC_DISCONNECT_WITH_WILL, &sev, 1));
    decode_seed(dir, "disconnect-5-server", true, L5, o,
                mqtt_encode_reason5(o, 512, MQTT_DISCONNECT, MQTT_RC_SESSION_TAKEN_OVER, &rsv, 1));
    pblock au = {.n = 0};
    pb_str(&au, MQTT_PROP_AUTH_METHOD, "SCRAM-SHA-1");
    pb_str(&au, MQTT_PROP_AUTH_DATA, "nonce");
    mqtt_bytes auv = pb_view(&au);
    decode_seed(dir, "auth-5-continue", false, L5, o,
                mqtt_encode_reason5(o, 512, MQTT_AUTH, MQTT_RC_CONTINUE_AUTHENTICATION, &auv, 1));
    decode_seed(dir, "auth-5-success-server", true, L5, o,
                mqtt_encode_reason5(o, 512, MQTT_AUTH, MQTT_RC_SUCCESS, NULL, 0));

    pblock ca = {.n = 0};
    pb_add(&ca, mqtt_prop_u16(PB_CAP(&ca), MQTT_PROP_RECEIVE_MAXIMUM, 100));
    pb_add(&ca, mqtt_prop_u8(PB_CAP(&ca), MQTT_PROP_MAXIMUM_QOS, 1));
    pb_add(&ca, mqtt_prop_u8(PB_CAP(&ca), MQTT_PROP_RETAIN_AVAILABLE, 0));
    pb_add(&ca, mqtt_prop_u8(PB_CAP(&ca), MQTT_PROP_WILDCARD_SUB_AVAILABLE, 1));
    pb_add(&ca, mqtt_prop_u8(PB_CAP(&ca), MQTT_PROP_SUB_ID_AVAILABLE, 1));
    pb_add(&ca, mqtt_prop_u8(PB_CAP(&ca), MQTT_PROP_SHARED_SUB_AVAILABLE, 1));
    pb_add(&ca, mqtt_prop_u16(PB_CAP(&ca), MQTT_PROP_SERVER_KEEP_ALIVE, 60));
    pb_add(&ca, mqtt_prop_u16(PB_CAP(&ca), MQTT_PROP_TOPIC_ALIAS_MAXIMUM, 16));
    pb_add(&ca, mqtt_prop_u32(PB_CAP(&ca), MQTT_PROP_MAXIMUM_PACKET_SIZE, 1 << 20));
    pb_str(&ca, MQTT_PROP_ASSIGNED_CLIENT_ID, "auto-1");
    mqtt_bytes cav = pb_view(&ca);
    decode_seed(dir, "connack-5-capabilities", true, L5, o,
                mqtt_encode_connack5(o, 512, true, 0, &cav, 1));
    const uint8_t sc[4] = {0, 1, MQTT_RC_SHARED_SUBS_NOT_SUPPORTED, MQTT_RC_NOT_AUTHORIZED};
    decode_seed(dir, "suback-5", true, L5, o,
                mqtt_encode_suback5(o, 512, MQTT_SUBACK, 9, sc, 4, &rsv, 1));
    const uint8_t uc[2] = {0, MQTT_RC_NO_SUBSCRIPTION_EXISTED};
    decode_seed(dir, "unsuback-5", true, L5, o,
                mqtt_encode_suback5(o, 512, MQTT_UNSUBACK, 10, uc, 2, NULL, 0));
}

/* ---- fuzz_topic -------------------------------------------------------- */

static void gen_topic(const char *dir)
{
    static const char *const pairs[][2] = {
        {"sport/#", "sport"},     {"sport/tennis/+", "sport/tennis/p1"},
        {"+/+", "/finance"},      {"#", "$SYS/broker/uptime"},
        {"$SYS/#", "$SYS/x"},     {"a/+/c", "a/b/c"},
        {"+", "a/b"},             {"a//b", "a//b"},
        {"caf\xc3\xa9/+", "caf\xc3\xa9/x"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        seed s = {.len = 0};
        size_t fl = strlen(pairs[i][0]);
        /* The split byte is taken modulo the input size: make it exact. */
        size_t total = 1 + fl + strlen(pairs[i][1]);
        put_u8(&s, (uint8_t)(fl % total));
        put(&s, pairs[i][0], fl);
        put(&s, pairs[i][1], strlen(pairs[i][1]));
        char name[32];
        snprintf(name, sizeof name, "pair-%zu", i);
        write_seed(dir, "topic", name, &s);
    }
}

/* ---- fuzz_config ------------------------------------------------------- */

static void gen_config(const char *dir)
{
    static const struct {
        const char *const name, *const text;
    } files[] = {
        {"minimal", "config_version = 1\nlistener.plain = 127.0.0.1:1883\n"},
        {"full",
         "\xef\xbb\xbf# every key\r\nconfig_version = 1\r\nlistener.plain = [::1]:0\r\n"
         "log.level = debug\r\nauth.allow_anonymous = true\r\nsession.expiry = forever\r\n"
         "sys.interval = off\r\nlimits.max_connections = 10\r\nlimits.max_packet_size = 16\r\n"
         "limits.max_inflight = 65535\r\nlimits.max_queued = 1\r\n"
         "limits.max_queued_bytes = 4294967295\r\nlimits.max_out_bytes = 1024\r\n"
         "limits.max_inbound_qos2 = 1\r\nlimits.connect_timeout = 86400\r\n"
         "limits.max_retained = 7\r\nlimits.work_budget = 1"},
        {"comments", "  # x\n\nconfig_version=1 # c\nlog.level = warn#x\n"},
        {"bad-value", "config_version = 1\nlimits.max_inflight = abc\n"},
        {"duplicate", "config_version = 1\nlog.level = info\nlog.level = info\n"},
        {"unknown", "config_version = 1\nnope = 1\n"},
        {"bad-addr", "config_version = 1\nlistener.plain = [::1:1883\n"},
        {"control", "config_version = 1\nlog.level = in\x01fo\n"},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        seed s = {.len = 0};
        put(&s, files[i].text, strlen(files[i].text));
        write_seed(dir, "config", files[i].name, &s);
    }
}

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

static void gen_core(const char *dir)
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
static void gen_core5(const char *dir)
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

/* ---- fuzz_journal ------------------------------------------------------ */

/* Record fields as src/broker/journal.h describes them: big-endian
 * integers, byte strings as u32 length + bytes; the MQTT 5.0 fields after
 * the 3.1.1 ones of each record. */
static void put_be(seed *s, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--)
        put_u8(s, (uint8_t)(v >> (8 * i)));
}

static void put_str(seed *s, const char *str)
{
    size_t n = strlen(str);
    put_be(s, n, 4);
    if (n)
        put(s, str, n);
}

enum { J_RETAIN_SET = 1, J_SESSION_PUT = 3, J_SUB_PUT = 5, J_MSG_PUT = 7, J_QUEUE_PUT = 9,
       J_QUEUE_STATE = 10, J_INQOS2_PUT = 12, J_RESET = 14, J_WILL_PUT = 15 };

/* A wall-clock time near the one fuzz_journal sets on odd-sized inputs
 * (2026-01-01), and one marked "time left" (bit 63). */
#define SEED_WALL 1767225600000ull
#define SEED_LEFT (1ull << 63)

/* Properties as forwarded: Content Type "t", a User Property k=v. */
static void put_props(seed *s)
{
    static const uint8_t p[] = {0x03, 0x00, 0x01, 't', 0x26, 0x00, 0x01, 'k', 0x00, 0x01, 'v'};
    put_be(s, sizeof p, 4);
    put(s, p, sizeof p);
}

static void session_put(seed *s, const char *id, const char *identity, uint8_t flags,
                        uint32_t interval, uint64_t expiry_at)
{
    put_u8(s, J_SESSION_PUT);
    put_str(s, id);
    put_str(s, identity);
    put_u8(s, flags);
    put_be(s, interval, 4);
    put_be(s, expiry_at, 8);
}

static void queue_put(seed *s, const char *id, uint64_t seq, uint64_t msg_id, uint8_t qos,
                      uint32_t sub_id, int more)
{
    put_u8(s, J_QUEUE_PUT);
    put_str(s, id);
    put_be(s, seq, 8);
    put_be(s, msg_id, 8);
    put_u8(s, qos);
    put_u8(s, 0);
    put_be(s, sub_id, 4);
    put_be(s, (uint64_t)more * 4, 4);
    for (int i = 0; i < more; i++)
        put_be(s, (uint64_t)sub_id + 1 + (uint64_t)i, 4);
}

static void msg_put(seed *s, uint64_t id, const char *topic, const char *payload, uint8_t qos,
                    uint64_t expiry_at)
{
    put_u8(s, J_MSG_PUT);
    put_be(s, id, 8);
    put_str(s, topic);
    put_str(s, payload);
    put_u8(s, qos);
    put_u8(s, 0);
    put_props(s);
    put_be(s, expiry_at, 8);
}

static void gen_journal(const char *dir)
{
    seed s = {.len = 0};
    /* A consistent restore: a session with a subscription, a message queued
     * for it (one inflight), an inbound QoS 2 id, a retained message. */
    put_u8(&s, J_RESET);
    session_put(&s, "sub", "", 0, 0, 0);
    put_u8(&s, J_SUB_PUT);
    put_str(&s, "sub");
    put_str(&s, "a/#");
    put_u8(&s, 2);
    put_u8(&s, 0x04 | 0x08 | 0x10); /* no local, retain as published, handling 1 */
    put_be(&s, 3, 4);
    msg_put(&s, 1, "a/b", "hello", 2, 0);
    queue_put(&s, "sub", 1, 1, 2, 3, 2);
    put_u8(&s, J_QUEUE_STATE);
    put_str(&s, "sub");
    put_be(&s, 1, 8);
    put_u8(&s, 2);
    put_be(&s, 7, 2);
    put_u8(&s, J_INQOS2_PUT);
    put_str(&s, "sub");
    put_be(&s, 9, 2);
    put_u8(&s, J_RETAIN_SET);
    put_str(&s, "a/r");
    put_str(&s, "kept");
    put_u8(&s, 1);
    put_props(&s);
    put_be(&s, 0, 8);
    write_seed(dir, "journal", "restore-session", &s);

    /* Inconsistent: a queue entry for an unknown session and message. */
    s.len = 0;
    queue_put(&s, "ghost", 5, 42, 1, 0, 0);
    session_put(&s, "ghost", "CN=x", 1, 0, 0);
    write_seed(dir, "journal", "dangling-queue", &s);

    /* MQTT 5.0 times (odd size: read with the wall clock): a session that
     * expired while the broker was down with its delayed will, one that
     * did not, messages expired, not yet and counted as time left, queue
     * entries sent and not, retained messages expired and not. */
    s.len = 0;
    session_put(&s, "gone", "", 0, 60, SEED_WALL - 1000);
    put_u8(&s, J_WILL_PUT);
    put_str(&s, "gone");
    put_str(&s, "w/gone");
    put_str(&s, "bye");
    put_u8(&s, 1);
    put_u8(&s, 1);
    put_props(&s);
    put_be(&s, SEED_WALL + 60000, 8);
    put_be(&s, SEED_WALL + 5000, 8);
    session_put(&s, "keep", "", 0, 3600, SEED_WALL + 60000);
    put_u8(&s, J_SUB_PUT);
    put_str(&s, "keep");
    put_str(&s, "w/#");
    put_u8(&s, 1);
    put_u8(&s, 0);
    put_be(&s, 0, 4);
    msg_put(&s, 1, "t/1", "old", 1, SEED_WALL - 1);
    msg_put(&s, 2, "t/2", "new", 2, SEED_WALL + 1000);
    msg_put(&s, 3, "t/3", "left", 1, SEED_LEFT | 500);
    queue_put(&s, "keep", 1, 1, 1, 0, 0);
    put_u8(&s, J_QUEUE_STATE);
    put_str(&s, "keep");
    put_be(&s, 1, 8);
    put_u8(&s, 1);
    put_be(&s, 4, 2);
    queue_put(&s, "keep", 2, 1, 1, 0, 0);
    queue_put(&s, "keep", 3, 2, 2, 8, 1);
    queue_put(&s, "keep", 4, 3, 1, 0, 0);
    put_u8(&s, J_RETAIN_SET);
    put_str(&s, "r/old");
    put_str(&s, "x");
    put_u8(&s, 0);
    put_be(&s, 0, 4);
    put_be(&s, SEED_WALL - 1, 8);
    if (s.len % 2 == 0)
        put_u8(&s, 0); /* odd: a record type 0 ends the walk */
    write_seed(dir, "journal", "mqtt5-expiry", &s);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_seeds CORPUS_DIR\n");
        return 2;
    }
    gen_decode(argv[1]);
    gen_decode5(argv[1]);
    gen_topic(argv[1]);
    gen_config(argv[1]);
    gen_core(argv[1]);
    gen_core5(argv[1]);
    gen_journal(argv[1]);
    return 0;
}
