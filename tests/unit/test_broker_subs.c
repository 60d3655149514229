/*
 * test_broker_subs.c - subscriptions at scale (issue 16, items 1 and 2):
 * subscribing, unsubscribing and session teardown in time independent of
 * the session's other subscriptions; a SUBSCRIBE with more filters than the
 * work budget worked through in slices, other clients served in between;
 * the limits on subscriptions per session, topic levels and topic length
 * with the answers 3.1.1 allows; and the tables that shrink again when a
 * client's subscriptions and topics go.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "broker/broker.h"
#include "fake_client.h"
#include "model_store.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- helpers ------------------------------------------------------------ */

/* n filters built by fmt from their index (fmt takes one unsigned). */
typedef struct filters {
    mqtt_bytes *f;
    uint8_t *qos;
    char *text;
    uint32_t n;
} filters;

static void filters_make(filters *fs, uint32_t n, const char *fmt, uint8_t qos)
{
    char one[256];
    size_t total = 0, pos = 0;
    for (uint32_t i = 0; i < n; i++)
        total += (size_t)snprintf(one, sizeof one, fmt, i);
    fs->f = malloc(n * sizeof *fs->f);
    fs->qos = malloc(n);
    fs->text = malloc(total + 1);
    if (!fs->f || !fs->qos || !fs->text)
        abort();
    for (uint32_t i = 0; i < n; i++) {
        int k = snprintf(fs->text + pos, total + 1 - pos, fmt, i);
        fs->f[i] = (mqtt_bytes){(const uint8_t *)fs->text + pos, (size_t)k};
        fs->qos[i] = qos;
        pos += (size_t)k;
    }
    fs->n = n;
}

static void filters_free(filters *fs)
{
    free(fs->f);
    free(fs->qos);
    free(fs->text);
}

/* The SUBSCRIBE (or UNSUBSCRIBE) of all of fs, in a malloc'd buffer. */
static uint8_t *encode_list(const filters *fs, bool sub, uint16_t id, size_t *len)
{
    size_t cap = 16;
    for (uint32_t i = 0; i < fs->n; i++)
        cap += fs->f[i].len + 3;
    uint8_t *buf = malloc(cap);
    if (!buf)
        abort();
    *len = sub ? mqtt_encode_subscribe(buf, cap, MQTT_LEVEL_311, id, fs->f, fs->qos, fs->n)
               : mqtt_encode_unsubscribe(buf, cap, MQTT_LEVEL_311, id, fs->f, fs->n);
    if (*len == 0)
        abort();
    return buf;
}

/* This thread's CPU time, not wall time: other processes on a shared
 * machine (parallel builds, QEMU) then cannot make a linear walk look
 * quadratic. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The next packet is a SUBACK for id with n codes; they go to codes. */
static bool next_suback(fclient *c, uint16_t id, uint8_t *codes, uint32_t n)
{
    mqtt_packet p;
    if (!fc_next_is(c, MQTT_SUBACK, &p) || p.u.suback.packet_id != id || p.u.suback.count != n)
        return false;
    size_t pos = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!mqtt_suback_next(&p.u.suback, &pos, &codes[i]))
            return false;
    return true;
}

/* ---- item 1: linear time ------------------------------------------------- */

typedef struct timings {
    double sub, unsub, teardown;
} timings;

/* One clean session subscribes to n filters in one packet, unsubscribes
 * from them all in one packet, subscribes again, and leaves. */
static bool time_filters(uint32_t n, timings *t)
{
    /* 80,000 filters make a SUBSCRIBE above the default 1 MiB packet. */
    broker_limits lim = {.max_subscriptions = 1u << 20, .max_packet_size = 8u << 20};
    fworld w;
    filters fs;
    size_t slen, ulen;
    fw_init(&w, &lim);
    filters_make(&fs, n, "load/%u/x", 1);
    uint8_t *sub = encode_list(&fs, true, 1, &slen);
    uint8_t *unsub = encode_list(&fs, false, 2, &ulen);
    fclient *c = fw_connect_as(&w, "many", true);
    broker_stats st;
    bool ok = true;

    double t0 = now_s();
    fw_send(&w, c, sub, slen);
    t->sub = now_s() - t0;
    broker_get_stats(w.b, &st);
    ok = ok && st.subscriptions_count == n;
    fc_clear(c);
    t0 = now_s();
    fw_send(&w, c, unsub, ulen);
    t->unsub = now_s() - t0;
    broker_get_stats(w.b, &st);
    ok = ok && st.subscriptions_count == 0;
    fw_send(&w, c, sub, slen);
    t0 = now_s();
    fc_disconnect(&w, c);
    t->teardown = now_s() - t0;
    broker_get_stats(w.b, &st);
    ok = ok && st.subscriptions_count == 0 && c->closed;
    free(sub);
    free(unsub);
    filters_free(&fs);
    fw_free(&w);
    return ok;
}

static void best_of(uint32_t n, int runs, timings *best)
{
    best->sub = best->unsub = best->teardown = 1e9;
    for (int i = 0; i < runs; i++) {
        timings t;
        if (!time_filters(n, &t))
            abort();
        best->sub = t.sub < best->sub ? t.sub : best->sub;
        best->unsub = t.unsub < best->unsub ? t.unsub : best->unsub;
        best->teardown = t.teardown < best->teardown ? t.teardown : best->teardown;
    }
}

TEST(subscribe_unsubscribe_and_teardown_of_many_filters_take_linear_time)
{
    /* Four times the filters: linear work takes 4x as long, the old walk
     * of the session's list for each filter 16x. Allow 8x: timing on a
     * shared machine is noisy, so each figure is the best of three. */
    timings small, large;
    best_of(20000, 3, &small);
    best_of(80000, 3, &large);
    if (getenv("TERN_TEST_LOG"))
        fprintf(stderr, "  20k: sub %.3f unsub %.3f teardown %.3f s; 80k: %.3f %.3f %.3f s\n",
                small.sub, small.unsub, small.teardown, large.sub, large.unsub, large.teardown);
    CHECK(large.sub < 8 * small.sub + 0.02);
    CHECK(large.unsub < 8 * small.unsub + 0.02);
    CHECK(large.teardown < 8 * small.teardown + 0.02);
}

/* ---- item 1: slices ------------------------------------------------------ */

/* The raw core, without the connection layer: each connection's output
 * collected into its own buffer. */
typedef struct rconn {
    broker_conn *bc;
    uint8_t out[1 << 20];
    size_t len, pos;
} rconn;

static void raw_collect(broker *b)
{
    broker_conn *c;
    while ((c = broker_next_dirty(b)) != NULL) {
        rconn *r = broker_conn_ctx(c);
        size_t n;
        const uint8_t *p = broker_out_peek(c, &n);
        if (r->len + n > sizeof r->out)
            abort();
        if (n)
            memcpy(r->out + r->len, p, n);
        r->len += n;
        broker_out_consume(b, c, n);
    }
}

static bool raw_next(rconn *r, mqtt_packet *p)
{
    size_t n;
    if (r->pos == r->len ||
        mqtt_decode(r->out + r->pos, r->len - r->pos, MQTT_FROM_SERVER, 4, 0, p, &n) != MQTT_OK)
        return false;
    r->pos += n;
    return true;
}

static broker *raw_broker(const broker_limits *lim)
{
    broker_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.limits = *lim;
    cfg.limits.sys_interval_s = UINT32_MAX;
    cfg.allow_anonymous = true;
    return broker_create(&cfg, 1000);
}

static bool raw_connect(broker *b, rconn *r, const char *id)
{
    uint8_t buf[64];
    mqtt_connect cp;
    memset(&cp, 0, sizeof cp);
    cp.level = MQTT_LEVEL_311;
    cp.clean_session = true;
    cp.client_id = (mqtt_bytes){(const uint8_t *)id, strlen(id)};
    size_t n = mqtt_encode_connect(buf, sizeof buf, &cp);
    mqtt_packet p;
    r->bc = broker_open(b, r, NULL, 1000);
    if (!r->bc || broker_input(b, r->bc, buf, n, 1000) != n)
        return false;
    raw_collect(b);
    return raw_next(r, &p) && p.type == MQTT_CONNACK;
}

TEST(large_subscribe_is_worked_through_in_slices_other_clients_served_between)
{
    /* 10,000 filters with a budget of 256 units: 256 filters per call. A
     * PUBLISH right behind the SUBSCRIBE waits for it: its PUBACK comes
     * after the SUBACK, which holds every code in order. */
    broker_limits lim = {.work_budget = 256};
    broker *b = raw_broker(&lim);
    static rconn a, other;
    memset(&a, 0, sizeof a);
    memset(&other, 0, sizeof other);
    CHECK(b != NULL);
    CHECK(raw_connect(b, &a, "a"));
    CHECK(raw_connect(b, &other, "other"));

    filters fs;
    filters_make(&fs, 10000, "s/%u", 1);
    fs.f[5000] = (mqtt_bytes){(const uint8_t *)"$SYS/x", 6}; /* refused: not an operator */
    size_t slen;
    uint8_t *sub = encode_list(&fs, true, 7, &slen);
    uint8_t pub[32], ping[2];
    mqtt_publish pp = {.qos = 1, .packet_id = 8, .topic = {(const uint8_t *)"t", 1}};
    size_t plen = mqtt_encode_publish(pub, sizeof pub, 4, &pp);
    size_t total = slen + plen;
    uint8_t *in = malloc(total);
    CHECK(in != NULL);
    memcpy(in, sub, slen);
    memcpy(in + slen, pub, plen);
    CHECK_EQ(mqtt_encode_empty(ping, sizeof ping, MQTT_PINGREQ), 2);

    /* The first call takes all of the SUBSCRIBE but its last byte. */
    size_t used = broker_input(b, a.bc, in, total, 1000);
    CHECK_EQ(used, slen - 1);
    raw_collect(b);
    CHECK_EQ(a.len, a.pos); /* no SUBACK yet */
    int calls = 1;
    while (used < total) {
        /* Another client between every two slices: answered at once. */
        CHECK_EQ(broker_input(b, other.bc, ping, 2, 1000), 2);
        raw_collect(b);
        mqtt_packet p;
        CHECK(raw_next(&other, &p) && p.type == MQTT_PINGRESP);
        size_t n = broker_input(b, a.bc, in + used, total - used, 1000);
        used += n;
        calls++;
        CHECK(calls < 1000);
    }
    /* Two passes (subscribe, retained) of 10,000 units at 256 a call. */
    CHECK(calls >= 2 * 10000 / 256);
    raw_collect(b);
    mqtt_packet p;
    CHECK(raw_next(&a, &p) && p.type == MQTT_SUBACK);
    CHECK_EQ(p.u.suback.packet_id, 7);
    CHECK_EQ(p.u.suback.count, 10000);
    size_t pos = 0;
    for (uint32_t i = 0; i < 10000; i++) {
        uint8_t code;
        CHECK(mqtt_suback_next(&p.u.suback, &pos, &code));
        CHECK_EQ(code, i == 5000 ? MQTT_SUBACK_FAILURE : 1);
    }
    CHECK(raw_next(&a, &p) && p.type == MQTT_PUBACK && p.u.ack.packet_id == 8);
    broker_stats st;
    broker_get_stats(b, &st);
    CHECK_EQ(st.subscriptions_count, 9999);
    CHECK_EQ(st.msgs_received, 1);
    free(in);
    free(sub);
    filters_free(&fs);
    broker_destroy(b);
}

TEST(subscribe_that_fits_a_budget_is_never_split_but_waits_for_a_fresh_one)
{
    /* Budget 4: two PINGREQs leave 2 units, too few for 3 filters. The
     * SUBSCRIBE is left whole for the next call, which takes it at once. */
    broker_limits lim = {.work_budget = 4};
    broker *b = raw_broker(&lim);
    static rconn a;
    memset(&a, 0, sizeof a);
    CHECK(b != NULL);
    CHECK(raw_connect(b, &a, "a"));
    filters fs;
    filters_make(&fs, 3, "w/%u", 0);
    size_t slen;
    uint8_t *sub = encode_list(&fs, true, 5, &slen);
    uint8_t in[64];
    CHECK(slen + 4 <= sizeof in);
    CHECK_EQ(mqtt_encode_empty(in, 2, MQTT_PINGREQ), 2);
    CHECK_EQ(mqtt_encode_empty(in + 2, 2, MQTT_PINGREQ), 2);
    memcpy(in + 4, sub, slen);
    CHECK_EQ(broker_input(b, a.bc, in, slen + 4, 1000), 4);
    broker_stats st;
    broker_get_stats(b, &st);
    CHECK_EQ(st.subscriptions_count, 0);
    CHECK_EQ(broker_input(b, a.bc, in + 4, slen, 1000), slen);
    broker_get_stats(b, &st);
    CHECK_EQ(st.subscriptions_count, 3);
    raw_collect(b);
    mqtt_packet p;
    CHECK(raw_next(&a, &p) && p.type == MQTT_PINGRESP);
    CHECK(raw_next(&a, &p) && p.type == MQTT_PINGRESP);
    CHECK(raw_next(&a, &p) && p.type == MQTT_SUBACK && p.u.suback.count == 3);
    free(sub);
    filters_free(&fs);
    broker_destroy(b);
}

TEST(sliced_unsubscribe_and_subscribe_through_the_layer_answer_once)
{
    /* Budget 3: every multi-filter packet goes in slices through the
     * connection layer; each gets one answer, and retained messages come
     * after the SUBACK. */
    broker_limits lim = {.work_budget = 3};
    fworld w;
    fw_init(&w, &lim);
    fclient *pub = fw_connect_as(&w, "pub", true);
    fc_publish(&w, pub, "r/5", "kept", 0, true, 0);
    fclient *c = fw_connect_as(&w, "c", true);
    filters fs;
    filters_make(&fs, 40, "r/%u", 1);
    size_t slen, ulen;
    uint8_t *sub = encode_list(&fs, true, 3, &slen);
    uint8_t *unsub = encode_list(&fs, false, 4, &ulen);
    fw_send(&w, c, sub, slen);
    uint8_t codes[40];
    CHECK(next_suback(c, 3, codes, 40));
    for (int i = 0; i < 40; i++)
        CHECK_EQ(codes[i], 1);
    mqtt_packet p;
    CHECK(fc_next_is(c, MQTT_PUBLISH, &p) && fc_payload_is(&p, "kept") && p.u.publish.retain);
    CHECK(!fc_next(c, &p));
    fw_send(&w, c, unsub, ulen);
    CHECK(fc_next_is(c, MQTT_UNSUBACK, &p) && p.u.ack.packet_id == 4);
    CHECK(!fc_next(c, &p));
    broker_stats st;
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.subscriptions_count, 0);
    free(sub);
    free(unsub);
    filters_free(&fs);
    fw_free(&w);
}

TEST(takeover_during_a_sliced_subscribe_ends_it_cleanly)
{
    broker_limits lim = {.work_budget = 2};
    broker *b = raw_broker(&lim);
    static rconn a, a2;
    memset(&a, 0, sizeof a);
    memset(&a2, 0, sizeof a2);
    CHECK(b != NULL);
    CHECK(raw_connect(b, &a, "same"));
    filters fs;
    filters_make(&fs, 50, "x/%u", 0);
    size_t slen;
    uint8_t *sub = encode_list(&fs, true, 1, &slen);
    CHECK_EQ(broker_input(b, a.bc, sub, slen, 1000), slen - 1);
    CHECK(raw_connect(b, &a2, "same")); /* takes the session over */
    CHECK(broker_wants_close(a.bc));
    CHECK_EQ(broker_input(b, a.bc, sub + slen - 1, 1, 1000), 1); /* discarded */
    broker_closed(b, a.bc, 1000);
    broker_stats st;
    broker_get_stats(b, &st);
    CHECK_EQ(st.subscriptions_count, 0); /* clean: the session went with it */
    free(sub);
    filters_free(&fs);
    broker_destroy(b);
}

static void commit_to_model(fworld *w)
{
    ms_commit_all(w->commit_ctx, w->b);
}

TEST(sliced_subscribe_of_a_persistent_session_is_acknowledged_once_on_disk)
{
    /* Budget 8, 50 filters: the SUBACK (and later the UNSUBACK) waits for
     * the commit of every slice's records, and a restart restores exactly
     * what was acknowledged. */
    mstore *ms = calloc(1, sizeof *ms);
    CHECK(ms != NULL);
    broker_limits lim = {.work_budget = 8};
    fworld w;
    fw_init_durable(&w, &lim);
    w.commit = commit_to_model;
    w.commit_ctx = ms;
    fclient *s = fw_connect_as(&w, "sub", false);
    filters fs;
    filters_make(&fs, 50, "d/%u", 1);
    size_t slen, ulen;
    uint8_t *sub = encode_list(&fs, true, 1, &slen);
    uint8_t *unsub = encode_list(&fs, false, 2, &ulen);
    fw_send(&w, s, sub, slen);
    mqtt_packet pk;
    CHECK(!fc_next(s, &pk)); /* held for the commit */
    ms_commit_all(ms, w.b);
    fw_drain(&w);
    uint8_t codes[50];
    CHECK(next_suback(s, 1, codes, 50));
    CHECK_EQ(codes[49], 1);

    fw_restart(&w);
    CHECK(ms_load(ms, w.b));
    broker_stats st;
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.subscriptions_count, 50);
    fclient *s2 = fw_open(&w);
    fc_connect(&w, s2, "sub", false, 0);
    CHECK(fc_next_is(s2, MQTT_CONNACK, &pk) && pk.u.connack.session_present);
    fclient *p = fw_connect_as(&w, "pub", true);
    fc_publish(&w, p, "d/49", "last", 0, false, 0);
    CHECK(fc_next_is(s2, MQTT_PUBLISH, &pk) && fc_payload_is(&pk, "last"));

    fw_send(&w, s2, unsub, ulen);
    CHECK(!fc_next(s2, &pk)); /* held for the commit */
    ms_commit_all(ms, w.b);
    fw_drain(&w);
    CHECK(fc_next_is(s2, MQTT_UNSUBACK, &pk) && pk.u.ack.packet_id == 2);
    fw_restart(&w);
    CHECK(ms_load(ms, w.b));
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.subscriptions_count, 0);
    free(sub);
    free(unsub);
    filters_free(&fs);
    fw_free(&w);
    free(ms);
}

/* ---- item 2: limits -------------------------------------------------------- */

TEST(filters_beyond_max_subscriptions_get_0x80_and_are_counted)
{
    broker_limits lim = {.max_subscriptions = 3};
    fworld w;
    fw_init(&w, &lim);
    fclient *c = fw_connect_as(&w, "c", true);
    filters fs;
    filters_make(&fs, 5, "m/%u", 2);
    size_t len;
    uint8_t *sub = encode_list(&fs, true, 1, &len);
    fw_send(&w, c, sub, len);
    uint8_t codes[5];
    CHECK(next_suback(c, 1, codes, 5));
    CHECK_EQ(codes[0], 2);
    CHECK_EQ(codes[2], 2);
    CHECK_EQ(codes[3], MQTT_SUBACK_FAILURE);
    CHECK_EQ(codes[4], MQTT_SUBACK_FAILURE);
    /* At the limit, a filter the session holds is granted again (its QoS
     * replaced); a new one is not. */
    fc_subscribe(&w, c, 2, "m/1", 0);
    CHECK(next_suback(c, 2, codes, 1));
    CHECK_EQ(codes[0], 0);
    fc_subscribe(&w, c, 3, "m/9", 0);
    CHECK(next_suback(c, 3, codes, 1));
    CHECK_EQ(codes[0], MQTT_SUBACK_FAILURE);
    /* Unsubscribing frees a place. */
    fc_unsubscribe(&w, c, 4, "m/0");
    mqtt_packet p;
    CHECK(fc_next_is(c, MQTT_UNSUBACK, &p));
    fc_subscribe(&w, c, 5, "m/9", 1);
    CHECK(next_suback(c, 5, codes, 1));
    CHECK_EQ(codes[0], 1);
    broker_stats st;
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.subscriptions_count, 3);
    CHECK_EQ(st.subscriptions_refused, 3);
    CHECK(!c->closed);
    free(sub);
    filters_free(&fs);
    fw_free(&w);
}

/* A topic of n levels "a/a/.../a". */
static char *levels(uint32_t n)
{
    char *t = malloc(2 * (size_t)n);
    if (!t)
        abort();
    for (uint32_t i = 0; i < n; i++) {
        t[2 * i] = 'a';
        t[2 * i + 1] = '/';
    }
    t[2 * n - 1] = '\0';
    return t;
}

TEST(filters_beyond_the_topic_levels_or_length_get_0x80_by_default)
{
    /* The defaults: 64 levels, 4096 bytes. */
    fworld w;
    fw_init(&w, NULL);
    fclient *c = fw_connect_as(&w, "c", true);
    char *deep_ok = levels(64), *deep = levels(65);
    char *long_ok = malloc(4097), *too_long = malloc(4098);
    CHECK(deep_ok && deep && long_ok && too_long);
    memset(long_ok, 'x', 4096);
    long_ok[4096] = '\0';
    memset(too_long, 'x', 4097);
    too_long[4097] = '\0';
    const char *fl[] = {deep_ok, deep, long_ok, too_long, "a/+/#"};
    filters fs = {0};
    fs.n = 5;
    mqtt_bytes f[5];
    uint8_t q[5] = {1, 1, 1, 1, 1};
    for (int i = 0; i < 5; i++)
        f[i] = (mqtt_bytes){(const uint8_t *)fl[i], strlen(fl[i])};
    fs.f = f;
    fs.qos = q;
    size_t len;
    uint8_t *sub = encode_list(&fs, true, 9, &len);
    fw_send(&w, c, sub, len);
    uint8_t codes[5];
    CHECK(next_suback(c, 9, codes, 5));
    CHECK_EQ(codes[0], 1);
    CHECK_EQ(codes[1], MQTT_SUBACK_FAILURE);
    CHECK_EQ(codes[2], 1);
    CHECK_EQ(codes[3], MQTT_SUBACK_FAILURE);
    CHECK_EQ(codes[4], 1);
    broker_stats st;
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.subscriptions_count, 3);
    CHECK_EQ(st.subscriptions_refused, 2);
    free(sub);
    free(deep_ok);
    free(deep);
    free(long_ok);
    free(too_long);
    fw_free(&w);
}

TEST(publish_to_a_topic_beyond_the_limits_closes_the_connection)
{
    /* 3.1.1 cannot refuse a PUBLISH; acknowledging one nobody can receive
     * would lose it silently, so the connection closes (and its will goes
     * out: the client did not end it). */
    broker_limits lim = {.max_topic_levels = 3, .max_topic_length = 16};
    fworld w;
    fw_init(&w, &lim);
    fclient *s = fw_connect_as(&w, "s", true);
    fc_subscribe(&w, s, 1, "will", 0);
    fc_clear(s);
    fclient *c = fw_open(&w);
    fc_connect_will(&w, c, "c", true, 0, "will", "gone", 0, false);
    fc_clear(c);
    fc_publish(&w, c, "a/b/c", "ok", 1, false, 1);
    mqtt_packet p;
    CHECK(fc_next_is(c, MQTT_PUBACK, &p));
    fc_publish(&w, c, "a/b/c/d", "deep", 1, false, 2);
    CHECK(!fc_next(c, &p)); /* no PUBACK */
    CHECK(c->closed);
    CHECK(fc_next_is(s, MQTT_PUBLISH, &p) && fc_payload_is(&p, "gone"));
    fclient *d = fw_connect_as(&w, "d", true);
    fc_publish(&w, d, "0123456789abcdefg", "long", 0, false, 0);
    CHECK(d->closed);
    broker_stats st;
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.topics_refused, 2);
    fw_free(&w);
}

TEST(will_topic_beyond_the_limits_closes_without_connack)
{
    broker_limits lim = {.max_topic_levels = 2};
    fworld w;
    fw_init(&w, &lim);
    fclient *c = fw_open(&w);
    fc_connect_will(&w, c, "c", true, 0, "a/b/c", "x", 0, false);
    mqtt_packet p;
    CHECK(!fc_next(c, &p)); /* [MQTT-3.2.2-6]: no return code fits */
    CHECK(c->closed);
    broker_stats st;
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.topics_refused, 1);
    CHECK_EQ(st.clients_total, 0);
    fw_free(&w);
}

/* ---- item 2: tables shrink -------------------------------------------------- */

/* The world holds 64 clients: once full, drop and forget all but the
 * first two (their sessions, when persistent, stay in the broker). */
static void recycle(fworld *w)
{
    if (w->nclients < 64)
        return;
    for (int k = 2; k < w->nclients; k++)
        fw_drop(w, w->clients[k]);
    for (int k = 2; k < w->nclients; k++) {
        fake_bytes_free(&w->clients[k]->inbox);
        fake_link_free(&w->clients[k]->link);
        free(w->clients[k]);
    }
    w->nclients = 2;
}

TEST(topic_tree_and_session_tables_shrink_when_a_client_leaves)
{
    /* A client with 500 deep filters (30,000 tree nodes) and 200 deep
     * retained topics, and 300 other clients, all gone again: the core's
     * memory is back near where it was (the tables sized for them
     * shrink), not hundreds of kilobytes above. */
    fworld w;
    fw_init(&w, NULL);
    fclient *watch = fw_connect_as(&w, "watch", true);
    (void)watch;
    broker_stats st;
    broker_get_stats(w.b, &st);
    uint64_t base = st.memory_used;

    fclient *c = fw_connect_as(&w, "deep", true);
    filters fs;
    filters_make(&fs, 500, "%u/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/"
                           "a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a",
                 0);
    size_t len;
    uint8_t *sub = encode_list(&fs, true, 1, &len);
    fw_send(&w, c, sub, len);
    uint8_t codes[500];
    CHECK(next_suback(c, 1, codes, 500));
    CHECK_EQ(codes[499], 0);
    for (unsigned i = 0; i < 200; i++) {
        char topic[128];
        snprintf(topic, sizeof topic, "r%u/b/b/b/b/b/b/b/b/b/b/b/b/b/b/b/b/b/b/b/b/b/b/b/b", i);
        fc_publish(&w, c, topic, "v", 0, true, 0);
    }
    for (unsigned i = 0; i < 300; i++) {
        char id[16];
        snprintf(id, sizeof id, "crowd%u", i);
        fc_connect(&w, fw_open(&w), id, false, 0); /* persistent: they stay */
        recycle(&w);
    }
    broker_get_stats(w.b, &st);
    uint64_t peak = st.memory_used;
    CHECK(peak > base + 3000000); /* the tree took megabytes */

    fc_disconnect(&w, c); /* clean session: its subscriptions go */
    for (unsigned i = 0; i < 200; i++) {
        char topic[128];
        snprintf(topic, sizeof topic, "r%u/b/b/b/b/b/b/b/b/b/b/b/b/b/b/b/b/b/b/b/b/b/b/b/b", i);
        fc_publish(&w, watch, topic, "", 0, true, 0); /* clears the retained message */
    }
    for (unsigned i = 0; i < 300; i++) {
        char id[16];
        snprintf(id, sizeof id, "crowd%u", i);
        fclient *k = fw_open(&w);
        fc_connect(&w, k, id, true, 0); /* clean: the persistent session ends */
        fc_disconnect(&w, k);
        recycle(&w);
    }
    fw_advance(&w, 2000); /* pooled output buffers unused for a second go too */
    broker_get_stats(w.b, &st);
    if (getenv("TERN_TEST_LOG"))
        fprintf(stderr, "  memory: base %llu peak %llu after %llu\n", (unsigned long long)base,
                (unsigned long long)peak, (unsigned long long)st.memory_used);
    CHECK_EQ(st.subscriptions_count, 0);
    CHECK_EQ(st.retained_count, 0);
    CHECK_EQ(st.clients_total, 1);
    CHECK(st.memory_used < base + 16384);
    free(sub);
    filters_free(&fs);
    fw_free(&w);
}
