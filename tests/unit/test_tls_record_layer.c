/*
 * test_tls_record_layer.c - tern's own TLS 1.3 record layer (src/tls/record.c)
 * and the handover to it after a server handshake (src/tls/conn.c).
 *
 * The peer is wolfSSL itself: the adapter's client connections keep wolfSSL
 * throughout, so every pair here is a wolfSSL client talking to a server
 * that freed its WOLFSSL after the handshake. Records wolfSSL would never
 * send (padding, bad alerts, oversized or content-less records) are sealed
 * by the test with the client's own traffic secret, caught with the same
 * wolfSSL callback the server uses; the server's answers (alerts, KeyUpdate)
 * are opened with the server's.
 *
 * Reaches into the adapter's internals (tls/internal.h): which object an
 * idle connection still holds is the point of the change under test.
 */
#include "test.h"

#include <stdlib.h>

#include "test_tls_pair.h"
#include "tls/internal.h"
#include "tls/record.h"

/* ---- record.c alone ------------------------------------------------------- */

/* RFC 8448 section 3 (simple 1-RTT handshake), the server's application
 * traffic secret and the write key and IV derived from it; the next
 * generation ("traffic upd") computed independently with `openssl kdf
 * HKDF` (mode EXPAND_ONLY). */
static const uint8_t rfc8448_secret[32] = {
    0xa1, 0x1a, 0xf9, 0xf0, 0x55, 0x31, 0xf8, 0x56, 0xad, 0x47, 0x11,
    0x6b, 0x45, 0xa9, 0x50, 0x32, 0x82, 0x04, 0xb4, 0xf4, 0x4b, 0xfb,
    0x6b, 0x3a, 0x4b, 0x4f, 0x1f, 0x3f, 0xcb, 0x63, 0x16, 0x43};
static const uint8_t rfc8448_key[16] = {0x9f, 0x02, 0x28, 0x3b, 0x6c, 0x9c, 0x07, 0xef,
                                        0xc2, 0x6b, 0xb9, 0xf2, 0xac, 0x92, 0xe3, 0x56};
static const uint8_t rfc8448_iv[12] = {0xcf, 0x78, 0x2b, 0x88, 0xdd, 0x83,
                                       0x54, 0x9a, 0xad, 0xf1, 0xe9, 0x84};
static const uint8_t rfc8448_next[32] = {
    0x51, 0x92, 0x1b, 0x8a, 0xa3, 0x00, 0x19, 0x76, 0xeb, 0x40, 0x1d,
    0x0a, 0x43, 0x19, 0xa8, 0x51, 0x64, 0x16, 0xa6, 0xc5, 0x60, 0x01,
    0xa3, 0x57, 0xe5, 0xd1, 0x62, 0x03, 0x1e, 0x84, 0xf9, 0x16};

TEST(tls_record_keys_from_a_traffic_secret_match_rfc8448)
{
    tls_rec_dir d;

    memset(&d, 0xee, sizeof d);
    CHECK(tls_rec_set_secret(&d, TLS_REC_AES128_GCM_SHA256, rfc8448_secret, 32));
    CHECK_MEM(d.key, rfc8448_key, sizeof rfc8448_key);
    CHECK_MEM(d.iv, rfc8448_iv, sizeof rfc8448_iv);
    CHECK_EQ(d.seq, 0);
    d.seq = 9;
    CHECK(tls_rec_update(&d, TLS_REC_AES128_GCM_SHA256));
    CHECK_MEM(d.secret, rfc8448_next, sizeof rfc8448_next);
    CHECK_EQ(d.seq, 0);
    /* A secret of the wrong length for the suite is refused. */
    CHECK(!tls_rec_set_secret(&d, TLS_REC_AES256_GCM_SHA384, rfc8448_secret, 32));
}

/* A record state talking to itself: what it writes, it reads. */
static void loopback(tls_rec *r, tls_rec_suite s)
{
    uint8_t secret[TLS_REC_SECRET_MAX];

    memset(r, 0, sizeof *r);
    for (size_t i = 0; i < sizeof secret; i++)
        secret[i] = (uint8_t)(i * 7 + 1);
    r->suite = (uint8_t)s;
    (void)tls_rec_set_secret(&r->rd, s, secret, tls_rec_secret_len(s));
    (void)tls_rec_set_secret(&r->wr, s, secret, tls_rec_secret_len(s));
}

TEST(tls_record_seal_and_open_round_trip_in_every_suite_and_strip_padding)
{
    static const tls_rec_suite suites[] = {TLS_REC_AES128_GCM_SHA256,
                                           TLS_REC_AES256_GCM_SHA384,
                                           TLS_REC_CHACHA20_POLY1305_SHA256};
    /* Content type 0 to seal: the "content" ends with the real type and
     * zero padding, which is what a padded TLSInnerPlaintext looks like. */
    static const uint8_t padded[] = {'d', 'a', 't', 'a', TLS_CT_APPLICATION_DATA, 0, 0, 0};
    uint8_t rec[64], out[64], type = 0;
    size_t len = 0;

    for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++) {
        tls_rec r;

        loopback(&r, suites[i]);
        for (int n = 0; n < 3; n++) { /* sequence numbers move in step */
            CHECK_EQ(tls_rec_seal(&r, TLS_CT_APPLICATION_DATA, (const uint8_t *)"hello", 5, rec),
                     TLS_REC_OK);
            CHECK_EQ(tls_rec_size(rec, sizeof rec), tls_rec_sealed_size(5));
            CHECK_EQ(tls_rec_open(&r, rec, tls_rec_sealed_size(5), out, &type, &len), TLS_REC_OK);
            CHECK_EQ(type, TLS_CT_APPLICATION_DATA);
            CHECK_EQ(len, 5);
            CHECK_MEM(out, "hello", 5);
        }
        CHECK_EQ(tls_rec_seal(&r, 0, padded, sizeof padded, rec), TLS_REC_OK);
        CHECK_EQ(tls_rec_open(&r, rec, tls_rec_sealed_size(sizeof padded), out, &type, &len),
                 TLS_REC_OK);
        CHECK_EQ(type, TLS_CT_APPLICATION_DATA);
        CHECK_EQ(len, 4);
        CHECK_MEM(out, "data", 4);
    }
}

TEST(tls_record_any_flipped_bit_fails_authentication_and_changes_nothing)
{
    tls_rec r;
    uint8_t rec[64], bad[64], out[64], type = 0;
    size_t size = tls_rec_sealed_size(10), len = 0;

    loopback(&r, TLS_REC_AES128_GCM_SHA256);
    CHECK_EQ(tls_rec_seal(&r, TLS_CT_APPLICATION_DATA, (const uint8_t *)"0123456789", 10, rec),
             TLS_REC_OK);
    /* Every bit after the type and version bytes: the length (additional
     * data), the ciphertext, the tag. */
    for (size_t bit = 3 * 8; bit < size * 8; bit++) {
        memcpy(bad, rec, size);
        bad[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        CHECK_EQ(tls_rec_open(&r, bad, size, out, &type, &len), TLS_REC_BAD_MAC);
    }
    CHECK_EQ(r.rd.seq, 0);
    CHECK_EQ(tls_rec_open(&r, rec, size, out, &type, &len), TLS_REC_OK);
    CHECK_MEM(out, "0123456789", 10);
    /* The same record again: its sequence number has passed. */
    CHECK_EQ(tls_rec_open(&r, rec, size, out, &type, &len), TLS_REC_BAD_MAC);
}

TEST(tls_record_without_content_type_or_encrypted_type_is_refused)
{
    tls_rec r;
    static const uint8_t zeros[8] = {0};
    uint8_t rec[64], out[64], type = 0;
    size_t len = 0;

    loopback(&r, TLS_REC_CHACHA20_POLY1305_SHA256);
    /* All-zero TLSInnerPlaintext: no content type at all. */
    CHECK_EQ(tls_rec_seal(&r, 0, zeros, sizeof zeros, rec), TLS_REC_OK);
    CHECK_EQ(tls_rec_open(&r, rec, tls_rec_sealed_size(sizeof zeros), out, &type, &len),
             TLS_REC_UNEXPECTED);
    /* An outer type other than application_data. */
    CHECK_EQ(tls_rec_seal(&r, TLS_CT_APPLICATION_DATA, zeros, 1, rec), TLS_REC_OK);
    rec[0] = TLS_CT_HANDSHAKE;
    CHECK_EQ(tls_rec_open(&r, rec, tls_rec_sealed_size(1), out, &type, &len), TLS_REC_UNEXPECTED);
    /* Too short to hold a tag. */
    rec[0] = TLS_CT_APPLICATION_DATA;
    rec[3] = 0;
    rec[4] = 16;
    CHECK_EQ(tls_rec_open(&r, rec, 21, out, &type, &len), TLS_REC_BAD_MAC);
    /* Over 2^14 content bytes are never sealed. */
    CHECK_EQ(tls_rec_seal(&r, TLS_CT_APPLICATION_DATA, zeros, TLS_REC_PLAIN_MAX + 1, rec),
             TLS_REC_OVERFLOW);
}

/* ---- the handover, against a wolfSSL client ----------------------------- */

/* Both application traffic secrets, as the client's wolfSSL derives them. */
typedef struct peer_secrets {
    uint8_t client[TLS_REC_SECRET_MAX], server[TLS_REC_SECRET_MAX];
    size_t len;
} peer_secrets;

static int catch_client_secret(WOLFSSL *ssl, int id, const unsigned char *secret, int len,
                               void *ctx)
{
    peer_secrets *ps = ctx;

    (void)ssl;
    if (len <= 0 || len > TLS_REC_SECRET_MAX)
        return 0;
    if (id == CLIENT_TRAFFIC_SECRET)
        memcpy(ps->client, secret, (size_t)len);
    else if (id == SERVER_TRAFFIC_SECRET)
        memcpy(ps->server, secret, (size_t)len);
    else
        return 0;
    ps->len = (size_t)len;
    return 0;
}

/*
 * An established pair with a wolfSSL client offering only `suites` (NULL:
 * the usual list) and the server on min_version..1.3, its connection's
 * blocks from a (NULL: malloc). With ps, the client's secrets are caught
 * there.
 */
static bool open_pair_with(tls_test_pair *p, const tern_tls_allocator *a, const char *suites,
                           tern_tls_version min, tern_tls_version client_max, peer_secrets *ps)
{
    tls_test_server_opts o = {0};
    tern_tls_server *s;
    tern_tls_client *cl;
    bool ok;

    o.min_version = min;
    s = tls_test_server(&o, NULL, 0);
    cl = tls_test_client("ca.crt", "dev-client", min, client_max);
    if (s != NULL && a != NULL)
        tern_tls_server_set_allocator(s, a);
    ok = s != NULL && cl != NULL && tls_test_pair_open(p, s, cl);
    tern_tls_server_release(s);
    tern_tls_client_release(cl);
    if (!ok)
        return false;
    if ((suites != NULL && wolfSSL_set_cipher_list(p->client->ssl, suites) != WOLFSSL_SUCCESS) ||
        (ps != NULL &&
         wolfSSL_set_tls13_secret_cb(p->client->ssl, catch_client_secret, ps) != WOLFSSL_SUCCESS)) {
        tls_test_pair_close(p);
        return false;
    }
    tls_test_pump(p);
    if (tern_tls_state_of(p->server) != TERN_TLS_ESTABLISHED) {
        tls_test_pair_close(p);
        return false;
    }
    return true;
}

static bool open_pair(tls_test_pair *p, const char *suites, tern_tls_version min,
                      tern_tls_version client_max, peer_secrets *ps)
{
    return open_pair_with(p, NULL, suites, min, client_max, ps);
}

TEST(tls13_server_frees_wolfssl_after_the_handshake_in_every_suite)
{
    static const char *const suites[] = {"TLS13-AES128-GCM-SHA256", "TLS13-AES256-GCM-SHA384",
                                         "TLS13-CHACHA20-POLY1305-SHA256"};

    for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++) {
        tls_test_pair p;
        static const uint8_t bulk[40000] = {1, 2, 3};

        CHECK(open_pair(&p, suites[i], TERN_TLS_1_3, TERN_TLS_1_3, NULL));
        CHECK(p.server->ssl == NULL);
        CHECK(p.server->keys != NULL && p.server->suite != TLS_REC_NONE);
        CHECK(p.client->ssl != NULL); /* the client is wolfSSL throughout */
        CHECK(strcmp(tern_tls_cipher_name(p.server), suites[i]) == 0);
        CHECK(strcmp(tern_tls_version_name(p.server), "TLSv1.3") == 0);
        CHECK(strcmp(tern_tls_identity(p.server), "dev-client") == 0);
        /* Data both ways, several records each, more than one in a call. */
        for (int n = 0; n < 3; n++) {
            CHECK(tern_tls_write(p.client, (const uint8_t *)"ping", 4));
            CHECK(tern_tls_write(p.server, (const uint8_t *)"pong", 4));
        }
        CHECK(tern_tls_write(p.server, bulk, sizeof bulk));
        tls_test_pump(&p);
        CHECK_EQ(p.server_plain_len, 12);
        CHECK_MEM(p.server_plain, "pingpingping", 12);
        CHECK_EQ(p.client_plain_len, 12 + sizeof bulk);
        CHECK_MEM(p.client_plain, "pongpongpong", 12);
        CHECK_MEM(p.client_plain + 12, bulk, sizeof bulk);
        tls_test_pair_close(&p);
    }
}

TEST(tls13_idle_aes128_server_connection_holds_no_buffer_and_two_128_byte_blocks)
{
    tls_test_pair p;
    size_t held, keys;

    CHECK(open_pair(&p, "TLS13-AES128-GCM-SHA256", TERN_TLS_1_3, TERN_TLS_1_3, NULL));
    CHECK(tern_tls_write(p.client, (const uint8_t *)"x", 1));
    CHECK(tern_tls_write(p.server, (const uint8_t *)"y", 1));
    tls_test_pump(&p);
    CHECK(p.server->ssl == NULL);
    CHECK(p.server->in.buf == NULL && p.server->out.buf == NULL && p.server->plain.buf == NULL);
    keys = tls_conn_keys_size((tls_rec_suite)p.server->suite);
    held = sizeof *p.server + keys + strlen(p.server->identity) + 1;
    printf("    idle TLS 1.3 server connection: %zu + keys %zu + identity %zu bytes\n",
           sizeof *p.server, keys, strlen(p.server->identity) + 1);
    /* Kernel heap classes: 128 + 128 (+ the identity's). */
    CHECK_EQ(p.server->suite, TLS_REC_AES128_GCM_SHA256);
    CHECK(sizeof *p.server <= 128);
    CHECK_EQ(keys, TLS_CONN_KEYS_AES128);
    CHECK(keys <= 128);
    CHECK(held < 270);
    tls_test_pair_close(&p);
}

/* A counting allocator for the server's connection blocks. */
typedef struct counted_alloc {
    unsigned allocs, frees;
} counted_alloc;

static void *counted_malloc(void *ctx, size_t size)
{
    ((counted_alloc *)ctx)->allocs++;
    return malloc(size);
}

static void counted_free(void *ctx, void *p)
{
    ((counted_alloc *)ctx)->frees++;
    free(p);
}

TEST(tls13_server_connection_blocks_come_from_the_servers_allocator)
{
    counted_alloc n = {0, 0};
    tern_tls_allocator a = {&n, counted_malloc, counted_free};
    tls_test_pair p;

    CHECK(open_pair_with(&p, &a, NULL, TERN_TLS_1_3, TERN_TLS_1_3, NULL));
    CHECK(p.server->ssl == NULL);
    /* Held now: the connection, its record keys and its identity (the
     * secrets caught during the handshake came and went through it too). */
    CHECK_EQ(n.allocs - n.frees, 3u);
    CHECK(n.allocs >= 4u);
    CHECK(strcmp(tern_tls_identity(p.server), "dev-client") == 0);
    tls_test_pair_close(&p);
    CHECK_EQ(n.allocs, n.frees);
}

TEST(tls12_connection_keeps_wolfssl)
{
    tls_test_pair p;

    CHECK(open_pair(&p, NULL, TERN_TLS_1_2, TERN_TLS_1_2, NULL));
    CHECK(strcmp(tern_tls_version_name(p.server), "TLSv1.2") == 0);
    CHECK(p.server->ssl != NULL);
    CHECK(p.server->keys == NULL && p.server->suite == TLS_REC_NONE);
    CHECK(!tern_tls_key_update(p.server, true)); /* no KeyUpdate in TLS 1.2 */
    CHECK(tern_tls_write(p.client, (const uint8_t *)"abc", 3));
    CHECK(tern_tls_write(p.server, (const uint8_t *)"de", 2));
    tls_test_pump(&p);
    CHECK_EQ(p.server_plain_len, 3);
    CHECK_EQ(p.client_plain_len, 2);
    tls_test_pair_close(&p);
}

/* The server's read and write keys now (its record state is packed). */
static void server_keys(tls_test_pair *p, uint8_t rd[TLS_REC_KEY_MAX],
                        uint8_t wr[TLS_REC_KEY_MAX])
{
    tls_rec r;

    tls_conn_rec_load(p->server, &r);
    memcpy(rd, r.rd.key, TLS_REC_KEY_MAX);
    memcpy(wr, r.wr.key, TLS_REC_KEY_MAX);
    tls_rec_wipe(&r);
}

/* Which of the server's keys differ from rd, wr: bit 0 read, bit 1 write. */
static int keys_moved(tls_test_pair *p, const uint8_t rd[TLS_REC_KEY_MAX],
                      const uint8_t wr[TLS_REC_KEY_MAX])
{
    uint8_t now_rd[TLS_REC_KEY_MAX], now_wr[TLS_REC_KEY_MAX];

    server_keys(p, now_rd, now_wr);
    return (memcmp(rd, now_rd, TLS_REC_KEY_MAX) != 0 ? 1 : 0) |
           (memcmp(wr, now_wr, TLS_REC_KEY_MAX) != 0 ? 2 : 0);
}

TEST(tls13_key_update_from_the_client_moves_both_server_keys)
{
    tls_test_pair p;
    uint8_t rd[TLS_REC_KEY_MAX], wr[TLS_REC_KEY_MAX];

    CHECK(open_pair(&p, NULL, TERN_TLS_1_3, TERN_TLS_1_3, NULL));
    CHECK(tern_tls_write(p.client, (const uint8_t *)"a", 1));
    tls_test_pump(&p);
    server_keys(&p, rd, wr);
    /* wolfSSL's KeyUpdate asks for ours (update_requested). */
    CHECK(tern_tls_key_update(p.client, true));
    tls_test_pump(&p);
    CHECK_EQ(tern_tls_state_of(p.server), TERN_TLS_ESTABLISHED);
    CHECK(keys_moved(&p, rd, wr) == 3);
    /* Both directions still work, under the new keys, twice over. */
    for (int n = 0; n < 2; n++) {
        CHECK(tern_tls_write(p.client, (const uint8_t *)"bc", 2));
        CHECK(tern_tls_write(p.server, (const uint8_t *)"de", 2));
        tls_test_pump(&p);
        CHECK(tern_tls_key_update(p.client, true));
    }
    tls_test_pump(&p);
    CHECK(tern_tls_write(p.client, (const uint8_t *)"f", 1));
    CHECK(tern_tls_write(p.server, (const uint8_t *)"g", 1));
    tls_test_pump(&p);
    CHECK_EQ(p.server_plain_len, 6);
    CHECK_MEM(p.server_plain, "abcbcf", 6);
    CHECK_EQ(p.client_plain_len, 5);
    CHECK_MEM(p.client_plain, "dedeg", 5);
    CHECK_EQ(tern_tls_state_of(p.client), TERN_TLS_ESTABLISHED);
    tls_test_pair_close(&p);
}

TEST(tls13_key_update_from_the_server_is_followed_by_the_client)
{
    tls_test_pair p;
    uint8_t rd[TLS_REC_KEY_MAX], wr[TLS_REC_KEY_MAX];

    CHECK(open_pair(&p, NULL, TERN_TLS_1_3, TERN_TLS_1_3, NULL));
    server_keys(&p, rd, wr);
    CHECK(tern_tls_key_update(p.server, false));
    CHECK(keys_moved(&p, rd, wr) == 2); /* write key only */
    CHECK(tern_tls_write(p.server, (const uint8_t *)"one", 3));
    tls_test_pump(&p);
    CHECK((keys_moved(&p, rd, wr) & 1) == 0); /* not asked */
    CHECK(tern_tls_key_update(p.server, true));
    CHECK(tern_tls_write(p.server, (const uint8_t *)"two", 3));
    tls_test_pump(&p);
    CHECK(tern_tls_write(p.client, (const uint8_t *)"three", 5));
    tls_test_pump(&p);
    CHECK((keys_moved(&p, rd, wr) & 1) == 1); /* the client moved */
    CHECK_EQ(p.client_plain_len, 6);
    CHECK_MEM(p.client_plain, "onetwo", 6);
    CHECK_EQ(p.server_plain_len, 5);
    CHECK_MEM(p.server_plain, "three", 5);
    CHECK_EQ(tern_tls_state_of(p.server), TERN_TLS_ESTABLISHED);
    CHECK_EQ(tern_tls_state_of(p.client), TERN_TLS_ESTABLISHED);
    tls_test_pair_close(&p);
}

TEST(tls13_close_notify_from_the_server_reaches_the_client_once)
{
    tls_test_pair p;
    size_t len;

    CHECK(open_pair(&p, NULL, TERN_TLS_1_3, TERN_TLS_1_3, NULL));
    tern_tls_shutdown(p.server);
    len = tern_tls_out_pending(p.server);
    CHECK(len > 0);
    tern_tls_shutdown(p.server);
    CHECK_EQ(tern_tls_out_pending(p.server), len);
    tls_test_pump(&p);
    CHECK_EQ(tern_tls_state_of(p.client), TERN_TLS_PEER_CLOSED);
    tls_test_pair_close(&p);
}

/* A pair whose client's records the test can also forge: `forge` writes as
 * the client (its write key is the server's read key), `peek` reads what
 * the server wrote. */
typedef struct forged {
    tls_test_pair p;
    peer_secrets ps;
    tls_rec forge, peek;
} forged;

static bool open_forged(forged *f)
{
    tls_rec_suite s = TLS_REC_AES128_GCM_SHA256;

    memset(f, 0, sizeof *f);
    if (!open_pair(&f->p, "TLS13-AES128-GCM-SHA256", TERN_TLS_1_3, TERN_TLS_1_3, &f->ps))
        return false;
    f->forge.suite = f->peek.suite = (uint8_t)s;
    return f->ps.len == 32 && tls_rec_set_secret(&f->forge.wr, s, f->ps.client, 32) &&
           tls_rec_set_secret(&f->peek.rd, s, f->ps.server, 32);
}

/* Seal content as the client and hand it to the server in one read. */
static tern_tls_state forge_send(forged *f, uint8_t type, const uint8_t *data, size_t len)
{
    uint8_t rec[256], plain[256];
    size_t got = 0;

    if (tls_rec_seal(&f->forge, type, data, len, rec) != TLS_REC_OK)
        return (tern_tls_state)-1;
    return tern_tls_read(f->p.server, rec, tls_rec_sealed_size(len), plain, sizeof plain, &got);
}

/* The description of the alert the server queued, -1 if none. */
static int server_alert(forged *f)
{
    size_t len, rlen = 0;
    const uint8_t *out = tern_tls_out_peek(f->p.server, &len);
    uint8_t plain[64], type = 0;

    if (len == 0 || tls_rec_size(out, len) != len || len > sizeof plain + 21)
        return -1;
    if (tls_rec_open(&f->peek, out, len, plain, &type, &rlen) != TLS_REC_OK ||
        type != TLS_CT_ALERT || rlen != 2 || plain[0] != 2)
        return -1;
    return plain[1];
}

TEST(tls13_server_reads_padded_records_and_data_split_across_calls)
{
    forged f;
    static const uint8_t padded[] = {'m', 'q', 't', 't', TLS_CT_APPLICATION_DATA, 0, 0, 0, 0};
    uint8_t rec[128], plain[64];
    size_t n1, n2, got = 0, total = 0;

    CHECK(open_forged(&f));
    CHECK_EQ(forge_send(&f, 0, padded, sizeof padded), TERN_TLS_ESTABLISHED);
    /* Two records in one buffer, delivered in three uneven pieces. */
    CHECK_EQ(tls_rec_seal(&f.forge, TLS_CT_APPLICATION_DATA, (const uint8_t *)"abc", 3, rec),
             TLS_REC_OK);
    n1 = tls_rec_sealed_size(3);
    CHECK_EQ(tls_rec_seal(&f.forge, TLS_CT_APPLICATION_DATA, (const uint8_t *)"defg", 4,
                          rec + n1),
             TLS_REC_OK);
    n2 = n1 + tls_rec_sealed_size(4);
    CHECK_EQ(tern_tls_read(f.p.server, rec, 3, plain, sizeof plain, &got), TERN_TLS_ESTABLISHED);
    CHECK_EQ(got, 0);
    CHECK(!tern_tls_has_input(f.p.server)); /* a partial record is nothing to read yet */
    CHECK_EQ(tern_tls_read(f.p.server, rec + 3, n1 + 2 - 3, plain, sizeof plain, &got),
             TERN_TLS_ESTABLISHED);
    CHECK_EQ(got, 3);
    total = got;
    CHECK_EQ(tern_tls_read(f.p.server, rec + n1 + 2, n2 - n1 - 2, plain + total,
                           sizeof plain - total, &got),
             TERN_TLS_ESTABLISHED);
    total += got;
    CHECK_EQ(total, 7);
    CHECK_MEM(plain, "abcdefg", 7);
    CHECK(f.p.server->in.buf == NULL);
    tls_test_pair_close(&f.p);
}

/* Found by fuzz_record: a read whose buffer the plaintext filled exactly
 * stops before the header of what follows, and tern_tls_has_input said
 * nothing was left to read (no whole record, no plaintext), so a bad
 * header sat unchecked, and no alert went out, until the peer sent more. */
TEST(tls13_bad_header_after_a_read_that_filled_the_buffer_still_fails_the_connection)
{
    static const uint8_t bad[5] = {TLS_CT_HANDSHAKE, 0, 0, 1, 0};
    forged f;
    uint8_t rec[64], plain[10];
    size_t n, got = 0, total = 0;

    CHECK(open_forged(&f));
    CHECK_EQ(tls_rec_seal(&f.forge, TLS_CT_APPLICATION_DATA, (const uint8_t *)"0123456789", 10,
                          rec),
             TLS_REC_OK);
    n = tls_rec_sealed_size(10);
    memcpy(rec + n, bad, sizeof bad);
    CHECK_EQ(tern_tls_read(f.p.server, rec, n + sizeof bad, plain, sizeof plain, &got),
             TERN_TLS_ESTABLISHED);
    total = got;
    for (int i = 0; i < 8 && tern_tls_has_input(f.p.server); i++) {
        (void)tern_tls_read(f.p.server, NULL, 0, plain, sizeof plain, &got);
        total += got;
    }
    CHECK_EQ(total, 10); /* what authenticated before the bad header is read */
    CHECK_EQ(tern_tls_state_of(f.p.server), TERN_TLS_FAILED);
    CHECK_EQ(server_alert(&f), TERN_TLS_ALERT_UNEXPECTED_MESSAGE);
    tls_test_pair_close(&f.p);
}

TEST(tls13_server_closes_on_a_fatal_alert_and_on_close_notify)
{
    forged f;
    static const uint8_t unknown_ca[2] = {2, 48}, close_notify[2] = {1, 0},
                         user_canceled[2] = {1, 90};

    CHECK(open_forged(&f));
    CHECK_EQ(forge_send(&f, TLS_CT_ALERT, unknown_ca, 2), TERN_TLS_FAILED);
    CHECK_EQ(tern_tls_failure_of(f.p.server), TERN_TLS_FAIL_PEER_ALERT);
    CHECK_EQ(tern_tls_peer_alert(f.p.server), 48);
    CHECK_EQ(tern_tls_out_pending(f.p.server), 0); /* no alert answers an alert */
    tls_test_pair_close(&f.p);

    CHECK(open_forged(&f));
    CHECK_EQ(forge_send(&f, TLS_CT_ALERT, user_canceled, 2), TERN_TLS_ESTABLISHED);
    CHECK_EQ(forge_send(&f, TLS_CT_ALERT, close_notify, 2), TERN_TLS_PEER_CLOSED);
    CHECK_EQ(tern_tls_failure_of(f.p.server), TERN_TLS_FAIL_NONE);
    tls_test_pair_close(&f.p);
}

TEST(tls13_server_refuses_bad_records_with_the_right_alert)
{
    static const uint8_t zeros[4] = {0}, ticket[8] = {4, 0, 0, 4, 0, 0, 0, 0},
                         bad_update[5] = {24, 0, 0, 1, 2}, short_update[4] = {24, 0, 0, 0},
                         two_updates[10] = {24, 0, 0, 1, 0, 24, 0, 0, 1, 0};
    static const uint8_t ccs[6] = {20, 3, 3, 0, 1, 1}, huge[5] = {23, 3, 3, 0x41, 0x01};
    struct {
        uint8_t type;
        const uint8_t *data;
        size_t len;
        int alert;
    } cases[] = {
        {0, zeros, sizeof zeros, TERN_TLS_ALERT_UNEXPECTED_MESSAGE},     /* no content type */
        {TLS_CT_HANDSHAKE, ticket, sizeof ticket, TERN_TLS_ALERT_UNEXPECTED_MESSAGE},
        {TLS_CT_HANDSHAKE, bad_update, sizeof bad_update, TERN_TLS_ALERT_ILLEGAL_PARAMETER},
        {TLS_CT_HANDSHAKE, short_update, sizeof short_update, TERN_TLS_ALERT_DECODE_ERROR},
        {TLS_CT_HANDSHAKE, two_updates, sizeof two_updates, TERN_TLS_ALERT_DECODE_ERROR},
        {TLS_CT_CHANGE_CIPHER_SPEC, zeros, 1, TERN_TLS_ALERT_UNEXPECTED_MESSAGE},
        {TLS_CT_ALERT, zeros, 3, TERN_TLS_ALERT_DECODE_ERROR},
    };
    forged f;
    uint8_t plain[64];
    size_t got = 0;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK(open_forged(&f));
        CHECK_EQ(forge_send(&f, cases[i].type, cases[i].data, cases[i].len), TERN_TLS_FAILED);
        CHECK_EQ(tern_tls_failure_of(f.p.server), TERN_TLS_FAIL_PROTOCOL);
        CHECK_EQ(server_alert(&f), cases[i].alert);
        tls_test_pair_close(&f.p);
    }
    /* Headers alone fail at once: a plaintext ChangeCipherSpec now, and a
     * length over 2^14 + 256 (no waiting for the 16 KiB that follow). */
    CHECK(open_forged(&f));
    CHECK_EQ(tern_tls_read(f.p.server, ccs, sizeof ccs, plain, sizeof plain, &got),
             TERN_TLS_FAILED);
    CHECK_EQ(server_alert(&f), TERN_TLS_ALERT_UNEXPECTED_MESSAGE);
    tls_test_pair_close(&f.p);
    CHECK(open_forged(&f));
    CHECK_EQ(tern_tls_read(f.p.server, huge, sizeof huge, plain, sizeof plain, &got),
             TERN_TLS_FAILED);
    CHECK_EQ(server_alert(&f), TERN_TLS_ALERT_RECORD_OVERFLOW);
    CHECK(!tern_tls_has_input(f.p.server));
    tls_test_pair_close(&f.p);
}

TEST(tls13_flipped_bit_in_a_wolfssl_record_closes_with_bad_record_mac)
{
    forged f;
    const uint8_t *out;
    uint8_t copy[64], plain[64];
    size_t len, got = 0;

    CHECK(open_forged(&f));
    CHECK(tern_tls_write(f.p.client, (const uint8_t *)"PUBLISH payload", 15));
    out = tern_tls_out_peek(f.p.client, &len);
    CHECK(len <= sizeof copy);
    memcpy(copy, out, len);
    tern_tls_out_consume(f.p.client, len);
    copy[TLS_REC_HEADER + 3] ^= 0x10; /* inside the ciphertext */
    CHECK_EQ(tern_tls_read(f.p.server, copy, len, plain, sizeof plain, &got), TERN_TLS_FAILED);
    CHECK_EQ(got, 0);
    CHECK_EQ(tern_tls_failure_of(f.p.server), TERN_TLS_FAIL_PROTOCOL);
    CHECK_EQ(server_alert(&f), TERN_TLS_ALERT_BAD_RECORD_MAC);
    /* Nothing after a failure is read. */
    CHECK_EQ(tern_tls_read(f.p.server, copy, len, plain, sizeof plain, &got), TERN_TLS_FAILED);
    CHECK_EQ(got, 0);
    tls_test_pair_close(&f.p);
}
