/*
 * test_conn.c - the connection layer (src/conn) through the fake
 * transport, plaintext and TLS: input arriving a byte at a time, a
 * transport that takes output a few bytes at a time, a handshake over
 * many tiny reads and the per-turn handshake budget, the handshake
 * deadline, the linger of a connection the core wants closed (flushed, or
 * expired), the peer finishing or vanishing, and input left over by the
 * core's work budget or held while it is paused.
 */
#include "test.h"

#include "fake_transport.h"
#include "mqtt/mqtt.h"
#include "test_tls_pair.h"

#include <stdlib.h>

typedef struct cworld {
    broker *b;
    conn_server *cs;
    uint64_t now;
} cworld;

static void quiet(void *ctx, broker_log_level level, const char *msg)
{
    (void)ctx;
    if (getenv("TERN_TEST_LOG"))
        fprintf(stderr, "  [conn %d] %s\n", (int)level, msg);
}

static bool cw_init(cworld *w, const broker_limits *lim, tern_tls_server *tls)
{
    broker_config cfg;
    conn_server_config cc;

    memset(w, 0, sizeof *w);
    w->now = 1000000;
    memset(&cfg, 0, sizeof cfg);
    if (lim)
        cfg.limits = *lim;
    cfg.limits.sys_interval_s = UINT32_MAX;
    cfg.allow_anonymous = true;
    cfg.log = quiet;
    cfg.log_level = BROKER_LOG_DEBUG;
    cfg.version = "test";
    w->b = broker_create(&cfg, w->now);
    memset(&cc, 0, sizeof cc);
    cc.b = w->b;
    cc.io = &fake_transport;
    cc.tls_ops = &conn_tls;
    cc.tls = tls;
    cc.handshake_timeout_ms = 3000;
    cc.log = quiet;
    cc.log_level = BROKER_LOG_DEBUG;
    w->cs = w->b ? conn_server_create(&cc) : NULL;
    return w->cs != NULL;
}

static void cw_free(cworld *w, fake_link **links, int n)
{
    for (int i = 0; i < n; i++) {
        if (!links[i]->closed)
            conn_drop(w->cs, &links[i]->c);
        fake_link_free(links[i]);
    }
    conn_server_destroy(w->cs);
    broker_destroy(w->b);
}

/* One turn: every open link with bytes (or the end of them) is readable. */
static void cw_turn(cworld *w, fake_link **links, int n)
{
    conn_turn_begin(w->cs, w->now);
    for (int i = 0; i < n; i++) {
        fake_link *l = links[i];
        if (!l->closed && l->want_read && (l->up.len > 0 || l->eof))
            (void)conn_readable(w->cs, &l->c, w->now);
    }
    conn_turn_end(w->cs, w->now);
}

static size_t put_connect(fake_link *l, const char *id, const char *will)
{
    uint8_t buf[256];
    mqtt_connect cp;
    memset(&cp, 0, sizeof cp);
    cp.level = 4;
    cp.clean_session = true;
    cp.client_id = (mqtt_bytes){(const uint8_t *)id, strlen(id)};
    if (will) {
        cp.will_flag = true;
        cp.will_topic = (mqtt_bytes){(const uint8_t *)will, strlen(will)};
        cp.will_payload = (mqtt_bytes){(const uint8_t *)"gone", 4};
    }
    size_t n = mqtt_encode_connect(buf, sizeof buf, &cp);
    fake_bytes_put(&l->up, buf, n);
    return n;
}

static void put_subscribe(fake_link *l, const char *filter)
{
    uint8_t buf[256], qos = 0;
    mqtt_bytes f = {(const uint8_t *)filter, strlen(filter)};
    fake_bytes_put(&l->up, buf, mqtt_encode_subscribe(buf, sizeof buf, 4, 1, &f, &qos, 1));
}

static void put_publish_qos(fake_link *l, const char *topic, size_t len, uint8_t fillc,
                            uint8_t qos, uint16_t id)
{
    static uint8_t payload[200000];
    static uint8_t buf[sizeof payload + 64];
    memset(payload, fillc, len);
    mqtt_publish p = {.qos = qos, .packet_id = id, .topic = {(const uint8_t *)topic, strlen(topic)},
                      .payload = {payload, len}};
    fake_bytes_put(&l->up, buf, mqtt_encode_publish(buf, sizeof buf, 4, &p));
}

static void put_publish(fake_link *l, const char *topic, size_t len, uint8_t fillc)
{
    put_publish_qos(l, topic, len, fillc, 0, 0);
}

/* Decode the packets of a byte stream from the broker; counts by type. */
static int count_packets(const uint8_t *p, size_t len, mqtt_type type, size_t *payload_bytes)
{
    int n = 0;
    size_t pos = 0, used;
    mqtt_packet pk;
    while (pos < len && mqtt_decode(p + pos, len - pos, MQTT_FROM_SERVER, 4, 0, &pk, &used) ==
                            MQTT_OK) {
        if (pk.type == type) {
            n++;
            if (payload_bytes && type == MQTT_PUBLISH)
                *payload_bytes += pk.u.publish.payload.len;
        }
        pos += used;
    }
    return n;
}

static fake_link *new_link(void)
{
    fake_link *l = malloc(sizeof *l);
    if (l)
        fake_link_init(l);
    return l;
}

TEST(conn_input_one_byte_per_read_reaches_the_core_whole)
{
    cworld w;
    fake_link *a = new_link();
    fake_link *links[] = {a};
    CHECK(a && cw_init(&w, NULL, NULL));
    CHECK(conn_open(w.cs, &a->c, false, w.now));
    a->read_max = 1;
    put_connect(a, "one", NULL);
    put_subscribe(a, "t/#");
    put_publish(a, "t/x", 10, 'x');
    for (int i = 0; i < 10 && a->up.len > 0; i++)
        cw_turn(&w, links, 1);
    CHECK_EQ(a->up.len, 0);
    CHECK(a->reads > 40); /* it really was a byte at a time */
    const uint8_t *d = fake_bytes_data(&a->down);
    CHECK_EQ(count_packets(d, a->down.len, MQTT_CONNACK, NULL), 1);
    CHECK_EQ(count_packets(d, a->down.len, MQTT_SUBACK, NULL), 1);
    CHECK_EQ(count_packets(d, a->down.len, MQTT_PUBLISH, NULL), 1);
    CHECK(!a->closed);
    cw_free(&w, links, 1);
    free(a);
}

TEST(conn_output_to_a_transport_taking_a_few_bytes_arrives_in_order)
{
    cworld w;
    fake_link *a = new_link();
    fake_link *links[] = {a};
    CHECK(a && cw_init(&w, NULL, NULL));
    CHECK(conn_open(w.cs, &a->c, false, w.now));
    put_connect(a, "slow", NULL);
    put_subscribe(a, "big");
    put_publish(a, "big", 5000, 'b');
    a->room = 7;
    cw_turn(&w, links, 1);
    CHECK_EQ(a->down.len, 7);
    CHECK(a->want_write); /* waits for room */
    int rounds = 0;
    while (a->want_write && rounds < 10000) {
        a->room = 7;
        CHECK(conn_writable(w.cs, &a->c, w.now));
        rounds++;
    }
    CHECK(rounds > 100);
    CHECK(!a->want_write);
    size_t payload = 0;
    const uint8_t *d = fake_bytes_data(&a->down);
    CHECK_EQ(count_packets(d, a->down.len, MQTT_CONNACK, NULL), 1);
    CHECK_EQ(count_packets(d, a->down.len, MQTT_PUBLISH, &payload), 1);
    CHECK_EQ(payload, 5000);
    cw_free(&w, links, 1);
    free(a);
}

TEST(conn_input_left_by_the_work_budget_waits_on_the_ready_list)
{
    cworld w;
    broker_limits lim = {.work_budget = 2};
    fake_link *a = new_link();
    fake_link *links[] = {a};
    CHECK(a && cw_init(&w, &lim, NULL));
    CHECK(conn_open(w.cs, &a->c, false, w.now));
    put_connect(a, "busy", NULL);
    put_subscribe(a, "t");
    for (int i = 0; i < 10; i++)
        put_publish(a, "t", 3, 'p');
    cw_turn(&w, links, 1);
    CHECK_EQ(a->up.len, 0);                    /* read in one go... */
    CHECK_EQ(conn_next_deadline(w.cs), 0);     /* ...but not all taken: do not sleep */
    int turns = 1;
    while (conn_next_deadline(w.cs) == 0 && turns < 20) {
        cw_turn(&w, links, 1);
        turns++;
    }
    CHECK(turns >= 5); /* two packets a turn */
    CHECK_EQ(count_packets(fake_bytes_data(&a->down), a->down.len, MQTT_PUBLISH, NULL), 10);
    cw_free(&w, links, 1);
    free(a);
}

TEST(conn_peer_eof_after_disconnect_closes_gracefully_without_the_will)
{
    cworld w;
    fake_link *a = new_link(), *s = new_link();
    fake_link *links[] = {a, s};
    CHECK(a && s && cw_init(&w, NULL, NULL));
    CHECK(conn_open(w.cs, &s->c, false, w.now) && conn_open(w.cs, &a->c, false, w.now));
    put_connect(s, "watcher", NULL);
    put_subscribe(s, "will/#");
    put_connect(a, "leaver", "will/a");
    uint8_t disc[2];
    fake_bytes_put(&a->up, disc, mqtt_encode_empty(disc, sizeof disc, MQTT_DISCONNECT));
    a->eof = true;
    cw_turn(&w, links, 2);
    CHECK(a->closed && a->how == CONN_CLOSE_GRACEFUL);
    CHECK_EQ(count_packets(fake_bytes_data(&a->down), a->down.len, MQTT_CONNACK, NULL), 1);
    CHECK_EQ(count_packets(fake_bytes_data(&s->down), s->down.len, MQTT_PUBLISH, NULL), 0);
    cw_free(&w, links, 2);
    free(a);
    free(s);
}

TEST(conn_peer_vanishing_mid_write_ends_it_and_fires_the_will)
{
    cworld w;
    fake_link *a = new_link(), *s = new_link();
    fake_link *links[] = {a, s};
    CHECK(a && s && cw_init(&w, NULL, NULL));
    CHECK(conn_open(w.cs, &s->c, false, w.now) && conn_open(w.cs, &a->c, false, w.now));
    put_connect(s, "watcher", NULL);
    put_subscribe(s, "will/#");
    put_connect(a, "victim", "will/v");
    put_subscribe(a, "t");
    cw_turn(&w, links, 2);
    CHECK(!a->closed);
    put_publish(s, "t", 100, 'q');
    a->fail_write = true; /* the peer is gone when its output is written */
    cw_turn(&w, links, 2);
    CHECK(a->closed && a->how == CONN_CLOSE_ABORT);
    cw_turn(&w, links, 2);
    CHECK_EQ(count_packets(fake_bytes_data(&s->down), s->down.len, MQTT_PUBLISH, NULL), 1);
    cw_free(&w, links, 2);
    free(a);
    free(s);
}

TEST(conn_read_error_ends_only_that_connection)
{
    cworld w;
    fake_link *a = new_link(), *b = new_link();
    fake_link *links[] = {a, b};
    CHECK(a && b && cw_init(&w, NULL, NULL));
    CHECK(conn_open(w.cs, &a->c, false, w.now) && conn_open(w.cs, &b->c, false, w.now));
    put_connect(a, "a", NULL);
    put_connect(b, "b", NULL);
    a->fail_read = true;
    cw_turn(&w, links, 2);
    CHECK(a->closed && a->how == CONN_CLOSE_ABORT);
    CHECK(!b->closed);
    CHECK_EQ(count_packets(fake_bytes_data(&b->down), b->down.len, MQTT_CONNACK, NULL), 1);
    cw_free(&w, links, 2);
    free(a);
    free(b);
}

/* A connection the core wants closed (a protocol error) with output the
 * transport has not taken: it lingers, unread, until the output is out. */
TEST(conn_close_during_a_flush_lingers_until_the_output_is_taken)
{
    cworld w;
    fake_link *a = new_link();
    fake_link *links[] = {a};
    CHECK(a && cw_init(&w, NULL, NULL));
    CHECK(conn_open(w.cs, &a->c, false, w.now));
    put_connect(a, "bad", NULL);
    put_subscribe(a, "big");
    put_publish(a, "big", 3000, 'z');
    uint8_t junk[] = {0xf0, 0x00}; /* reserved packet type: protocol error */
    fake_bytes_put(&a->up, junk, sizeof junk);
    a->room = 100;
    cw_turn(&w, links, 1);
    CHECK(!a->closed);
    CHECK(!a->want_read && a->want_write); /* closing: no more input */
    w.now += 1000;
    a->room = SIZE_MAX;
    CHECK(!conn_writable(w.cs, &a->c, w.now)); /* flushed, then closed */
    CHECK(a->closed && a->how == CONN_CLOSE_GRACEFUL);
    size_t payload = 0;
    CHECK_EQ(count_packets(fake_bytes_data(&a->down), a->down.len, MQTT_PUBLISH, &payload), 1);
    CHECK_EQ(payload, 3000);
    cw_free(&w, links, 1);
    free(a);
}

TEST(conn_linger_expires_when_the_output_is_never_taken)
{
    cworld w;
    fake_link *a = new_link();
    fake_link *links[] = {a};
    conn_stats st;
    CHECK(a && cw_init(&w, NULL, NULL));
    CHECK(conn_open(w.cs, &a->c, false, w.now));
    put_connect(a, "stuck", NULL);
    put_subscribe(a, "big");
    put_publish(a, "big", 3000, 'z');
    uint8_t junk[] = {0xf0, 0x00};
    fake_bytes_put(&a->up, junk, sizeof junk);
    a->room = 0;
    cw_turn(&w, links, 1);
    CHECK(!a->closed);
    CHECK_EQ(conn_next_deadline(w.cs), w.now + CONN_LINGER_MS);
    w.now += CONN_LINGER_MS - 1;
    cw_turn(&w, links, 1);
    CHECK(!a->closed);
    w.now += 1;
    cw_turn(&w, links, 1);
    CHECK(a->closed && a->how == CONN_CLOSE_ABORT);
    conn_server_get_stats(w.cs, &st);
    CHECK_EQ(st.linger_timeouts, 1);
    cw_free(&w, links, 1);
    free(a);
}

TEST(conn_paused_input_is_not_read_until_output_drains)
{
    cworld w;
    broker_limits lim = {.max_out_bytes = 4096};
    fake_link *a = new_link();
    fake_link *links[] = {a};
    CHECK(a && cw_init(&w, &lim, NULL));
    CHECK(conn_open(w.cs, &a->c, false, w.now));
    put_connect(a, "reader", NULL);
    a->room = 0; /* it does not read what it is sent: its PUBACKs back up */
    for (int i = 0; i < 3000; i++)
        put_publish_qos(a, "t", 1, 'r', 1, (uint16_t)(i + 1));
    for (int i = 0; i < 100 && a->want_read; i++)
        cw_turn(&w, links, 1);
    CHECK(!a->want_read); /* paused */
    CHECK(conn_core(&a->c) && broker_input_paused(conn_core(&a->c)));
    unsigned reads = a->reads;
    size_t left = a->up.len + a->c.pending_len;
    CHECK(left > 0);
    for (int i = 0; i < 5; i++)
        cw_turn(&w, links, 1);
    CHECK_EQ(a->reads, reads); /* nothing more is read... */
    CHECK_EQ(a->up.len + a->c.pending_len, left); /* ...or handed to the core */
    a->room = SIZE_MAX;
    for (int i = 0; i < 200 && (a->up.len > 0 || a->c.pending_len > 0 || a->want_write); i++) {
        (void)conn_writable(w.cs, &a->c, w.now);
        cw_turn(&w, links, 1);
    }
    CHECK_EQ(a->up.len, 0);
    CHECK(!a->closed);
    CHECK_EQ(count_packets(fake_bytes_data(&a->down), a->down.len, MQTT_PUBACK, NULL), 3000);
    cw_free(&w, links, 1);
    free(a);
}

/* ---- TLS ---------------------------------------------------------------- */

typedef struct tclient {
    fake_link link;
    tern_tls_conn *tls;
    uint8_t plain[65536];
    size_t plain_len;
    bool failed;
} tclient;

/* The client's side of the wire: take the broker's bytes, answer. */
static void tc_pump(tclient *t)
{
    size_t got = 0;
    fake_bytes *down = &t->link.down;
    tern_tls_state st = tern_tls_read(t->tls, fake_bytes_data(down), down->len,
                                      t->plain + t->plain_len, sizeof t->plain - t->plain_len,
                                      &got);
    fake_bytes_take(down, down->len);
    t->plain_len += got;
    while (tern_tls_has_input(t->tls) && st != TERN_TLS_FAILED) {
        got = 0;
        st = tern_tls_read(t->tls, NULL, 0, t->plain + t->plain_len,
                           sizeof t->plain - t->plain_len, &got);
        t->plain_len += got;
    }
    t->failed |= st == TERN_TLS_FAILED;
    size_t len;
    const uint8_t *out = tern_tls_out_peek(t->tls, &len);
    fake_bytes_put(&t->link.up, out, len);
    tern_tls_out_consume(t->tls, len);
}

static bool tc_open(cworld *w, tclient *t, tern_tls_client *cl)
{
    memset(t, 0, sizeof *t);
    fake_link_init(&t->link);
    t->tls = tern_tls_client_conn(cl);
    if (!t->tls || !conn_open(w->cs, &t->link.c, true, w->now))
        return false;
    tc_pump(t); /* the ClientHello */
    return true;
}

static void tc_mqtt(tclient *t, const uint8_t *p, size_t n)
{
    CHECK(tern_tls_write(t->tls, p, n));
    size_t len;
    const uint8_t *out = tern_tls_out_peek(t->tls, &len);
    fake_bytes_put(&t->link.up, out, len);
    tern_tls_out_consume(t->tls, len);
}

static tern_tls_server *server_ctx(void)
{
    tls_test_server_opts o = {0};
    return tls_test_server(&o, NULL, 0);
}

static tern_tls_client *client_ctx(void)
{
    return tls_test_client("ca.crt", "dev-client", TERN_TLS_1_3, TERN_TLS_1_3);
}

TEST(conn_tls_handshake_over_many_tiny_reads_then_mqtt)
{
    cworld w;
    tern_tls_client *cl = client_ctx();
    tclient *t = calloc(1, sizeof *t);
    fake_link *links[1];
    conn_stats st;
    CHECK(cl && t && cw_init(&w, NULL, server_ctx()));
    CHECK(tc_open(&w, t, cl));
    links[0] = &t->link;
    t->link.read_max = 2; /* every record arrives in pieces */
    int turns = 0;
    for (; turns < 2000 && !conn_core(&t->link.c) && !t->link.closed; turns++) {
        cw_turn(&w, links, 1);
        tc_pump(t);
    }
    CHECK(conn_core(&t->link.c) != NULL);
    CHECK(t->link.reads > 300);
    /* Each read was a step: no turn took more than its budget (plus the
     * read that found nothing). */
    CHECK(turns > 5);
    CHECK(t->link.reads <= (unsigned)turns * (CONN_HANDSHAKE_STEPS_PER_TURN + 1));
    conn_server_get_stats(w.cs, &st);
    CHECK_EQ(st.handshakes_ok, 1);
    uint8_t buf[64];
    mqtt_connect cp = {.level = 4, .clean_session = true,
                       .client_id = {(const uint8_t *)"tiny", 4}};
    tc_mqtt(t, buf, mqtt_encode_connect(buf, sizeof buf, &cp));
    for (int i = 0; i < 100 && t->plain_len == 0; i++) {
        cw_turn(&w, links, 1);
        tc_pump(t);
    }
    CHECK_EQ(count_packets(t->plain, t->plain_len, MQTT_CONNACK, NULL), 1);
    CHECK(!t->failed);
    tern_tls_conn_free(t->tls);
    cw_free(&w, links, 1);
    tern_tls_client_release(cl);
    free(t);
}

TEST(conn_tls_handshakes_beyond_the_turn_budget_wait_for_the_next_turn)
{
    enum { N = CONN_HANDSHAKE_STEPS_PER_TURN + 12 };
    cworld w;
    tern_tls_client *cl = client_ctx();
    tclient *t = calloc(N, sizeof *t);
    fake_link *links[N];
    CHECK(cl && t && cw_init(&w, NULL, server_ctx()));
    for (int i = 0; i < N; i++) {
        CHECK(tc_open(&w, &t[i], cl));
        links[i] = &t[i].link;
    }
    cw_turn(&w, links, N); /* every ClientHello is waiting */
    int answered = 0;
    for (int i = 0; i < N; i++)
        answered += t[i].link.down.len > 0;
    CHECK_EQ(answered, CONN_HANDSHAKE_STEPS_PER_TURN);
    CHECK_EQ(conn_next_deadline(w.cs), 0); /* the rest wait on the ready list */
    cw_turn(&w, links, N);
    answered = 0;
    for (int i = 0; i < N; i++)
        answered += t[i].link.down.len > 0;
    CHECK_EQ(answered, N);
    for (int i = 0; i < N; i++)
        tern_tls_conn_free(t[i].tls);
    cw_free(&w, links, N);
    tern_tls_client_release(cl);
    free(t);
}

TEST(conn_tls_handshake_times_out_and_aborts)
{
    cworld w;
    tern_tls_client *cl = client_ctx();
    tclient *t = calloc(1, sizeof *t);
    fake_link *links[1];
    conn_stats st;
    CHECK(cl && t && cw_init(&w, NULL, server_ctx()));
    CHECK(tc_open(&w, t, cl));
    links[0] = &t->link;
    fake_bytes_take(&t->link.up, t->link.up.len); /* the ClientHello never arrives */
    CHECK_EQ(conn_next_deadline(w.cs), w.now + 3000);
    w.now += 2999;
    cw_turn(&w, links, 1);
    CHECK(!t->link.closed);
    w.now += 1;
    cw_turn(&w, links, 1);
    CHECK(t->link.closed && t->link.how == CONN_CLOSE_ABORT);
    conn_server_get_stats(w.cs, &st);
    CHECK_EQ(st.handshake_timeouts, 1);
    tern_tls_conn_free(t->tls);
    cw_free(&w, links, 1);
    tern_tls_client_release(cl);
    free(t);
}

TEST(conn_tls_garbage_fails_the_handshake_and_closes_gracefully)
{
    cworld w;
    fake_link *a = new_link();
    fake_link *links[] = {a};
    conn_stats st;
    CHECK(a && cw_init(&w, NULL, server_ctx()));
    CHECK(conn_open(w.cs, &a->c, true, w.now));
    fake_bytes_put(&a->up, "GET / HTTP/1.1\r\n\r\n", 18);
    cw_turn(&w, links, 1);
    CHECK(a->closed && a->how == CONN_CLOSE_GRACEFUL);
    conn_server_get_stats(w.cs, &st);
    CHECK_EQ(st.handshakes_failed, 1);
    cw_free(&w, links, 1);
    free(a);
}

TEST(conn_tls_close_during_a_flush_sends_close_notify_after_the_output)
{
    cworld w;
    tern_tls_client *cl = client_ctx();
    tclient *t = calloc(1, sizeof *t);
    fake_link *links[1];
    CHECK(cl && t && cw_init(&w, NULL, server_ctx()));
    CHECK(tc_open(&w, t, cl));
    links[0] = &t->link;
    for (int i = 0; i < 10 && !conn_core(&t->link.c); i++) {
        cw_turn(&w, links, 1);
        tc_pump(t);
    }
    uint8_t buf[300];
    mqtt_connect cp = {.level = 4, .clean_session = true, .client_id = {(const uint8_t *)"x", 1}};
    tc_mqtt(t, buf, mqtt_encode_connect(buf, sizeof buf, &cp));
    uint8_t junk[] = {0xf0, 0x00};
    tc_mqtt(t, junk, sizeof junk);
    t->link.room = 10; /* the CONNACK's record does not fit */
    cw_turn(&w, links, 1);
    CHECK(!t->link.closed && t->link.want_write);
    t->link.room = SIZE_MAX;
    CHECK(!conn_writable(w.cs, &t->link.c, w.now));
    CHECK(t->link.closed && t->link.how == CONN_CLOSE_GRACEFUL);
    tc_pump(t);
    CHECK_EQ(count_packets(t->plain, t->plain_len, MQTT_CONNACK, NULL), 1);
    CHECK(tern_tls_state_of(t->tls) == TERN_TLS_PEER_CLOSED); /* close_notify came last */
    tern_tls_conn_free(t->tls);
    cw_free(&w, links, 1);
    tern_tls_client_release(cl);
    free(t);
}
