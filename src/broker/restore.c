/*
 * restore.c - rebuilding the core from committed store records at start
 * (journal.h). Records are not produced here - the state already is on
 * disk - except the removal of what expired while the broker was down, so
 * the disk forgets it too.
 *
 * Recorded times (journal.h: wall-clock ms, or ms left marked
 * JOURNAL_TIME_LEFT) become core times here: what passed while the broker
 * was down has expired; the rest keeps only the time it had left.
 */
#include "broker/access.h"
#include "broker/base.h"
#include "broker/broker-t.h"
#include "broker/ident.h"
#include "broker/journal.h"
#include "broker/mem.h"
#include "broker/msg.h"
#include "broker/persist.h"
#include "broker/session.h"
#include "broker/tree.h"
#include "mqtt/mqtt.h"

#include <string.h>

typedef struct restore_state {
    msg **tab;          /* open addressing by store id; owns one ref each */
    size_t cap, count;
    size_t sessions, queued, retained, dropped;
    size_t expired;     /* messages, queue entries, sessions dropped as expired */
    size_t unclocked;   /* wall-clock times read without a wall clock */
} restore_state;

static restore_state *rs_get(broker *b)
{
    if (!b->restore) {
        b->restore = bk_mem_calloc(b, sizeof *b->restore);
        if (b->restore)
            b->restoring = true;
    }
    return b->restore;
}

static size_t slot_of(const restore_state *r, uint64_t id)
{
    return (size_t)(id * 0x9e3779b97f4a7c15ull) & (r->cap - 1);
}

static msg *rs_find(const restore_state *r, uint64_t id)
{
    if (!r->cap)
        return NULL;
    for (size_t i = slot_of(r, id);; i = (i + 1) & (r->cap - 1)) {
        if (!r->tab[i])
            return NULL;
        if (r->tab[i]->store_id == id)
            return r->tab[i];
    }
}

static int rs_add(broker *b, restore_state *r, msg *m)
{
    if ((r->count + 1) * 2 > r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 256;
        msg **tab = bk_mem_calloc(b, cap * sizeof *tab);
        if (!tab)
            return -1;
        msg **old = r->tab;
        size_t oldcap = r->cap;
        r->tab = tab;
        r->cap = cap;
        for (size_t i = 0; i < oldcap; i++) {
            if (!old[i])
                continue;
            size_t j = slot_of(r, old[i]->store_id);
            while (tab[j])
                j = (j + 1) & (cap - 1);
            tab[j] = old[i];
        }
        bk_mem_free(b, old);
    }
    size_t j = slot_of(r, m->store_id);
    while (r->tab[j])
        j = (j + 1) & (r->cap - 1);
    r->tab[j] = m;
    r->count++;
    return 0;
}

/* A recorded time (journal.h) as a core time: 0 = none. *passed when it
 * is not after now. Without a wall clock a wall-clock time cannot be
 * compared: it is taken as not passed, and UINT64_MAX (never) returned;
 * restore_done says how many there were. */
static uint64_t core_time(broker *b, restore_state *r, uint64_t t, bool *passed)
{
    uint64_t now = b->now_ms;
    *passed = false;
    if (t == 0)
        return 0;
    if (t & JOURNAL_TIME_LEFT) {
        uint64_t left = t & ~JOURNAL_TIME_LEFT;
        *passed = left == 0;
        return left > UINT64_MAX - 1 - now ? UINT64_MAX - 1 : now + left;
    }
    if (b->wall_base_ms == 0) {
        r->unclocked++;
        return UINT64_MAX;
    }
    uint64_t wall_now = now >= b->wall_at_now ? b->wall_base_ms + (now - b->wall_at_now)
                                              : b->wall_base_ms - (b->wall_at_now - now);
    if (t <= wall_now) {
        *passed = true;
        return now ? now : 1;
    }
    uint64_t left = t - wall_now;
    return left > UINT64_MAX - 1 - now ? UINT64_MAX - 1 : now + left;
}

/* The recorded expiry of a message as msg.expiry_ms: 0 = never. */
static uint64_t msg_expiry(broker *b, restore_state *r, uint64_t t, bool *passed)
{
    uint64_t core = core_time(b, r, t, passed);
    return core == UINT64_MAX ? 0 : core;
}

/* Forwarded properties (msg-t.h) go out in PUBLISH packets as they are: a
 * damaged store must not make the broker send a malformed block. A whole
 * block of the properties a message carries, each at most once (User
 * Properties repeat), strings valid UTF-8, the Response Topic a topic
 * name [MQTT-3.3.2-13]; a will's block may also keep its Message Expiry
 * Interval (session-t.h). */
static bool props_ok(const uint8_t *p, size_t len, bool is_will)
{
    uint64_t allowed = MQTT_PROP_BIT(MQTT_PROP_PAYLOAD_FORMAT) |
                       MQTT_PROP_BIT(MQTT_PROP_CONTENT_TYPE) |
                       MQTT_PROP_BIT(MQTT_PROP_RESPONSE_TOPIC) |
                       MQTT_PROP_BIT(MQTT_PROP_CORRELATION_DATA) |
                       MQTT_PROP_BIT(MQTT_PROP_USER_PROPERTY) |
                       (is_will ? MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY) : 0);
    const mqtt_bytes raw = {p, len};
    uint64_t seen = 0;
    size_t pos = 0;
    mqtt_prop pr;
    while (mqtt_prop_next(&raw, &pos, &pr)) {
        if (pr.id >= 64)
            return false;
        uint64_t bit = MQTT_PROP_BIT(pr.id);
        if (!(allowed & bit) ||
            (pr.id != MQTT_PROP_USER_PROPERTY && (seen & bit)))
            return false;
        seen |= bit;
        if ((pr.id == MQTT_PROP_PAYLOAD_FORMAT && pr.value > 1) ||
            (pr.id == MQTT_PROP_CONTENT_TYPE && !mqtt_utf8_valid(pr.data.p, pr.data.len)) ||
            (pr.id == MQTT_PROP_RESPONSE_TOPIC &&
             !mqtt_topic_name_valid(pr.data.p, pr.data.len)) ||
            (pr.id == MQTT_PROP_USER_PROPERTY &&
             (!mqtt_utf8_valid(pr.data.p, pr.data.len) ||
              !mqtt_utf8_valid(pr.data2.p, pr.data2.len))))
            return false;
    }
    return pos == len; /* the walk stops early at anything malformed */
}

/* An offline session's expiry or will is due at core time at: the
 * sessions' tick must look by then (session-t.h: early, never late). */
static void note_event(broker *b, uint64_t at)
{
    if (at < b->sessions.next_event_ms)
        b->sessions.next_event_ms = at;
}

/* The records restore produces: removals of what expired (see the top). */
static void forget_retained(broker *b, const uint8_t *topic, size_t tlen)
{
    b->restoring = false;
    bk_journal_retain_del(b, topic, tlen);
    b->restoring = true;
}

static void forget_queued(broker *b, const session *s, uint64_t seq, uint8_t qos)
{
    qentry e = {.seq = seq, .qos = qos};
    b->restoring = false;
    bk_journal_queue_del(b, s, &e);
    b->restoring = true;
}

int broker_restore_retained(broker *b, const uint8_t *topic, size_t tlen,
                            const uint8_t *payload, size_t plen, uint8_t qos,
                            const uint8_t *props, size_t props_len, uint64_t expiry_at)
{
    restore_state *r = rs_get(b);
    if (!r || tlen == 0 || tlen > UINT16_MAX || qos > 2 || props_len > UINT32_MAX ||
        !mqtt_topic_name_valid(topic, tlen) || !props_ok(props, props_len, false))
        return -1;
    bool passed;
    uint64_t expiry = msg_expiry(b, r, expiry_at, &passed);
    if (passed) {
        /* [MQTT-3.3.2-5]: an expired retained message is not delivered. */
        forget_retained(b, topic, tlen);
        r->expired++;
        return 0;
    }
    msg *m = bk_msg_new5(b, topic, tlen, payload, plen, props, props_len, qos, true, expiry);
    if (!m)
        return -1;
    int rc = bk_tree_set_retained(b, &b->tree, topic, tlen, m);
    bk_msg_unref(b, m);
    if (rc == 0)
        r->retained++;
    return rc;
}

int broker_restore_session(broker *b, const uint8_t *id, size_t idlen, const uint8_t *identity,
                           size_t identity_len, bool is_operator, uint32_t expiry_interval,
                           uint64_t expiry_at)
{
    restore_state *r = rs_get(b);
    if (!r || idlen > UINT16_MAX || bk_session_find(&b->sessions, id, idlen))
        return -1;
    session *s = bk_session_create(b, &b->sessions, id, idlen, false);
    if (!s)
        return -1;
    /* Counted toward limits.max_sessions_per_identity, never refused by
     * it: the limit only stops new sessions from being created. */
    if (identity_len &&
        (identity_len > UINT16_MAX ||
         bk_ident_attach(b, s, (const char *)identity, identity_len) != 0)) {
        bk_session_destroy(b, s);
        return -1;
    }
    s->is_operator = is_operator;
    /* 0: not recorded (journal.h); a 3.1.1 session's interval applies. */
    if (expiry_interval == 0)
        expiry_interval = b->lim.session_expiry_s ? b->lim.session_expiry_s : UINT32_MAX;
    s->expiry_interval_s = expiry_interval;
    bk_session_set_offline(b, s, b->now_ms);
    /* Its expiry: the recorded time when it was offline then (it ran while
     * the broker was down), else the whole interval from now, as for a
     * connection that ended now. Offline sessions have expires_at != 0;
     * one that passed is ended by broker_restore_done(). */
    bool passed;
    uint64_t at = core_time(b, r, expiry_at, &passed);
    if (expiry_interval == UINT32_MAX)
        at = UINT64_MAX;
    else if (at == 0 || at == UINT64_MAX)
        at = b->now_ms + (uint64_t)expiry_interval * 1000u;
    s->expires_at = at ? at : 1;
    note_event(b, s->expires_at);
    r->sessions++;
    return 0;
}

int broker_restore_sub(broker *b, const uint8_t *id, size_t idlen, const uint8_t *filter,
                       size_t flen, uint8_t qos, uint8_t options, uint32_t sub_id)
{
    session *s = bk_session_find(&b->sessions, id, idlen);
    bool is_new;
    /* No filter longer than SUBSCRIBE can carry enters the tree
     * (TREE_FILTER_MAX): only a damaged store holds one. The options byte
     * holds only the defined bits above the QoS ([MQTT-3.8.3-5]: the rest
     * are reserved), the identifier is 0 or 1..268435455. */
    const uint8_t known = MQTT_SUBOPT_NO_LOCAL | MQTT_SUBOPT_RETAIN_AS_PUBLISHED |
                          MQTT_SUBOPT_RETAIN_HANDLING_MASK;
    if (!rs_get(b) || !s || qos > 2 || flen > TREE_FILTER_MAX ||
        !mqtt_topic_filter_valid(filter, flen) || (options & ~known) != 0 ||
        (options & MQTT_SUBOPT_RETAIN_HANDLING_MASK) >> MQTT_SUBOPT_RETAIN_HANDLING_SHIFT > 2 ||
        sub_id > MQTT_MAX_SUBSCRIPTION_ID)
        return -1;
    sub *x = bk_tree_subscribe(b, &b->tree, s, filter, flen, qos, &is_new);
    if (!x)
        return -1;
    x->options = options;
    x->sub_id = sub_id;
    /* The ACL governs the FILTER of `$share/GROUP/FILTER` (subscribe.c). */
    mqtt_bytes group, inner = {filter, flen};
    (void)mqtt_share_split(filter, flen, &group, &inner); /* bk_tree_subscribe took it */
    x->acl_check = bk_acl_filter_partly_denied(b->acl, s->identity, s->id, (const char *)inner.p,
                                               inner.len);
    return 0;
}

int broker_restore_msg(broker *b, uint64_t msg_id, const uint8_t *topic, size_t tlen,
                       const uint8_t *payload, size_t plen, uint8_t qos, bool retain,
                       const uint8_t *props, size_t props_len, uint64_t expiry_at)
{
    restore_state *r = rs_get(b);
    /* The topic goes out in PUBLISH packets as it is: a damaged store must
     * not make the broker send clients a malformed one. */
    if (!r || msg_id == 0 || tlen == 0 || tlen > UINT16_MAX || qos > 2 ||
        props_len > UINT32_MAX || !mqtt_topic_name_valid(topic, tlen) || rs_find(r, msg_id) ||
        !props_ok(props, props_len, false))
        return -1;
    /* Kept even when expired: an entry already sent must still be
     * completed; broker_restore_queued() drops the unsent ones. */
    bool passed;
    uint64_t expiry = msg_expiry(b, r, expiry_at, &passed);
    msg *m = bk_msg_new5(b, topic, tlen, payload, plen, props, props_len, qos, retain, expiry);
    if (!m)
        return -1;
    m->store_id = msg_id;
    if (rs_add(b, r, m) != 0) {
        bk_msg_unref(b, m);
        return -1;
    }
    if (msg_id >= b->jr.next_msg_id)
        b->jr.next_msg_id = msg_id + 1;
    return 0;
}

/* The further Subscription Identifiers as qentry.sub_ids_more ([count,
 * id, ...], owned), NULL when there are none; false when they are not
 * identifiers or memory ran out. */
static bool sub_ids_parse(broker *b, const uint8_t *p, size_t len, uint32_t **out)
{
    *out = NULL;
    if (len == 0)
        return true;
    if (len % 4 != 0 || len / 4 > UINT16_MAX) /* never more than the session's subscriptions */
        return false;
    size_t n = len / 4;
    uint32_t *ids = bk_mem_alloc(b, (n + 1) * sizeof *ids);
    if (!ids)
        return false;
    ids[0] = (uint32_t)n;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *q = p + 4 * i;
        ids[i + 1] = (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3];
        if (ids[i + 1] == 0 || ids[i + 1] > MQTT_MAX_SUBSCRIPTION_ID) {
            bk_mem_free(b, ids);
            return false;
        }
    }
    *out = ids;
    return true;
}

int broker_restore_queued(broker *b, const uint8_t *id, size_t idlen, uint64_t seq,
                          uint64_t msg_id, uint8_t qos, bool retain, uint8_t state,
                          uint16_t packet_id, uint32_t sub_id, const uint8_t *sub_ids,
                          size_t sub_ids_len)
{
    restore_state *r = rs_get(b);
    session *s = bk_session_find(&b->sessions, id, idlen);
    if (!r || !s || qos == 0 || qos > 2 || state > JOURNAL_Q_WAIT_PUBCOMP ||
        sub_id > MQTT_MAX_SUBSCRIPTION_ID || (sub_ids_len && !sub_id))
        return -1;
    msg *m = NULL;
    if (state != JOURNAL_Q_WAIT_PUBCOMP) {
        m = rs_find(r, msg_id);
        if (!m) {
            r->dropped++; /* its message row is missing: nothing to send */
            return 0;
        }
    }
    /* Sent entries form the front of the ring; a sent entry behind an
     * unsent one can only come from a damaged store: send it afresh. */
    if (state != JOURNAL_Q_QUEUED && s->q_sent < s->q_count) {
        if (!m) {
            r->dropped++;
            return 0;
        }
        state = JOURNAL_Q_QUEUED;
    }
    /* [MQTT-3.3.2-5]: a message whose expiry passed before its delivery
     * began is deleted for this subscriber. One already sent is resent
     * (its delivery began before the broker went down). */
    if (state == JOURNAL_Q_QUEUED && bk_msg_expired(m, b->now_ms)) {
        forget_queued(b, s, seq, qos);
        r->expired++;
        return 0;
    }
    uint32_t *more;
    if (!sub_ids_parse(b, sub_ids, sub_ids_len, &more))
        return -1;
    if (!bk_session_restore_entry(b, s, m, seq, qos, retain, state, packet_id)) {
        bk_mem_free(b, more);
        return -1;
    }
    qentry *e = bk_session_entry(s, s->q_count - 1);
    e->sub_id = sub_id;
    e->sub_ids_more = more;
    if (m)
        m->store_refs++;
    if (seq >= s->next_seq)
        s->next_seq = seq + 1;
    r->queued++;
    return 0;
}

int broker_restore_inqos2(broker *b, const uint8_t *id, size_t idlen, uint16_t packet_id)
{
    session *s = bk_session_find(&b->sessions, id, idlen);
    if (!rs_get(b) || !s || packet_id == 0)
        return -1;
    if (bk_session_in_qos2_has(s, packet_id))
        return 0;
    return bk_session_in_qos2_add(b, s, packet_id);
}

int broker_restore_will(broker *b, const uint8_t *id, size_t idlen, const uint8_t *topic,
                        size_t tlen, const uint8_t *payload, size_t plen, uint8_t qos,
                        bool retain, const uint8_t *props, size_t props_len, uint64_t expiry_at,
                        uint64_t fire_at)
{
    restore_state *r = rs_get(b);
    session *s = bk_session_find(&b->sessions, id, idlen);
    /* The will goes out as a PUBLISH: the same checks as a message. */
    if (!r || !s || tlen == 0 || tlen > UINT16_MAX || qos > 2 || props_len > UINT32_MAX ||
        !mqtt_topic_name_valid(topic, tlen) || !props_ok(props, props_len, true))
        return -1;
    bool passed;
    uint64_t expiry = msg_expiry(b, r, expiry_at, &passed);
    msg *w = bk_msg_new5(b, topic, tlen, payload, plen, props, props_len, qos, retain, expiry);
    if (!w)
        return -1;
    bk_msg_unref(b, s->will);
    s->will = w;
    /* Due now when its time passed (or was not recorded, or cannot be
     * compared): broker_restore_done() publishes it. */
    uint64_t at = core_time(b, r, fire_at, &passed);
    s->will_at_ms = passed || at == 0 || at == UINT64_MAX ? b->now_ms : at;
    note_event(b, s->will_at_ms);
    return 0;
}

/* The sessions that expired while the broker was down end now, after
 * their wills [MQTT-3.1.2-8]; wills whose delay passed are published:
 * what the sessions' tick does when their time comes (session.c), run
 * once at once so that no client resumes such a session. Runs with
 * records on: the session deletions and will removals reach the disk. */
static void end_expired(broker *b, restore_state *r)
{
    size_t before = b->sessions.count;
    bk_sessions_tick(b, b->now_ms);
    r->expired += before - b->sessions.count;
}

void broker_restore_done(broker *b)
{
    restore_state *r = b->restore;
    b->restoring = false;
    if (!r)
        return;
    end_expired(b, r);
    for (size_t i = 0; i < r->cap; i++)
        if (r->tab[i])
            bk_msg_unref(b, r->tab[i]); /* queue entries hold their own refs */
    bk_log(b, BROKER_LOG_INFO,
           "restored %zu persistent sessions, %zu queued messages, %zu retained messages%s",
           r->sessions, r->queued, r->retained, r->dropped ? " (some entries lacked data)" : "");
    if (r->expired)
        bk_log(b, BROKER_LOG_INFO,
               "restore: %zu sessions, queued or retained messages expired while the broker "
               "was down (wills of the sessions published)",
               r->expired);
    if (r->unclocked)
        bk_log(b, BROKER_LOG_WARN,
               "restore: no wall clock: %zu recorded expiry times could not be checked (messages "
               "kept without expiry, sessions given their whole interval, wills published)",
               r->unclocked);
    if (r->dropped)
        bk_log(b, BROKER_LOG_WARN, "store: %zu queued entries could not be restored",
               r->dropped);
    bk_mem_free(b, r->tab);
    bk_mem_free(b, r);
    b->restore = NULL;
}
