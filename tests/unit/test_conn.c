/*
 * test_conn.c - the connection layer (src/conn) over the fake transport,
 * plaintext: input arriving a byte at a time, a transport that takes
 * output a few bytes at a time, input left over by the core's work budget
 * or held while it is paused, the linger of a connection the core wants
 * closed (flushed, or expired), the peer finishing or vanishing, and a
 * slow reader whose QoS 0 is bounded in time (drain.h).
 */
#include "test.h"

#include "conn_world.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TEST(conn_input_one_byte_per_read_reaches_the_core_whole)
{
    cworld w;
    fake_link *a = cw_link();
    fake_link *links[] = {a};
    CHECK(a && cw_init(&w, NULL, NULL, NULL));
    CHECK(conn_open(w.cs, &a->c, false, w.now));
    a->read_max = 1;
    cw_put_connect(a, "one", NULL);
    cw_put_subscribe(a, "t/#");
    cw_put_publish(a, "t/x", 10, 'x');
    for (int i = 0; i < 10 && a->up.len > 0; i++)
        cw_turn(&w, links, 1);
    CHECK_EQ(a->up.len, 0);
    CHECK(a->reads > 40); /* it really was a byte at a time */
    const uint8_t *d = fake_bytes_data(&a->down);
    CHECK_EQ(cw_count(d, a->down.len, MQTT_CONNACK, NULL), 1);
    CHECK_EQ(cw_count(d, a->down.len, MQTT_SUBACK, NULL), 1);
    CHECK_EQ(cw_count(d, a->down.len, MQTT_PUBLISH, NULL), 1);
    CHECK(!a->closed);
    cw_free(&w, links, 1);
    free(a);
}

TEST(conn_output_to_a_transport_taking_a_few_bytes_arrives_in_order)
{
    cworld w;
    fake_link *a = cw_link();
    fake_link *links[] = {a};
    CHECK(a && cw_init(&w, NULL, NULL, NULL));
    CHECK(conn_open(w.cs, &a->c, false, w.now));
    cw_put_connect(a, "slow", NULL);
    cw_put_subscribe(a, "big");
    cw_put_publish(a, "big", 5000, 'b');
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
    CHECK_EQ(cw_count(d, a->down.len, MQTT_CONNACK, NULL), 1);
    CHECK_EQ(cw_count(d, a->down.len, MQTT_PUBLISH, &payload), 1);
    CHECK_EQ(payload, 5000);
    cw_free(&w, links, 1);
    free(a);
}

TEST(conn_input_left_by_the_work_budget_waits_on_the_ready_list)
{
    cworld w;
    broker_limits lim = {.work_budget = 2};
    fake_link *a = cw_link();
    fake_link *links[] = {a};
    CHECK(a && cw_init(&w, &lim, NULL, NULL));
    CHECK(conn_open(w.cs, &a->c, false, w.now));
    cw_put_connect(a, "busy", NULL);
    cw_put_subscribe(a, "t");
    for (int i = 0; i < 10; i++)
        cw_put_publish(a, "t", 3, 'p');
    cw_turn(&w, links, 1);
    CHECK_EQ(a->up.len, 0);                    /* read in one go... */
    CHECK_EQ(conn_next_deadline(w.cs), 0);     /* ...but not all taken: do not sleep */
    int turns = 1;
    while (conn_next_deadline(w.cs) == 0 && turns < 20) {
        cw_turn(&w, links, 1);
        turns++;
    }
    CHECK(turns >= 5); /* two packets a turn */
    CHECK_EQ(cw_count(fake_bytes_data(&a->down), a->down.len, MQTT_PUBLISH, NULL), 10);
    cw_free(&w, links, 1);
    free(a);
}

TEST(conn_peer_eof_after_disconnect_closes_gracefully_without_the_will)
{
    cworld w;
    fake_link *a = cw_link(), *s = cw_link();
    fake_link *links[] = {a, s};
    CHECK(a && s && cw_init(&w, NULL, NULL, NULL));
    CHECK(conn_open(w.cs, &s->c, false, w.now) && conn_open(w.cs, &a->c, false, w.now));
    cw_put_connect(s, "watcher", NULL);
    cw_put_subscribe(s, "will/#");
    cw_put_connect(a, "leaver", "will/a");
    uint8_t disc[2];
    fake_bytes_put(&a->up, disc, mqtt_encode_empty(disc, sizeof disc, MQTT_DISCONNECT));
    a->eof = true;
    cw_turn(&w, links, 2);
    CHECK(a->closed && a->how == CONN_CLOSE_GRACEFUL);
    CHECK_EQ(cw_count(fake_bytes_data(&a->down), a->down.len, MQTT_CONNACK, NULL), 1);
    CHECK_EQ(cw_count(fake_bytes_data(&s->down), s->down.len, MQTT_PUBLISH, NULL), 0);
    cw_free(&w, links, 2);
    free(a);
    free(s);
}

TEST(conn_peer_vanishing_mid_write_ends_it_and_fires_the_will)
{
    cworld w;
    fake_link *a = cw_link(), *s = cw_link();
    fake_link *links[] = {a, s};
    CHECK(a && s && cw_init(&w, NULL, NULL, NULL));
    CHECK(conn_open(w.cs, &s->c, false, w.now) && conn_open(w.cs, &a->c, false, w.now));
    cw_put_connect(s, "watcher", NULL);
    cw_put_subscribe(s, "will/#");
    cw_put_connect(a, "victim", "will/v");
    cw_put_subscribe(a, "t");
    cw_turn(&w, links, 2);
    CHECK(!a->closed);
    cw_put_publish(s, "t", 100, 'q');
    a->fail_write = true; /* the peer is gone when its output is written */
    cw_turn(&w, links, 2);
    CHECK(a->closed && a->how == CONN_CLOSE_ABORT);
    cw_turn(&w, links, 2);
    CHECK_EQ(cw_count(fake_bytes_data(&s->down), s->down.len, MQTT_PUBLISH, NULL), 1);
    cw_free(&w, links, 2);
    free(a);
    free(s);
}

TEST(conn_read_error_ends_only_that_connection)
{
    cworld w;
    fake_link *a = cw_link(), *b = cw_link();
    fake_link *links[] = {a, b};
    CHECK(a && b && cw_init(&w, NULL, NULL, NULL));
    CHECK(conn_open(w.cs, &a->c, false, w.now) && conn_open(w.cs, &b->c, false, w.now));
    cw_put_connect(a, "a", NULL);
    cw_put_connect(b, "b", NULL);
    a->fail_read = true;
    cw_turn(&w, links, 2);
    CHECK(a->closed && a->how == CONN_CLOSE_ABORT);
    CHECK(!b->closed);
    CHECK_EQ(cw_count(fake_bytes_data(&b->down), b->down.len, MQTT_CONNACK, NULL), 1);
    cw_free(&w, links, 2);
    free(a);
    free(b);
}

/* A connection the core wants closed (a protocol error) with output the
 * transport has not taken: it lingers, unread, until the output is out. */
TEST(conn_close_during_a_flush_lingers_until_the_output_is_taken)
{
    cworld w;
    fake_link *a = cw_link();
    fake_link *links[] = {a};
    CHECK(a && cw_init(&w, NULL, NULL, NULL));
    CHECK(conn_open(w.cs, &a->c, false, w.now));
    cw_put_connect(a, "bad", NULL);
    cw_put_subscribe(a, "big");
    cw_put_publish(a, "big", 3000, 'z');
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
    CHECK_EQ(cw_count(fake_bytes_data(&a->down), a->down.len, MQTT_PUBLISH, &payload), 1);
    CHECK_EQ(payload, 3000);
    cw_free(&w, links, 1);
    free(a);
}

/* A connection keeps its deadline's low 32 bits (conn-t.h): starting at
 * `start` ms, the linger deadline must come exactly CONN_LINGER_MS later. */
static void linger_expires_from(uint64_t start)
{
    cworld w;
    fake_link *a = cw_link();
    fake_link *links[] = {a};
    conn_stats st;
    CHECK(a && cw_init(&w, NULL, NULL, NULL));
    if (start > w.now)
        w.now = start;
    CHECK(conn_open(w.cs, &a->c, false, w.now));
    cw_put_connect(a, "stuck", NULL);
    cw_put_subscribe(a, "big");
    cw_put_publish(a, "big", 3000, 'z');
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

TEST(conn_linger_expires_when_the_output_is_never_taken)
{
    linger_expires_from(0);
}

TEST(conn_linger_deadline_across_the_32_bit_clock_wrap_expires_on_time)
{
    linger_expires_from(UINT32_MAX - CONN_LINGER_MS / 2); /* due after 2^32 ms */
}

TEST(conn_paused_input_is_not_read_until_output_drains)
{
    cworld w;
    broker_limits lim = {.max_out_bytes = 4096};
    fake_link *a = cw_link();
    fake_link *links[] = {a};
    CHECK(a && cw_init(&w, &lim, NULL, NULL));
    CHECK(conn_open(w.cs, &a->c, false, w.now));
    cw_put_connect(a, "reader", NULL);
    a->room = 0; /* it does not read what it is sent: its PUBACKs back up */
    for (int i = 0; i < 3000; i++)
        cw_put_publish_qos(a, "t", 1, 'r', 1, (uint16_t)(i + 1));
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
    CHECK_EQ(cw_count(fake_bytes_data(&a->down), a->down.len, MQTT_PUBACK, NULL), 3000);
    cw_free(&w, links, 1);
    free(a);
}

TEST(conn_input_budget_stops_reading_the_biggest_holders_and_closes_them_in_time)
{
    enum { BIG = 4, BUDGET = 256 * 1024 };
    cworld w;
    fake_link *big[BIG], *small = cw_link();
    fake_link *links[BIG + 1];
    conn_stats st;
    CHECK(small && cw_init_input_budget(&w, BUDGET));
    for (int i = 0; i < BIG; i++) {
        big[i] = cw_link();
        CHECK(big[i] && conn_open(w.cs, &big[i]->c, false, w.now));
        links[i] = big[i];
        cw_put_connect(big[i], i == 0 ? "b0" : i == 1 ? "b1" : i == 2 ? "b2" : "b3", NULL);
        cw_put_partial_publish(big[i], 1000000, 600000); /* 60% of a 1 MB packet */
    }
    CHECK(conn_open(w.cs, &small->c, false, w.now));
    links[BIG] = small;
    cw_put_connect(small, "small", NULL);
    for (int t = 0; t < 20; t++)
        cw_turn(&w, links, BIG + 1);
    conn_server_get_stats(w.cs, &st);
    /* Bounded: the budget plus what one read and the tail's growth (it
     * doubles, up to the packet's size) add per holder. */
    CHECK(st.input_held <= 2 * (BUDGET + BIG * (uint64_t)CONN_READ_BUF_SIZE));
    CHECK(st.input_waits >= 1);
    int waiting = 0;
    for (int i = 0; i < BIG; i++)
        waiting += !big[i]->want_read && big[i]->up.len > 0;
    CHECK(waiting >= 1);
    /* A client sending small packets is still served meanwhile. */
    uint8_t ping[2] = {0xc0, 0x00};
    fake_bytes_put(&small->up, ping, 2);
    cw_turn(&w, links, BIG + 1);
    CHECK_EQ(cw_count(fake_bytes_data(&small->down), small->down.len, MQTT_PINGRESP, NULL), 1);
    /* The budget stays spent: after CONN_INPUT_WAIT_MS the waiting holders
     * are closed, and what they held is free again. */
    w.now += CONN_INPUT_WAIT_MS;
    cw_turn(&w, links, BIG + 1);
    conn_server_get_stats(w.cs, &st);
    CHECK(st.input_closes >= 1);
    CHECK(st.input_held < BUDGET);
    CHECK(!small->closed);
    cw_free(&w, links, BIG + 1);
    for (int i = 0; i <= BIG; i++)
        free(links[i]);
}

TEST(conn_input_budget_resumes_the_waiting_when_a_holder_leaves)
{
    enum { BUDGET = 200 * 1024 };
    cworld w;
    fake_link *a = cw_link(), *b = cw_link();
    fake_link *links[] = {a, b};
    conn_stats st;
    CHECK(a && b && cw_init_input_budget(&w, BUDGET));
    CHECK(conn_open(w.cs, &a->c, false, w.now) && conn_open(w.cs, &b->c, false, w.now));
    cw_put_connect(a, "a", NULL);
    cw_put_connect(b, "b", NULL);
    cw_put_partial_publish(b, 150000, 120000); /* unfinished, held first */
    for (int t = 0; t < 3; t++)
        cw_turn(&w, links, 2);
    cw_put_partial_publish(a, 150000, 150000); /* whole: 150,000 bytes after the header */
    a->read_max = 20000;
    for (int t = 0; t < 30; t++)
        cw_turn(&w, links, 2);
    conn_server_get_stats(w.cs, &st);
    CHECK(st.input_waits >= 1);
    CHECK(a->up.len > 0 || b->up.len > 0); /* someone waits */
    /* b leaves: its bytes are freed, a is read again and finishes. */
    conn_failed(w.cs, &b->c, w.now);
    for (int t = 0; t < 30 && a->up.len > 0; t++)
        cw_turn(&w, links, 2);
    CHECK_EQ(a->up.len, 0);
    CHECK(!a->closed);
    conn_server_get_stats(w.cs, &st);
    CHECK_EQ(st.input_held, 0);
    cw_free(&w, links, 2);
    free(a);
    free(b);
}

TEST(conn_short_read_from_a_draining_transport_is_not_followed_by_another_read)
{
    /* A socket that returned fewer bytes than asked has nothing more: a
     * second read would only hear "again" (one wasted system call per read
     * event, a quarter of a QoS 1 flood's system calls). */
    conn_transport io = fake_transport;
    io.short_read_drains = true;
    cworld w;
    fake_link *a = cw_link();
    fake_link *links[] = {a};
    CHECK(a && cw_init_io(&w, &io));
    CHECK(conn_open(w.cs, &a->c, false, w.now));
    cw_put_connect(a, "drain", NULL);
    cw_turn(&w, links, 1);
    CHECK_EQ(a->reads, 1);
    CHECK_EQ(cw_count(fake_bytes_data(&a->down), a->down.len, MQTT_CONNACK, NULL), 1);
    /* A full read is followed by another: the transport may hold more. */
    cw_put_publish(a, "t", CONN_READ_BUF_SIZE, 'x');
    a->reads = 0;
    cw_turn(&w, links, 1);
    CHECK_EQ(a->reads, 2);
    CHECK_EQ(a->up.len, 0);
    cw_free(&w, links, 1);
    free(a);
}

/* A slow reader: the layer measures the rate it takes its output at and
 * the core drops QoS 0 beyond about CONN_QOS0_WAIT_MS of it (drain.h)
 * rather than queueing up to max_out_bytes; once it keeps up again,
 * nothing is dropped. */
TEST(conn_slow_reader_gets_qos0_bounded_in_time_not_in_bytes)
{
    cworld w;
    broker_limits lim = {.max_out_bytes = 1024 * 1024};
    fake_link *s = cw_link(), *p = cw_link();
    fake_link *links[] = {s, p};
    broker_stats st;
    CHECK(s && p && cw_init(&w, &lim, NULL, NULL));
    CHECK(conn_open(w.cs, &s->c, false, w.now) && conn_open(w.cs, &p->c, false, w.now));
    cw_put_connect(s, "slow", NULL);
    cw_put_subscribe(s, "t");
    cw_put_connect(p, "pub", NULL);
    cw_turn(&w, links, 2);
    size_t start = s->down.len;
    /* 1 s: 20 x 100 B published per 10 ms turn, 1,000 B taken per turn. */
    for (int turn = 0; turn < 100; turn++) {
        for (int i = 0; i < 20; i++)
            cw_put_publish(p, "t", 100, 'q');
        s->room = 1000;
        w.now += 10;
        cw_turn(&w, links, 2);
        if (s->want_write)
            (void)conn_writable(w.cs, &s->c, w.now);
    }
    broker_get_stats(w.b, &st);
    CHECK(st.publish_dropped > 0); /* ~200 KB published would fit in 1 MiB */
    /* What waits is the floor's worth (about 16 KiB), not everything. */
    CHECK(broker_out_pending(conn_core(&s->c)) <= CONN_QOS0_OUT_MIN + 200);
    CHECK(s->down.len - start <= 100 * 1000);
    /* The measurement's block exists while output is backed up ... */
    CHECK(s->c.side.drain != NULL);
    CHECK(p->c.side.drain == NULL);
    /* It catches up: output drains, the bound ends, nothing more dropped. */
    uint64_t dropped = st.publish_dropped;
    s->room = SIZE_MAX;
    w.now += 10;
    (void)conn_writable(w.cs, &s->c, w.now);
    CHECK_EQ(broker_out_pending(conn_core(&s->c)), 0);
    CHECK(s->c.side.drain == NULL); /* ... and is freed once it drained */
    int before = cw_count(fake_bytes_data(&s->down), s->down.len, MQTT_PUBLISH, NULL);
    for (int i = 0; i < 400; i++)
        cw_put_publish(p, "t", 100, 'q');
    for (int turn = 0; turn < 10; turn++) {
        w.now += 10;
        cw_turn(&w, links, 2);
    }
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.publish_dropped, dropped);
    CHECK_EQ(cw_count(fake_bytes_data(&s->down), s->down.len, MQTT_PUBLISH, NULL), before + 400);
    cw_free(&w, links, 2);
    free(s);
    free(p);
}

/* ---- TLS run by the transport (conn_transport.runs_tls, ADR-065) -------- */

typedef struct remote_log {
    char last_client[200], last_failure[200];
} remote_log;

static void remote_capture(void *ctx, broker_log_level level, const char *msg)
{
    remote_log *rl = ctx;

    (void)level;
    if (strstr(msg, "TLS client") != NULL)
        snprintf(rl->last_client, sizeof rl->last_client, "%s", msg);
    if (strstr(msg, "TLS handshake with") != NULL)
        snprintf(rl->last_failure, sizeof rl->last_failure, "%s", msg);
}

TEST(conn_handshake_the_transport_runs_is_counted_then_meets_the_core_with_its_identity)
{
    /* The daemon's I/O threads run TLS themselves: the layer counts the
     * handshake against limits.max_handshakes and its deadline, reads
     * nothing until the outcome, and then serves plaintext. */
    conn_transport io = fake_transport;
    io.runs_tls = true;
    remote_log rl = {{0}, {0}};
    conn_server_config extra = {.io = &io, .max_handshakes = 2, .log = remote_capture,
                                .log_ctx = &rl};
    cworld w;
    fake_link *a = cw_link(), *b = cw_link(), *c = cw_link();
    fake_link *links[] = {a, b, c};
    conn_stats st;

    CHECK(a && b && c && cw_init_config(&w, NULL, &extra));
    CHECK(conn_open(w.cs, &a->c, true, w.now));
    CHECK(conn_open(w.cs, &b->c, true, w.now));
    CHECK_EQ(conn_handshake_room(w.cs), 0);
    CHECK(!conn_open(w.cs, &c->c, true, w.now)); /* the third is over the limit */
    c->closed = true; /* refused: the platform closes it itself */
    CHECK(conn_core(&a->c) == NULL);
    CHECK(conn_tls_established(w.cs, &a->c, "dev-client", true, "TLSv1.3",
                               "TLS13-AES128-GCM-SHA256", w.now));
    CHECK(conn_core(&a->c) != NULL);
    CHECK_EQ(conn_handshake_room(w.cs), 1);
    CHECK(strstr(rl.last_client, "identity dev-client, operator (TLSv1.3, ") != NULL);
    cw_put_connect(a, "remote", NULL);
    cw_turn(&w, links, 2);
    CHECK_EQ(cw_count(fake_bytes_data(&a->down), a->down.len, MQTT_CONNACK, NULL), 1);
    /* A failure closes only its connection, gracefully (the transport
     * sends the alert it holds), and is counted once. */
    conn_tls_failed(w.cs, &b->c, true, "certificate not issued by a trusted CA (-188)", w.now);
    CHECK(b->closed);
    CHECK_EQ(b->how, CONN_CLOSE_GRACEFUL);
    CHECK(strstr(rl.last_failure, "failed: certificate not issued by a trusted CA") != NULL);
    conn_server_get_stats(w.cs, &st);
    CHECK_EQ(st.handshakes_ok, 1);
    CHECK_EQ(st.handshakes_failed, 1);
    CHECK(!a->closed);
    cw_free(&w, links, 3);
    free(a);
    free(b);
    free(c);
}

TEST(conn_handshake_the_transport_runs_times_out_and_ends_at_its_deadline)
{
    conn_transport io = fake_transport;
    io.runs_tls = true;
    conn_server_config extra = {.io = &io};
    cworld w;
    fake_link *a = cw_link();
    fake_link *links[] = {a};
    conn_stats st;

    CHECK(a && cw_init_config(&w, NULL, &extra));
    CHECK(conn_open(w.cs, &a->c, true, w.now));
    w.now += 2999;
    cw_turn(&w, links, 1);
    CHECK(!a->closed);
    w.now += 1;
    cw_turn(&w, links, 1);
    CHECK(a->closed);
    CHECK_EQ(a->how, CONN_CLOSE_ABORT);
    conn_server_get_stats(w.cs, &st);
    CHECK_EQ(st.handshake_timeouts, 1);
    cw_free(&w, links, 1);
    free(a);
}
