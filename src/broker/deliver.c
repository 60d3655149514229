/*
 * deliver.c - the outbound path: routing a PUBLISH to the sessions that
 * match it, live or into their queues, and encoding it for a connection.
 * The connection output buffers are outbuf.c's; moving a session's queued
 * QoS 1/2 messages onto the wire as its window and buffer allow, pump.c's.
 *
 * Back-pressure (SPEC C4): a connection's output buffer may hold up to
 * max_out_bytes of pending PUBLISH data. Beyond that, QoS 0 messages are
 * dropped (counted) and QoS 1/2 messages wait in the session queue, bounded
 * by max_queued; nothing is dropped silently. A session queue that grows
 * past its high watermark holds the publishers feeding it (flow.c).
 *
 * Nothing here ends a connection or frees a session: routing walks a match
 * list of session pointers that must stay valid until it is done.
 *
 * Routing (MQTT 5.0 included): a session whose subscriptions overlap gets
 * one copy at the highest QoS with every matching subscription's
 * identifier [MQTT-3.3.4-2] [MQTT-3.3.4-4]; a subscription with No Local
 * gives nothing to the publisher's own session [MQTT-3.8.3-3]; the retain
 * flag is kept only through Retain As Published [MQTT-3.3.1-12]
 * [MQTT-3.3.1-13]. Each shared group matched gives the message to one of
 * its members, by the rule at share_pick() (docs/OPERATIONS.md).
 *
 * A 5.0 client is sent the message's properties and its delivery's own
 * (publish5.c), within its Receive Maximum and Maximum Packet Size; a
 * message whose expiry passed before its delivery to a session started
 * is never sent to it (counted in stats.msgs_expired).
 */
#include "broker/access.h"
#include "broker/base.h"
#include "broker/broker-t.h"
#include "broker/deliver.h"
#include "broker/deliver_internal.h"
#include "broker/flow.h"
#include "broker/mem.h"
#include "broker/msg.h"
#include "broker/persist.h"
#include "broker/publish5.h"
#include "broker/session.h"
#include "broker/tree.h"
#include "mqtt/mqtt.h"

#include <stdio.h>
#include <string.h>

/* c's output holds as much as QoS 0 may wait in it: max_out_bytes, or less
 * when the platform bounded it in time (broker_set_qos0_out_max). */
static inline bool qos0_full(const broker *b, const broker_conn *c)
{
    size_t max = b->lim.max_out_bytes;
    if (c->qos0_out_max != 0 && c->qos0_out_max < max)
        max = c->qos0_out_max;
    return bk_out_pending(c) >= max;
}


/* bk_send_publish's packet of n bytes is refused: not encodable (n 0,
 * cannot happen for routed messages), or above a 5.0 client's Maximum
 * Packet Size. Out of line: never on the common path. */
__attribute__((noinline, cold)) static bk_send5 send_refused(broker *b, const broker_conn *c,
                                                             const uint8_t *topic, size_t tlen,
                                                             size_t n)
{
    if (c->level != MQTT_LEVEL_5)
        return BK_SEND5_NOMEM;
    bk_pubview v = {topic, NULL, NULL, tlen, 0, 0, 0};
    bk_publish5_too_large(b, c, &v, n ? n : SIZE_MAX);
    return BK_SEND5_TOO_LARGE;
}

/* A PUBLISH with topic and payload only: any 3.1.1 one, and at level 5
 * one without any property (bk_publish5_bare), which the same encoder
 * writes with its empty property block. */
bk_send5 bk_send_publish(broker *b, broker_conn *c, const uint8_t *topic, size_t tlen,
                         const uint8_t *payload, size_t plen, uint8_t qos, bool retain,
                         bool dup, uint16_t packet_id)
{
    size_t n = mqtt_publish_size(c->level, tlen, plen, qos);
    /* One test for both refusals: n - 1 wraps when n is 0, and a client
     * below 5.0 has client_max_packet UINT32_MAX. */
    if (n - 1 >= c->client_max_packet)
        return send_refused(b, c, topic, tlen, n);
    uint8_t *p = bk_out_reserve(b, c, n);
    if (!p)
        return BK_SEND5_NOMEM;
    mqtt_publish pub;
    bk_publish_fill(&pub, topic, tlen, payload, plen, qos, retain, dup, packet_id);
    size_t w = mqtt_encode_publish(p, n, c->level, &pub);
    ALWAYS(w == n);
    bk_out_commit(b, c, n);
    b->stats.msgs_sent++;
    return BK_SEND5_OK;
}

/* One PUBLISH of v to c at any level: a 3.1.1 client gets the topic and
 * payload only (what 3.1.1 cannot carry is dropped), a 5.0 client the
 * properties too, and via's Subscription Identifiers (publish5.c). via may
 * be NULL (none). */
__attribute__((noinline)) static bk_send5 send_view5(broker *b, broker_conn *c,
                                                     const bk_pubview *v, uint8_t qos,
                                                     bool retain, bool dup, uint16_t packet_id,
                                                     const bk_via *via)
{
    return bk_publish5_write(b, c, v, qos, retain, dup, packet_id, via ? via->sub_id : 0,
                             via ? via->more : NULL, NULL);
}

static inline __attribute__((always_inline)) bk_send5 send_view(broker *b, broker_conn *c,
                                                                const bk_pubview *v,
                                                                uint8_t qos, bool retain,
                                                                bool dup, uint16_t packet_id,
                                                                const bk_via *via)
{
    if (c->level == MQTT_LEVEL_5 &&
        !bk_publish5_bare(c, v, dup, via ? via->sub_id : 0, via ? via->more : NULL))
        return send_view5(b, c, v, qos, retain, dup, packet_id, via);
    return bk_send_publish(b, c, v->topic, v->tlen, v->payload, v->plen, qos, retain, dup,
                           packet_id);
}

/* A QoS 0 PUBLISH already encoded into another connection's output during
 * this routing: copied instead of encoded again for every subscriber. The
 * source is kept as connection + offset; nothing writes to that
 * connection's buffer again before bk_route_publish returns (each session, so
 * each connection, appears once in a match). A level-5 copy is shared only
 * between clients it is the same for: no Topic Alias or Subscription
 * Identifier of their own (the Message Expiry left is the same for all
 * during one routing). */
typedef struct encoded {
    broker_conn *c;   /* NULL until the first copy is encoded */
    uint32_t off, len;
    uint8_t level;
} encoded;

static inline __attribute__((always_inline)) bk_send5 send_qos0(broker *b, broker_conn *c,
                                                                 encoded *enc,
                                                                 const bk_pubview *v,
                                                                 const bk_via *via)
{
    bool ids = via && (via->sub_id || via->more);
    bool shared = enc && (c->level != MQTT_LEVEL_5 || (!ids && c->client_topic_alias_max == 0));
    if (!shared) /* one subscriber, or a copy of its own */
        return send_view(b, c, v, 0, false, false, 0, via);
    if (enc->c && enc->level == c->level) {
        if (c->level == MQTT_LEVEL_5 && enc->len > c->client_max_packet) {
            bk_publish5_too_large(b, c, v, enc->len);
            return BK_SEND5_TOO_LARGE;
        }
        uint8_t *p = bk_out_reserve(b, c, enc->len);
        if (!p)
            return BK_SEND5_NOMEM;
        memcpy(p, enc->c->out + enc->off, enc->len);
        bk_out_commit(b, c, enc->len);
        b->stats.msgs_sent++;
        return BK_SEND5_OK;
    }
    size_t len = 0;
    bk_send5 r;
    if (c->level == MQTT_LEVEL_5 && !bk_publish5_bare(c, v, false, 0, NULL)) {
        r = bk_publish5_write(b, c, v, 0, false, false, 0, 0, NULL, &len);
    } else {
        r = bk_send_publish(b, c, v->topic, v->tlen, v->payload, v->plen, 0, false, false,
                            0);
        len = mqtt_publish_size(c->level, v->tlen, v->plen, 0);
    }
    /* The packet is the last thing in c's output (bk_out_reserve may have
     * moved what was pending before it). */
    if (r == BK_SEND5_OK && !enc->c) {
        enc->c = c;
        enc->off = c->out_len - (uint32_t)len;
        enc->len = (uint32_t)len;
        enc->level = c->level;
    }
    return r;
}


void bk_dropped(broker *b, const session *s, uint8_t qos, const uint8_t *topic, size_t tlen,
                const char *why)
{
    b->stats.publish_dropped++;
    const broker_conn *p = b->publisher;
    /* QoS 0 may be lost by design (a slow reader's full buffer): said at
     * INFO. A QoS 1/2 message its publisher saw acknowledged: WARN. */
    bk_log_limited(b, qos ? BK_LOGK_DROPPED : BK_LOGK_DROPPED_QOS0,
                   qos ? BROKER_LOG_WARN : BROKER_LOG_INFO,
                   "client %s: QoS %u message on '%.*s' from %s not delivered: %s", s->id, qos,
                   (int)(tlen > 200 ? 200 : tlen), (const char *)topic,
                   p && p->sess ? p->sess->id : "no client (a retained message, will or $SYS)",
                   why);
}

const char *bk_enqueue_refusal(const broker *b, const session *s, const msg *m, char *buf,
                               size_t size)
{
    if (s->q_count - s->q_sent >= b->lim.max_queued)
        snprintf(buf, size, "its queue holds limits.max_queued (%u) messages",
                 b->lim.max_queued);
    else if (s->q_bytes + m->payload_len > b->lim.max_queued_bytes)
        snprintf(buf, size,
                 "%llu payload bytes queued for it, %u more would exceed "
                 "limits.max_queued_bytes (%u)",
                 (unsigned long long)s->q_bytes, m->payload_len, b->lim.max_queued_bytes);
    else if (s->ident &&
             s->ident->q_bytes + m->payload_len > b->lim.max_queued_bytes_per_identity)
        snprintf(buf, size,
                 "%llu payload bytes queued for identity '%.40s' across its sessions, %u more "
                 "would exceed limits.max_queued_bytes_per_identity (%u)",
                 (unsigned long long)s->ident->q_bytes, s->ident->name, m->payload_len,
                 b->lim.max_queued_bytes_per_identity);
    else
        snprintf(buf, size, "its queue is full (%u entries) or memory ran out", s->q_count);
    return buf;
}

bool bk_deliver(broker *b, session *s, msg *m, uint8_t qos, bool retain, const bk_via *via)
{
    if (!bk_session_enqueue(b, s, m, qos, retain, via)) {
        char why[160];
        bk_dropped(b, s, qos, bk_msg_topic(m), m->topic_len,
                   bk_enqueue_refusal(b, s, m, why, sizeof why));
        return false;
    }
    bk_session_pump(b, s);
    bk_flow_routed(b, s); /* behind: hold the publisher */
    return true;
}

/* Build the shared msg the first time a subscriber needs one. */
static msg *msg_lazy(broker *b, msg **m, bool *owned, const bk_pubview *v, uint8_t qos,
                     bool retain)
{
    if (!*m) {
        *m = bk_msg_new5(b, v->topic, v->tlen, v->payload, v->plen, v->props, v->props_len, qos,
                         retain, v->expiry_ms);
        *owned = *m != NULL;
    }
    return *m;
}

static void store_retained(broker *b, msg **m, bool *owned, const bk_pubview *v, uint8_t qos)
{
    const uint8_t *topic = v->topic;
    size_t tlen = v->tlen, plen = v->plen;
    /* [MQTT-3.3.1-10]: an empty retained payload clears the topic. */
    if (plen == 0) {
        uint64_t before = b->stats.retained_count;
        (void)bk_tree_set_retained(b, &b->tree, topic, tlen, NULL);
        if (b->stats.retained_count != before)
            bk_journal_retain_del(b, topic, tlen);
        return;
    }
    /* Limits are measured against what a replacement leaves: the bytes of
     * the message it replaces are given back, and replacing an existing
     * value stays allowed at the count limit. Nothing changes when refused. */
    uint64_t held = bk_tree_retained_size(&b->tree, topic, tlen);
    const broker_conn *p = b->publisher;
    const char *who = p && p->sess ? "client " : "";
    const char *from = p && p->sess ? p->sess->id : "a will or $SYS";
    int shown = (int)(tlen > 200 ? 200 : tlen);
    if (held == 0 && b->stats.retained_count >= b->lim.max_retained) {
        bk_log_limited(b, BK_LOGK_RETAINED, BROKER_LOG_WARN,
                       "retained message on '%.*s' from %s%s delivered but not kept: "
                       "limits.max_retained (%u) reached",
                       shown, (const char *)topic, who, from, b->lim.max_retained);
        b->stats.publish_dropped++;
        return;
    }
    if (b->stats.retained_bytes - held + tlen + plen > b->lim.max_retained_bytes) {
        bk_log_limited(b, BK_LOGK_RETAINED, BROKER_LOG_WARN,
                       "retained message on '%.*s' (%zu bytes) from %s%s delivered but not "
                       "kept: limits.max_retained_bytes (%u) reached",
                       shown, (const char *)topic, tlen + plen, who, from,
                       b->lim.max_retained_bytes);
        b->stats.publish_dropped++;
        return;
    }
    if (!msg_lazy(b, m, owned, v, qos, true) ||
        bk_tree_set_retained(b, &b->tree, topic, tlen, *m) != 0) {
        bk_log_limited(b, BK_LOGK_NOMEM, BROKER_LOG_ERROR,
                       "out of memory: retained message on '%.*s' from %s%s not stored", shown,
                       (const char *)topic, who, from);
        b->stats.publish_dropped++;
        return;
    }
    bk_journal_retain_set(b, *m);
}

/* The identifiers one session's copy carries: those of every matching
 * subscription, less those with No Local when it is the publisher's own
 * session (local). The rest beyond the first go to tree scratch. false on
 * allocation failure. */
static bool via_of(broker *b, const match *mt, bool local, bk_via *via)
{
    tree *t = &b->tree;
    uint32_t n = 0;
    *via = (bk_via){0};
    for (uint32_t k = mt->ids; k; k = t->ids[k - 1].next) {
        uint32_t id = t->ids[k - 1].id;
        if (local && (id & MATCH_ID_NO_LOCAL))
            continue;
        id &= ~MATCH_ID_NO_LOCAL;
        if (!via->sub_id) {
            via->sub_id = id;
            continue;
        }
        if (n + 2 > t->idbuf_cap) {
            size_t cap = t->idbuf_cap ? t->idbuf_cap * 2 : 16;
            uint32_t *a = bk_mem_realloc(b, t->idbuf, cap * sizeof *a);
            if (!a)
                return false;
            t->idbuf = a;
            t->idbuf_cap = cap;
        }
        t->idbuf[++n] = id;
    }
    if (n) {
        t->idbuf[0] = n;
        via->more = t->idbuf;
    }
    return true;
}

/* A QoS 0 copy for s: straight to a live connection with room, or
 * dropped (offline sessions do not queue QoS 0). enc shares one encoding
 * between plain copies (no identifiers, no retain flag, no alias: see
 * send_qos0). Whether it reached s: sent, queued behind a held CONNACK,
 * or too large for its client (as good as sent [MQTT-3.1.2-25]). */
static inline __attribute__((always_inline)) bool
send_qos0_to(broker *b, session *s, msg **m, bool *owned, encoded *enc, const bk_pubview *v,
             uint8_t qos, bool retain, bool keep_retain, const bk_via *via)
{
    broker_conn *c = s->conn;
    if (!conn_live(c))
        return false;
    if (c->connack_held) {
        /* Nothing may precede the CONNACK: it waits in the queue. */
        if (msg_lazy(b, m, owned, v, qos, retain))
            return bk_deliver(b, s, *m, 0, keep_retain, via);
        bk_dropped(b, s, 0, v->topic, v->tlen, "out of memory");
        return false;
    }
    if (qos0_full(b, c)) {
        bk_dropped(b, s, 0, v->topic, v->tlen,
                   "its output buffer holds limits.max_out_bytes (a slow reader)");
        return false;
    }
    bk_send5 r = keep_retain ? send_view(b, c, v, 0, true, false, 0, via)
                             : send_qos0(b, c, enc, v, via);
    if (r == BK_SEND5_NOMEM) {
        bk_dropped(b, s, 0, v->topic, v->tlen, "out of memory");
        return false;
    }
    return true;
}

/* Can member s take a copy at QoS q now: connected, and room in its
 * output (QoS 0) or in its window with nothing waiting before it? */
static bool member_ready(const broker *b, const session *s, uint8_t q)
{
    const broker_conn *c = s->conn;
    if (!conn_live(c) || c->connack_held)
        return false;
    if (q == 0)
        return !qos0_full(b, c);
    return !window_full(b, s, c) && s->q_sent == s->q_count;
}

/*
 * Which member of shared group g gets a message (published at QoS qos):
 * round robin from the group's cursor, taking the first member that is
 * connected and has room (member_ready: its window is not full and
 * nothing waits in its queue). When none has, the least loaded (fewest
 * messages unsent plus unacknowledged) connected member; when none is
 * connected, the least loaded offline one (its persistent session queues
 * it). Members the ACL does not let read the topic, and `exclude` (a
 * member leaving), are skipped. The cursor moves past the one chosen, so
 * members take turns. NULL when no member can have it.
 */
static sub *share_pick(broker *b, sgroup *g, uint8_t qos, const uint8_t *topic, size_t tlen,
                       const session *exclude)
{
    sub *best = NULL;
    bool best_live = false;
    uint64_t best_load = 0;
    sub *x = g->cursor ? g->cursor : g->members;
    for (uint32_t k = 0; k < g->count && x; k++, x = x->node_next ? x->node_next : g->members) {
        session *s = x->sess;
        if (s == exclude)
            continue;
        if (x->acl_check && !bk_session_may(b, s, topic, tlen, BROKER_ACL_READ))
            continue;
        if (member_ready(b, s, x->qos < qos ? x->qos : qos)) {
            best = x;
            break;
        }
        bool live = conn_live(s->conn);
        uint64_t load = (uint64_t)(s->q_count - s->q_sent) + s->inflight;
        if (!best || (live && !best_live) || (live == best_live && load < best_load)) {
            best = x;
            best_live = live;
            best_load = load;
        }
    }
    if (best)
        g->cursor = best->node_next ? best->node_next : g->members;
    return best;
}

/* Give a message to one member of g (not `exclude`); whether it reached
 * one (as send_qos0_to and bk_deliver say). */
static bool share_route(broker *b, sgroup *g, msg **m, bool *owned, const bk_pubview *v,
                        uint8_t qos, bool retain, const session *exclude)
{
    const uint8_t *topic = v->topic;
    size_t tlen = v->tlen;
    sub *x = share_pick(b, g, qos, topic, tlen, exclude);
    if (!x) {
        b->stats.publish_dropped++;
        bk_log_limited(b, BK_LOGK_DROPPED, qos ? BROKER_LOG_WARN : BROKER_LOG_INFO,
                       "QoS %u message on '%.*s' not delivered to shared subscription group "
                       "'%.*s': no member may have it",
                       qos, (int)(tlen > 200 ? 200 : tlen), (const char *)topic,
                       (int)g->name_len, g->name);
        return false;
    }
    session *s = x->sess;
    uint8_t q = x->qos < qos ? x->qos : qos;
    bool keep_retain = retain && (x->options & MQTT_SUBOPT_RETAIN_AS_PUBLISHED);
    const bk_via via = {x->sub_id, NULL, q ? g->serial : 0};
    if (q == 0)
        return send_qos0_to(b, s, m, owned, NULL, v, qos, retain, keep_retain, &via);
    if (!msg_lazy(b, m, owned, v, qos, retain)) {
        bk_dropped(b, s, q, topic, tlen, "out of memory");
        return false;
    }
    return bk_deliver(b, s, *m, q, keep_retain, &via);
}

/* Give entry e of a departing member to another member of its group. */
static void share_redeliver(broker *b, sgroup *g, const session *leaving, const qentry *e)
{
    msg *m = e->m;
    bool owned = false;
    /* [MQTT-3.3.2-5]: a delivery to the next member is a new one, and none
     * starts once the message expired (a QoS 0 copy would go out at once,
     * unchecked by the pump). */
    if (bk_msg_expired(m, b->now_ms)) {
        b->stats.msgs_expired++;
        return;
    }
    bk_pubview v = bk_msg_view(m);
    (void)share_route(b, g, &m, &owned, &v, m->qos, m->retain != 0, leaving);
}

static void take_one(broker *b, void *ctx, qentry *e)
{
    const sub *x = ctx;
    share_redeliver(b, x->group, x->sess, e);
}

void bk_share_leave(broker *b, sub *x)
{
    if (x->group)
        bk_session_take_shared(b, x->sess, x->group->serial, take_one, x);
}

void bk_share_session_end(broker *b, session *s)
{
    /* Most sessions hold nothing a group gave them: one pass says so. */
    uint32_t tagged = 0;
    for (uint32_t i = 0; i < s->q_count; i++)
        tagged += bk_session_entry(s, i)->shared != 0;
    for (const sub *x = s->subs; x && tagged; x = x->sess_next) {
        if (!x->group)
            continue;
        for (uint32_t i = 0; i < s->q_count; i++) {
            const qentry *e = bk_session_entry(s, i);
            /* Unsent, or QoS 1 sent and unacknowledged: to another member
             * [MQTT-4.8.2-3 ff.]. A QoS 2 message sent is the receiver's
             * to finish: never sent to another client [MQTT-4.8.2-5]. */
            if (e->shared != x->group->serial)
                continue;
            tagged--;
            if (e->m && (e->state == Q_QUEUED || e->state == Q_WAIT_PUBACK))
                share_redeliver(b, x->group, s, e);
        }
    }
}

long bk_route_view(broker *b, bk_pubview view, uint8_t qos, bool retain, msg *m)
{
    const bk_pubview *v = &view;
    const uint8_t *topic = v->topic;
    size_t tlen = v->tlen;
    bool owned = false;
    long reached = 0;
    /* Already expired (a will that outlived its Message Expiry Interval,
     * an interval of 0): no delivery may start [MQTT-3.3.2-5], and it is
     * not kept as the retained message either. */
    if (v->expiry_ms != 0 && v->expiry_ms <= b->now_ms) {
        b->stats.msgs_expired++;
        return 0;
    }
    if (retain)
        store_retained(b, &m, &owned, v, qos);

    match *matches;
    long n = bk_tree_match(b, &b->tree, topic, tlen, &matches);
    size_t ngroups = b->tree.groups_count;
    if (n < 0) {
        bk_log_limited(b, BK_LOGK_NOMEM, BROKER_LOG_ERROR,
                       "out of memory matching a PUBLISH on '%.*s': not delivered",
                       (int)(tlen > 200 ? 200 : tlen), (const char *)topic);
        b->stats.publish_dropped++;
        n = 0;
        ngroups = 0;
    }
    /* No Local concerns the session of the connection that published
     * [MQTT-3.8.3-3]; a will or $SYS has none. */
    const session *own = b->publisher ? b->publisher->sess : NULL;
    encoded enc = {0};
    for (long i = 0; i < n; i++) {
        const match *mt = &matches[i];
        session *s = mt->sess;
        uint8_t sq = mt->qos;
        uint8_t rap = MATCH_RAP;
        bool local = s == own;
        if (local) {
            if (!(mt->flags & MATCH_LOCAL))
                continue; /* every matching subscription has No Local */
            sq = mt->qos_local;
            rap = MATCH_RAP_LOCAL;
        }
        uint8_t q = sq < qos ? sq : qos;
        if (mt->acl_check && !bk_session_may(b, s, topic, tlen, BROKER_ACL_READ))
            continue;
        bool keep_retain = retain && (mt->flags & rap);
        if (q == 0) {
            broker_conn *c = s->conn;
            if (!conn_live(c))
                continue; /* offline sessions do not queue QoS 0 */
            if (!c->connack_held && !keep_retain && !mt->ids) {
                /* The common case, inline (the hot path of a fan-out): a
                 * plain copy, its encoding shared between subscribers. */
                if (qos0_full(b, c))
                    bk_dropped(b, s, 0, topic, tlen,
                               "its output buffer holds limits.max_out_bytes (a slow reader)");
                else if (send_qos0(b, c, n > 1 ? &enc : NULL, v, NULL) == BK_SEND5_NOMEM)
                    bk_dropped(b, s, 0, topic, tlen, "out of memory");
                else
                    reached++; /* sent, or too large for it: as good as sent [MQTT-3.1.2-25] */
                continue;
            }
        }
        bk_via via = {0};
        if (mt->ids && !via_of(b, mt, local, &via)) {
            bk_dropped(b, s, q, topic, tlen, "out of memory");
            continue;
        }
        if (q == 0) {
            if (send_qos0_to(b, s, &m, &owned, n > 1 ? &enc : NULL, v, qos, retain, keep_retain,
                             &via))
                reached++;
            continue;
        }
        if (!msg_lazy(b, &m, &owned, v, qos, retain)) {
            bk_dropped(b, s, q, topic, tlen, "out of memory");
            continue;
        }
        if (bk_deliver(b, s, m, q, keep_retain, &via))
            reached++;
    }
    for (size_t k = 0; k < ngroups; k++)
        if (share_route(b, b->tree.groups[k], &m, &owned, v, qos, retain, NULL))
            reached++;
    if (owned)
        bk_msg_unref(b, m);
    return reached;
}

void bk_route_publish(broker *b, const uint8_t *topic, size_t tlen, const uint8_t *payload,
                      size_t plen, uint8_t qos, bool retain, msg *m)
{
    bk_pubview v = {topic, payload, NULL, tlen, plen, 0, 0};
    if (m)
        v = bk_msg_view(m); /* its properties and expiry too */
    (void)bk_route_view(b, v, qos, retain, m);
}
