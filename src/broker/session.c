/*
 * session.c - MQTT sessions: the table by client id, each session's ordered
 * outbound queue of QoS 1/2 messages (sent-and-unacknowledged first, then
 * waiting), and the inbound QoS 2 packet ids awaiting PUBREL.
 *
 * The outbound queue is one ring per session in delivery order. Entries at
 * the front have been sent (a prefix, since we send in order); an entry
 * acknowledged out of order becomes a hole that disappears once the front
 * reaches it. One ring gives one bound: max_inflight + max_queued entries.
 *
 * Offline sessions wait on a list for their end: the Session Expiry
 * Interval (MQTT 5.0's meaning for every session, session-t.h), and a will
 * whose Will Delay Interval runs, fired at the earlier of its time and
 * the session's end [MQTT-3.1.2-8].
 */
#include "broker/access.h"
#include "broker/base.h"
#include "broker/deliver.h"
#include "broker/broker-t.h"
#include "broker/deliver.h"
#include "broker/flow.h"
#include "broker/hash.h"
#include "broker/ident.h"
#include "broker/mem.h"
#include "broker/msg.h"
#include "broker/persist.h"
#include "broker/session.h"
#include "broker/tree.h"

#include <string.h>

#define TABLE_MIN 64u

static uint32_t id_hash(const session_table *st, const uint8_t *id, size_t len)
{
    return table_hash(st->key, 0, id, len); /* keyed: see hash.h */
}

int bk_sessions_init(broker *b, session_table *st)
{
    memset(st, 0, sizeof *st);
    st->key[0] = b->hash_key[0];
    st->key[1] = b->hash_key[1];
    st->table = bk_mem_calloc(b, TABLE_MIN * sizeof *st->table);
    if (!st->table)
        return -1;
    st->size = TABLE_MIN;
    st->next_event_ms = UINT64_MAX;
    return 0;
}

void bk_sessions_free(broker *b, session_table *st)
{
    st->freeing = true; /* the table must not shrink under this walk */
    for (size_t i = 0; i < st->size; i++)
        while (st->table[i])
            bk_session_destroy(b, st->table[i]);
    bk_mem_free(b, st->table);
    memset(st, 0, sizeof *st);
}

session *bk_session_find(session_table *st, const uint8_t *id, size_t len)
{
    uint32_t h = id_hash(st, id, len);
    for (session *s = st->table[h & (st->size - 1)]; s; s = s->hnext)
        if (s->hashv == h && s->id_len == len && memcmp(s->id, id, len) == 0)
            return s;
    return NULL;
}

bool broker_session_waiting(broker *b, const char *client_id, uint64_t *waiting)
{
    const session *s = bk_session_find(&b->sessions, (const uint8_t *)client_id,
                                       strlen(client_id));

    *waiting = s ? (uint64_t)(s->q_count - s->q_sent) + s->inflight : 0;
    return s != NULL;
}

/* Rehash into size slots (a power of two). */
static void table_resize(broker *b, session_table *st, size_t size)
{
    session **table = bk_mem_calloc(b, size * sizeof *table);
    if (!table)
        return; /* longer chains, still correct */
    for (size_t i = 0; i < st->size; i++) {
        session *s = st->table[i];
        while (s) {
            session *next = s->hnext;
            size_t slot = s->hashv & (size - 1);
            s->hnext = table[slot];
            table[slot] = s;
            s = next;
        }
    }
    bk_mem_free(b, st->table);
    st->table = table;
    st->size = size;
}

session *bk_session_create(broker *b, session_table *st, const uint8_t *id, size_t len, bool clean)
{
    ALWAYS(len <= UINT16_MAX);
    session *s = bk_mem_calloc(b, sizeof *s + len + 1);
    if (!s)
        return NULL;
    s->hashv = id_hash(st, id, len);
    s->id_len = (uint16_t)len;
    memcpy(s->id, id, len);
    s->id[len] = '\0';
    s->clean = clean;
    /* The 3.1.1 meaning (session-t.h); a 5.0 CONNECT or a restore sets
     * its own. */
    s->expiry_interval_s = clean ? 0 : b->lim.session_expiry_s ? b->lim.session_expiry_s : UINT32_MAX;
    s->next_packet_id = 1;
    s->next_seq = 1;
    size_t slot = s->hashv & (st->size - 1);
    s->hnext = st->table[slot];
    st->table[slot] = s;
    st->count++;
    if (st->count > st->size)
        table_resize(b, st, st->size * 2);
    return s;
}

/* An entry's identifiers beyond the first, owned, [count, id...]. */
static void entry_ids_free(broker *b, qentry *e)
{
    bk_mem_free(b, e->sub_ids_more);
    e->sub_ids_more = NULL;
}

/* Offline sessions, and only they, have expires_at != 0. */
static void offline_unlink(session_table *st, session *s)
{
    if (!s->expires_at)
        return;
    if (s->off_prev)
        s->off_prev->off_next = s->off_next;
    else
        st->offline = s->off_next;
    if (s->off_next)
        s->off_next->off_prev = s->off_prev;
    s->off_prev = s->off_next = NULL;
    s->expires_at = 0;
    st->offline_count--;
}

void bk_session_destroy(broker *b, session *s)
{
    session_table *st = &b->sessions;
    ALWAYS(s->conn == NULL);
    if (!st->freeing) /* not when the broker itself goes */
        bk_share_session_end(b, s);
    session **pp = &st->table[s->hashv & (st->size - 1)];
    while (*pp != s)
        pp = &(*pp)->hnext;
    *pp = s->hnext;
    st->count--;
    /* Less than a quarter full: shrink to between a quarter and a half (as
     * the topic tree's table does), so a crowd of clients that came and
     * went leaves no large table behind. */
    size_t size = st->size;
    while (!st->freeing && size > TABLE_MIN && st->count < size / 4)
        size /= 2;
    if (size != st->size)
        table_resize(b, st, size);
    offline_unlink(st, s);
    bk_flow_session_gone(b, s);
    bk_journal_session_del(b, s); /* the store drops the session's rows with it */
    bk_tree_remove_all(b, &b->tree, s);
    for (uint32_t i = 0; i < s->q_count; i++) {
        qentry *e = bk_session_entry(s, i);
        entry_ids_free(b, e);
        if (e->state == Q_DONE || !e->m)
            continue;
        if (bk_journaled(b, s) && e->qos > 0)
            bk_journal_msg_unref(b, e->m);
        bk_msg_unref(b, e->m);
    }
    bk_mem_free(b, s->q);
    bk_mem_free(b, s->in_qos2);
    bk_msg_unref(b, s->will); /* not published: bk_session_end() is the end that does */
    bk_ident_detach(b, s);
    bk_mem_free(b, s);
}

bool bk_session_may(const broker *b, const session *s, const uint8_t *topic, size_t len,
                    broker_acl_access access)
{
    bool reads_sys = b->sys_public && access == BROKER_ACL_READ;
    return broker_acl_check(b->acl, s->identity, s->id, s->is_operator || reads_sys,
                            (const char *)topic, len, access);
}

static void note_event(session_table *st, uint64_t at_ms)
{
    if (at_ms < st->next_event_ms)
        st->next_event_ms = at_ms;
}

void bk_session_set_offline(broker *b, session *s, uint64_t now_ms)
{
    session_table *st = &b->sessions;
    s->conn = NULL;
    bk_flow_session_gone(b, s); /* offline sessions hold no publishers */
    /* Kept for its Session Expiry Interval from now [MQTT-3.1.2-23]
     * [MQTT-4.1.0-2]; UINT32_MAX: for ever. expires_at != 0 marks an
     * offline session. */
    s->expires_at = s->expiry_interval_s == UINT32_MAX
                        ? UINT64_MAX
                        : now_ms + (uint64_t)s->expiry_interval_s * 1000u;
    if (s->expires_at == 0)
        s->expires_at = 1;
    s->off_prev = NULL;
    s->off_next = st->offline;
    if (st->offline)
        st->offline->off_prev = s;
    st->offline = s;
    st->offline_count++;
    if (s->expires_at != UINT64_MAX) {
        note_event(st, s->expires_at);
        /* Its record carries the time it expires, as a wall-clock time,
         * so the expiry runs on while the broker is down. */
        bk_journal_session_put(b, s);
    }
}

void bk_session_set_online(broker *b, session *s, broker_conn *c)
{
    bool expiring = s->expires_at != 0 && s->expires_at != UINT64_MAX;
    offline_unlink(&b->sessions, s);
    s->conn = c;
    s->q_wire = 0; /* nothing is on the new connection's wire yet */
    if (s->will) {
        /* Resumed before its will's delay ran out: the will is not sent
         * [MQTT-3.1.3-9]. */
        bk_msg_unref(b, s->will);
        s->will = NULL;
        s->will_at_ms = 0;
        bk_journal_will(b, s);
    }
    if (expiring)
        bk_journal_session_put(b, s); /* its record no longer says it expires */
}

void bk_session_set_expiry(broker *b, session *s, uint32_t interval_s)
{
    if (interval_s == s->expiry_interval_s)
        return;
    s->expiry_interval_s = interval_s;
    if (interval_s != 0) {
        ALWAYS(!s->clean); /* a session that ends with its connection stays so */
        bk_journal_session_put(b, s);
        return;
    }
    if (s->clean)
        return;
    /* From persistent to ending with its connection: off the disk first
     * (while it is still journaled), its queue's messages released there
     * as bk_session_destroy does, then no longer counted as one of its
     * identity's persistent sessions. */
    bk_journal_session_del(b, s);
    for (uint32_t i = 0; bk_journaled(b, s) && i < s->q_count; i++) {
        qentry *e = bk_session_entry(s, i);
        if (e->state != Q_DONE && e->m && e->qos > 0)
            bk_journal_msg_unref(b, e->m);
    }
    if (s->ident) {
        ALWAYS(s->ident->persistent > 0);
        s->ident->persistent--;
    }
    s->clean = true;
}

void bk_session_keep_will(broker *b, session *s, msg *will, uint32_t delay_s, uint64_t now_ms)
{
    ALWAYS(!s->conn && s->expires_at != 0 && !s->will);
    s->will = will;
    s->will_at_ms = now_ms + (uint64_t)delay_s * 1000u;
    note_event(&b->sessions, s->will_at_ms);
    bk_journal_will(b, s); /* its delay runs on while the broker is down */
}

void bk_will_publish(broker *b, msg *w, uint64_t now_ms)
{
    /* A will keeps its Message Expiry Interval among its properties until
     * it is published, because the interval counts from then (it becomes
     * the Publication Expiry Interval when the will is published: section
     * 3.1.3.2.4); the message that goes out carries it as its expiry time
     * instead, as every message does (msg-t.h). */
    size_t pos = 0;
    mqtt_prop pr;
    mqtt_bytes raw = {bk_msg_props(w), w->props_len};
    bool has_expiry = false;
    uint32_t expiry_s = 0;
    while (w->props_len && mqtt_prop_next(&raw, &pos, &pr)) {
        if (pr.id == MQTT_PROP_MESSAGE_EXPIRY) {
            has_expiry = true;
            expiry_s = pr.value;
        }
    }
    msg *m = w;
    if (has_expiry) {
        uint8_t *props = bk_mem_alloc(b, w->props_len);
        size_t n = props ? mqtt_props_filter(&raw, MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY), props,
                                             w->props_len)
                         : SIZE_MAX;
        uint64_t at = now_ms + (uint64_t)expiry_s * 1000u;
        m = n == SIZE_MAX ? NULL
                          : bk_msg_new5(b, bk_msg_topic(w), w->topic_len, bk_msg_payload(w),
                                        w->payload_len, props, n, w->qos, w->retain,
                                        at ? at : 1);
        bk_mem_free(b, props);
        if (!m) {
            bk_log(b, BROKER_LOG_ERROR, "out of memory publishing a will on '%.*s': not sent",
                   (int)(w->topic_len > 200 ? 200 : w->topic_len),
                   (const char *)bk_msg_topic(w));
            return;
        }
    }
    bk_route_publish(b, bk_msg_topic(m), m->topic_len, bk_msg_payload(m), m->payload_len, m->qos,
                     m->retain, m);
    if (m != w)
        bk_msg_unref(b, m);
}

void bk_session_end(broker *b, session *s, uint64_t now_ms)
{
    msg *will = s->will;
    s->will = NULL;
    bk_session_destroy(b, s);
    if (will) {
        /* The session ended before its will's delay did: the will goes
         * now [MQTT-3.1.2-8]. After the session is gone, as a will always
         * is (conn.c). */
        bk_will_publish(b, will, now_ms);
        bk_msg_unref(b, will);
    }
}

void bk_sessions_tick(broker *b, uint64_t now_ms)
{
    session_table *st = &b->sessions;
    uint64_t next = UINT64_MAX;
    session *s = st->offline;
    while (s) {
        session *n = s->off_next;
        if (s->expires_at <= now_ms) {
            bk_log_limited(b, BK_LOGK_EXPIRED, BROKER_LOG_INFO, "session %s expired", s->id);
            bk_session_end(b, s, now_ms);
            /* A will routed by the end may have ended nothing else:
             * routing never removes a session, so n is still valid. */
        } else {
            if (s->will && s->will_at_ms <= now_ms) {
                msg *will = s->will;
                s->will = NULL;
                s->will_at_ms = 0;
                bk_journal_will(b, s); /* published: off the disk */
                bk_will_publish(b, will, now_ms);
                bk_msg_unref(b, will);
            }
            if (s->will && s->will_at_ms < next)
                next = s->will_at_ms;
            if (s->expires_at != UINT64_MAX && s->expires_at < next)
                next = s->expires_at;
        }
        s = n;
    }
    st->next_event_ms = next;
}

static int q_grow(broker *b, session *s, uint32_t limit)
{
    uint32_t cap = s->q_cap ? s->q_cap * 2 : 8;
    if (cap > limit)
        cap = limit;
    qentry *q = bk_mem_alloc(b, (size_t)cap * sizeof *q);
    if (!q)
        return -1;
    for (uint32_t i = 0; i < s->q_count; i++)
        q[i] = *bk_session_entry(s, i);
    bk_mem_free(b, s->q);
    s->q = q;
    s->q_cap = cap;
    s->q_head = 0;
    return 0;
}

static uint32_t ring_limit(const broker *b)
{
    return b->lim.max_inflight + b->lim.max_queued + b->lim.max_retained;
}

static bool push_entry(broker *b, session *s, msg *m, uint8_t qos, bool retain,
                       const bk_via *via)
{
    if (s->q_count >= ring_limit(b))
        return false;
    if (s->q_count == s->q_cap && q_grow(b, s, ring_limit(b)) != 0)
        return false;
    uint32_t *more = NULL;
    if (via && via->more) {
        size_t n = (size_t)via->more[0] + 1;
        more = bk_mem_alloc(b, n * sizeof *more);
        if (!more)
            return false;
        memcpy(more, via->more, n * sizeof *more);
    }
    qentry *e = bk_session_entry(s, s->q_count);
    e->sub_id = via ? via->sub_id : 0;
    e->sub_ids_more = more;
    e->shared = via ? via->shared : 0;
    e->m = bk_msg_ref(m);
    e->seq = s->next_seq++;
    e->packet_id = 0;
    e->qos = qos;
    e->state = Q_QUEUED;
    e->retain = retain;
    e->sent = false;
    e->jseq = 0;
    s->q_count++;
    bk_session_bytes_add(s, m->payload_len);
    if (bk_journaled(b, s) && qos > 0) {
        bk_journal_msg_ref(b, m);
        bk_journal_queue_put(b, s, e);
    }
    return true;
}

bool bk_session_restore_entry(broker *b, session *s, msg *m, uint64_t seq, uint8_t qos,
                              bool retain, uint8_t state, uint16_t packet_id)
{
    /* Restored entries were within the limits when stored: no bound here. */
    if (s->q_count == s->q_cap && q_grow(b, s, UINT32_MAX) != 0)
        return false;
    qentry *e = bk_session_entry(s, s->q_count);
    e->shared = 0;
    e->m = m ? bk_msg_ref(m) : NULL;
    e->seq = seq;
    e->packet_id = packet_id;
    e->qos = qos;
    e->state = state;
    e->retain = retain;
    e->sent = state != Q_QUEUED; /* perhaps sent before the restart: DUP */
    e->jseq = 0; /* restore.c sets the identifiers */
    s->q_count++;
    if (state == Q_QUEUED) {
        bk_session_bytes_add(s, m ? m->payload_len : 0);
    } else {
        s->q_sent++;
        s->inflight++;
        bk_session_flight_add(s, e->m);
        s->ids_scattered = true; /* ids from before the restart */
    }
    return true;
}

bool bk_session_enqueue(broker *b, session *s, msg *m, uint8_t qos, bool retain,
                        const bk_via *via)
{
    uint32_t unsent = s->q_count - s->q_sent;
    if (unsent >= b->lim.max_queued || s->q_bytes + m->payload_len > b->lim.max_queued_bytes)
        return false;
    if (s->ident &&
        s->ident->q_bytes + m->payload_len > b->lim.max_queued_bytes_per_identity)
        return false;
    return push_entry(b, s, m, qos, retain, via);
}

bool bk_session_enqueue_retained(broker *b, session *s, msg *m, uint8_t qos,
                                 const bk_via *via)
{
    return push_entry(b, s, m, qos, true, via);
}

static void drop_done_head(broker *b, session *s);

void bk_session_take_shared(broker *b, session *s, uint32_t serial,
                            void (*fn)(broker *b, void *ctx, qentry *e), void *ctx)
{
    uint32_t w = s->q_sent;
    for (uint32_t i = 0; i < s->q_count; i++) {
        qentry *e = bk_session_entry(s, i);
        if (i < s->q_sent || e->shared != serial) {
            if (e->shared == serial)
                e->shared = 0;
            if (i >= s->q_sent && w++ != i)
                *bk_session_entry(s, w - 1) = *e;
            continue;
        }
        fn(b, ctx, e);
        if (bk_journaled(b, s) && e->qos > 0) {
            bk_journal_queue_del(b, s, e);
            bk_journal_msg_unref(b, e->m);
        }
        bk_session_bytes_sub(s, e->m->payload_len);
        entry_ids_free(b, e);
        bk_msg_unref(b, e->m);
    }
    if (w < s->q_count) {
        s->q_count = w;
        bk_flow_progress(b, s); /* its queue shrank: publishers it held may go */
        drop_done_head(b, s);
    }
}

qentry *bk_session_find_sent(session *s, uint16_t packet_id)
{
    /* The sent entries are [q_head, q_head + q_sent) around the ring: scan
     * them as (at most) two runs, without an index division per entry. This
     * runs for every packet id handed out and every acknowledgement. */
    if (s->q_sent == 0)
        return NULL; /* s->q may be NULL */
    uint32_t first = s->q_cap - s->q_head < s->q_sent ? s->q_cap - s->q_head : s->q_sent;
    for (qentry *e = s->q + s->q_head, *end = e + first; e < end; e++)
        if (e->packet_id == packet_id && e->state != Q_DONE)
            return e;
    for (qentry *e = s->q, *end = e + (s->q_sent - first); e < end; e++)
        if (e->packet_id == packet_id && e->state != Q_DONE)
            return e;
    return NULL;
}

static void drop_done_head(broker *b, session *s)
{
    while (s->q_count > 0 && bk_session_entry(s, 0)->state == Q_DONE) {
        s->q_head = (s->q_head + 1) % s->q_cap;
        s->q_count--;
        s->q_sent--;
        if (s->q_wire > 0) /* else the entry had not gone out on this connection */
            s->q_wire--;
    }
    if (s->q_count == 0 && s->q) {
        /* An idle session holds no ring: idle memory per client matters
         * more than one allocation per burst. */
        bk_mem_free(b, s->q);
        s->q = NULL;
        s->q_cap = 0;
        s->q_head = 0;
    }
}

void bk_session_flight_add(session *s, const msg *m)
{
    if (m)
        s->inflight_bytes += m->payload_len;
}

void bk_session_flight_sub(session *s, const msg *m)
{
    if (!m)
        return;
    ALWAYS(s->inflight_bytes >= m->payload_len);
    s->inflight_bytes -= m->payload_len;
}

void bk_session_complete(broker *b, session *s, qentry *e)
{
    ALWAYS(e->state != Q_DONE && e->state != Q_QUEUED && s->inflight > 0);
    bk_journal_queue_del(b, s, e);
    if (e->m && bk_journaled(b, s))
        bk_journal_msg_unref(b, e->m);
    e->state = Q_DONE;
    bk_session_flight_sub(s, e->m);
    bk_msg_unref(b, e->m);
    e->m = NULL;
    entry_ids_free(b, e);
    s->inflight--;
    drop_done_head(b, s);
}

void bk_session_sent_qos0(broker *b, session *s, qentry *e)
{
    ALWAYS(e->qos == 0 && e->state == Q_QUEUED);
    e->state = Q_DONE;
    bk_msg_unref(b, e->m);
    e->m = NULL;
    entry_ids_free(b, e);
    ALWAYS(s->q_wire == s->q_sent); /* sent only when nothing before it waits */
    s->q_sent++;
    s->q_wire++;
    drop_done_head(b, s);
}

uint16_t bk_session_next_packet_id(session *s)
{
    /* Ids go out in sequence (1..65535, then 1 again) in queue order, and
     * entries leave the sent prefix at its front only: so the live sent
     * entries hold ids among the last q_sent handed out (fewer when some
     * took none), and the next one in sequence, last handed out 65535 ids
     * ago, is free while q_sent < 65535. That spares a scan of the whole
     * window per message, which a window of thousands would make the
     * broker's main cost. Otherwise (restored ids, or a skip made by the
     * scan below, mark ids_scattered) an id is checked against every sent
     * entry; the shortcut returns once no sent entry is left. */
    if (s->q_sent == 0)
        s->ids_scattered = false;
    for (;;) {
        uint16_t id = s->next_packet_id;
        s->next_packet_id = (uint16_t)(id == UINT16_MAX ? 1 : id + 1);
        if (!s->ids_scattered && s->q_sent < UINT16_MAX)
            return id;
        if (!bk_session_find_sent(s, id))
            return id;
        s->ids_scattered = true; /* skipped one: the sequence has a gap */
    }
}

bool bk_session_in_qos2_has(const session *s, uint16_t id)
{
    for (uint32_t i = 0; i < s->in_qos2_count; i++)
        if (s->in_qos2[i] == id)
            return true;
    return false;
}

int bk_session_in_qos2_add(broker *b, session *s, uint16_t id)
{
    if (s->in_qos2_count >= b->lim.max_inbound_qos2)
        return -1;
    if (s->in_qos2_count == s->in_qos2_cap) {
        uint32_t cap = s->in_qos2_cap ? s->in_qos2_cap * 2 : 4;
        uint16_t *a = bk_mem_realloc(b, s->in_qos2, cap * sizeof *a);
        if (!a)
            return -1;
        s->in_qos2 = a;
        s->in_qos2_cap = cap;
    }
    s->in_qos2[s->in_qos2_count++] = id;
    bk_journal_inqos2(b, s, id, true);
    return 0;
}

void bk_session_in_qos2_del(broker *b, session *s, uint16_t id)
{
    for (uint32_t i = 0; i < s->in_qos2_count; i++) {
        if (s->in_qos2[i] == id) {
            bk_journal_inqos2(b, s, id, false);
            s->in_qos2[i] = s->in_qos2[--s->in_qos2_count];
            return;
        }
    }
}
