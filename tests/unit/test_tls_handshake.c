/*
 * test_tls_handshake.c - the TLS adapter's authentication outcomes (SPEC
 * C3): a client and a server adapter handshaking in memory with the
 * certificates of tests/unit/data/tls/. Who gets in, with which identity
 * and role, and why the others are refused.
 */
#include "test.h"

#include <stdlib.h>

#include "test_tls_pair.h"

/* The usual server: client CA ca.crt, operator CA operator-ca.crt. */
static tern_tls_server *standard_server(void)
{
    tls_test_server_opts o = {0};

    o.operator_ca = "operator-ca.crt";
    return tls_test_server(&o, NULL, 0);
}

static tern_tls_client *client_13(const char *cert)
{
    return tls_test_client("ca.crt", cert, TERN_TLS_1_3, TERN_TLS_1_3);
}

TEST(tls_valid_client_certificate_is_accepted_with_its_cn_as_identity)
{
    tls_test_pair p;
    tern_tls_state st = tls_test_handshake(&p, standard_server(), client_13("dev-client"));

    CHECK_EQ(st, TERN_TLS_ESTABLISHED);
    CHECK_EQ(tern_tls_state_of(p.client), TERN_TLS_ESTABLISHED);
    CHECK(tern_tls_identity(p.server) != NULL);
    CHECK(strcmp(tern_tls_identity(p.server), "dev-client") == 0);
    CHECK(!tern_tls_is_operator(p.server));
    CHECK(strcmp(tern_tls_version_name(p.server), "TLSv1.3") == 0);
    CHECK_EQ(tern_tls_failure_of(p.server), TERN_TLS_FAIL_NONE);
    tls_test_pair_close(&p);
}

TEST(tls_client_without_certificate_is_refused)
{
    tls_test_pair p;
    tern_tls_state st = tls_test_handshake(&p, standard_server(), client_13(NULL));

    CHECK_EQ(st, TERN_TLS_FAILED);
    CHECK_EQ(tern_tls_failure_of(p.server), TERN_TLS_FAIL_NO_CERT);
    CHECK(tern_tls_identity(p.server) == NULL);
    /* The client is told (an alert), not left hanging. */
    CHECK(tern_tls_state_of(p.client) == TERN_TLS_FAILED);
    tls_test_pair_close(&p);
}

TEST(tls_client_certificate_from_another_ca_is_refused)
{
    tls_test_pair p;
    tern_tls_state st = tls_test_handshake(&p, standard_server(), client_13("intruder"));

    CHECK_EQ(st, TERN_TLS_FAILED);
    CHECK_EQ(tern_tls_failure_of(p.server), TERN_TLS_FAIL_UNKNOWN_CA);
    CHECK(tern_tls_error_code(p.server) < 0);
    tls_test_pair_close(&p);
}

TEST(tls_expired_client_certificate_is_refused)
{
    tls_test_pair p;
    tern_tls_state st = tls_test_handshake(&p, standard_server(), client_13("expired"));

    CHECK_EQ(st, TERN_TLS_FAILED);
    CHECK_EQ(tern_tls_failure_of(p.server), TERN_TLS_FAIL_EXPIRED);
    tls_test_pair_close(&p);
}

TEST(tls_not_yet_valid_client_certificate_is_refused)
{
    tls_test_pair p;
    tern_tls_state st = tls_test_handshake(&p, standard_server(), client_13("not-yet-valid"));

    CHECK_EQ(st, TERN_TLS_FAILED);
    CHECK_EQ(tern_tls_failure_of(p.server), TERN_TLS_FAIL_NOT_YET_VALID);
    tls_test_pair_close(&p);
}

/* The replaceable clock: in 2200 every certificate here has expired. */
static time_t year_2200(time_t *t)
{
    time_t v = (time_t)7258118400; /* 2200-01-01T00:00:00Z */

    if (t != NULL)
        *t = v;
    return v;
}

TEST(tls_clock_replacement_decides_certificate_validity)
{
    tls_test_pair p;
    tern_tls_server *s = standard_server();
    tern_tls_client *cl = client_13("dev-client");
    tern_tls_state st;

    /* Contexts first: loading a CA checks its dates against the clock too. */
    CHECK(s != NULL && cl != NULL);
    tern_tls_set_clock(year_2200);
    st = tls_test_handshake(&p, s, cl);
    tern_tls_set_clock(NULL);
    CHECK_EQ(st, TERN_TLS_FAILED);
    /* The client checks the server's certificate first and gives up. */
    CHECK_EQ(tern_tls_failure_of(p.client), TERN_TLS_FAIL_EXPIRED);
    tls_test_pair_close(&p);

    /* Back on the real clock the same pair works. */
    st = tls_test_handshake(&p, standard_server(), client_13("dev-client"));
    CHECK_EQ(st, TERN_TLS_ESTABLISHED);
    tls_test_pair_close(&p);
}

TEST(tls_certificate_from_operator_ca_makes_an_operator)
{
    tls_test_pair p;
    tern_tls_state st = tls_test_handshake(&p, standard_server(), client_13("dev-operator"));

    CHECK_EQ(st, TERN_TLS_ESTABLISHED);
    CHECK(strcmp(tern_tls_identity(p.server), "dev-operator") == 0);
    CHECK(tern_tls_is_operator(p.server));
    tls_test_pair_close(&p);
}

TEST(tls_operator_certificate_is_refused_when_operator_ca_not_configured)
{
    tls_test_pair p;
    tern_tls_state st = tls_test_handshake(&p, tls_test_server(NULL, NULL, 0),
                                           client_13("dev-operator"));

    CHECK_EQ(st, TERN_TLS_FAILED);
    CHECK_EQ(tern_tls_failure_of(p.server), TERN_TLS_FAIL_UNKNOWN_CA);
    tls_test_pair_close(&p);
}

TEST(tls_identity_listed_in_operators_is_an_operator)
{
    tls_test_server_opts o = {0};
    tls_test_pair p;
    tern_tls_state st;

    o.operators = "someone-else, listed-operator";
    st = tls_test_handshake(&p, tls_test_server(&o, NULL, 0), client_13("listed-operator"));
    CHECK_EQ(st, TERN_TLS_ESTABLISHED);
    CHECK(tern_tls_is_operator(p.server));
    tls_test_pair_close(&p);

    st = tls_test_handshake(&p, tls_test_server(&o, NULL, 0), client_13("dev-client"));
    CHECK_EQ(st, TERN_TLS_ESTABLISHED);
    CHECK(!tern_tls_is_operator(p.server));
    tls_test_pair_close(&p);
}

TEST(tls_12_only_client_is_refused_when_minimum_is_13)
{
    tls_test_pair p;
    tern_tls_state st = tls_test_handshake(
        &p, standard_server(), tls_test_client("ca.crt", "dev-client", TERN_TLS_1_2, TERN_TLS_1_2));

    CHECK_EQ(st, TERN_TLS_FAILED);
    CHECK_EQ(tern_tls_failure_of(p.server), TERN_TLS_FAIL_VERSION);
    tls_test_pair_close(&p);
}

TEST(tls_12_client_is_accepted_when_minimum_is_12)
{
    tls_test_server_opts o = {0};
    tls_test_pair p;
    tern_tls_state st;

    o.min_version = TERN_TLS_1_2;
    o.operator_ca = "operator-ca.crt";
    st = tls_test_handshake(&p, tls_test_server(&o, NULL, 0),
                            tls_test_client("ca.crt", "dev-operator", TERN_TLS_1_2, TERN_TLS_1_2));
    CHECK_EQ(st, TERN_TLS_ESTABLISHED);
    CHECK(strcmp(tern_tls_version_name(p.server), "TLSv1.2") == 0);
    CHECK(strcmp(tern_tls_identity(p.server), "dev-operator") == 0);
    CHECK(tern_tls_is_operator(p.server));
    tls_test_pair_close(&p);

    /* And 1.3 still wins when both sides can. */
    st = tls_test_handshake(&p, tls_test_server(&o, NULL, 0), client_13("dev-client"));
    CHECK_EQ(st, TERN_TLS_ESTABLISHED);
    CHECK(strcmp(tern_tls_version_name(p.server), "TLSv1.3") == 0);
    tls_test_pair_close(&p);
}

TEST(tls_optional_client_certificate_lets_anonymous_clients_in)
{
    tls_test_server_opts o = {0};
    tls_test_pair p;
    tern_tls_state st;

    o.optional_client_cert = true;
    st = tls_test_handshake(&p, tls_test_server(&o, NULL, 0), client_13(NULL));
    CHECK_EQ(st, TERN_TLS_ESTABLISHED);
    CHECK(tern_tls_identity(p.server) == NULL);
    CHECK(!tern_tls_is_operator(p.server));
    tls_test_pair_close(&p);

    /* A certificate that is sent is still checked. */
    st = tls_test_handshake(&p, tls_test_server(&o, NULL, 0), client_13("intruder"));
    CHECK_EQ(st, TERN_TLS_FAILED);
    CHECK_EQ(tern_tls_failure_of(p.server), TERN_TLS_FAIL_UNKNOWN_CA);
    tls_test_pair_close(&p);
}

TEST(tls_client_refusing_server_certificate_is_reported_as_its_alert)
{
    tls_test_pair p;
    /* The client trusts only other-ca, so it rejects our server. */
    tern_tls_state st = tls_test_handshake(
        &p, standard_server(), tls_test_client("other-ca.crt", "dev-client", TERN_TLS_1_3,
                                               TERN_TLS_1_3));

    CHECK_EQ(st, TERN_TLS_FAILED);
    CHECK_EQ(tern_tls_failure_of(p.server), TERN_TLS_FAIL_PEER_ALERT);
    CHECK(tern_tls_peer_alert(p.server) > 0);
    CHECK(strcmp(tern_tls_alert_text(tern_tls_peer_alert(p.server)), "alert") != 0);
    tls_test_pair_close(&p);
}
