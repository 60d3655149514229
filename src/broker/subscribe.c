/*
 * subscribe.c - SUBSCRIBE and UNSUBSCRIBE.
 *
 * A SUBSCRIBE is handled in two passes over its filters. The first checks
 * each one (topic limits, ACL, the session's subscription limit),
 * subscribes it and records its return code, and ends with the SUBACK; the
 * second sends the retained messages of each granted filter, behind the
 * SUBACK. An UNSUBSCRIBE has the first pass only, ending with the UNSUBACK.
 *
 * Each filter costs one unit of the caller's work budget, as a whole
 * packet does. A packet with no more filters than the budget has left is
 * handled whole, like any other (one that needs a fresh budget waits for
 * the next call). One with more filters than a whole budget is worked
 * through in slices: every filter of either pass and every retained
 * message sent costs a unit, and when the budget is spent it stops
 * between two filters and goes on in the next broker_input call. Its
 * state is a list_job, its bytes wait in the connection's input tail
 * (conn.c), and nothing else from that client is handled meanwhile. So a
 * client's 150,000-filter SUBSCRIBE delays the others by one budget per
 * loop turn, and its SUBACK still goes out once, with every return code in
 * order. Messages other clients publish may reach its first subscriptions
 * before the SUBACK, which 3.1.1 permits (section 3.8.4).
 *
 * MQTT 5.0: each filter has an options byte (No Local, Retain As
 * Published, Retain Handling) kept on the subscription with the packet's
 * Subscription Identifier; a refusal has a reason code naming its cause;
 * the UNSUBACK has a reason code per filter. `$share/GROUP/FILTER` (any
 * level) joins a shared group (tree.c); the ACL is asked about FILTER.
 */
#include "broker/access.h"
#include "broker/base.h"
#include "broker/broker-t.h"
#include "broker/conn.h"
#include "broker/deliver.h"
#include "broker/mem.h"
#include "broker/msg.h"
#include "broker/persist.h"
#include "broker/session.h"
#include "broker/subscribe.h"
#include "broker/tree.h"

#include <string.h>

#define CODES_SMALL 32u

typedef struct list_job list_job;

enum { PASS_FILTERS = 0, PASS_RETAINED = 1 };

struct list_job {
    uint32_t size;             /* bytes of the packet */
    uint32_t raw_off, raw_len; /* its list of filters, from the packet's start */
    uint32_t count;            /* filters in the list */
    uint32_t index;            /* filters done in this pass */
    size_t pos;                /* the list iterator, at filter `index` */
    uint64_t mark;             /* the journal before the packet: its gate */
    uint32_t sub_id;           /* the SUBSCRIBE's Subscription Identifier, 0 = none */
    uint16_t packet_id;
    uint8_t type;              /* MQTT_SUBSCRIBE or MQTT_UNSUBSCRIBE */
    bool v5;                   /* level 5: reason codes, options */
    uint8_t pass;
    bool sliced;               /* stops when the budget is spent */
    /* For the packet's one log line: refusals by cause, and the first
     * refused filter (offset in the packet, length, cause). */
    uint32_t denied, over_limits, no_memory;
    uint32_t first_off, first_len;
    const char *first_why;     /* a cause, or the name of a limit */
    bool first_limit;
    /* (UN)SUBACK codes, then as many RETAINED_* bytes for the second pass:
     * `small` or owned. */
    uint8_t *codes;
    uint8_t small[2 * CODES_SMALL];
};

const char *bk_topic_over_limits(const broker *b, const uint8_t *t, size_t len)
{
    if (len < b->topic_check_len)
        return NULL; /* within both: most topics */
    if (len > b->lim.max_topic_length)
        return "max_topic_length";
    if (len < b->lim.max_topic_levels)
        return NULL; /* len bytes hold at most len + 1 levels */
    uint32_t levels = 1;
    const uint8_t *end = t + len;
    for (const uint8_t *p = t; (p = memchr(p, '/', (size_t)(end - p))) != NULL; p++)
        if (++levels > b->lim.max_topic_levels)
            return "max_topic_levels";
    return NULL;
}

uint32_t bk_list_size(const list_job *j)
{
    return j->size;
}

static void job_free(broker *b, list_job *j)
{
    if (j->codes != j->small)
        bk_mem_free(b, j->codes);
    bk_mem_free(b, j);
}

void bk_list_drop(broker *b, broker_conn *c)
{
    if (c->job)
        job_free(b, c->job);
    c->job = NULL;
}

/* Whether the second pass sends a granted filter's retained messages. */
enum { RETAINED_NO = 0, RETAINED_SEND = 1 };

/* A refused filter's code: the 5.0 reason code, or 3.1.1's one failure. */
static uint8_t refuse(list_job *j, uint32_t *cause, const mqtt_bytes *f, const uint8_t *base,
                      const char *why, uint8_t reason)
{
    if (j->denied + j->over_limits + j->no_memory == 0) {
        j->first_off = (uint32_t)(f->p - base);
        j->first_len = (uint32_t)f->len;
        j->first_why = why;
        j->first_limit = cause == &j->over_limits;
    }
    (*cause)++;
    return j->v5 ? reason : MQTT_SUBACK_FAILURE;
}

/* One filter of a SUBSCRIBE: its return code; *retained says whether
 * its retained messages are sent. */
static uint8_t subscribe_one(broker *b, session *s, list_job *j, const mqtt_bytes *f,
                             uint8_t options, const uint8_t *base, uint8_t *retained)
{
    uint8_t qos = options & MQTT_SUBOPT_QOS_MASK;
    *retained = RETAINED_NO;
    /* The topic limits first: they are cheap and bound what the ACL and
     * the tree are asked to work on. */
    const char *over = bk_topic_over_limits(b, f->p, f->len);
    if (over) {
        b->stats.subscriptions_refused++;
        return refuse(j, &j->over_limits, f, base, over, MQTT_RC_QUOTA_EXCEEDED);
    }
    /* A shared subscription is asked of the ACL by its FILTER: a rule for
     * topic X governs `$share/g/X`. */
    mqtt_bytes group = {0}, inner = *f;
    int shared = mqtt_share_split(f->p, f->len, &group, &inner);
    if (shared < 0) {
        b->stats.subscriptions_refused++;
        return refuse(j, &j->over_limits, f, base, "malformed shared subscription",
                      MQTT_RC_TOPIC_FILTER_INVALID);
    }
    if (shared && b->shared_subs_disabled) {
        b->stats.subscriptions_refused++;
        return refuse(j, &j->over_limits, f, base, "shared subscriptions are disabled",
                      MQTT_RC_SHARED_SUBS_NOT_SUPPORTED);
    }
    if (shared && (options & MQTT_SUBOPT_NO_LOCAL)) {
        /* A protocol error [MQTT-3.8.3-4] the decoder answers with
         * DISCONNECT 0x82 before we get here; refused should it not. */
        b->stats.subscriptions_refused++;
        return refuse(j, &j->over_limits, f, base, "No Local on a shared subscription",
                      MQTT_RC_TOPIC_FILTER_INVALID);
    }
    if (!bk_session_may(b, s, inner.p, inner.len, BROKER_ACL_READ)) {
        b->stats.acl_denied++;
        return refuse(j, &j->denied, f, base, "denied by the ACL", MQTT_RC_NOT_AUTHORIZED);
    }
    /* At the limit a filter the session holds already is still granted (a
     * resubscription replaces it, [MQTT-3.8.4-3]); only new ones count. */
    if (s->sub_count >= b->lim.max_subscriptions &&
        !bk_tree_find_sub(&b->tree, s, f->p, f->len)) {
        b->stats.subscriptions_refused++;
        return refuse(j, &j->over_limits, f, base, "max_subscriptions", MQTT_RC_QUOTA_EXCEEDED);
    }
    bool is_new;
    sub *x = bk_tree_subscribe(b, &b->tree, s, f->p, f->len, qos, &is_new);
    if (!x)
        return refuse(j, &j->no_memory, f, base, "out of memory", MQTT_RC_UNSPECIFIED_ERROR);
    /* A subscription replaced takes the new options and identifier (none
     * when the SUBSCRIBE has none) [MQTT-3.8.4-3]. The QoS is kept apart
     * (sub.qos): options holds the bits above it, 0 for 3.1.1. */
    x->options = options & (uint8_t)~MQTT_SUBOPT_QOS_MASK;
    x->sub_id = j->sub_id;
    bk_journal_sub(b, s, f->p, f->len, x, true);
    x->acl_check = bk_acl_filter_partly_denied(b->acl, s->identity, s->id,
                                               (const char *)inner.p, inner.len);
    /* Retained messages: never for a shared subscription (section 4.8.2);
     * Retain Handling 0 sends them, 1 only for a new subscription, 2
     * never [MQTT-3.3.1-9] [MQTT-3.3.1-10] [MQTT-3.3.1-11]. */
    unsigned rh = (options & MQTT_SUBOPT_RETAIN_HANDLING_MASK) >> MQTT_SUBOPT_RETAIN_HANDLING_SHIFT;
    if (!shared && (rh == 0 || (rh == 1 && is_new)))
        *retained = RETAINED_SEND;
    return qos;
}

/* One filter of an UNSUBSCRIBE: its reason code (level 5). */
static uint8_t unsubscribe_one(broker *b, session *s, const mqtt_bytes *f)
{
    mqtt_bytes group, inner;
    if (mqtt_share_split(f->p, f->len, &group, &inner) < 0)
        return MQTT_RC_TOPIC_FILTER_INVALID;
    sub *x = bk_tree_find_sub(&b->tree, s, f->p, f->len);
    if (!x)
        return MQTT_RC_NO_SUBSCRIPTION_EXISTED;
    /* What a shared subscription gave the session and it has not been
     * sent goes to the other members; what was sent is completed here
     * [MQTT-3.10.4-3]. */
    bk_share_leave(b, x);
    bk_tree_remove_sub(b, &b->tree, x);
    bk_journal_sub(b, s, f->p, f->len, NULL, false);
    return MQTT_RC_SUCCESS;
}

/* One line per packet, however many of its filters were refused. */
static void log_refusals(broker *b, const session *s, const list_job *j, const uint8_t *base)
{
    uint32_t refused = j->denied + j->over_limits + j->no_memory;
    if (refused == 0)
        return;
    bk_log_limited(b, BK_LOGK_TOPIC_LIMITS, j->no_memory ? BROKER_LOG_ERROR : BROKER_LOG_INFO,
                   "client %s: %u of %u filters refused (%u by the ACL, %u by limits, %u out of "
                   "memory); the first, '%.*s': %s%s",
                   s->id, refused, j->count, j->denied, j->over_limits, j->no_memory,
                   (int)(j->first_len > 200 ? 200 : j->first_len),
                   (const char *)base + j->first_off, j->first_limit ? "beyond limits." : "",
                   j->first_why);
}

typedef struct retained_ctx {
    session *sess;
    uint8_t qos;
    bool acl_check;
    uint32_t sent;
    bk_via via;       /* the subscription's identifier [MQTT-3.3.4-3] */
} retained_ctx;

static void send_retained(broker *b, void *ctx, msg *m)
{
    retained_ctx *rc = ctx;
    uint8_t q = m->qos < rc->qos ? m->qos : rc->qos;
    if (bk_msg_expired(m, b->now_ms)) {
        /* [MQTT-3.3.2-5]: its Message Expiry Interval passed, so no
         * delivery starts (the walk then removes it from the tree). */
        b->stats.msgs_expired++;
        return;
    }
    if (rc->acl_check &&
        !bk_session_may(b, rc->sess, bk_msg_topic(m), m->topic_len, BROKER_ACL_READ))
        return;
    rc->sent++;
    /* [MQTT-3.3.1-8]: retained messages sent for a new subscription carry
     * the retain flag. They queue behind the SUBACK like any message. */
    if (!bk_session_enqueue_retained(b, rc->sess, m, q, &rc->via)) {
        bk_dropped(b, rc->sess, q, bk_msg_topic(m), m->topic_len,
                   "retained message for a new subscription: its queue is full or memory "
                   "ran out");
        return;
    }
    bk_session_pump(b, rc->sess);
}

/* Spend n units of the budget (it stops at 0). */
static void spend(uint32_t *budget, uint32_t n)
{
    *budget -= n < *budget ? n : *budget;
}

/* Work on j until it is finished (true) or, sliced, the budget is spent
 * (false). */
static bool run(broker *b, broker_conn *c, list_job *j, const uint8_t *base, uint32_t *budget)
{
    session *s = c->sess;
    const mqtt_list l = {.packet_id = j->packet_id, .count = j->count,
                         .raw = {base + j->raw_off, j->raw_len}};
    bool is_sub = j->type == MQTT_SUBSCRIBE;
    mqtt_bytes f;
    uint8_t qos = 0;

    if (j->pass == PASS_FILTERS) {
        for (; j->index < j->count; j->index++) {
            if (j->sliced && *budget == 0)
                return false;
            spend(budget, 1);
            bool more = is_sub ? mqtt_subscribe_next(&l, &j->pos, &f, &qos)
                               : mqtt_unsubscribe_next(&l, &j->pos, &f);
            ALWAYS(more); /* the decoder counted them */
            /* A 3.1.1 bridge does not get its own publishes back, and
             * retained flags reach it as published (ADR-060). */
            if (is_sub && c->bridge)
                qos |= MQTT_SUBOPT_NO_LOCAL | MQTT_SUBOPT_RETAIN_AS_PUBLISHED;
            if (is_sub)
                j->codes[j->index] =
                    subscribe_one(b, s, j, &f, qos, base, &j->codes[j->count + j->index]);
            else
                j->codes[j->index] = unsubscribe_one(b, s, &f);
        }
        log_refusals(b, s, j, base);
        /* Acknowledged once what it changed in a persistent session is on
         * disk: granted, a subscription must survive a crash; removed, it
         * must not come back (also when an earlier, not yet committed
         * UNSUBSCRIBE removed it). */
        uint64_t gate = is_sub ? bk_journal_gate_if_changed(b, j->mark)
                               : bk_journal_gate_session(b, s, j->mark);
        bool ok = is_sub || j->v5
                      ? bk_suback_send_or_hold(b, c, is_sub ? MQTT_SUBACK : MQTT_UNSUBACK,
                                               j->packet_id, j->codes, j->count, gate)
                      : bk_ack_send_or_hold(b, c, MQTT_UNSUBACK, j->packet_id, gate);
        if (!ok) {
            bk_conn_end(b, c, true, "out of memory", b->now_ms);
            return true;
        }
        if (!is_sub)
            return true;
        j->pass = PASS_RETAINED;
        j->index = 0;
        j->pos = 0;
    }
    for (; j->index < j->count; j->index++) {
        if (c->state == CONN_CLOSING)
            return true;
        if (j->sliced && *budget == 0)
            return false;
        spend(budget, 1);
        bool more = mqtt_subscribe_next(&l, &j->pos, &f, &qos);
        ALWAYS(more);
        if (j->codes[j->count + j->index] != RETAINED_SEND)
            continue; /* refused, shared, or Retain Handling says not */
        qos &= MQTT_SUBOPT_QOS_MASK;
        retained_ctx rc = {s, qos,
                           bk_acl_filter_partly_denied(b->acl, s->identity, s->id,
                                                       (const char *)f.p, f.len),
                           0, {j->sub_id, NULL, 0}};
        if (bk_tree_for_retained(b, &b->tree, f.p, f.len, send_retained, &rc) != 0)
            bk_log_limited(b, BK_LOGK_NOMEM, BROKER_LOG_ERROR,
                           "client %s: out of memory sending retained messages", s->id);
        spend(budget, rc.sent);
    }
    return true;
}

bk_list_result bk_list_start(broker *b, broker_conn *c, const mqtt_packet *pkt)
{
    ALWAYS(pkt->type == MQTT_SUBSCRIBE || pkt->type == MQTT_UNSUBSCRIBE);
    const mqtt_list *l = pkt->type == MQTT_SUBSCRIBE ? &pkt->u.subscribe : &pkt->u.unsubscribe;
    uint32_t *budget = &b->in_budget;
    /* A packet that fits a whole budget is never split: most are small,
     * and whole they keep the order in which every effect of a packet is
     * seen at once. One that fits only a fresh budget waits for it. */
    bool sliced = l->count > *budget;
    if (sliced && *budget < b->lim.work_budget)
        return BK_LIST_DEFERRED;
    /* The list is the packet's payload, to its end (3.1.1: no properties). */
    ALWAYS(l->raw.len < pkt->size);
    const uint8_t *base = l->raw.p - (pkt->size - l->raw.len);
    list_job j;
    memset(&j, 0, sizeof j);
    j.size = pkt->size;
    j.raw_off = (uint32_t)(l->raw.p - base);
    j.raw_len = (uint32_t)l->raw.len;
    j.count = l->count;
    j.packet_id = l->packet_id;
    j.type = (uint8_t)pkt->type;
    j.v5 = c->level == MQTT_LEVEL_5;
    if (l->props.present & MQTT_PROP_BIT(MQTT_PROP_SUBSCRIPTION_ID))
        j.sub_id = l->props.subscription_id; /* 1..268435455: the decoder checked */
    j.mark = bk_journal_mark(b);
    j.codes = j.small;
    if (j.count > CODES_SMALL) {
        j.codes = bk_mem_alloc(b, 2 * (size_t)j.count);
        if (!j.codes) {
            bk_conn_end(b, c, true, "out of memory", b->now_ms);
            return BK_LIST_DONE;
        }
    }
    /* While it runs the job is on this stack, not in c->job: a connection
     * that ends meanwhile has nothing of it to free. */
    j.sliced = sliced;
    if (run(b, c, &j, base, budget) || c->state == CONN_CLOSING) {
        if (j.codes != j.small)
            bk_mem_free(b, j.codes);
        return BK_LIST_DONE;
    }
    list_job *h = bk_mem_alloc(b, sizeof *h);
    if (!h) {
        if (j.codes != j.small)
            bk_mem_free(b, j.codes);
        bk_conn_end(b, c, true, "out of memory", b->now_ms);
        return BK_LIST_DONE;
    }
    *h = j;
    if (j.codes == j.small)
        h->codes = h->small;
    c->job = h;
    return BK_LIST_PENDING;
}

bk_list_result bk_list_resume(broker *b, broker_conn *c, const uint8_t *base)
{
    list_job *j = c->job;
    c->job = NULL; /* as in bk_list_start: ours while it runs */
    if (run(b, c, j, base, &b->in_budget) || c->state == CONN_CLOSING) {
        job_free(b, j);
        return BK_LIST_DONE;
    }
    c->job = j;
    return BK_LIST_PENDING;
}
