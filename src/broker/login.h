/*
 * login.h - a CONNECT's user name and password (login.c): checked against
 * the password file (passwd.h), and the user name made the connection's
 * identity when it has no client certificate. The rules (docs/CONFIG.md,
 * auth.password_file):
 *
 *   - neither given: nothing to check (auth.allow_anonymous decides later);
 *   - no password file: a password, or a user name from a client without
 *     a certificate, is refused (CONNACK 4 / 0x86) rather than silently
 *     ignored; a certificate's holder may send a user name alone, ignored;
 *   - a password on a plaintext listener: refused unchecked (5 / 0x87)
 *     unless auth.allow_plaintext_passwords;
 *   - a user name without a password (no certificate), or a password
 *     without a user name (5.0): refused (4 / 0x86);
 *   - a certificate and a password: the password must match the user
 *     name's entry; the identity stays the certificate's;
 *   - a wrong password or unknown user: refused after AUTH_FAIL_DELAY_MS.
 */
#ifndef TERN_BROKER_LOGIN_H
#define TERN_BROKER_LOGIN_H

#include "broker/broker.h"
#include "mqtt/mqtt.h"

/* How long a CONNECT whose password check failed waits for its refusal:
 * slows guessing on one connection to one try a second, without blocking
 * the loop (the connection waits on the timing wheel, its input dropped).
 * Parallel guessing is bounded by limits.max_connections, each attempt
 * holding a connection for this long. */
#define AUTH_FAIL_DELAY_MS 1000u

typedef enum bk_login_result {
    BK_LOGIN_PASS,         /* go on (the identity may now be the user name) */
    BK_LOGIN_REFUSE,       /* refuse now with the codes and reason given */
    BK_LOGIN_REFUSE_LATER, /* wrong password: refuse after AUTH_FAIL_DELAY_MS */
} bk_login_result;

typedef struct bk_login_refusal {
    unsigned code311; /* CONNACK return code at levels 3/4 */
    uint8_t rc5;      /* CONNACK reason code at level 5 */
    const char *why;  /* reason string and log text */
} bk_login_refusal;

/* Check cp's credentials for c (conn_name: for logs). Counts refusals in
 * stats.auth_failed and logs them (rate-limited). */
bk_login_result bk_login(broker *b, broker_conn *c, const char *conn_name,
                         const mqtt_connect *cp, bk_login_refusal *out);

#endif
