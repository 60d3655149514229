/*
 * test_conn_tls.c - the connection layer's TLS half (src/conn/tls.c) over
 * the fake transport, with a real TLS client: a handshake over many tiny
 * reads, the per-turn handshake budget, the handshake deadline, garbage,
 * close_notify after the last output, the limits on handshakes running,
 * rate-limited failure lines, the layer's counters in $SYS.
 */
#include "test.h"

#include "conn_world.h"
#include "test_tls_pair.h"

#include "broker/logwin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    CHECK(cl && t && cw_init(&w, NULL, &conn_tls, server_ctx()));
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
    CHECK_EQ(cw_count(t->plain, t->plain_len, MQTT_CONNACK, NULL), 1);
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
    CHECK(cl && t && cw_init(&w, NULL, &conn_tls, server_ctx()));
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
    CHECK(cl && t && cw_init(&w, NULL, &conn_tls, server_ctx()));
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
    fake_link *a = cw_link();
    fake_link *links[] = {a};
    conn_stats st;
    CHECK(a && cw_init(&w, NULL, &conn_tls, server_ctx()));
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
    CHECK(cl && t && cw_init(&w, NULL, &conn_tls, server_ctx()));
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
    CHECK_EQ(cw_count(t->plain, t->plain_len, MQTT_CONNACK, NULL), 1);
    CHECK(tern_tls_state_of(t->tls) == TERN_TLS_PEER_CLOSED); /* close_notify came last */
    tern_tls_conn_free(t->tls);
    cw_free(&w, links, 1);
    tern_tls_client_release(cl);
    free(t);
}

/* A link whose peer address is `addr` (the fake transport's address is the
 * peer text), opened as a TLS connection; false when refused. */
static bool open_from(cworld *w, fake_link *l, const char *addr)
{
    fake_link_init(l);
    l->peer = addr;
    return conn_open(w->cs, &l->c, true, w->now);
}

TEST(conn_tls_handshakes_from_one_address_are_bounded_and_others_still_get_in)
{
    enum { N = 10 };
    cworld w;
    fake_link l[N], other, again;
    fake_link *links[N + 2];
    conn_stats st;
    int logs = 0;
    CHECK(cw_init_limited(&w, &conn_tls, server_ctx(), 100, 4, &logs));
    int opened = 0;
    for (int i = 0; i < N; i++) {
        links[i] = &l[i];
        if (open_from(&w, &l[i], "10.0.0.66"))
            opened++;
        else
            l[i].closed = true; /* refused: never the layer's */
    }
    CHECK_EQ(opened, 4);
    CHECK(open_from(&w, &other, "10.0.0.7")); /* another address still gets in */
    links[N] = &other;
    conn_server_get_stats(w.cs, &st);
    CHECK_EQ(st.handshakes_refused_address, N - 4);
    CHECK_EQ(st.handshakes_refused, 0);
    CHECK(logs <= 2); /* one refusal line per interval, whatever the flood */
    /* A handshake that ends frees its address's slot. */
    conn_failed(w.cs, &l[0].c, w.now);
    CHECK(open_from(&w, &again, "10.0.0.66"));
    links[N + 1] = &again;
    CHECK(!open_from(&w, &l[N - 1], "10.0.0.66"));
    l[N - 1].closed = true;
    cw_free(&w, links, N + 2);
}

TEST(conn_tls_handshakes_in_all_are_bounded)
{
    cworld w;
    fake_link a, b, c;
    fake_link *links[] = {&a, &b, &c};
    char addr[3][16] = {"10.0.0.1", "10.0.0.2", "10.0.0.3"};
    CHECK(cw_init_limited(&w, &conn_tls, server_ctx(), 2, 2, NULL));
    CHECK(open_from(&w, &a, addr[0]));
    CHECK(open_from(&w, &b, addr[1]));
    CHECK(!open_from(&w, &c, addr[2]));
    c.closed = true;
    /* Timed out handshakes make room again. */
    w.now += 3000;
    cw_turn(&w, links, 2);
    CHECK(a.closed && b.closed);
    CHECK(open_from(&w, &c, addr[2]));
    cw_free(&w, links, 3);
}

/* The log lines the layer wrote, kept for a test to look through. */
typedef struct line_log {
    char lines[64][320];
    int n, total;
} line_log;

static void keep_line(void *ctx, broker_log_level level, const char *msg)
{
    line_log *l = ctx;
    (void)level;
    if (l->n < 64)
        snprintf(l->lines[l->n++], sizeof l->lines[0], "%s", msg);
    l->total++;
}

static int lines_with(const line_log *l, const char *text)
{
    int n = 0;
    for (int i = 0; i < l->n; i++)
        n += strstr(l->lines[i], text) != NULL;
    return n;
}

TEST(conn_tls_failure_and_timeout_floods_write_a_bounded_number_of_lines)
{
    enum { N = 60 };
    cworld w;
    fake_link *l = calloc(N, sizeof *l);
    fake_link *links[N];
    line_log *log = calloc(1, sizeof *log);
    conn_stats st;
    CHECK(l && log);
    conn_server_config extra = {.tls_ops = &conn_tls, .tls = server_ctx(), .log = keep_line,
                                .log_ctx = log};
    CHECK(cw_init_config(&w, NULL, &extra));
    /* N clients sending garbage instead of a ClientHello: N failures. */
    for (int i = 0; i < N; i++) {
        links[i] = &l[i];
        CHECK(open_from(&w, &l[i], "10.0.0.9"));
        fake_bytes_put(&l[i].up, "GET / HTTP/1.1\r\n\r\n", 18);
    }
    for (int t = 0; t < 3; t++) /* (CONN_HANDSHAKE_STEPS_PER_TURN a turn) */
        cw_turn(&w, links, N);
    conn_server_get_stats(w.cs, &st);
    CHECK_EQ(st.handshakes_failed, N); /* every one counted... */
    CHECK_EQ(lines_with(log, "TLS handshake with"), TERN_LOG_BURST); /* ...a few logged */
    CHECK(conn_next_deadline(w.cs) <= w.now + TERN_LOG_WINDOW_MS); /* the summary is due */
    /* When the window ends, one line says how many were not written. */
    w.now += TERN_LOG_WINDOW_MS;
    cw_turn(&w, links, 0);
    CHECK_EQ(lines_with(log, "log: 50 more 'TLS handshake failed' lines suppressed"), 1);
    /* N stalled handshakes timing out at once: the same bound. */
    for (int i = 0; i < N; i++) {
        fake_link_free(&l[i]);
        CHECK(open_from(&w, &l[i], "10.0.0.9"));
    }
    w.now += 3000;
    cw_turn(&w, links, N);
    conn_server_get_stats(w.cs, &st);
    CHECK_EQ(st.handshake_timeouts, N);
    CHECK_EQ(lines_with(log, "timed out"), TERN_LOG_BURST);
    int before = log->total;
    cw_free(&w, links, N); /* the server's end writes the count it owes */
    CHECK_EQ(log->total, before + 1);
    CHECK_EQ(lines_with(log, "more 'TLS handshake timed out' lines suppressed"), 1);
    free(l);
    free(log);
}

/* The value of the last PUBLISH to `topic` a link received, or -1. */
static long long sys_value(const fake_link *l, const char *topic)
{
    const uint8_t *p = fake_bytes_data(&l->down);
    size_t pos = 0, used;
    long long v = -1;
    mqtt_packet pk;
    while (pos < l->down.len &&
           mqtt_decode(p + pos, l->down.len - pos, MQTT_FROM_SERVER, 4, 0, &pk, &used) ==
               MQTT_OK) {
        const mqtt_publish *pb = &pk.u.publish;
        if (pk.type == MQTT_PUBLISH && pb->topic.len == strlen(topic) &&
            memcmp(pb->topic.p, topic, pb->topic.len) == 0) {
            char num[24] = {0};
            memcpy(num, pb->payload.p, pb->payload.len < 23 ? pb->payload.len : 23);
            v = strtoll(num, NULL, 10);
        }
        pos += used;
    }
    return v;
}

TEST(conn_layer_counters_appear_in_sys_and_count)
{
    enum { BIG = 4, BUDGET = 256 * 1024 };
    cworld w;
    fake_link *l = calloc(BIG + 5, sizeof *l);
    fake_link *links[BIG + 5];
    broker_limits lim = {.sys_interval_s = 1};
    conn_server_config extra = {.tls_ops = &conn_tls, .tls = server_ctx(), .max_handshakes = 2,
                                .max_handshakes_per_address = 1, .max_input_bytes = BUDGET};
    CHECK(l && cw_init_config(&w, &lim, &extra));
    for (int i = 0; i < BIG + 5; i++)
        links[i] = &l[i];
    /* An operator reads $SYS. */
    fake_link *ops = &l[BIG + 4];
    fake_link_init(ops);
    ops->identity = "ops";
    ops->is_operator = true;
    CHECK(conn_open(w.cs, &ops->c, false, w.now));
    cw_put_connect(ops, "ops", NULL);
    cw_put_subscribe(ops, "$SYS/broker/connections/#");
    cw_turn(&w, &ops, 1);
    /* Handshakes: one refused from a busy address, one refused when two
     * run, one failing, one timing out. */
    CHECK(open_from(&w, &l[BIG], "10.0.0.1"));
    CHECK(!open_from(&w, &l[BIG + 1], "10.0.0.1"));
    CHECK(open_from(&w, &l[BIG + 2], "10.0.0.2"));
    CHECK(!open_from(&w, &l[BIG + 3], "10.0.0.3"));
    l[BIG + 1].closed = l[BIG + 3].closed = true; /* refused: never the layer's */
    fake_bytes_put(&l[BIG].up, "garbage!", 8);
    /* Input: four clients sending most of a 1 MB packet against a 256 KiB
     * budget wait, and are closed when it stays spent. */
    for (int i = 0; i < BIG; i++) {
        fake_link_init(&l[i]);
        CHECK(conn_open(w.cs, &l[i].c, false, w.now));
        cw_put_connect(&l[i], i == 0 ? "b0" : i == 1 ? "b1" : i == 2 ? "b2" : "b3", NULL);
        cw_put_partial_publish(&l[i], 1000000, 600000);
    }
    for (int t = 0; t < 20; t++)
        cw_turn(&w, links, BIG + 5);
    w.now += CONN_INPUT_WAIT_MS; /* also past the handshake timeout */
    cw_turn(&w, links, BIG + 5);
    conn_stats st;
    conn_server_get_stats(w.cs, &st);
    CHECK(st.input_waits >= 1 && st.input_closes >= 1);
    w.now += 1000; /* the next $SYS refresh */
    cw_turn(&w, links, BIG + 5);
    CHECK_EQ(sys_value(ops, "$SYS/broker/connections/handshakes_refused"), 1);
    CHECK_EQ(sys_value(ops, "$SYS/broker/connections/handshakes_refused_per_address"), 1);
    CHECK_EQ(sys_value(ops, "$SYS/broker/connections/handshakes_failed"), 1);
    CHECK_EQ(sys_value(ops, "$SYS/broker/connections/handshake_timeouts"), 1);
    CHECK_EQ(sys_value(ops, "$SYS/broker/connections/input_waits"), (long long)st.input_waits);
    CHECK_EQ(sys_value(ops, "$SYS/broker/connections/input_closes"), (long long)st.input_closes);
    conn_server_get_stats(w.cs, &st);
    CHECK_EQ(sys_value(ops, "$SYS/broker/connections/input_bytes"), (long long)st.input_held);
    cw_free(&w, links, BIG + 5);
    free(l);
}

/* The simulator runs no TLS, so the handshake budgets get their random
 * walk here: TLS connections from four addresses open, fail (garbage),
 * vanish, or time out, in a seeded order, against tiny limits. After every
 * step the layer agrees with a count of the handshakes running: an open
 * succeeds exactly when both limits leave room, and each refusal is
 * counted under its limit. */
TEST(conn_tls_handshake_budgets_hold_under_random_opens_failures_and_timeouts)
{
    enum { N = 48, ADDRS = 4, MAX = 6, PER = 3, STEPS = 600 };
    static const char *const addr[ADDRS] = {"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"};
    cworld w;
    fake_link *l = calloc(N, sizeof *l);
    fake_link *links[N];
    int from[N], running[ADDRS] = {0}, total = 0;
    uint64_t refused = 0, refused_address = 0, started[N];
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    CHECK(l);
    CHECK(cw_init_limited(&w, &conn_tls, server_ctx(), MAX, PER, NULL));
    for (int i = 0; i < N; i++) {
        links[i] = &l[i];
        l[i].closed = true; /* not the layer's yet */
        from[i] = -1;
    }
    for (int step = 0; step < STEPS; step++) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        int i = (int)(rng % N), a = (int)(rng / N % ADDRS), what = (int)(rng / 1024 % 8);
        if (l[i].closed && what < 5) { /* a new connection */
            bool room = total < MAX && running[a] < PER;
            fake_link_free(&l[i]);
            bool opened = open_from(&w, &l[i], addr[a]);
            CHECK_EQ(opened, room);
            if (opened) {
                from[i] = a;
                started[i] = w.now;
                running[a]++;
                total++;
            } else {
                l[i].closed = true;
                refused += total >= MAX;
                refused_address += total < MAX;
            }
        } else if (!l[i].closed && what == 5) { /* garbage: the handshake fails */
            fake_bytes_put(&l[i].up, "garbage!", 8);
            cw_turn(&w, &links[i], 1);
            CHECK(l[i].closed);
        } else if (!l[i].closed && what == 6) { /* the peer vanishes */
            conn_failed(w.cs, &l[i].c, w.now);
        } else { /* time passes: handshakes past 3 s time out */
            w.now += 1 + rng / 4096 % 900;
            cw_turn(&w, links, 0);
        }
        for (int j = 0; j < N; j++) {
            if (from[j] >= 0 && l[j].closed) { /* it ended: its slot is free */
                running[from[j]]--;
                total--;
                from[j] = -1;
            } else if (from[j] >= 0) {
                CHECK(w.now - started[j] < 3000); /* none outlives its deadline */
            }
        }
        conn_stats st;
        conn_server_get_stats(w.cs, &st);
        CHECK_EQ(st.handshakes_refused, refused);
        CHECK_EQ(st.handshakes_refused_address, refused_address);
    }
    CHECK(refused > 0 && refused_address > 0); /* both limits were reached */
    cw_free(&w, links, N);
    free(l);
}

/* The operator console's log-level reaches the layer's own filter: a
 * client that hangs up during its handshake is a debug line, written at
 * debug and not at info. */
TEST(conn_set_log_level_filters_the_layers_debug_lines)
{
    cworld w;
    fake_link a, b;
    fake_link *links[2] = {&a, &b};
    line_log *log = calloc(1, sizeof *log);
    CHECK(log);
    conn_server_config extra = {.tls_ops = &conn_tls, .tls = server_ctx(), .log = keep_line,
                                .log_ctx = log};
    CHECK(cw_init_config(&w, NULL, &extra)); /* at debug */
    conn_server_set_log_level(w.cs, BROKER_LOG_INFO);
    CHECK(open_from(&w, &a, "10.0.0.7"));
    a.eof = true;
    cw_turn(&w, links, 1);
    CHECK(a.closed);
    CHECK_EQ(lines_with(log, "closed during the TLS handshake"), 0);
    conn_server_set_log_level(w.cs, BROKER_LOG_DEBUG);
    CHECK(open_from(&w, &b, "10.0.0.8"));
    b.eof = true;
    cw_turn(&w, links + 1, 1);
    CHECK(b.closed);
    CHECK_EQ(lines_with(log, "closed during the TLS handshake"), 1);
    cw_free(&w, links, 2);
    free(log);
}

/* n clients of cl opened on w (limits max, max per address), their links
 * in links; false if any step failed or the room was not max at first. */
static bool open_clients(cworld *w, tern_tls_client *cl, tclient *t, fake_link **links, int n,
                         uint32_t max)
{
    if (!cl || !t || !cw_init_limited(w, &conn_tls, server_ctx(), max, max, NULL) ||
        conn_handshake_room(w->cs) != max)
        return false;
    for (int i = 0; i < n; i++) {
        if (!tc_open(w, &t[i], cl))
            return false;
        links[i] = &t[i].link;
    }
    return true;
}

static void close_clients(cworld *w, tern_tls_client *cl, tclient *t, fake_link **links, int n)
{
    for (int i = 0; i < n; i++)
        tern_tls_conn_free(t[i].tls);
    cw_free(w, links, n);
    tern_tls_client_release(cl);
    free(t);
}

TEST(conn_tls_no_new_handshakes_while_steps_ran_out_and_fewer_under_cpu_pressure)
{
    enum { N = CONN_HANDSHAKE_STEPS_PER_TURN + 12, MAX = 1000 };
    cworld w;
    tern_tls_client *cl = client_ctx();
    tclient *t = calloc(N, sizeof *t);
    fake_link *links[N];
    CHECK(open_clients(&w, cl, t, links, N, MAX));
    CHECK_EQ(conn_handshake_room(w.cs), MAX - N);
    cw_turn(&w, links, N); /* the budget runs out with 12 ClientHellos left */
    CHECK_EQ(conn_handshake_room(w.cs), 0);
    cw_turn(&w, links, N); /* they are served: room again (all still running) */
    CHECK_EQ(conn_handshake_room(w.cs), MAX - N);
    /* A window with pressure and no handshake completed: running at once
     * is bounded by CONN_HANDSHAKE_MIN_RUNNING (N are running: no room). */
    w.now += CONN_HANDSHAKE_WINDOW_MS;
    cw_turn(&w, links, N);
    CHECK_EQ(conn_handshake_room(w.cs), 0);
    CHECK(N > CONN_HANDSHAKE_MIN_RUNNING);
    /* The platform must wake when the window ends even if nothing else is
     * due (the handshakes wait for their clients until their 3 s timeout):
     * a listener held by the lowered bound would otherwise stay held, every
     * new client's SYN dropped, until those handshakes time out. */
    CHECK(conn_next_deadline(w.cs) <= w.now + CONN_HANDSHAKE_WINDOW_MS);
    /* A window without pressure: limits.max_handshakes again. */
    w.now += CONN_HANDSHAKE_WINDOW_MS;
    cw_turn(&w, links, N);
    CHECK_EQ(conn_handshake_room(w.cs), MAX - N);
    close_clients(&w, cl, t, links, N);
}

/* The kernel's SYN admission asks conn_handshake_room_from: a SYN it drops
 * costs its client a second or more, so a turn whose steps ran out (nearly
 * every busy turn under an emulator) must not refuse it; only the bound
 * does. */
TEST(conn_tls_room_at_the_syn_ignores_the_turns_spent_steps)
{
    enum { N = CONN_HANDSHAKE_STEPS_PER_TURN + 12, MAX = 1000 };
    cworld w;
    tern_tls_client *cl = client_ctx();
    tclient *t = calloc(N, sizeof *t);
    fake_link *links[N];
    const char *a = "10.0.0.9";
    CHECK(open_clients(&w, cl, t, links, N, MAX));
    cw_turn(&w, links, N); /* the budget runs out with 12 ClientHellos left */
    CHECK_EQ(conn_handshake_room(w.cs), 0);
    CHECK_EQ(conn_handshake_slots(w.cs), MAX - N);
    CHECK_EQ(conn_handshake_room_from(w.cs, (const uint8_t *)a, strlen(a)), MAX - N);
    close_clients(&w, cl, t, links, N);
}

TEST(conn_tls_handshake_room_from_an_address_counts_its_handshakes)
{
    cworld w;
    fake_link l[3];
    fake_link *links[] = {&l[0], &l[1], &l[2]};
    const char *a = "10.0.0.66", *b = "10.0.0.7";
    CHECK(cw_init_limited(&w, &conn_tls, server_ctx(), 5, 4, NULL));
    CHECK_EQ(conn_handshake_room_from(w.cs, (const uint8_t *)a, strlen(a)), 4);
    for (int i = 0; i < 3; i++)
        CHECK(open_from(&w, &l[i], a));
    CHECK_EQ(conn_handshake_room_from(w.cs, (const uint8_t *)a, strlen(a)), 1);
    CHECK_EQ(conn_handshake_room_from(w.cs, (const uint8_t *)b, strlen(b)), 2); /* 5 - 3 */
    CHECK_EQ(conn_handshake_room(w.cs), 2);
    cw_free(&w, links, 3);
}

TEST(conn_tls_a_client_gone_after_its_client_hello_is_not_answered)
{
    cworld w;
    tern_tls_client *cl = client_ctx();
    tclient *gone = calloc(1, sizeof *gone), *here = calloc(1, sizeof *here);
    fake_link *links[2];
    conn_stats st;
    /* Like sockets and lwIP: a short read means the transport is empty,
     * which is when the layer looks for the end behind the bytes. */
    conn_transport io = fake_transport;
    io.short_read_drains = true;
    conn_server_config extra = {.io = &io, .tls_ops = &conn_tls, .tls = server_ctx()};
    CHECK(cl && gone && here && cw_init_config(&w, NULL, &extra));
    CHECK(tc_open(&w, gone, cl));
    CHECK(tc_open(&w, here, cl));
    gone->link.eof = true; /* its ClientHello, then its FIN: it gave up */
    links[0] = &gone->link;
    links[1] = &here->link;
    cw_turn(&w, links, 2);
    CHECK(gone->link.closed);
    CHECK_EQ(gone->link.down.len, 0); /* no ServerHello: no signature spent */
    CHECK(!here->link.closed);
    CHECK(here->link.down.len > 0); /* the one still waiting is answered */
    conn_server_get_stats(w.cs, &st);
    CHECK_EQ(st.handshakes_abandoned, 1);
    tern_tls_conn_free(gone->tls);
    tern_tls_conn_free(here->tls);
    cw_free(&w, links, 2);
    tern_tls_client_release(cl);
    free(gone);
    free(here);
}

/* A clock that moves 6 ms every time it is read. */
static uint64_t slow_clock_now;
static uint64_t slow_clock(void)
{
    return slow_clock_now += 6000;
}

TEST(conn_tls_a_turns_handshake_steps_stop_after_their_time_budget)
{
    enum { N = 10 };
    cworld w;
    tern_tls_client *cl = client_ctx();
    tclient *t = calloc(N, sizeof *t);
    fake_link *links[N];
    /* Each step reads as 6 ms: the second passes the 10 ms a turn has. */
    conn_server_config extra = {.tls_ops = &conn_tls, .tls = server_ctx(),
                                .clock_us = slow_clock};
    CHECK(CONN_HANDSHAKE_US_PER_TURN == 10000u);
    CHECK(cl && t && cw_init_config(&w, NULL, &extra));
    for (int i = 0; i < N; i++) {
        CHECK(tc_open(&w, &t[i], cl));
        links[i] = &t[i].link;
    }
    cw_turn(&w, links, N);
    int answered = 0;
    for (int i = 0; i < N; i++)
        answered += t[i].link.down.len > 0;
    CHECK_EQ(answered, 2); /* not CONN_HANDSHAKE_STEPS_PER_TURN */
    CHECK_EQ(conn_next_deadline(w.cs), 0); /* the rest wait on the ready list */
    for (int i = 0; i < N; i++)
        tern_tls_conn_free(t[i].tls);
    cw_free(&w, links, N);
    tern_tls_client_release(cl);
    free(t);
}
