/*
 * alloc_fail.c - the allocation-failure loop: a scripted session (connect,
 * subscribe, publish QoS 0/1/2 retained and not, a will, abrupt drops,
 * persistent reconnect with queued messages, takeover, clean disconnects,
 * timers) is run once counting the core's allocation calls, then once per
 * call N with exactly the Nth call failing, then once per N with calls N to
 * N+3 failing (so error paths that allocate meet failures too).
 *
 * What each failing run must show:
 *   1. no crash and no sanitizer report (the binary runs under ASan+UBSan);
 *   2. after every event, broker_stats.memory_used equals the bytes the
 *      allocator really holds, and after broker_destroy nothing is held;
 *   3. a clean error: either the clients' view (every byte they received,
 *      every close) is identical to the reference run (the failure was
 *      absorbed, e.g. a buffer grown later), or the difference comes with a
 *      signal: broker_create/broker_open returned NULL, CONNACK refused,
 *      a connection closed by the core that was not closed in the reference,
 *      a SUBACK failure code, publish_dropped higher, or a WARN/ERROR log
 *      line from the core;
 *   4. the broker still works afterwards: a new client subscribes, publishes
 *      QoS 1 to itself and gets the message.
 *
 * Usage: alloc_fail [-v]
 */
#include "alloc_track.h"
#include "broker/broker.h"
#include "mqtt/mqtt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NCONN = 8, RX_MAX = 1 << 16, PEND_MAX = 4096 };

typedef struct aconn {
    broker_conn *bc;
    uint8_t rx[RX_MAX];
    size_t rx_len;
    uint8_t pend[PEND_MAX]; /* automatic replies (acks) not yet sent */
    size_t pend_len;
    int got_health;         /* health check: copies of its message seen */
} aconn;

typedef struct outcome {
    uint64_t hash[NCONN];   /* per connection slot: packets received, closes */
    uint64_t calls;
    uint64_t failures;
    bool create_failed;
    bool memory_ok;
    bool leak_free;
    bool healthy;
    uint32_t refused, suback_fail, oom_logs;
    uint32_t closes[NCONN]; /* connections the core closed, per slot */
    uint64_t dropped;
} outcome;

typedef struct actx {
    broker *b;
    alloc_track at;
    uint64_t now;
    aconn c[NCONN];
    outcome o;
    bool verbose;
} actx;

/* Each client's own view, as a multiset of what it received on each
 * connection slot: how the core chunks output, how connections interleave,
 * and a message sent one event later after a failed buffer growth (retried
 * on the next pump) are not differences; a packet more or less is. */
static void hash_packet(outcome *o, int k, const void *p, size_t n)
{
    const uint8_t *s = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 0x100000001b3ull;
    o->hash[k] += h;
}

/* Packet ids the core chooses (its PUBLISH and PUBREL) are not part of the
 * view: a send that failed and was retried may use the next id. */
static void hash_view(outcome *o, int k, const mqtt_packet *p, const uint8_t *raw, size_t n)
{
    if (p->type == MQTT_PUBLISH) {
        mqtt_publish pub = p->u.publish;
        if (pub.packet_id)
            pub.packet_id = 1;
        uint8_t *buf = malloc(n);
        if (!buf)
            abort();
        hash_packet(o, k, buf, mqtt_encode_publish(buf, n, 4, &pub));
        free(buf);
        return;
    } else if (p->type == MQTT_PUBREL) {
        uint8_t t = MQTT_PUBREL;
        hash_packet(o, k, &t, 1);
        return;
    }
    hash_packet(o, k, raw, n);
}

static bool same_view(const outcome *a, const outcome *b)
{
    return memcmp(a->hash, b->hash, sizeof a->hash) == 0;
}

static void on_log(void *ctx, broker_log_level level, const char *msg)
{
    actx *a = ctx;
    if (strstr(msg, "out of memory"))
        a->o.oom_logs++;
    if (a->verbose)
        fprintf(stderr, "  [core %d] %s\n", (int)level, msg);
    (void)level;
}

static void check_memory(actx *a)
{
    if (!a->b)
        return;
    broker_stats st;
    broker_get_stats(a->b, &st);
    if (st.memory_used != a->at.live_bytes)
        a->o.memory_ok = false;
}

static void reply(aconn *c, const uint8_t *p, size_t n)
{
    if (c->pend_len + n > sizeof c->pend)
        abort(); /* harness limit */
    memcpy(c->pend + c->pend_len, p, n);
    c->pend_len += n;
}

/* What a well-behaved client answers, queued until the drain is done. */
static void on_packet(actx *a, int k, const mqtt_packet *p)
{
    aconn *c = &a->c[k];
    uint8_t buf[4];
    switch (p->type) {
    case MQTT_CONNACK:
        if (p->u.connack.return_code != 0)
            a->o.refused++;
        break;
    case MQTT_SUBACK: {
        size_t pos = 0;
        uint8_t code;
        while (mqtt_suback_next(&p->u.suback, &pos, &code))
            a->o.suback_fail += code == MQTT_SUBACK_FAILURE;
        break;
    }
    case MQTT_PUBLISH:
        if (p->u.publish.payload.len == 6 && !memcmp(p->u.publish.payload.p, "health", 6))
            c->got_health++;
        if (p->u.publish.qos == 1)
            reply(c, buf, mqtt_encode_ack(buf, 4, 4, MQTT_PUBACK, p->u.publish.packet_id));
        else if (p->u.publish.qos == 2)
            reply(c, buf, mqtt_encode_ack(buf, 4, 4, MQTT_PUBREC, p->u.publish.packet_id));
        break;
    case MQTT_PUBREC:
        reply(c, buf, mqtt_encode_ack(buf, 4, 4, MQTT_PUBREL, p->u.ack.packet_id));
        break;
    case MQTT_PUBREL:
        reply(c, buf, mqtt_encode_ack(buf, 4, 4, MQTT_PUBCOMP, p->u.ack.packet_id));
        break;
    default:
        break;
    }
}

static void take(actx *a, int k)
{
    aconn *c = &a->c[k];
    size_t len;
    const uint8_t *p = broker_out_peek(c->bc, &len);
    if (c->rx_len + len > sizeof c->rx)
        abort(); /* harness limit */
    if (len == 0)
        return;
    memcpy(c->rx + c->rx_len, p, len);
    c->rx_len += len;
    broker_out_consume(a->b, c->bc, len);
    size_t pos = 0;
    for (;;) {
        mqtt_packet pk;
        size_t used = 0;
        mqtt_err e = mqtt_decode(c->rx + pos, c->rx_len - pos, MQTT_FROM_SERVER, 4, 0, &pk,
                                 &used);
        if (e == MQTT_NEED_MORE)
            break;
        if (e != MQTT_OK) {
            fprintf(stderr, "alloc_fail: the core sent a malformed packet\n");
            abort();
        }
        hash_view(&a->o, k, &pk, c->rx + pos, used);
        if (a->verbose)
            fprintf(stderr, "  conn %d got type %d flags %x pid %u len %zu\n", k, pk.type,
                    pk.flags, pk.type == MQTT_PUBLISH ? pk.u.publish.packet_id : 0, used);
        on_packet(a, k, &pk);
        pos += used;
    }
    memmove(c->rx, c->rx + pos, c->rx_len - pos);
    c->rx_len -= pos;
}

static void close_conn(actx *a, int k, bool by_core)
{
    aconn *c = &a->c[k];
    broker_closed(a->b, c->bc, a->now);
    c->bc = NULL;
    c->rx_len = c->pend_len = 0;
    uint8_t ev = 0xff;
    hash_packet(&a->o, k, &ev, 1);
    if (by_core)
        a->o.closes[k]++;
}

static void feed(actx *a, int k, const uint8_t *p, size_t n);

/* Drain all output, then send the queued automatic replies. */
static void drain(actx *a)
{
    for (bool again = true; again;) {
        again = false;
        broker_conn *bc;
        while ((bc = broker_next_dirty(a->b)) != NULL) {
            int k = (int)((aconn *)broker_conn_ctx(bc) - a->c);
            take(a, k);
            if (broker_wants_close(bc) && broker_out_pending(bc) == 0)
                close_conn(a, k, true);
        }
        check_memory(a);
        for (int k = 0; k < NCONN; k++) {
            aconn *c = &a->c[k];
            if (c->bc && c->pend_len) {
                uint8_t tmp[PEND_MAX];
                size_t n = c->pend_len;
                memcpy(tmp, c->pend, n);
                c->pend_len = 0;
                feed(a, k, tmp, n);
                again = true;
            }
        }
    }
}

static void feed(actx *a, int k, const uint8_t *p, size_t n)
{
    size_t off = 0;
    while (a->c[k].bc && off < n) {
        size_t used = broker_input(a->b, a->c[k].bc, p + off, n - off, a->now);
        off += used;
        drain(a);
        if (used == 0)
            break;
    }
}

/* ---- script helpers; each is a no-op on a connection that is gone ---- */

static void s_open(actx *a, int k)
{
    if (a->c[k].bc)
        return;
    broker_conn_info info = {.peer = "alloc:1"};
    a->c[k].bc = broker_open(a->b, &a->c[k], &info, a->now);
    a->c[k].rx_len = a->c[k].pend_len = 0;
    if (!a->c[k].bc) {
        a->o.refused++;
        uint8_t ev = 0xfe;
        hash_packet(&a->o, k, &ev, 1);
    }
    drain(a);
}

static mqtt_bytes str(const char *s)
{
    return (mqtt_bytes){(const uint8_t *)s, strlen(s)};
}

static void s_connect(actx *a, int k, const char *id, bool clean, const char *will)
{
    s_open(a, k);
    mqtt_connect cp = {.level = 4, .clean_session = clean, .keepalive = 5, .client_id = str(id)};
    if (will) {
        cp.will_flag = true;
        cp.will_qos = 1;
        cp.will_retain = true;
        cp.will_topic = str(will);
        cp.will_payload = str("gone");
    }
    uint8_t buf[256];
    feed(a, k, buf, mqtt_encode_connect(buf, sizeof buf, &cp));
}

static void s_sub(actx *a, int k, uint16_t pid, const char *f1, uint8_t q1, const char *f2,
                  uint8_t q2)
{
    mqtt_bytes f[2] = {str(f1), str(f2 ? f2 : "x")};
    uint8_t q[2] = {q1, q2};
    uint8_t buf[256];
    feed(a, k, buf, mqtt_encode_subscribe(buf, sizeof buf, 4, pid, f, q, f2 ? 2 : 1));
}

static void s_unsub(actx *a, int k, uint16_t pid, const char *f1)
{
    mqtt_bytes f = str(f1);
    uint8_t buf[256];
    feed(a, k, buf, mqtt_encode_unsubscribe(buf, sizeof buf, 4, pid, &f, 1));
}

static void s_pub(actx *a, int k, const char *topic, const char *payload, size_t plen,
                  uint8_t qos, bool retain, uint16_t pid)
{
    mqtt_publish p = {.qos = qos,
                      .retain = retain,
                      .packet_id = qos ? pid : 0,
                      .topic = str(topic),
                      .payload = {(const uint8_t *)payload, plen}};
    size_t cap = plen + 64;
    uint8_t *buf = malloc(cap);
    if (!buf)
        abort();
    feed(a, k, buf, mqtt_encode_publish(buf, cap, 4, &p));
    free(buf);
}

static void s_pub_s(actx *a, int k, const char *topic, const char *payload, uint8_t qos,
                    bool retain, uint16_t pid)
{
    s_pub(a, k, topic, payload, strlen(payload), qos, retain, pid);
}

static void s_simple(actx *a, int k, mqtt_type t)
{
    uint8_t buf[2];
    feed(a, k, buf, mqtt_encode_empty(buf, sizeof buf, t));
}

static void s_drop(actx *a, int k)
{
    if (a->c[k].bc) {
        close_conn(a, k, false);
        drain(a);
    }
}

static void s_tick(actx *a, uint64_t ms)
{
    a->now += ms;
    broker_tick(a->b, a->now);
    drain(a);
}

/* The scripted session. Connections: 0 subscriber "sub" (persistent),
 * 1 publisher "pub" with a will, 2 late subscriber, 3 takeover of "sub". */
static void script(actx *a)
{
    char big[6000];
    memset(big, 'B', sizeof big);

    s_connect(a, 0, "sub", false, NULL);
    s_sub(a, 0, 1, "a/#", 2, "b/+", 1);
    s_connect(a, 1, "pub", true, "a/will");
    s_pub_s(a, 1, "a/x", "q0", 0, false, 0);
    s_pub_s(a, 1, "a/y", "q1-retained", 1, true, 1);
    s_pub_s(a, 1, "a/z", "q2", 2, false, 2);
    s_pub_s(a, 1, "b/1", "q1", 1, true, 3);
    s_pub(a, 1, "a/big", big, sizeof big, 1, false, 4);
    s_simple(a, 0, MQTT_PINGREQ);
    /* Subscriber gone: QoS 1/2 queue for its persistent session. */
    s_drop(a, 0);
    s_pub_s(a, 1, "a/q", "queued1", 1, false, 5);
    s_pub_s(a, 1, "a/q", "queued2", 2, true, 6);
    s_pub_s(a, 1, "b/2", "queued3", 1, false, 7);
    s_connect(a, 0, "sub", false, NULL);
    /* Takeover of the same client id, then the publisher vanishes: will. */
    s_connect(a, 3, "sub", false, NULL);
    s_drop(a, 1);
    s_connect(a, 2, "late", true, NULL);
    s_sub(a, 2, 9, "#", 2, "b/#", 0);
    s_unsub(a, 2, 10, "#");
    s_simple(a, 2, MQTT_DISCONNECT);
    s_tick(a, 2000);
    /* Clear retained values, leave, and remove the persistent session. */
    s_connect(a, 1, "pub2", true, NULL);
    s_pub_s(a, 1, "a/y", "", 0, true, 0);
    s_pub_s(a, 1, "b/1", "", 0, true, 0);
    s_pub_s(a, 1, "a/q", "", 0, true, 0);
    s_pub_s(a, 1, "a/will", "", 0, true, 0);
    s_simple(a, 1, MQTT_DISCONNECT);
    s_simple(a, 3, MQTT_DISCONNECT);
    s_connect(a, 0, "sub", true, NULL);
    s_simple(a, 0, MQTT_DISCONNECT);
    s_tick(a, 10000); /* keepalive of anything left */
}

/* After the script, with no failure left to inject: does it still work? */
static bool health_check(actx *a)
{
    int k = NCONN - 1;
    s_connect(a, k, "health", true, NULL);
    s_sub(a, k, 1, "health/t", 1, NULL, 0);
    s_pub_s(a, k, "health/t", "health", 1, false, 2);
    bool ok = a->c[k].bc && a->c[k].got_health == 1;
    s_simple(a, k, MQTT_DISCONNECT);
    return ok;
}

static outcome run(uint64_t fail_at, uint32_t burst, bool verbose)
{
    actx *a = calloc(1, sizeof *a);
    if (!a)
        abort();
    a->verbose = verbose;
    a->o.memory_ok = true;
    alloc_track_init(&a->at);
    a->at.fail_at = fail_at;
    a->at.fail_burst = burst;
    broker_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.allocator = alloc_track_allocator(&a->at);
    cfg.limits.sys_interval_s = 1; /* $SYS allocates too */
    cfg.log = on_log;
    cfg.log_ctx = a;
    cfg.log_level = BROKER_LOG_DEBUG;
    cfg.version = "alloc";
    cfg.allow_anonymous = true;
    a->now = 1000000;
    a->b = broker_create(&cfg, a->now);
    if (!a->b) {
        a->o.create_failed = true;
        a->o.healthy = true;
    } else {
        check_memory(a);
        script(a);
        a->o.calls = a->at.calls;
        a->at.fail_at = 0; /* the health check runs with nothing failing */
        a->at.fail_next = 0;
        a->o.healthy = health_check(a);
        broker_stats st;
        broker_get_stats(a->b, &st);
        a->o.dropped = st.publish_dropped;
        broker_destroy(a->b);
    }
    if (!a->o.calls)
        a->o.calls = a->at.calls;
    a->o.failures = a->at.failures;
    a->o.leak_free = a->at.live_bytes == 0 && a->at.live_blocks == 0;
    outcome o = a->o;
    free(a);
    return o;
}

int main(int argc, char **argv)
{
    bool verbose = argc > 1 && !strcmp(argv[1], "-v");
    outcome ref = run(0, 0, false);
    if (!ref.memory_ok || !ref.leak_free || !ref.healthy || ref.refused || ref.suback_fail ||
        ref.dropped || ref.oom_logs) {
        fprintf(stderr,
                "alloc_fail: the reference run itself is wrong: memory %d leak-free %d "
                "healthy %d refused %u suback failures %u dropped %llu\n",
                ref.memory_ok, ref.leak_free, ref.healthy, ref.refused, ref.suback_fail,
                (unsigned long long)ref.dropped);
        return 1;
    }
    uint64_t absorbed = 0, signalled = 0, failed = 0, runs = 0;
    for (uint32_t burst = 0; burst <= 3; burst += 3) {
        for (uint64_t n = 1; n <= ref.calls; n++) {
            outcome o = run(n, burst, false);
            runs++;
            const char *why = NULL;
            bool signal = o.create_failed || o.refused > ref.refused ||
                          o.suback_fail > ref.suback_fail || o.dropped > ref.dropped ||
                          o.oom_logs > ref.oom_logs;
            for (int k = 0; k < NCONN; k++)
                signal |= o.closes[k] > ref.closes[k];
            if (o.failures == 0)
                why = "the chosen allocation was never made";
            else if (!o.memory_ok)
                why = "memory_used disagrees with the allocator";
            else if (!o.leak_free)
                why = "memory left after broker_destroy";
            else if (!o.healthy)
                why = "the broker does not work after the failure";
            else if (!same_view(&o, &ref) && !signal)
                why = "the clients saw a difference without any error signal";
            if (why) {
                fprintf(stderr, "alloc_fail: failing allocation %llu (+%u) of %llu: %s\n",
                        (unsigned long long)n, burst, (unsigned long long)ref.calls, why);
                if (verbose)
                    (void)run(n, burst, true);
                failed++;
                continue;
            }
            if (same_view(&o, &ref))
                absorbed++;
            else
                signalled++;
        }
    }
    printf("alloc_fail: %llu allocation points, %llu runs (single failures and bursts of 4): "
           "%llu absorbed, %llu with a clean error, %llu failed\n",
           (unsigned long long)ref.calls, (unsigned long long)runs, (unsigned long long)absorbed,
           (unsigned long long)signalled, (unsigned long long)failed);
    return failed ? 1 : 0;
}
