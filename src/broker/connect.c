/*
 * connect.c - a client's CONNECT: its checks and refusals, authentication
 * and login, the will, taking over or resuming a session, and the CONNACK
 * with the properties that say what the broker allows (MQTT 5.0).
 */
#include "broker/alias.h"
#include "broker/auth.h"
#include "broker/base.h"
#include "broker/broker-t.h"
#include "broker/conn.h"
#include "broker/conn_internal.h"
#include "broker/console_core.h"
#include "broker/deliver.h"
#include "broker/ident.h"
#include "broker/login.h"
#include "broker/mem.h"
#include "broker/msg.h"
#include "broker/persist.h"
#include "broker/publish.h"
#include "broker/session.h"
#include "broker/subscribe.h"
#include "broker/wheel.h"
#include "mqtt/mqtt.h"

#include <stdio.h>
#include <string.h>

static bool same_identity(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Largest CONNACK property block connect.c builds: the capability
 * properties (under 40 bytes), an assigned client id (21 bytes:
 * make_auto_id) and a Reason String of at most REASON_STRING_MAX. */
#define REASON_STRING_MAX 160u
#define CONNACK_PROPS_MAX (96u + REASON_STRING_MAX)

/* The CONNACK's properties at level 5 [MQTT-3.2.2]: on success what the
 * broker allows (its limits and switches), and what it changed of the
 * client's request; on a refusal only the Reason String. Built from the
 * connection when it goes out, as a held CONNACK does later. */
static size_t connack_props(const broker *b, const broker_conn *c, uint8_t code, uint8_t *out,
                            size_t cap)
{
    size_t n = 0;
    if (code != MQTT_RC_SUCCESS)
        return 0;
    const session *s = c->sess;
    if (c->connack_expiry)
        n += mqtt_prop_u32(out + n, cap - n, MQTT_PROP_SESSION_EXPIRY, s->expiry_interval_s);
    n += mqtt_prop_u16(out + n, cap - n, MQTT_PROP_RECEIVE_MAXIMUM,
                       (uint16_t)(b->lim.receive_maximum < UINT16_MAX ? b->lim.receive_maximum
                                                                      : UINT16_MAX));
    /* Maximum QoS: absent, tern takes QoS 2 [MQTT-3.2.2-9]. */
    if (b->retain_disabled)
        n += mqtt_prop_u8(out + n, cap - n, MQTT_PROP_RETAIN_AVAILABLE, 0);
    n += mqtt_prop_u32(out + n, cap - n, MQTT_PROP_MAXIMUM_PACKET_SIZE, b->lim.max_packet_size);
    if (c->connack_assigned_id) /* [MQTT-3.2.2-16] */
        n += mqtt_prop_bytes(out + n, cap - n, MQTT_PROP_ASSIGNED_CLIENT_ID,
                             (const uint8_t *)s->id, s->id_len);
    if (b->lim.max_topic_alias != UINT32_MAX) /* the maximum alias.c enforces */
        n += mqtt_prop_u16(out + n, cap - n, MQTT_PROP_TOPIC_ALIAS_MAXIMUM, bk_alias_in_max(b));
    n += mqtt_prop_u8(out + n, cap - n, MQTT_PROP_WILDCARD_SUB_AVAILABLE, 1);
    n += mqtt_prop_u8(out + n, cap - n, MQTT_PROP_SUB_ID_AVAILABLE, 1);
    n += mqtt_prop_u8(out + n, cap - n, MQTT_PROP_SHARED_SUB_AVAILABLE,
                      b->shared_subs_disabled ? 0 : 1);
    if (c->connack_keepalive) /* the client must use it [MQTT-3.2.2-21] */
        n += mqtt_prop_u16(out + n, cap - n, MQTT_PROP_SERVER_KEEP_ALIVE, c->keepalive_s);
    return n;
}

/* CONNACK: at level 5 with the reason code and properties (why, when
 * given, becomes a refusal's Reason String); at levels 3/4 the return code
 * (code is then a 3.1.1 return code). */
bool bk_send_connack(broker *b, broker_conn *c, bool present, uint8_t code, const char *why)
{
    if (c->level != MQTT_LEVEL_5) {
        uint8_t *p = bk_out_reserve(b, c, 4);
        if (!p)
            return false;
        size_t w = mqtt_encode_connack(p, 4, c->level ? c->level : MQTT_LEVEL_311, present, code);
        ALWAYS(w == 4);
        bk_out_commit(b, c, 4);
        return true;
    }
    uint8_t props[CONNACK_PROPS_MAX];
    uint8_t pkt[CONNACK_PROPS_MAX + 16];
    size_t np = connack_props(b, c, code, props, sizeof props);
    size_t base = np;
    /* A Reason String only for a client that did not turn problem
     * information off, and only within its Maximum Packet Size
     * [MQTT-3.2.2-19]. */
    if (why && c->request_problem_info) {
        size_t len = strlen(why);
        np += mqtt_prop_bytes(props + np, sizeof props - np, MQTT_PROP_REASON_STRING,
                              (const uint8_t *)why, len < REASON_STRING_MAX ? len : REASON_STRING_MAX);
    }
    mqtt_bytes pv = {props, np};
    size_t w = mqtt_encode_connack5(pkt, sizeof pkt, present, code, &pv, np ? 1 : 0);
    if (w > c->client_max_packet && np != base) {
        pv.len = np = base;
        w = mqtt_encode_connack5(pkt, sizeof pkt, present, code, &pv, np ? 1 : 0);
    }
    ALWAYS(w != 0);
    uint8_t *p = bk_out_reserve(b, c, w);
    if (!p)
        return false;
    memcpy(p, pkt, w);
    bk_out_commit(b, c, w);
    return true;
}

/* Refuse a CONNECT: CONNACK with the refusal (rc5 at level 5, code311 at
 * levels 3/4; REFUSE_SILENT there: no return code says it, close without
 * a CONNACK), then close [MQTT-3.2.2-7]. */
#define REFUSE_SILENT 0xFFu
static void refuse(broker *b, broker_conn *c, unsigned code311, uint8_t rc5, const char *why)
{
    if (c->level == MQTT_LEVEL_5)
        bk_send_connack(b, c, false, rc5, why);
    else if (code311 != REFUSE_SILENT)
        bk_send_connack(b, c, false, (uint8_t)code311, NULL);
    bk_conn_end(b, c, false, why, b->now_ms);
}

void bk_conn_refusal_due(broker *b, broker_conn *c)
{
    refuse(b, c, MQTT_CONNACK_BAD_CREDENTIALS, MQTT_RC_BAD_USERNAME_OR_PASSWORD,
           "bad user name or password");
}


static void make_auto_id(broker *b, char *out, size_t cap)
{
    do {
        /* Unique within this broker; mixing in the start time keeps ids from
         * repeating across restarts of a broker with persistent sessions. */
        uint64_t x = b->start_ms * 0x9e3779b97f4a7c15ull ^ ++b->auto_id_counter;
        snprintf(out, cap, "auto-%016llx", (unsigned long long)x);
    } while (bk_session_find(&b->sessions, (const uint8_t *)out, strlen(out)));
}

/* MQTT 5.0: what the CONNECT's properties ask of the connection
 * (conn-t.h); broker_open set the values of their absence. */
static void connect_props(broker_conn *c, const mqtt_connect *cp)
{
    const mqtt_props *p = &cp->props;
    if (cp->level != MQTT_LEVEL_5)
        return;
    if (p->present & MQTT_PROP_BIT(MQTT_PROP_RECEIVE_MAXIMUM))
        c->client_receive_max = p->receive_maximum;
    if (p->present & MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS_MAXIMUM))
        c->client_topic_alias_max = p->topic_alias_maximum;
    if (p->present & MQTT_PROP_BIT(MQTT_PROP_MAXIMUM_PACKET_SIZE))
        c->client_max_packet = p->maximum_packet_size;
    if (p->present & MQTT_PROP_BIT(MQTT_PROP_REQUEST_PROBLEM_INFO))
        c->request_problem_info = p->request_problem_info != 0;
    if (p->present & MQTT_PROP_BIT(MQTT_PROP_REQUEST_RESPONSE_INFO))
        c->request_response_info = p->request_response_info != 0;
    c->auth_method = (p->present & MQTT_PROP_BIT(MQTT_PROP_AUTH_METHOD)) != 0;
    if (cp->will_flag && (cp->will_props.present & MQTT_PROP_BIT(MQTT_PROP_WILL_DELAY)))
        c->will_delay_s = cp->will_props.will_delay;
}

/* The Session Expiry Interval the session gets (session-t.h): a 5.0
 * client's request (absent: 0), at most session.expiry when that is set;
 * a 3.1.1 client's mapped. *changed: the server lowered the request (the
 * CONNACK says so). */
static uint32_t connect_expiry(const broker *b, const mqtt_connect *cp, bool *changed)
{
    uint32_t cap = b->lim.session_expiry_s ? b->lim.session_expiry_s : UINT32_MAX;
    *changed = false;
    if (cp->level != MQTT_LEVEL_5)
        return cp->clean_session ? 0 : cap;
    uint32_t asked = (cp->props.present & MQTT_PROP_BIT(MQTT_PROP_SESSION_EXPIRY))
                         ? cp->props.session_expiry
                         : 0;
    if (asked > cap) {
        *changed = true;
        return cap;
    }
    return asked;
}

/* The will message of a CONNECT. At level 5 with its properties, less the
 * Will Delay Interval (the connection keeps it): a Message Expiry Interval
 * stays until the will is published (session-t.h). NULL: out of memory. */
static msg *make_will(broker *b, const mqtt_connect *cp)
{
    const mqtt_bytes *raw = &cp->will_props.raw;
    if (cp->level != MQTT_LEVEL_5 || raw->len == 0)
        return bk_msg_new(b, cp->will_topic.p, cp->will_topic.len, cp->will_payload.p,
                          cp->will_payload.len, cp->will_qos, cp->will_retain);
    uint8_t *props = bk_mem_alloc(b, raw->len);
    if (!props)
        return NULL;
    size_t n = mqtt_props_filter(raw, MQTT_PROP_BIT(MQTT_PROP_WILL_DELAY), props, raw->len);
    ALWAYS(n != SIZE_MAX); /* filtering never grows a block */
    msg *m = bk_msg_new5(b, cp->will_topic.p, cp->will_topic.len, cp->will_payload.p,
                         cp->will_payload.len, props, n, cp->will_qos, cp->will_retain, 0);
    bk_mem_free(b, props);
    return m;
}

void bk_handle_connect(broker *b, broker_conn *c, const mqtt_connect *cp)
{
    char auto_id[32];
    uint64_t mark = bk_journal_mark(b);
    const uint8_t *id = cp->client_id.p;
    size_t id_len = cp->client_id.len;
    bool v5 = cp->level == MQTT_LEVEL_5;

    c->level = cp->level;
    c->bridge = cp->bridge;
    connect_props(c, cp);
    if (c->auth_method) {
        /* Enhanced authentication (auth.h): tern knows no method yet, so
         * every one is refused [MQTT-4.12.0-1]. */
        const mqtt_bytes *mn = &cp->props.auth_method;
        const bk_auth_method *m = bk_auth_find(mn->p, mn->len);
        uint8_t rc = m ? m->start(b, c, cp) : MQTT_RC_BAD_AUTHENTICATION_METHOD;
        if (rc != MQTT_RC_SUCCESS) {
            /* A method that continues (0x18) needs the AUTH exchange in
             * handle_packet, to be written with the first such method. */
            refuse(b, c, REFUSE_SILENT, rc >= 0x80 ? rc : MQTT_RC_IMPLEMENTATION_SPECIFIC,
                   "authentication method not supported");
            return;
        }
    }
    if (id_len == 0) {
        /* 3.1 requires an id; 3.1.1 lets the server assign one, but only
         * for a clean session [MQTT-3.1.3-8]; 5.0 always, and says which
         * in CONNACK [MQTT-3.1.3-6] [MQTT-3.1.3-7]. */
        if (cp->level == MQTT_LEVEL_31 || (!v5 && !cp->clean_session)) {
            refuse(b, c, MQTT_CONNACK_ID_REJECTED, MQTT_RC_CLIENT_ID_NOT_VALID, "empty client id");
            return;
        }
        make_auto_id(b, auto_id, sizeof auto_id);
        id = (const uint8_t *)auto_id;
        id_len = strlen(auto_id);
        c->connack_assigned_id = v5;
    }
    bk_login_refusal lr;
    switch (bk_login(b, c, conn_name(c), cp, &lr)) {
    case BK_LOGIN_PASS:
        break;
    case BK_LOGIN_REFUSE:
        refuse(b, c, lr.code311, lr.rc5, lr.why);
        return;
    case BK_LOGIN_REFUSE_LATER:
        /* Not now: a guesser waits for each answer (login.h), and the
         * loop goes on meanwhile; bk_conn_refusal_due answers. */
        c->state = CONN_REFUSING;
        bk_wheel_set(&b->wheel, c, b->now_ms + AUTH_FAIL_DELAY_MS);
        return;
    }
    if (!c->identity && !b->allow_anonymous) {
        refuse(b, c, MQTT_CONNACK_NOT_AUTHORIZED, MQTT_RC_NOT_AUTHORIZED,
               "anonymous clients not allowed");
        return;
    }
    const char *over =
        cp->will_flag ? bk_topic_over_limits(b, cp->will_topic.p, cp->will_topic.len) : NULL;
    if (over) {
        /* No 3.1.1 return code says "will topic refused": close without
         * one [MQTT-3.2.2-6] (3.1.1), as for a PUBLISH to such a topic;
         * 5.0 has 0x90. */
        b->stats.topics_refused++;
        bk_log_limited(b, BK_LOGK_TOPIC_LIMITS, BROKER_LOG_INFO,
                       "connection %s: will topic '%.*s' refused: beyond limits.%s",
                       conn_name(c), (int)(cp->will_topic.len > 200 ? 200 : cp->will_topic.len),
                       (const char *)cp->will_topic.p, over);
        refuse(b, c, REFUSE_SILENT, MQTT_RC_TOPIC_NAME_INVALID, "will topic beyond the limits");
        return;
    }
    if (cp->will_flag && cp->will_retain && b->retain_disabled) {
        /* [MQTT-3.2.2-13]: a retained will where retain is not available. */
        refuse(b, c, REFUSE_SILENT, MQTT_RC_RETAIN_NOT_SUPPORTED,
               "retained will, retain not available");
        return;
    }
    if (cp->will_flag && v5 && cp->will_props.payload_format == 1 &&
        !mqtt_utf8_valid(cp->will_payload.p, cp->will_payload.len)) {
        /* The will says its payload is UTF-8 and it is not. */
        refuse(b, c, REFUSE_SILENT, MQTT_RC_PAYLOAD_FORMAT_INVALID,
               "will payload is not the UTF-8 its format indicator says");
        return;
    }

    session *s = bk_session_find(&b->sessions, id, id_len);
    if (s && !same_identity(s->identity, c->identity)) {
        /* A client id belongs to the identity that created its session:
         * another identity may neither take it over nor read its queue. */
        refuse(b, c, MQTT_CONNACK_ID_REJECTED, MQTT_RC_CLIENT_ID_NOT_VALID,
               "client id in use by another identity");
        return;
    }
    /* A will is never a console request: only a live operator's PUBLISH is
     * (console.c), so the ACL's exception for it does not apply here. */
    if (cp->will_flag &&
        (bk_console_is_request(cp->will_topic.p, cp->will_topic.len) ||
         !broker_acl_check(b->acl, c->identity, (const char *)id, c->is_operator,
                           (const char *)cp->will_topic.p, cp->will_topic.len,
                           BROKER_ACL_WRITE))) {
        b->stats.acl_denied++;
        refuse(b, c, MQTT_CONNACK_NOT_AUTHORIZED, MQTT_RC_NOT_AUTHORIZED,
               "will topic not allowed");
        return;
    }
    bool expiry_changed;
    uint32_t expiry = connect_expiry(b, cp, &expiry_changed);
    if (expiry != 0 && c->identity && (!s || s->clean) &&
        bk_ident_persistent(b, c->identity) >= b->lim.max_sessions_per_identity) {
        /* One more persistent session for this identity: refused before a
         * clean session of the same id is taken over, so the refusal
         * changes nothing. 0x05: the refusal is about this identity, not
         * the server (0x03 would invite a retry that cannot succeed); 5.0
         * says it exactly, 0x97 Quota exceeded. */
        b->stats.sessions_refused++;
        bk_log_limited(b, BK_LOGK_SESSIONS, BROKER_LOG_WARN,
                       "connection %s: persistent session '%.*s' refused: identity '%.100s' "
                       "holds limits.max_sessions_per_identity (%u)",
                       conn_name(c), (int)(id_len > 200 ? 200 : id_len), (const char *)id,
                       c->identity, b->lim.max_sessions_per_identity);
        refuse(b, c, MQTT_CONNACK_NOT_AUTHORIZED, MQTT_RC_QUOTA_EXCEEDED,
               "persistent sessions of its identity at their limit");
        return;
    }
    if (s && s->conn) {
        /* Takeover [MQTT-3.1.4-2] (3.1.1) [MQTT-3.1.4-3] (5.0: told with
         * 0x8E): the old connection ends abnormally, its will fires. */
        bk_conn_end_reason(b, s->conn, MQTT_RC_SESSION_TAKEN_OVER, true,
                           "taken over by a new connection", b->now_ms);
        s = bk_session_find(&b->sessions, id, id_len); /* a clean one is gone */
    }
    bool present = false;
    if (s && cp->clean_session) {
        /* Clean Start: the old session ends, a will it held with it
         * [MQTT-3.1.2-4]. */
        bk_session_end(b, s, b->now_ms);
        s = NULL;
    }
    if (s) {
        present = true; /* [MQTT-3.1.2-5] [MQTT-3.2.2-3] */
    } else {
        s = bk_session_create(b, &b->sessions, id, id_len, expiry == 0);
        if (s && c->identity && bk_ident_attach(b, s, c->identity, strlen(c->identity)) != 0) {
            bk_session_destroy(b, s);
            s = NULL;
        }
        if (!s) {
            refuse(b, c, MQTT_CONNACK_UNAVAILABLE, MQTT_RC_SERVER_UNAVAILABLE, "out of memory");
            return;
        }
        s->expiry_interval_s = expiry;
    }
    if (!present || s->is_operator != c->is_operator) {
        s->is_operator = c->is_operator;
        bk_journal_session_put(b, s);
    }
    if (present)
        bk_session_set_expiry(b, s, expiry); /* journaled when it changed */
    if (cp->will_flag) {
        c->will = make_will(b, cp);
        if (!c->will) {
            if (!present)
                bk_session_destroy(b, s);
            refuse(b, c, MQTT_CONNACK_UNAVAILABLE, MQTT_RC_SERVER_UNAVAILABLE, "out of memory");
            return;
        }
    }

    /* A CONNECT that created or discarded a persistent session is answered
     * once that is on disk: a client told its clean start happened must
     * never see the old session again after a crash (it has dropped its
     * half, so a resent QoS 2 message would reach it twice). Until then
     * its input waits and nothing else is sent to it. Taken before the
     * session goes online, whose record (no longer expiring) the CONNACK
     * need not wait for. */
    uint64_t gate = bk_journal_gate_if_changed(b, mark);
    c->state = CONN_ACTIVE;
    c->sess = s;
    bk_session_set_online(b, s, c);
    uint16_t keepalive = cp->keepalive;
    if (v5 && (keepalive == 0 || keepalive > b->lim.max_keepalive)) {
        /* limits.max_keepalive caps a 5.0 client's keep alive, and gives
         * one to a client asking none: the CONNACK's Server Keep Alive
         * says so, and that is the one used [MQTT-3.2.2-21]. */
        keepalive = (uint16_t)(b->lim.max_keepalive < UINT16_MAX ? b->lim.max_keepalive
                                                                  : UINT16_MAX);
        c->connack_keepalive = true;
    }
    c->connack_expiry = expiry_changed;
    c->keepalive_s = keepalive;
    if (keepalive)
        bk_wheel_set(&b->wheel, c, b->now_ms + (uint64_t)keepalive * KEEPALIVE_GRACE_MS_PER_S);
    else
        bk_wheel_remove(&b->wheel, c);
    b->stats.clients_connected++;
    if (b->stats.clients_connected > b->stats.clients_maximum)
        b->stats.clients_maximum = b->stats.clients_connected;
    if (v5)
        bk_log(b, BROKER_LOG_INFO,
               "client %s connected from %s (level 5, clean start %u, session expiry %u, "
               "keepalive %u)",
               s->id, c->peer ? c->peer : "?", cp->clean_session ? 1u : 0u,
               s->expiry_interval_s, keepalive);
    else
        bk_log(b, BROKER_LOG_INFO,
               "client %s connected from %s (level %u, %s session, keepalive %u)", s->id,
               c->peer ? c->peer : "?", cp->level, cp->clean_session ? "clean" : "persistent",
               keepalive);
    c->connack_held = gate != 0;
    if (!bk_ack_send_or_hold(b, c, MQTT_CONNACK,
                             (uint16_t)((present ? 1u : 0u) << 8 | MQTT_CONNACK_ACCEPTED), gate)) {
        bk_conn_end(b, c, false, "out of memory", b->now_ms);
        return;
    }
    if (present)
        bk_session_resend(b, s);
}
