/*
 * test_broker_login.c - a CONNECT's user name and password in the core
 * (broker/login.h): right, wrong and unknown (refused after the delay,
 * counted), the user name as the identity the ACL sees, a certificate's
 * identity winning, no password file, plaintext refusal, MQTT 5.0 reason
 * codes, and a new table (a reload) locking a removed user out. The KDF
 * is a stand-in: test_tls_passwd.c checks the real one.
 */
#include "broker/acl.h"
#include "broker/broker-t.h"
#include "broker/login.h"
#include "broker/passwd.h"
#include "broker/wheel-t.h"
#include "fake_client.h"
#include "test.h"

#include <string.h>

#define ZKEY "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="
/* Past the refusal's deadline: the wheel fires up to one tick late. */
#define PAST_DELAY (AUTH_FAIL_DELAY_MS + WHEEL_TICK_MS + 100)
#define LINE(user) user ":$7$101$PCYW1kbeAM23Ccsx$" ZKEY "\n"

/* "right" derives the stored key (zeros), anything else does not. */
static bool fake_kdf(const uint8_t *pw, size_t pw_len, const uint8_t *salt, size_t salt_len,
                     uint32_t iterations, uint8_t *out, size_t out_len)
{
    (void)salt, (void)salt_len, (void)iterations;
    memset(out, pw_len == 5 && memcmp(pw, "right", 5) == 0 ? 0 : 0x5a, out_len);
    return true;
}

static void setup(fworld *w, const char *file, bool plaintext_ok)
{
    fw_init(w, NULL);
    w->b->pbkdf2 = fake_kdf; /* broker_config.pbkdf2 */
    w->b->allow_plaintext_passwords = plaintext_ok;
    if (file) {
        char err[256];
        broker_passwd *p = broker_passwd_parse(NULL, "pw", file, strlen(file), err, sizeof err);
        if (!p)
            fprintf(stderr, "%s\n", err);
        broker_set_passwd(w->b, p);
    }
}

/* CONNECT (level 4 or 5) with user / password (NULL: flag off). */
static void connect_with(fworld *w, fclient *c, uint8_t level, const char *id, const char *user,
                         const char *pw)
{
    mqtt_connect cp;
    memset(&cp, 0, sizeof cp);
    cp.level = level;
    cp.clean_session = true;
    cp.client_id = (mqtt_bytes){(const uint8_t *)id, strlen(id)};
    cp.username_flag = user != NULL;
    if (user)
        cp.username = (mqtt_bytes){(const uint8_t *)user, strlen(user)};
    cp.password_flag = pw != NULL;
    if (pw)
        cp.password = (mqtt_bytes){(const uint8_t *)pw, strlen(pw)};
    fc_send_connect(w, c, &cp);
}

/* The CONNACK's code, or -1 when none has arrived. */
static int connack(fclient *c)
{
    mqtt_packet pk;
    return fc_next_is(c, MQTT_CONNACK, &pk) ? fc_reason_of(&pk) : -1;
}

static uint64_t auth_failed(fworld *w)
{
    broker_stats st;
    broker_get_stats(w->b, &st);
    return st.auth_failed;
}

TEST(login_right_password_connects_and_the_user_name_is_the_acl_identity)
{
    fworld w;
    setup(&w, LINE("amy") LINE("bo"), true);
    char err[128];
    broker_set_acl(w.b, broker_acl_parse(NULL, "acl", "pattern readwrite home/%u/#\n", 28, err,
                                         sizeof err));
    fclient *c = fw_open(&w);
    connect_with(&w, c, 4, "c1", "amy", "right");
    CHECK_EQ(connack(c), 0);
    fc_subscribe(&w, c, 1, "home/amy/#", 0);
    fc_subscribe(&w, c, 2, "home/bo/#", 0);
    mqtt_packet pk;
    CHECK(fc_next_is(c, MQTT_SUBACK, &pk));
    CHECK_EQ(fc_reason_of(&pk), 0);
    CHECK(fc_next_is(c, MQTT_SUBACK, &pk));
    CHECK_EQ(fc_reason_of(&pk), 0x80);
    CHECK_EQ(auth_failed(&w), 0);
    fw_free(&w);
}

TEST(login_wrong_password_and_unknown_user_are_refused_4_after_the_delay)
{
    fworld w;
    setup(&w, LINE("amy"), true);
    fclient *wrong = fw_open(&w);
    fclient *unknown = fw_open(&w);
    connect_with(&w, wrong, 4, "c1", "amy", "wrong");
    connect_with(&w, unknown, 4, "c2", "zoe", "right");
    /* Nothing yet, and input sent meanwhile is dropped. */
    fc_publish(&w, wrong, "t", "x", 0, false, 0);
    fw_advance(&w, AUTH_FAIL_DELAY_MS - 100);
    CHECK_EQ(connack(wrong), -1);
    CHECK_EQ(connack(unknown), -1);
    CHECK(!wrong->closed);
    fw_advance(&w, WHEEL_TICK_MS + 200);
    CHECK_EQ(connack(wrong), MQTT_CONNACK_BAD_CREDENTIALS);
    CHECK_EQ(connack(unknown), MQTT_CONNACK_BAD_CREDENTIALS);
    CHECK(wrong->closed && unknown->closed);
    CHECK_EQ(auth_failed(&w), 2);
    fw_free(&w);
}

TEST(login_v5_wrong_password_gets_0x86_and_password_without_user_0x86)
{
    fworld w;
    setup(&w, LINE("amy"), true);
    fclient *c = fw_open(&w);
    connect_with(&w, c, 5, "c1", "amy", "wrong");
    fw_advance(&w, PAST_DELAY);
    CHECK_EQ(connack(c), MQTT_RC_BAD_USERNAME_OR_PASSWORD);
    fclient *d = fw_open(&w);
    connect_with(&w, d, 5, "c2", NULL, "right");
    CHECK_EQ(connack(d), MQTT_RC_BAD_USERNAME_OR_PASSWORD);
    fclient *e = fw_open(&w);
    connect_with(&w, e, 5, "c3", "amy", "right");
    CHECK_EQ(connack(e), 0);
    fw_free(&w);
}

TEST(login_user_name_without_password_is_refused_without_a_certificate)
{
    fworld w;
    setup(&w, LINE("amy"), true);
    fclient *c = fw_open(&w);
    connect_with(&w, c, 4, "c1", "amy", NULL);
    CHECK_EQ(connack(c), MQTT_CONNACK_BAD_CREDENTIALS);
    /* With a certificate the name alone is ignored, as before. */
    fclient *d = fw_open_as(&w, "cert-id", false);
    connect_with(&w, d, 4, "c2", "amy", NULL);
    CHECK_EQ(connack(d), 0);
    fw_free(&w);
}

TEST(login_without_password_file_credentials_are_refused_not_ignored)
{
    fworld w;
    setup(&w, NULL, true);
    fclient *a = fw_open(&w);
    connect_with(&w, a, 4, "c1", "alice", "secret");
    CHECK_EQ(connack(a), MQTT_CONNACK_BAD_CREDENTIALS);
    fclient *b = fw_open(&w);
    connect_with(&w, b, 5, "c2", "alice", NULL);
    CHECK_EQ(connack(b), MQTT_RC_BAD_USERNAME_OR_PASSWORD);
    fclient *cert = fw_open_as(&w, "alice", false);
    connect_with(&w, cert, 4, "c3", "alice", "secret"); /* a password is never ignored */
    CHECK_EQ(connack(cert), MQTT_CONNACK_BAD_CREDENTIALS);
    fclient *anon = fw_open(&w);
    connect_with(&w, anon, 4, "c4", NULL, NULL);
    CHECK_EQ(connack(anon), 0);
    CHECK_EQ(auth_failed(&w), 3);
    fw_free(&w);
}

TEST(login_password_on_plaintext_is_refused_unless_allowed)
{
    fworld w;
    setup(&w, LINE("amy"), false);
    fclient *a = fw_open(&w);
    connect_with(&w, a, 4, "c1", "amy", "right");
    CHECK_EQ(connack(a), MQTT_CONNACK_NOT_AUTHORIZED);
    fclient *b = fw_open(&w);
    connect_with(&w, b, 5, "c2", "amy", "right");
    CHECK_EQ(connack(b), MQTT_RC_NOT_AUTHORIZED);
    fw_free(&w);
}

TEST(login_certificate_identity_wins_but_a_given_password_must_match)
{
    fworld w;
    setup(&w, LINE("amy"), true);
    char err[128];
    broker_set_acl(w.b, broker_acl_parse(NULL, "acl", "pattern readwrite home/%u/#\n", 28, err,
                                         sizeof err));
    fclient *c = fw_open_as(&w, "cert-id", false);
    connect_with(&w, c, 4, "c1", "amy", "right");
    CHECK_EQ(connack(c), 0);
    fc_subscribe(&w, c, 1, "home/amy/#", 0);
    fc_subscribe(&w, c, 2, "home/cert-id/#", 0);
    mqtt_packet pk;
    CHECK(fc_next_is(c, MQTT_SUBACK, &pk));
    CHECK_EQ(fc_reason_of(&pk), 0x80);
    CHECK(fc_next_is(c, MQTT_SUBACK, &pk));
    CHECK_EQ(fc_reason_of(&pk), 0);
    fclient *d = fw_open_as(&w, "cert-id", false);
    connect_with(&w, d, 4, "c2", "amy", "wrong");
    fw_advance(&w, PAST_DELAY);
    CHECK_EQ(connack(d), MQTT_CONNACK_BAD_CREDENTIALS);
    fw_free(&w);
}

TEST(login_new_table_without_a_user_refuses_their_next_connect)
{
    fworld w;
    setup(&w, LINE("amy") LINE("bo"), true);
    fclient *a = fw_open(&w);
    connect_with(&w, a, 4, "c1", "bo", "right");
    CHECK_EQ(connack(a), 0);
    char err[128];
    const char *file = LINE("amy");
    broker_set_passwd(w.b, broker_passwd_parse(NULL, "pw", file, strlen(file), err, sizeof err));
    CHECK(!a->closed); /* connected clients stay */
    fclient *b = fw_open(&w);
    connect_with(&w, b, 4, "c2", "bo", "right");
    fw_advance(&w, PAST_DELAY);
    CHECK_EQ(connack(b), MQTT_CONNACK_BAD_CREDENTIALS);
    fclient *c = fw_open(&w);
    connect_with(&w, c, 4, "c3", "amy", "right");
    CHECK_EQ(connack(c), 0);
    fw_free(&w);
}
