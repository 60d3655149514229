/*
 * gen_seeds.c - writes the seed corpora under tests/fuzz/corpus/<target>/
 * (make fuzz-seeds). Packets come from the codec's own encoders, so the
 * seeds stay valid when the codec changes; the fuzzers start from well-formed
 * input of every kind and mutate from there.
 *
 * fuzz_core's scripts are gen_core_seeds.c's, fuzz_journal's records
 * gen_journal_seeds.c's.
 *
 * Usage: gen_seeds CORPUS_DIR
 */
#include "fuzz/gen_seeds.h"
#include "mqtt/mqtt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void put(seed *s, const void *p, size_t n)
{
    if (n == 0 || s->len + n > sizeof s->b) {
        fprintf(stderr, "gen_seeds: seed overflow or failed encoder\n");
        exit(1);
    }
    memcpy(s->b + s->len, p, n);
    s->len += n;
}

void put_u8(seed *s, uint8_t v)
{
    put(s, &v, 1);
}

void write_seed(const char *dir, const char *target, const char *name, const seed *s)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s/%s", dir, target, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(s->b, 1, s->len, f) != s->len || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

mqtt_bytes str(const char *s)
{
    return (mqtt_bytes){(const uint8_t *)s, strlen(s)};
}

/* ---- packets ----------------------------------------------------------- */

size_t pk_connect(uint8_t *o, uint8_t level, const char *id, bool clean, bool will,
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

size_t pk_publish(uint8_t *o, uint8_t level, const char *topic, const char *payload,
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

size_t pk_subscribe(uint8_t *o, uint16_t id, const char *f1, uint8_t q1, const char *f2,
                    uint8_t q2)
{
    mqtt_bytes f[2] = {str(f1), f2 ? str(f2) : str("x")};
    uint8_t q[2] = {q1, q2};
    return mqtt_encode_subscribe(o, 512, MQTT_LEVEL_311, id, f, q, f2 ? 2 : 1);
}

/* n filters with their QoS, into o (at most 512 bytes). */
size_t pk_subscribe_n(uint8_t *o, uint16_t id, const char *const *fl, uint8_t qos, size_t n)
{
    mqtt_bytes f[16];
    uint8_t q[16];
    for (size_t i = 0; i < n && i < 16; i++) {
        f[i] = str(fl[i]);
        q[i] = qos;
    }
    return mqtt_encode_subscribe(o, 512, MQTT_LEVEL_311, id, f, q, n);
}

size_t pk_unsubscribe_n(uint8_t *o, uint16_t id, const char *const *fl, size_t n)
{
    mqtt_bytes f[16];
    for (size_t i = 0; i < n && i < 16; i++)
        f[i] = str(fl[i]);
    return mqtt_encode_unsubscribe(o, 512, MQTT_LEVEL_311, id, f, n);
}

size_t pk_unsubscribe(uint8_t *o, uint16_t id, const char *f1)
{
    mqtt_bytes f = str(f1);
    return mqtt_encode_unsubscribe(o, 512, MQTT_LEVEL_311, id, &f, 1);
}

/* ---- property blocks (MQTT 5.0) ----------------------------------------- */

void pb_add(pblock *p, size_t n)
{
    if (n == 0) {
        fprintf(stderr, "gen_seeds: property block overflow\n");
        exit(1);
    }
    p->n += n;
}

mqtt_bytes pb_view(const pblock *p)
{
    return (mqtt_bytes){p->b, p->n};
}

void pb_user(pblock *p, const char *k, const char *v)
{
    pb_add(p, mqtt_prop_pair(PB_CAP(p), MQTT_PROP_USER_PROPERTY, (const uint8_t *)k, strlen(k),
                             (const uint8_t *)v, strlen(v)));
}

void pb_str(pblock *p, uint8_t id, const char *v)
{
    pb_add(p, mqtt_prop_bytes(PB_CAP(p), id, (const uint8_t *)v, strlen(v)));
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
