/*
 * test_tls_opnames.c - the operator CAs' subject names in front of the
 * operator check (src/tls/opnames.c): a leaf from the client CA is known
 * not to be an operator's without asking wolfSSL, a leaf from any CA of an
 * operator bundle still is, and a bundle the walk does not fully
 * understand turns the filter off instead of losing an operator.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "test.h"

#include "test_tls_pair.h"

#include "tls/internal.h" /* wolfSSL's options.h before its other headers */

#include <wolfssl/wolfcrypt/asn_public.h>

/* Concatenation of two files of tests/unit/data/tls (caller frees .data). */
static tern_tls_bytes two_files(const char *a, const char *b)
{
    tern_tls_bytes x = tls_test_file(a), y = tls_test_file(b), out = {0};
    uint8_t *buf = (x.data && y.data) ? malloc(x.len + y.len) : NULL;

    if (buf != NULL) {
        memcpy(buf, x.data, x.len);
        memcpy(buf + x.len, y.data, y.len);
        out.data = buf;
        out.len = x.len + y.len;
    }
    free((void *)x.data);
    free((void *)y.data);
    return out;
}

/* The issuer name hash of data/tls/NAME.crt, as the verify callback gets it. */
static bool issuer_of(const char *name, uint8_t hash[TLS_NAME_HASH])
{
    char file[64];
    tern_tls_bytes pem;
    uint8_t der[4096];
    int len = -1;
    char *identity = NULL;
    tern_tls_failure f = TERN_TLS_FAIL_BAD_CERT;

    snprintf(file, sizeof file, "%s.crt", name);
    pem = tls_test_file(file);
    if (pem.data != NULL)
        len = wc_CertPemToDer(pem.data, (int)pem.len, der, sizeof der, CERT_TYPE);
    free((void *)pem.data);
    if (len > 0)
        f = tls_identity_from_der(der, (size_t)len, TERN_TLS_IDENTITY_CN, NULL, &identity, hash);
    free(identity);
    return f == TERN_TLS_FAIL_NONE;
}

TEST(tls_operator_names_tell_an_operator_ca_leaf_from_a_client_ca_leaf)
{
    tern_tls_bytes pem = tls_test_file("operator-ca.crt");
    tls_opnames o;
    uint8_t op[TLS_NAME_HASH], client[TLS_NAME_HASH];

    CHECK(pem.data != NULL);
    tls_opnames_load(&o, pem.data, pem.len);
    free((void *)pem.data);
    CHECK(o.filter);
    CHECK_EQ(o.count, 1);
    CHECK(issuer_of("dev-operator", op));
    CHECK(issuer_of("dev-client", client));
    CHECK(tls_opnames_may_issue(&o, op));
    CHECK(!tls_opnames_may_issue(&o, client));
    tls_opnames_free(&o);
}

TEST(tls_operator_names_of_a_bundle_cover_every_certificate_in_it)
{
    tern_tls_bytes pem = two_files("other-ca.crt", "operator-ca.crt");
    tls_opnames o;
    uint8_t op[TLS_NAME_HASH], client[TLS_NAME_HASH], intruder[TLS_NAME_HASH];

    CHECK(pem.data != NULL);
    tls_opnames_load(&o, pem.data, pem.len);
    free((void *)pem.data);
    CHECK(o.filter);
    CHECK_EQ(o.count, 2);
    CHECK(issuer_of("dev-operator", op));
    CHECK(issuer_of("dev-client", client));
    CHECK(issuer_of("intruder", intruder)); /* issued by other-ca */
    CHECK(tls_opnames_may_issue(&o, op));
    CHECK(tls_opnames_may_issue(&o, intruder));
    CHECK(!tls_opnames_may_issue(&o, client));
    tls_opnames_free(&o);
}

TEST(tls_operator_names_turn_the_filter_off_for_a_block_that_is_not_a_certificate)
{
    tern_tls_bytes pem = two_files("operator-ca.key", "operator-ca.crt");
    tls_opnames o;
    uint8_t client[TLS_NAME_HASH];

    CHECK(pem.data != NULL);
    tls_opnames_load(&o, pem.data, pem.len);
    free((void *)pem.data);
    CHECK(!o.filter);
    CHECK(issuer_of("dev-client", client));
    CHECK(tls_opnames_may_issue(&o, client)); /* off: every leaf is asked about */
    tls_opnames_free(&o);
}

TEST(tls_operator_names_turn_the_filter_off_for_an_unreadable_certificate)
{
    static const char bad[] = "-----BEGIN CERTIFICATE-----\nnot base64 at all\n"
                              "-----END CERTIFICATE-----\n";
    tls_opnames o;
    uint8_t client[TLS_NAME_HASH];

    tls_opnames_load(&o, (const uint8_t *)bad, sizeof bad - 1);
    CHECK(!o.filter);
    CHECK(o.hashes == NULL);
    CHECK(issuer_of("dev-client", client));
    CHECK(tls_opnames_may_issue(&o, client));
    tls_opnames_free(&o);
}

/* End to end: an operator CA second in its bundle still makes operators,
 * and a client CA's leaf is an ordinary client. */
TEST(tls_operator_ca_second_in_a_bundle_makes_an_operator)
{
    tern_tls_server_config cfg;
    tern_tls_server *s;
    char err[TERN_TLS_ERR_SIZE] = "";
    tls_test_pair p;

    memset(&cfg, 0, sizeof cfg);
    cfg.cert_chain = tls_test_file("server.crt");
    cfg.key = tls_test_file("server.key");
    cfg.client_ca = tls_test_file("ca.crt");
    cfg.operator_ca = two_files("other-ca.crt", "operator-ca.crt");
    cfg.min_version = TERN_TLS_1_3;
    cfg.require_client_cert = true;
    s = tern_tls_server_create(&cfg, err, sizeof err);
    free((void *)cfg.cert_chain.data);
    free((void *)cfg.key.data);
    free((void *)cfg.client_ca.data);
    free((void *)cfg.operator_ca.data);
    CHECK(s != NULL);
    s->refs++; /* two handshakes, and tls_test_handshake releases one reference each */
    CHECK_EQ(tls_test_handshake(&p, s, tls_test_client("ca.crt", "dev-operator", TERN_TLS_1_3,
                                                       TERN_TLS_1_3)),
             TERN_TLS_ESTABLISHED);
    CHECK(tern_tls_is_operator(p.server));
    tls_test_pair_close(&p);
    CHECK_EQ(tls_test_handshake(&p, s, tls_test_client("ca.crt", "dev-client", TERN_TLS_1_3,
                                                       TERN_TLS_1_3)),
             TERN_TLS_ESTABLISHED);
    CHECK(!tern_tls_is_operator(p.server));
    tls_test_pair_close(&p);
}
