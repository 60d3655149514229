/*
 * publish.c - a client's PUBLISH and the acknowledgements of the QoS
 * flows: the inbound half (PUBLISH in, PUBACK / PUBREC / PUBCOMP out,
 * PUBREL in) and the client's acknowledgements of what the broker sent
 * (the outbound half's sending is deliver.c's).
 *
 * MQTT 5.0 adds, for a level-5 client:
 *   - Receive Maximum: more QoS 1/2 PUBLISHes unanswered than the CONNACK
 *     allowed (limits.receive_maximum) is DISCONNECT 0x93 [MQTT-3.3.4-7];
 *     the count goes down as the client's send quota comes back (4.9),
 *     with each PUBACK, PUBCOMP and PUBREC with an error code sent;
 *   - Topic Aliases (alias.c), Message Expiry, and the properties the
 *     message carries on to its subscribers (msg-t.h says which);
 *   - reason codes in the acknowledgements: 0x10 no matching subscribers,
 *     0x87 not authorized (the ACL), 0x90 a topic beyond the topic limits,
 *     0x97 a limit dropped every copy, 0x99 a payload that is not UTF-8
 *     though its Payload Format Indicator says so; an error code ends a
 *     QoS 2 flow at once [MQTT-4.3.3-9]; PUBCOMP 0x92 for a PUBREL whose
 *     id is unknown;
 *   - a retained PUBLISH while retained messages are switched off is
 *     DISCONNECT 0x9A (3.3.1.3).
 * A 3.1.1 client is answered as before: an ACL refusal is acknowledged as
 * a success (3.1.1 has no negative acknowledgement), a topic beyond the
 * limits closes the connection [MQTT-3.3.5-2].
 *
 * QoS 0 has no acknowledgement to carry a refusal: a level-5 QoS 0
 * PUBLISH refused by the ACL or for its payload is dropped (logged, as
 * Mosquitto does), and one whose topic is beyond the limits ends the
 * connection with DISCONNECT 0x90, as 3.1.1 closes it.
 */
#include "broker/access.h"
#include "broker/alias.h"
#include "broker/base.h"
#include "broker/broker-t.h"
#include "broker/conn.h"
#include "broker/console_core.h"
#include "broker/deliver.h"
#include "broker/mem.h"
#include "broker/msg.h"
#include "broker/persist.h"
#include "broker/publish.h"
#include "broker/session.h"
#include "broker/subscribe.h"
#include "mqtt/mqtt.h"

#include <string.h>

/* Forwarded properties up to this size are filtered on the stack. */
#define PROPS_STACK 256u

static const char *who(const broker_conn *c)
{
    return c->sess ? c->sess->id : "?";
}

/* Reason Strings of the negative acknowledgements this file sends; the
 * client gets one only if it allows problem information [MQTT-3.1.2-29]. */
static const char *reason_string(uint8_t reason)
{
    switch (reason) {
    case MQTT_RC_NOT_AUTHORIZED:
        return "publish not allowed by the access rules";
    case MQTT_RC_TOPIC_NAME_INVALID:
        return "topic beyond the broker's topic limits";
    case MQTT_RC_QUOTA_EXCEEDED:
        return "a limit dropped the message for every subscriber";
    case MQTT_RC_PAYLOAD_FORMAT_INVALID:
        return "payload is not UTF-8 as its Payload Format Indicator says";
    case MQTT_RC_PACKET_ID_NOT_FOUND:
        return "no QoS 2 message with this packet identifier awaits PUBREL";
    default:
        return NULL;
    }
}

/* Out of line: its buffers would cost every acknowledgement a stack
 * canary and a larger frame. */
__attribute__((noinline)) static bool send_ack5(broker *b, broker_conn *c, mqtt_type type,
                                                uint16_t packet_id, uint8_t reason)
{
    uint8_t props[96], pkt[128];
    const char *text = c->request_problem_info ? reason_string(reason) : NULL;
    size_t np = text ? mqtt_prop_bytes(props, sizeof props, MQTT_PROP_REASON_STRING,
                                       (const uint8_t *)text, strlen(text))
                     : 0;
    mqtt_bytes block = {props, np};
    size_t n = mqtt_encode_ack5(pkt, sizeof pkt, type, packet_id, reason, &block, np ? 1 : 0);
    /* [MQTT-3.4.2-2], [MQTT-3.5.2-2], [MQTT-3.7.2-2]: no Reason String
     * that would take the packet beyond the client's Maximum Packet Size. */
    if (np && n > c->client_max_packet)
        n = mqtt_encode_ack5(pkt, sizeof pkt, type, packet_id, reason, NULL, 0);
    ALWAYS(n != 0);
    uint8_t *p = bk_out_reserve(b, c, n);
    if (!p)
        return false;
    memcpy(p, pkt, n);
    bk_out_commit(b, c, n);
    return true;
}

bool bk_send_ack5(broker *b, broker_conn *c, mqtt_type type, uint16_t packet_id, uint8_t reason)
{
    bool ok = reason != 0 ? send_ack5(b, c, type, packet_id, reason)
                          : bk_send_simple(b, c, type, packet_id);
    /* 4.9: the client's send quota comes back with each PUBACK and PUBCOMP
     * and each PUBREC with an error code; counted the same way here, and,
     * as the client's quota, never below zero (a PUBCOMP of a flow begun
     * on an earlier connection). */
    if (ok && c->in_unacked > 0 &&
        (type == MQTT_PUBACK || type == MQTT_PUBCOMP ||
         (type == MQTT_PUBREC && reason >= MQTT_RC_UNSPECIFIED_ERROR)))
        c->in_unacked--;
    return ok;
}

/* Is the payload well-formed UTF-8 (RFC 3629), as a Payload Format
 * Indicator of 1 says (3.3.2.3.2)? mqtt_utf8_valid() checks MQTT strings,
 * which may not hold U+0000 and a payload may: the parts between NUL bytes
 * are checked, a NUL byte never being inside a multi-byte sequence. */
static bool payload_utf8(const uint8_t *p, size_t n)
{
    while (n > 0) {
        const uint8_t *z = memchr(p, 0, n);
        size_t part = z ? (size_t)(z - p) : n;
        if (part > 0 && !mqtt_utf8_valid(p, part))
            return false;
        if (!z)
            break;
        p = z + 1;
        n -= part + 1;
    }
    return true;
}

/* The topic is beyond limits.max_topic_levels or max_topic_length: which
 * limit (counted and logged), or NULL. */
static const char *topic_over_slow(broker *b, const broker_conn *c, mqtt_bytes t)
{
    const char *over = bk_topic_over_limits(b, t.p, t.len);
    if (!over)
        return NULL;
    b->stats.topics_refused++;
    bk_log_limited(b, BK_LOGK_TOPIC_LIMITS, BROKER_LOG_INFO,
                   "client %s: publish to '%.*s' refused: topic beyond limits.%s", who(c),
                   (int)(t.len > 200 ? 200 : t.len), (const char *)t.p, over);
    return over;
}

static inline const char *topic_over(broker *b, const broker_conn *c, mqtt_bytes t)
{
    if (t.len < b->topic_check_len)
        return NULL; /* most topics: within both limits without looking */
    return topic_over_slow(b, c, t);
}

/*
 * What a level-5 PUBLISH must pass before anything else: Receive Maximum,
 * the retain switch, and its Topic Alias, which gives *topic. False when
 * the connection ended. A topic beyond the limits sets *rc (0x90) and no
 * alias.
 */
__attribute__((noinline)) static bool admit5_alias(broker *b, broker_conn *c,
                                                   const mqtt_publish *p, mqtt_bytes *topic);

/* Inline, so a PUBLISH without a Topic Alias (the common one) costs no
 * call; what fails, and the alias, are out of line. */
static inline __attribute__((always_inline)) bool admit5(broker *b, broker_conn *c,
                                                         const mqtt_publish *p,
                                                         mqtt_bytes *topic, uint8_t *rc)
{
    if (p->qos > 0 && ++c->in_unacked > b->lim.receive_maximum) {
        bk_conn_fail(b, c, MQTT_RC_RECEIVE_MAXIMUM_EXCEEDED,
                     "more QoS 1/2 PUBLISHes unacknowledged than limits.receive_maximum");
        return false;
    }
    if (topic->len > 0 && topic_over(b, c, *topic)) {
        *rc = MQTT_RC_TOPIC_NAME_INVALID;
        return true;
    }
    if (p->props.present & MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS))
        return admit5_alias(b, c, p, topic);
    return true;
}

/* admit5's Topic Alias: resolves it into *topic (or sets it). False when
 * the connection ended. */
static bool admit5_alias(broker *b, broker_conn *c, const mqtt_publish *p, mqtt_bytes *topic)
{
    uint8_t r = bk_alias_in_resolve(b, c, p->props.topic_alias, topic);
    if (r == MQTT_RC_UNSPECIFIED_ERROR) {
        bk_conn_end_reason(b, c, r, true, "out of memory for a topic alias", b->now_ms);
        return false;
    }
    if (r != 0) {
        bk_conn_fail(b, c, r,
                     r == MQTT_RC_TOPIC_ALIAS_INVALID
                         ? "Topic Alias above the Topic Alias Maximum"
                         : "empty topic with a Topic Alias not set on this connection");
        return false;
    }
    return true;
}

/* Each delivery sets these itself (publish5.c); a client may not send
 * a Subscription Identifier [MQTT-3.3.4-6] (the codec refuses it). */
#define PROPS_NOT_FORWARDED                                                                 \
    (MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS) | MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY) |        \
     MQTT_PROP_BIT(MQTT_PROP_SUBSCRIPTION_ID))

/* route5's message with properties to drop or an expiry to set: out of
 * line, so its buffer (and the stack check it brings) cost the common
 * message nothing. */
__attribute__((noinline)) static long route5_filtered(broker *b, const mqtt_publish *p,
                                                      bk_pubview v)
{
    const mqtt_props *pr = &p->props;
    if (pr->present & MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY)) {
        /* The lifetime starts now; 0 would read as "never". */
        v.expiry_ms = b->now_ms + (uint64_t)pr->message_expiry * 1000u;
        if (v.expiry_ms == 0)
            v.expiry_ms = 1;
    }
    uint64_t drop = PROPS_NOT_FORWARDED;
    uint8_t stack[PROPS_STACK];
    uint8_t *buf = NULL;
    if (pr->present & drop) {
        buf = pr->raw.len <= sizeof stack ? stack : bk_mem_alloc(b, pr->raw.len);
        if (!buf)
            return -1;
        size_t n = mqtt_props_filter(&pr->raw, drop, buf, pr->raw.len);
        ALWAYS(n != SIZE_MAX); /* never longer than what it was filtered from */
        v.props = buf;
        v.props_len = n;
    }
    long reached = bk_route_view(b, v, p->qos, p->retain, NULL);
    if (buf && buf != stack)
        bk_mem_free(b, buf);
    return reached;
}

/* Route a level-5 message: its expiry and the properties it carries on.
 * Returns the sessions reached, or -1 when memory ran out (nothing routed).
 * Inline (only handle_publish5 has it): a buffer, when one is needed, is
 * route5_filtered's. */
static inline __attribute__((always_inline)) long route5(broker *b, const mqtt_publish *p,
                                                         mqtt_bytes topic)
{
    const mqtt_props *pr = &p->props;
    bk_pubview v = {topic.p, p->payload.p, pr->raw.p, topic.len, p->payload.len, pr->raw.len,
                    0};
    if (!(pr->present & PROPS_NOT_FORWARDED)) /* forwarded as they came */
        return bk_route_view(b, v, p->qos, p->retain, NULL);
    return route5_filtered(b, p, v);
}

/* Route p as its client c (level 5 when v5) may publish it; the reason code that says how
 * it went at level 5 (0 success, 0x10 nobody subscribes, 0x97 limits
 * dropped every copy), or 0x80 when memory ran out. */
static inline __attribute__((always_inline)) uint8_t route(broker *b, broker_conn *c,
                                                           const mqtt_publish *p,
                                                           mqtt_bytes topic, const bool v5)
{
    /* An operator's console request (the ACL let it write there): the
     * broker answers it, nobody receives it, nothing is retained. */
    if (c->is_operator && bk_console_is_request(topic.p, topic.len)) {
        bk_console_request(b, c, p);
        return 0;
    }
    if (!v5) { /* a constant in each copy of handle_publish */
        bk_pubview v = {topic.p, p->payload.p, NULL, topic.len, p->payload.len, 0, 0};
        (void)bk_route_view(b, v, p->qos, p->retain, NULL);
        return 0;
    }
    uint64_t dropped = b->stats.publish_dropped;
    long reached = route5(b, p, topic);
    if (reached < 0)
        return MQTT_RC_UNSPECIFIED_ERROR;
    if (reached > 0)
        return 0;
    return b->stats.publish_dropped != dropped ? MQTT_RC_QUOTA_EXCEEDED
                                               : MQTT_RC_NO_MATCHING_SUBSCRIBERS;
}

/* One body for both levels, specialised by bk_handle_publish: v5 is a
 * constant in each copy, so the 3.1.1 one is the path it always was. */
static inline __attribute__((always_inline)) void handle_publish(broker *b, broker_conn *c,
                                                                 const mqtt_publish *p,
                                                                 const bool v5)
{
    session *s = c->sess;
    uint64_t mark = bk_journal_mark(b);
    mqtt_bytes topic = p->topic;
    uint8_t rc = 0; /* level 5: a refusal's reason code */

    if (p->retain && b->retain_disabled) {
        /* 3.3.1.3: the CONNACK said Retain Available 0 [MQTT-3.2.2-14]. */
        bk_conn_fail(b, c, MQTT_RC_RETAIN_NOT_SUPPORTED,
                     "retained PUBLISH while retained messages are off");
        return;
    }
    if (v5) {
        if (!admit5(b, c, p, &topic, &rc))
            return;
    } else if (topic_over(b, c, topic)) {
        /* 3.1.1 has no negative acknowledgement of a PUBLISH, and a server
         * that will not take one must acknowledge it as usual or close the
         * connection [MQTT-3.3.5-2]. Acknowledging a message nobody will
         * ever be sent would lose it without a word, so the connection is
         * closed (the will fires: the client did not end it). */
        bk_conn_end(b, c, true, "topic beyond the limits", b->now_ms);
        return;
    }
    b->stats.msgs_received++;
    bool allowed = rc == 0 && bk_session_may(b, s, topic.p, topic.len, BROKER_ACL_WRITE);
    if (rc == 0 && !allowed) {
        /* At level 3/4 not delivered, but still acknowledged as 3.1.1
         * allows; at level 5 refused with 0x87. */
        b->stats.acl_denied++;
        if (bk_console_is_request(topic.p, topic.len))
            bk_console_refused(b);
        bk_log_limited(b, BK_LOGK_DENIED, BROKER_LOG_DEBUG, "client %s: publish to '%.*s' denied",
                       s->id, (int)(topic.len > 200 ? 200 : topic.len), (const char *)topic.p);
        if (v5)
            rc = MQTT_RC_NOT_AUTHORIZED;
    }
    if (allowed && v5 && (p->props.present & MQTT_PROP_BIT(MQTT_PROP_PAYLOAD_FORMAT)) &&
        p->props.payload_format == 1 && !payload_utf8(p->payload.p, p->payload.len)) {
        /* 3.3.2.3.2: a receiver may check the payload against its format
         * and refuse it with 0x99. tern does, so a subscriber relying on
         * the indicator never gets what it says is text and is not. */
        bk_log_limited(b, BK_LOGK_BAD_PAYLOAD, BROKER_LOG_INFO,
                       "client %s: publish to '%.*s' refused: payload not UTF-8 though its "
                       "Payload Format Indicator says so",
                       s->id, (int)(topic.len > 200 ? 200 : topic.len), (const char *)topic.p);
        allowed = false;
        rc = MQTT_RC_PAYLOAD_FORMAT_INVALID;
    }

    if (p->qos == 0) {
        if (allowed)
            (void)route(b, c, p, topic, v5);
        else if (rc == MQTT_RC_TOPIC_NAME_INVALID)
            bk_conn_fail(b, c, rc, "topic beyond the limits");
        return;
    }
    if (p->qos == 2) {
        /* Exactly once: a PUBLISH whose id is still awaiting PUBREL is a
         * resend of one already routed; only acknowledge it again
         * [MQTT-4.3.3-10]. */
        if (bk_session_in_qos2_has(s, p->packet_id)) {
            rc = 0;
        } else if (rc == 0) {
            if (bk_session_in_qos2_add(b, s, p->packet_id) != 0) {
                bk_conn_fail(b, c, MQTT_RC_RECEIVE_MAXIMUM_EXCEEDED,
                             "too many QoS 2 messages awaiting PUBREL");
                return;
            }
            rc = route(b, c, p, topic, v5);
            /* [MQTT-4.3.3-9]: after a PUBREC with an error code the id
             * names nothing: a PUBLISH with it is a new message. */
            if (rc >= MQTT_RC_UNSPECIFIED_ERROR)
                bk_session_in_qos2_del(b, s, p->packet_id);
        }
        /* Durability contract (D1): acknowledge only once what this
         * message changed is committed, and a resend only once what the
         * first one changed is. A message with no durable consequence is
         * acknowledged at once, also while the disk fails. */
        if (!bk_ack_rc_send_or_hold(b, c, MQTT_PUBREC, p->packet_id, rc,
                                    bk_journal_gate_session(b, s, mark)))
            bk_conn_end(b, c, true, "out of memory", b->now_ms);
        return;
    }
    if (allowed)
        rc = route(b, c, p, topic, v5);
    /* QoS 1 leaves no state of its own behind: the PUBACK waits only for
     * what routing recorded (a retained value, queue rows of persistent
     * sessions). */
    if (!bk_ack_rc_send_or_hold(b, c, MQTT_PUBACK, p->packet_id, rc,
                                bk_journal_gate_if_changed(b, mark)))
        bk_conn_end(b, c, true, "out of memory", b->now_ms);
}

__attribute__((noinline)) static void handle_publish5(broker *b, broker_conn *c,
                                                      const mqtt_publish *p)
{
    handle_publish(b, c, p, true);
}

void bk_handle_publish(broker *b, broker_conn *c, const mqtt_publish *p)
{
    if (c->level == MQTT_LEVEL_5)
        handle_publish5(b, c, p);
    else
        handle_publish(b, c, p, false);
}

void bk_handle_ack(broker *b, broker_conn *c, mqtt_type type, const mqtt_ack *a)
{
    session *s = c->sess;
    uint16_t id = a->packet_id;
    qentry *e = bk_session_find_sent(s, id);
    switch (type) {
    case MQTT_PUBACK:
        /* Whatever its reason code: an error code also ends the delivery,
         * never to be sent again [MQTT-4.4.0-2]. */
        if (e && e->state == Q_WAIT_PUBACK)
            bk_session_complete(b, s, e);
        break;
    case MQTT_PUBREC: {
        /* Braced: a declaration right after a case label is C23, and clang
         * rejects it in C17 mode (the fuzz build). */
        if (a->reason >= MQTT_RC_UNSPECIFIED_ERROR) {
            /* The receiver refused it: no PUBREL [MQTT-4.3.3-4], the
             * message is acknowledged and never sent again
             * [MQTT-4.4.0-2], and its window slot is free [MQTT-3.3.4-9]. */
            if (e && e->state == Q_WAIT_PUBREC)
                bk_session_complete(b, s, e);
            break;
        }
        uint64_t mark = bk_journal_mark(b);
        if (e && e->state == Q_WAIT_PUBREC) {
            /* The receiver owns the message now; keep only the id. */
            e->state = Q_WAIT_PUBCOMP;
            bk_journal_queue_state(b, s, e);
            if (bk_journaled(b, s)) {
                e->jseq = bk_journal_gate(b, mark);
                bk_journal_msg_unref(b, e->m);
            }
            bk_session_flight_sub(s, e->m);
            bk_msg_unref(b, e->m);
            e->m = NULL;
        }
        /* A PUBREC for a PUBREL already sent, or for an id we no longer
         * know, is answered with PUBREL so the receiver can finish. The
         * PUBREL waits for the state change to be on disk: after a restart
         * we must not send the PUBLISH again for an id the receiver has
         * already released. */
        if (!bk_ack_send_or_hold(b, c, MQTT_PUBREL, id, bk_journal_gate_session(b, s, mark))) {
            bk_conn_end(b, c, true, "out of memory", b->now_ms);
            return;
        }
        break;
    }
    case MQTT_PUBCOMP:
        if (e && e->state == Q_WAIT_PUBCOMP)
            bk_session_complete(b, s, e);
        break;
    default:
        ALWAYS(0);
    }
    if (!e)
        bk_log_limited(b, BK_LOGK_UNKNOWN_ACK, BROKER_LOG_DEBUG,
                       "client %s: acknowledgement for unknown packet id %u", s->id, id);
    bk_session_pump(b, s);
}

void bk_handle_pubrel(broker *b, broker_conn *c, const mqtt_ack *a)
{
    /* PUBCOMP only once the id's removal is on disk: a stored id would
     * make the broker drop the client's next message with that id. A
     * level-5 client is told when the id was not awaiting PUBREL (3.7.2.1). */
    uint64_t mark = bk_journal_mark(b);
    uint16_t id = a->packet_id;
    uint8_t rc = c->level == MQTT_LEVEL_5 && !bk_session_in_qos2_has(c->sess, id)
                     ? MQTT_RC_PACKET_ID_NOT_FOUND
                     : 0;
    bk_session_in_qos2_del(b, c->sess, id);
    if (!bk_ack_rc_send_or_hold(b, c, MQTT_PUBCOMP, id, rc,
                                bk_journal_gate_session(b, c->sess, mark)))
        bk_conn_end(b, c, true, "out of memory", b->now_ms);
}
