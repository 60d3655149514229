/*
 * test_tls_records.c - the TLS adapter's byte handling once a handshake is
 * under way: data both ways, record sizes, input arriving in pieces or
 * faster than it is read, close_notify, and hostile input (random bytes,
 * corrupted records) failing only the connection concerned, cleanly.
 */
#include "test.h"

#include <stdlib.h>

#include "test_tls_pair.h"

static bool established_pair(tls_test_pair *p)
{
    tls_test_server_opts o = {0};

    return tls_test_handshake(p, tls_test_server(&o, NULL, 0),
                              tls_test_client("ca.crt", "dev-client", TERN_TLS_1_3,
                                              TERN_TLS_1_3)) == TERN_TLS_ESTABLISHED;
}

/* A repeatable byte pattern. */
static void fill(uint8_t *buf, size_t len, uint32_t seed)
{
    for (size_t i = 0; i < len; i++) {
        seed = seed * 1103515245u + 12345u;
        buf[i] = (uint8_t)(seed >> 16);
    }
}

TEST(tls_plaintext_crosses_in_both_directions)
{
    tls_test_pair p;
    static const uint8_t hello[] = "\x10\x0c\x00\x04MQTT\x04\x02\x00\x3c\x00\x00";

    CHECK(established_pair(&p));
    CHECK(tern_tls_write(p.client, hello, sizeof hello - 1));
    CHECK(tern_tls_write(p.server, (const uint8_t *)"pong", 4));
    tls_test_pump(&p);
    CHECK_EQ(p.server_plain_len, sizeof hello - 1);
    CHECK_MEM(p.server_plain, hello, sizeof hello - 1);
    CHECK_EQ(p.client_plain_len, 4);
    CHECK_MEM(p.client_plain, "pong", 4);
    tls_test_pair_close(&p);
}

TEST(tls_bulk_write_uses_full_16k_records)
{
    enum { BULK = 100000, RECORD = 16384 };
    tls_test_pair p;
    uint8_t *data = malloc(BULK);
    const uint8_t *out;
    size_t len, pos = 0, records = 0, biggest = 0;

    CHECK(data != NULL);
    fill(data, BULK, 7);
    if (!established_pair(&p)) {
        free(data);
        CHECK(false);
    }
    CHECK(tern_tls_write(p.server, data, BULK));
    /* Walk the record headers: type, version, 2-byte length. */
    out = tern_tls_out_peek(p.server, &len);
    while (pos + 5 <= len) {
        size_t rec = (size_t)out[pos + 3] << 8 | out[pos + 4];

        biggest = rec > biggest ? rec : biggest;
        records++;
        pos += 5 + rec;
    }
    CHECK_EQ(pos, len);
    CHECK_EQ(records, (BULK + RECORD - 1) / RECORD); /* 7, not one per small write */
    CHECK(biggest >= RECORD && biggest <= RECORD + 256);
    tls_test_pump(&p);
    CHECK_EQ(p.client_plain_len, BULK);
    CHECK_MEM(p.client_plain, data, BULK);
    free(data);
    tls_test_pair_close(&p);
}

TEST(tls_handshake_completes_when_bytes_arrive_one_at_a_time)
{
    tls_test_server_opts o = {0};
    tern_tls_server *s = tls_test_server(&o, NULL, 0);
    tern_tls_client *cl = tls_test_client("ca.crt", "dev-client", TERN_TLS_1_3, TERN_TLS_1_3);
    tls_test_pair p;
    uint8_t plain[64];
    size_t got = 0, len, moved = 0;

    CHECK(s != NULL && cl != NULL && tls_test_pair_open(&p, s, cl));
    tern_tls_server_release(s);
    tern_tls_client_release(cl);
    (void)tern_tls_read(p.client, NULL, 0, plain, sizeof plain, &got);
    for (int round = 0; round < 16; round++) {
        const uint8_t *out = tern_tls_out_peek(p.client, &len);

        for (size_t i = 0; i < len; i++) {
            (void)tern_tls_read(p.server, out + i, 1, plain, sizeof plain, &got);
            moved++;
        }
        tern_tls_out_consume(p.client, len);
        out = tern_tls_out_peek(p.server, &len);
        (void)tern_tls_read(p.client, out, len, plain, sizeof plain, &got);
        tern_tls_out_consume(p.server, len);
        if (tern_tls_state_of(p.server) != TERN_TLS_HANDSHAKING)
            break;
    }
    CHECK(moved > 100);
    CHECK_EQ(tern_tls_state_of(p.server), TERN_TLS_ESTABLISHED);
    CHECK(strcmp(tern_tls_identity(p.server), "dev-client") == 0);
    tls_test_pair_close(&p);
}

TEST(tls_input_beyond_the_output_room_is_kept_for_the_next_read)
{
    enum { MSG = 5000 };
    tls_test_pair p;
    uint8_t msg[MSG];

    fill(msg, sizeof msg, 3);
    CHECK(established_pair(&p));
    CHECK(tern_tls_write(p.client, msg, 1000));
    CHECK(tern_tls_write(p.client, msg + 1000, MSG - 1000)); /* two records */
    p.read_cap = 7; /* the reader takes 7 bytes at a time */
    tls_test_pump(&p);
    CHECK_EQ(p.server_plain_len, MSG);
    CHECK_MEM(p.server_plain, msg, MSG);
    CHECK(!tern_tls_has_input(p.server));
    tls_test_pair_close(&p);
}

TEST(tls_idle_connection_holds_no_queued_bytes)
{
    tls_test_pair p;

    CHECK(established_pair(&p));
    CHECK(tern_tls_write(p.client, (const uint8_t *)"x", 1));
    tls_test_pump(&p);
    CHECK_EQ(tern_tls_out_pending(p.server), 0);
    CHECK_EQ(tern_tls_out_pending(p.client), 0);
    CHECK(!tern_tls_has_input(p.server));
    CHECK(!tern_tls_has_input(p.client));
    tls_test_pair_close(&p);
}

TEST(tls_close_notify_is_seen_as_peer_closed)
{
    tls_test_pair p;

    CHECK(established_pair(&p));
    tern_tls_shutdown(p.client);
    CHECK(tern_tls_out_pending(p.client) > 0);
    tls_test_pump(&p);
    CHECK_EQ(tern_tls_state_of(p.server), TERN_TLS_PEER_CLOSED);
    /* Nothing more is written to a peer that has closed: the write is
     * refused, queues nothing, and the state stays PEER_CLOSED. */
    CHECK_EQ(tern_tls_out_pending(p.server), 0);
    CHECK(!tern_tls_write(p.server, (const uint8_t *)"x", 1));
    CHECK_EQ(tern_tls_out_pending(p.server), 0);
    CHECK_EQ(tern_tls_state_of(p.server), TERN_TLS_PEER_CLOSED);
    tls_test_pair_close(&p);
}

TEST(tls_random_bytes_instead_of_a_handshake_fail_cleanly)
{
    tern_tls_server *s = tls_test_server(NULL, NULL, 0);
    uint8_t junk[4096], plain[256];
    size_t got = 99;

    CHECK(s != NULL);
    for (uint32_t seed = 1; seed <= 20; seed++) {
        tern_tls_conn *c = tern_tls_server_conn(s);
        tern_tls_state st = TERN_TLS_HANDSHAKING;

        CHECK(c != NULL);
        fill(junk, sizeof junk, seed);
        /* In pieces, as a network would deliver it. */
        for (size_t off = 0; off < sizeof junk && st == TERN_TLS_HANDSHAKING; off += 512)
            st = tern_tls_read(c, junk + off, 512, plain, sizeof plain, &got);
        if (st != TERN_TLS_FAILED) {
            tern_tls_conn_free(c);
            tern_tls_server_release(s);
            CHECK(st == TERN_TLS_FAILED);
        }
        CHECK_EQ(got, 0);
        CHECK(tern_tls_failure_of(c) != TERN_TLS_FAIL_NONE);
        /* More input after the failure is ignored, not parsed. */
        CHECK_EQ(tern_tls_read(c, junk, sizeof junk, plain, sizeof plain, &got), TERN_TLS_FAILED);
        CHECK(!tern_tls_has_input(c));
        tern_tls_conn_free(c);
    }
    tern_tls_server_release(s);
}

TEST(tls_http_request_is_reported_as_not_tls)
{
    tern_tls_server *s = tls_test_server(NULL, NULL, 0);
    tern_tls_conn *c = s ? tern_tls_server_conn(s) : NULL;
    static const char get[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    uint8_t plain[16];
    size_t got;

    CHECK(c != NULL);
    CHECK_EQ(tern_tls_read(c, (const uint8_t *)get, sizeof get - 1, plain, sizeof plain, &got),
             TERN_TLS_FAILED);
    CHECK(tern_tls_failure_of(c) == TERN_TLS_FAIL_NOT_TLS ||
          tern_tls_failure_of(c) == TERN_TLS_FAIL_VERSION ||
          tern_tls_failure_of(c) == TERN_TLS_FAIL_PROTOCOL);
    tern_tls_conn_free(c);
    tern_tls_server_release(s);
}

TEST(tls_truncated_record_waits_and_a_corrupted_one_fails)
{
    tls_test_pair p;
    const uint8_t *out;
    uint8_t copy[64], plain[64];
    size_t len, got = 0;

    CHECK(established_pair(&p));
    CHECK(tern_tls_write(p.client, (const uint8_t *)"hello", 5));
    out = tern_tls_out_peek(p.client, &len);
    CHECK(len <= sizeof copy);
    memcpy(copy, out, len);
    tern_tls_out_consume(p.client, len);
    /* All but the last byte: the server waits for the rest. */
    CHECK_EQ(tern_tls_read(p.server, copy, len - 1, plain, sizeof plain, &got),
             TERN_TLS_ESTABLISHED);
    CHECK_EQ(got, 0);
    /* The last byte, flipped: authentication fails, nothing is delivered. */
    copy[len - 1] ^= 0x01;
    CHECK_EQ(tern_tls_read(p.server, copy + len - 1, 1, plain, sizeof plain, &got),
             TERN_TLS_FAILED);
    CHECK_EQ(got, 0);
    CHECK_EQ(tern_tls_failure_of(p.server), TERN_TLS_FAIL_PROTOCOL);
    /* An alert for the client is queued. */
    CHECK(tern_tls_out_pending(p.server) > 0);
    tls_test_pair_close(&p);
}

TEST(tls_write_before_handshake_is_refused)
{
    tern_tls_server *s = tls_test_server(NULL, NULL, 0);
    tern_tls_conn *c = s ? tern_tls_server_conn(s) : NULL;

    CHECK(c != NULL);
    CHECK(!tern_tls_write(c, (const uint8_t *)"x", 1));
    CHECK_EQ(tern_tls_out_pending(c), 0);
    tern_tls_conn_free(c);
    tern_tls_server_release(s);
}

TEST(tls_plaintext_alert_from_a_client_that_distrusts_us_is_recognised)
{
    /* A TLS 1.3 client rejecting our certificate answers the server's
     * flight with an unencrypted fatal alert (unknown_ca): what OpenSSL
     * clients such as mosquitto_pub send. */
    static const uint8_t unknown_ca[] = {21, 3, 3, 0, 2, 2, 48};
    tern_tls_server *s = tls_test_server(NULL, NULL, 0);
    tern_tls_client *cl = tls_test_client("ca.crt", "dev-client", TERN_TLS_1_3, TERN_TLS_1_3);
    tls_test_pair p;
    uint8_t plain[16];
    size_t got = 0, len;
    const uint8_t *out;

    CHECK(s != NULL && cl != NULL && tls_test_pair_open(&p, s, cl));
    tern_tls_server_release(s);
    tern_tls_client_release(cl);
    (void)tern_tls_read(p.client, NULL, 0, plain, sizeof plain, &got);
    out = tern_tls_out_peek(p.client, &len); /* ClientHello */
    CHECK_EQ(tern_tls_read(p.server, out, len, plain, sizeof plain, &got), TERN_TLS_HANDSHAKING);
    CHECK_EQ(tern_tls_read(p.server, unknown_ca, sizeof unknown_ca, plain, sizeof plain, &got),
             TERN_TLS_FAILED);
    CHECK_EQ(tern_tls_failure_of(p.server), TERN_TLS_FAIL_PEER_ALERT);
    CHECK_EQ(tern_tls_peer_alert(p.server), 48);
    tls_test_pair_close(&p);
}
