/*
 * test_conn_tls.c - the connection layer's TLS half (src/conn/tls.c) over
 * the fake transport, with a real TLS client: a handshake over many tiny
 * reads, the per-turn handshake budget, the handshake deadline, garbage,
 * close_notify after the last output, the limits on handshakes running.
 */
#include "test.h"

#include "conn_world.h"
#include "test_tls_pair.h"

#include <stdlib.h>

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
    CHECK_EQ(st.handshakes_refused, N - 4);
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
