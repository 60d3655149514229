/*
 * test_tls_sigcache.c - the remembered certificate signatures
 * (src/tls/sigcache.c): a signature that verified is answered from memory
 * the second time, one that did not is never remembered, any change to the
 * key, digest or signature is verified afresh (and fails), and in a real
 * handshake the client certificate's signature is looked up while the
 * CertificateVerify is always computed.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "test.h"

#include "test_tls_pair.h"

#include "tls/internal.h" /* wolfSSL's options.h before its other headers */

#include <wolfssl/wolfcrypt/asn_public.h>
#include <wolfssl/wolfcrypt/ecc.h>
#include <wolfssl/wolfcrypt/random.h>

/* A fresh P-256 key, its public half as DER, and a signature of digest. */
typedef struct {
    uint8_t key[128];
    unsigned key_len;
    uint8_t digest[32];
    uint8_t sig[80];
    unsigned sig_len;
} signed_digest;

static bool make_signed_digest(signed_digest *sd)
{
    WC_RNG rng;
    ecc_key k;
    word32 sig_len = sizeof sd->sig;
    int key_len = -1;
    bool ok = false;

    if (wc_InitRng(&rng) != 0)
        return false;
    if (wc_ecc_init(&k) == 0) {
        if (wc_ecc_make_key_ex(&rng, 32, &k, ECC_SECP256R1) == 0 &&
            wc_RNG_GenerateBlock(&rng, sd->digest, sizeof sd->digest) == 0 &&
            wc_ecc_sign_hash(sd->digest, sizeof sd->digest, sd->sig, &sig_len, &rng, &k) == 0)
            key_len = wc_EccPublicKeyToDer(&k, sd->key, sizeof sd->key, 1);
        wc_ecc_free(&k);
    }
    wc_FreeRng(&rng);
    if (key_len > 0) {
        sd->key_len = (unsigned)key_len;
        sd->sig_len = sig_len;
        ok = true;
    }
    return ok;
}

static int verify(tls_sigcache *sc, const signed_digest *sd, int *result)
{
    *result = -1;
    return tls_sigcache_verify(sc, sd->sig, sd->sig_len, sd->digest, sizeof sd->digest, sd->key,
                               sd->key_len, result);
}

TEST(tls_sigcache_second_verify_of_same_signature_is_a_hit)
{
    tls_sigcache sc;
    signed_digest sd;
    int result;

    CHECK(make_signed_digest(&sd));
    CHECK(tls_sigcache_init(&sc));
    CHECK_EQ(verify(&sc, &sd, &result), 0);
    CHECK_EQ(result, 1);
    CHECK_EQ(sc.misses, 1);
    CHECK_EQ(sc.hits, 0);
    CHECK_EQ(verify(&sc, &sd, &result), 0);
    CHECK_EQ(result, 1);
    CHECK_EQ(sc.hits, 1);
    tls_sigcache_free(&sc);
}

TEST(tls_sigcache_bad_signature_fails_every_time_and_is_not_remembered)
{
    tls_sigcache sc;
    signed_digest sd;
    int result;

    CHECK(make_signed_digest(&sd));
    sd.digest[5] ^= 1; /* the signature no longer matches */
    CHECK(tls_sigcache_init(&sc));
    for (int i = 0; i < 3; i++) {
        (void)verify(&sc, &sd, &result);
        CHECK_EQ(result, 0);
    }
    CHECK_EQ(sc.hits, 0);
    CHECK_EQ(sc.misses, 3);
    tls_sigcache_free(&sc);
}

TEST(tls_sigcache_changed_digest_signature_or_key_is_verified_afresh)
{
    tls_sigcache sc;
    signed_digest sd, other, changed;
    int result;

    CHECK(make_signed_digest(&sd));
    CHECK(make_signed_digest(&other));
    CHECK(tls_sigcache_init(&sc));
    CHECK_EQ(verify(&sc, &sd, &result), 0);
    CHECK_EQ(result, 1);

    changed = sd;
    changed.digest[31] ^= 0x80;
    (void)verify(&sc, &changed, &result);
    CHECK_EQ(result, 0);

    changed = sd; /* a valid signature, but by another key over another digest */
    memcpy(changed.sig, other.sig, other.sig_len);
    changed.sig_len = other.sig_len;
    (void)verify(&sc, &changed, &result);
    CHECK_EQ(result, 0);

    changed = sd; /* the signature under another (valid) key */
    memcpy(changed.key, other.key, other.key_len);
    changed.key_len = other.key_len;
    (void)verify(&sc, &changed, &result);
    CHECK_EQ(result, 0);

    CHECK_EQ(sc.hits, 0);
    CHECK_EQ(sc.misses, 4);
    tls_sigcache_free(&sc);
}

TEST(tls_sigcache_contexts_do_not_share_entries)
{
    tls_sigcache a, b;
    signed_digest sd;
    int result;

    CHECK(make_signed_digest(&sd));
    CHECK(tls_sigcache_init(&a));
    CHECK(tls_sigcache_init(&b));
    CHECK(memcmp(a.salt, b.salt, sizeof a.salt) != 0);
    CHECK_EQ(verify(&a, &sd, &result), 0);
    CHECK_EQ(verify(&b, &sd, &result), 0);
    CHECK_EQ(result, 1);
    CHECK_EQ(b.hits, 0); /* a new context (a reload) starts empty */
    tls_sigcache_free(&a);
    tls_sigcache_free(&b);
}

TEST(tls_sigcache_garbage_key_is_an_error_not_a_success)
{
    tls_sigcache sc;
    signed_digest sd;
    int result;

    CHECK(make_signed_digest(&sd));
    sd.key[0] ^= 0xff; /* no longer a SubjectPublicKeyInfo */
    CHECK(tls_sigcache_init(&sc));
    CHECK(verify(&sc, &sd, &result) != 0 || result == 0);
    CHECK(result != 1);
    CHECK(verify(&sc, &sd, &result) != 0 || result == 0);
    CHECK(result != 1);
    CHECK_EQ(sc.hits, 0);
    tls_sigcache_free(&sc);
}

/* Two handshakes with the same client certificate on one server context:
 * the first verifies the certificate's signature, the second finds it; the
 * CertificateVerify is neither looked up nor stored (one miss in all). */
TEST(tls_sigcache_second_handshake_skips_the_certificate_signature_only)
{
    tls_test_server_opts o = {0};
    tern_tls_server *srv = tls_test_server(&o, NULL, 0);
    tls_test_pair p;

    CHECK(srv != NULL);
    for (int i = 0; i < 2; i++) {
        srv->refs++; /* tls_test_handshake takes one reference each time */
        CHECK_EQ(tls_test_handshake(&p, srv,
                                    tls_test_client("ca.crt", "dev-client", TERN_TLS_1_3,
                                                    TERN_TLS_1_3)),
                 TERN_TLS_ESTABLISHED);
        tls_test_pair_close(&p);
    }
    CHECK_EQ(srv->sigcache.misses, 1);
    CHECK_EQ(srv->sigcache.hits, 1);
    tern_tls_server_release(srv);
}

/* The replaceable clock: in 2200 every certificate here has expired. */
static time_t year_2200(time_t *t)
{
    time_t v = (time_t)7258118400; /* 2200-01-01T00:00:00Z */

    if (t != NULL)
        *t = v;
    return v;
}

/* Hand everything `from` has queued to `to` (handshake messages only). */
static void hand_over(tern_tls_conn *from, tern_tls_conn *to)
{
    uint8_t plain[256];
    size_t len, got = 0;
    const uint8_t *out = tern_tls_out_peek(from, &len);

    (void)tern_tls_read(to, out, len, plain, sizeof plain, &got);
    tern_tls_out_consume(from, len);
}

/* A certificate whose signature is remembered is still checked for its
 * dates: once the clock says it has expired, the server refuses it. The
 * clock moves after the client has checked the server's certificate, so
 * only the server's check can fail. */
TEST(tls_sigcache_expired_certificate_is_refused_after_it_was_remembered)
{
    tls_test_server_opts o = {0};
    tern_tls_server *srv = tls_test_server(&o, NULL, 0);
    tern_tls_client *cl;
    tls_test_pair p;
    uint8_t none[1];
    size_t got = 0;

    CHECK(srv != NULL);
    srv->refs++;
    CHECK_EQ(tls_test_handshake(&p, srv,
                                tls_test_client("ca.crt", "dev-client", TERN_TLS_1_3,
                                                TERN_TLS_1_3)),
             TERN_TLS_ESTABLISHED);
    tls_test_pair_close(&p);
    CHECK_EQ(srv->sigcache.misses, 1); /* remembered now */

    cl = tls_test_client("ca.crt", "dev-client", TERN_TLS_1_3, TERN_TLS_1_3);
    CHECK(cl != NULL && tls_test_pair_open(&p, srv, cl));
    tern_tls_server_release(srv);
    tern_tls_client_release(cl);
    (void)tern_tls_read(p.client, NULL, 0, none, 0, &got); /* ClientHello */
    hand_over(p.client, p.server);                         /* server's flight */
    hand_over(p.server, p.client);                         /* client's certificate */
    tern_tls_set_clock(year_2200);
    hand_over(p.client, p.server);
    tern_tls_set_clock(NULL);
    CHECK_EQ(tern_tls_state_of(p.server), TERN_TLS_FAILED);
    CHECK_EQ(tern_tls_failure_of(p.server), TERN_TLS_FAIL_EXPIRED);
    tls_test_pair_close(&p);
}
