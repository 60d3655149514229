/*
 * login.c - a CONNECT's user name and password (login.h): the rules in
 * one place, so conn.c's CONNECT handler only acts on the verdict.
 */
#include "broker/login.h"

#include "broker/base.h"
#include "broker/broker-t.h"
#include "broker/conn-t.h"
#include "broker/mem.h"
#include "broker/passwd.h"

#include <string.h>

/* Longest part of a user name a log line shows. */
#define LOG_USER_MAX 100

static bk_login_result refuse(broker *b, const char *conn_name, const mqtt_connect *cp,
                              bk_login_refusal *out, unsigned code311, uint8_t rc5,
                              const char *why)
{
    size_t ul = cp->username_flag ? cp->username.len : 0;
    b->stats.auth_failed++;
    bk_log_limited(b, BK_LOGK_AUTH, BROKER_LOG_WARN, "connection %s: CONNECT%s%.*s%s refused: %s",
                   conn_name, ul ? " as user '" : "", (int)(ul > LOG_USER_MAX ? LOG_USER_MAX : ul),
                   ul ? (const char *)cp->username.p : "", ul ? "'" : "", why);
    out->code311 = code311;
    out->rc5 = rc5;
    out->why = why;
    return BK_LOGIN_REFUSE;
}

bk_login_result bk_login(broker *b, broker_conn *c, const char *conn_name,
                         const mqtt_connect *cp, bk_login_refusal *out)
{
    bool has_user = cp->username_flag, has_pw = cp->password_flag;
    if (!has_user && !has_pw)
        return BK_LOGIN_PASS;
    if (!has_pw && c->identity)
        return BK_LOGIN_PASS; /* the certificate is the identity; the name is ignored */
    if (!b->passwd)
        return refuse(b, conn_name, cp, out, MQTT_CONNACK_BAD_CREDENTIALS,
                      MQTT_RC_BAD_USERNAME_OR_PASSWORD,
                      "user names and passwords are not accepted (no auth.password_file)");
    if (!has_pw)
        return refuse(b, conn_name, cp, out, MQTT_CONNACK_BAD_CREDENTIALS,
                      MQTT_RC_BAD_USERNAME_OR_PASSWORD, "user name without a password");
    if (!has_user)
        return refuse(b, conn_name, cp, out, MQTT_CONNACK_BAD_CREDENTIALS,
                      MQTT_RC_BAD_USERNAME_OR_PASSWORD, "password without a user name");
    if (!c->secure && !b->allow_plaintext_passwords)
        return refuse(b, conn_name, cp, out, MQTT_CONNACK_NOT_AUTHORIZED, MQTT_RC_NOT_AUTHORIZED,
                      "password sent in plaintext (use TLS, or set "
                      "auth.allow_plaintext_passwords)");
    const mqtt_bytes *u = &cp->username;
    /* The identity is a C string: a name with a NUL in it (the codec's
     * UTF-8 check refuses U+0000, this is a second fence) cannot be one. */
    bool ok = broker_passwd_check(b->passwd, b->pbkdf2, u->p, u->len, cp->password.p,
                                  cp->password.len) &&
              memchr(u->p, '\0', u->len) == NULL;
    if (!ok) {
        refuse(b, conn_name, cp, out, MQTT_CONNACK_BAD_CREDENTIALS,
               MQTT_RC_BAD_USERNAME_OR_PASSWORD, "bad user name or password");
        return BK_LOGIN_REFUSE_LATER;
    }
    if (c->identity)
        return BK_LOGIN_PASS; /* the password matched; the certificate stays the identity */
    char *id = bk_mem_alloc(b, u->len + 1);
    if (!id) {
        out->code311 = MQTT_CONNACK_UNAVAILABLE;
        out->rc5 = MQTT_RC_SERVER_UNAVAILABLE;
        out->why = "out of memory";
        return BK_LOGIN_REFUSE;
    }
    memcpy(id, u->p, u->len);
    id[u->len] = '\0';
    c->identity = id;
    return BK_LOGIN_PASS;
}
