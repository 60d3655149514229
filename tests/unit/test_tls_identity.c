/*
 * test_tls_identity.c - where a client's identity comes from (CN or one
 * subjectAltName type), and the server context's start-up checks: every
 * mistake in the certificate files is caught when the context is built, with
 * a message naming the file's role.
 */
#include "test.h"

#include "test_tls_pair.h"

static tern_tls_state handshake_with_source(tls_test_pair *p, tern_tls_identity_source src,
                                            const char *cert)
{
    tls_test_server_opts o = {0};

    o.identity = src;
    return tls_test_handshake(p, tls_test_server(&o, NULL, 0),
                              tls_test_client("ca.crt", cert, TERN_TLS_1_3, TERN_TLS_1_3));
}

TEST(tls_identity_from_san_email)
{
    tls_test_pair p;

    CHECK_EQ(handshake_with_source(&p, TERN_TLS_IDENTITY_SAN_EMAIL, "sans"), TERN_TLS_ESTABLISHED);
    CHECK(strcmp(tern_tls_identity(p.server), "sensor-7@example.com") == 0);
    tls_test_pair_close(&p);
}

TEST(tls_identity_from_san_dns)
{
    tls_test_pair p;

    CHECK_EQ(handshake_with_source(&p, TERN_TLS_IDENTITY_SAN_DNS, "sans"), TERN_TLS_ESTABLISHED);
    CHECK(strcmp(tern_tls_identity(p.server), "sensor-7.example") == 0);
    tls_test_pair_close(&p);
}

TEST(tls_identity_from_san_uri)
{
    tls_test_pair p;

    CHECK_EQ(handshake_with_source(&p, TERN_TLS_IDENTITY_SAN_URI, "sans"), TERN_TLS_ESTABLISHED);
    CHECK(strcmp(tern_tls_identity(p.server), "urn:tern:sensor-7") == 0);
    tls_test_pair_close(&p);
}

TEST(tls_identity_from_cn_ignores_sans)
{
    tls_test_pair p;

    CHECK_EQ(handshake_with_source(&p, TERN_TLS_IDENTITY_CN, "sans"), TERN_TLS_ESTABLISHED);
    CHECK(strcmp(tern_tls_identity(p.server), "sans") == 0);
    tls_test_pair_close(&p);
}

TEST(tls_certificate_without_the_configured_san_is_refused)
{
    tls_test_pair p;

    /* dev-client has a CN but no subjectAltName at all. */
    CHECK_EQ(handshake_with_source(&p, TERN_TLS_IDENTITY_SAN_DNS, "dev-client"), TERN_TLS_FAILED);
    CHECK_EQ(tern_tls_failure_of(p.server), TERN_TLS_FAIL_NO_IDENTITY);
    CHECK(tern_tls_state_of(p.client) == TERN_TLS_FAILED);
    tls_test_pair_close(&p);
}

/* Build a server from opts and expect it refused with `words` in the message. */
static bool refused_with(const tls_test_server_opts *o, const char *words)
{
    char err[TERN_TLS_ERR_SIZE] = "";
    tern_tls_server *s = tls_test_server(o, err, sizeof err);

    if (s != NULL) {
        tern_tls_server_release(s);
        return false;
    }
    if (strstr(err, words) == NULL) {
        fprintf(stderr, "  message was: %s\n", err);
        return false;
    }
    return true;
}

TEST(tls_server_certificate_must_be_p256)
{
    tls_test_server_opts o = {0};

    o.cert = "p384-server.crt";
    o.key = "p384-server.key";
    CHECK(refused_with(&o, "ECDSA P-256"));
}

TEST(tls_server_key_must_match_its_certificate)
{
    tls_test_server_opts o = {0};

    o.key = "dev-client.key";
    CHECK(refused_with(&o, "does not match"));
}

TEST(tls_required_client_certificates_need_a_client_ca)
{
    tls_test_server_opts o = {0};

    o.client_ca = "";
    CHECK(refused_with(&o, "client CA"));
}

TEST(tls_garbage_ca_bundle_is_refused)
{
    tls_test_server_opts o = {0};

    o.client_ca = "make.sh"; /* not PEM at all */
    CHECK(refused_with(&o, "client CA: cannot load"));
}

TEST(tls_operators_list_refuses_an_empty_entry)
{
    tls_test_server_opts o = {0};

    o.operators = "alice,,bob";
    CHECK(refused_with(&o, "empty identity"));
    o.operators = "alice, ";
    CHECK(refused_with(&o, "empty identity"));
}

TEST(tls_operators_list_trims_blanks_around_names)
{
    tls_test_server_opts o = {0};
    tls_test_pair p;

    o.operators = " \tlisted-operator\t ,x";
    CHECK_EQ(tls_test_handshake(&p, tls_test_server(&o, NULL, 0),
                                tls_test_client("ca.crt", "listed-operator", TERN_TLS_1_3,
                                                TERN_TLS_1_3)),
             TERN_TLS_ESTABLISHED);
    CHECK(tern_tls_is_operator(p.server));
    tls_test_pair_close(&p);
}

TEST(tls_failure_texts_are_distinct_and_present)
{
    for (int a = TERN_TLS_FAIL_NONE; a <= TERN_TLS_FAIL_OUT_OF_MEMORY; a++) {
        CHECK(tern_tls_failure_text((tern_tls_failure)a)[0] != '\0');
        for (int b = a + 1; b <= TERN_TLS_FAIL_OUT_OF_MEMORY; b++)
            CHECK(strcmp(tern_tls_failure_text((tern_tls_failure)a),
                         tern_tls_failure_text((tern_tls_failure)b)) != 0);
    }
    CHECK(strcmp(tern_tls_alert_text(48), "unknown_ca") == 0);
    CHECK(strcmp(tern_tls_alert_text(255), "alert") == 0);
}

TEST(tls_certificate_with_two_sans_of_the_type_is_refused_as_ambiguous)
{
    tls_test_pair p;

    CHECK_EQ(handshake_with_source(&p, TERN_TLS_IDENTITY_SAN_DNS, "two-dns"), TERN_TLS_FAILED);
    CHECK_EQ(tern_tls_failure_of(p.server), TERN_TLS_FAIL_NO_IDENTITY);
    tls_test_pair_close(&p);
}
