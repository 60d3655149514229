/*
 * journal.c - the core's side of persistence: durable-state changes appended
 * as records to batches the platform hands to the store, acknowledgements
 * held until the batch they depend on is committed, and the full snapshot
 * that repairs the disk after a failed batch. Contract: journal.h.
 */
#include "broker/internal.h"

#include <string.h>

#define BATCH_MIN_CAP 4096u

bool journaled(const broker *b, const session *s)
{
    return b->durable && !b->restoring && !s->clean;
}

/* ---- batches ----------------------------------------------------------- */

static void snapshot(broker *b);

/* Make sure the open batch has room for n more bytes; NULL on failure, in
 * which case the journal is marked broken (a snapshot will repair it). */
static uint8_t *reserve(broker *b, size_t n)
{
    journal *j = &b->jr;
    if (!j->open) {
        jbatch *nb = bmem_calloc(b, sizeof *nb);
        if (!nb)
            goto fail;
        nb->seq = j->next_seq++;
        j->open = nb;
        if (j->broken) {
            j->broken = false;
            snapshot(b); /* appends through reserve() into nb */
            if (j->broken)
                goto fail;
        }
    }
    jbatch *o = j->open;
    if (o->cap - o->len < n) {
        size_t cap = o->cap ? o->cap : BATCH_MIN_CAP;
        while (cap - o->len < n)
            cap *= 2;
        uint8_t *d = bmem_realloc(b, o->data, cap);
        if (!d)
            goto fail;
        o->data = d;
        o->cap = cap;
    }
    return o->data + o->len;
fail:
    if (!j->broken)
        blog(b, BROKER_LOG_ERROR, "out of memory recording durable state: the store will be "
                                  "rewritten from memory at the next batch");
    j->broken = true;
    return NULL;
}

typedef struct jw {
    uint8_t *p;
    size_t n;
} jw;

static void put_u8(jw *w, uint8_t v) { w->p[w->n++] = v; }
static void put_u16(jw *w, uint16_t v)
{
    w->p[w->n++] = (uint8_t)(v >> 8);
    w->p[w->n++] = (uint8_t)v;
}
static void put_u32(jw *w, uint32_t v)
{
    for (int i = 3; i >= 0; i--)
        w->p[w->n++] = (uint8_t)(v >> (8 * i));
}
static void put_u64(jw *w, uint64_t v)
{
    for (int i = 7; i >= 0; i--)
        w->p[w->n++] = (uint8_t)(v >> (8 * i));
}
static void put_bytes(jw *w, const void *p, size_t len)
{
    put_u32(w, (uint32_t)len);
    if (len)
        memcpy(w->p + w->n, p, len);
    w->n += len;
}

/* Start a record of type t needing at most n bytes after the type byte. */
static bool rec_begin(broker *b, jw *w, journal_type t, size_t n)
{
    uint8_t *p = reserve(b, 1 + n);
    if (!p)
        return false;
    w->p = p;
    w->n = 0;
    put_u8(w, (uint8_t)t);
    return true;
}

static void rec_end(broker *b, jw *w)
{
    ALWAYS(b->jr.open->cap - b->jr.open->len >= w->n);
    b->jr.open->len += w->n;
    b->jr.open->records++;
    b->jr.records++;
}

/* ---- records ----------------------------------------------------------- */

static bool is_sys_topic(const uint8_t *t, size_t len)
{
    return len >= 4 && memcmp(t, "$SYS", 4) == 0 && (len == 4 || t[4] == '/');
}

void j_retain_set(broker *b, const uint8_t *topic, size_t tlen, const uint8_t *payload,
                  size_t plen, uint8_t qos)
{
    jw w;
    /* $SYS values are regenerated at every start: never stored. */
    if (!b->durable || b->restoring || is_sys_topic(topic, tlen))
        return;
    if (!rec_begin(b, &w, J_RETAIN_SET, 9 + tlen + plen))
        return;
    put_bytes(&w, topic, tlen);
    put_bytes(&w, payload, plen);
    put_u8(&w, qos);
    rec_end(b, &w);
}

void j_retain_del(broker *b, const uint8_t *topic, size_t tlen)
{
    jw w;
    if (!b->durable || b->restoring || is_sys_topic(topic, tlen))
        return;
    if (!rec_begin(b, &w, J_RETAIN_DEL, 4 + tlen))
        return;
    put_bytes(&w, topic, tlen);
    rec_end(b, &w);
}

void j_session_put(broker *b, const session *s)
{
    jw w;
    size_t il = s->identity ? strlen(s->identity) : 0;
    if (!journaled(b, s) || !rec_begin(b, &w, J_SESSION_PUT, 9 + s->id_len + il))
        return;
    put_bytes(&w, s->id, s->id_len);
    put_bytes(&w, s->identity, il);
    put_u8(&w, s->is_operator ? 1 : 0);
    rec_end(b, &w);
}

void j_session_del(broker *b, const session *s)
{
    jw w;
    if (!journaled(b, s) || !rec_begin(b, &w, J_SESSION_DEL, 4 + s->id_len))
        return;
    put_bytes(&w, s->id, s->id_len);
    rec_end(b, &w);
}

void j_sub(broker *b, const session *s, const uint8_t *filter, size_t flen, uint8_t qos,
           bool put)
{
    jw w;
    /* A subscription row is keyed by its filter: an empty one would name no
     * row, and a delete of it would leave the store keeping what memory
     * dropped. Such a record comes only from a bug; stop before it is
     * written rather than let the disk and memory diverge. */
    ALWAYS(flen > 0 && flen <= TREE_FILTER_MAX);
    if (!journaled(b, s) ||
        !rec_begin(b, &w, put ? J_SUB_PUT : J_SUB_DEL, 9 + s->id_len + flen))
        return;
    put_bytes(&w, s->id, s->id_len);
    put_bytes(&w, filter, flen);
    if (put)
        put_u8(&w, qos);
    rec_end(b, &w);
}

static void msg_record(broker *b, const msg *m, bool put)
{
    jw w;
    if (!put) {
        if (!rec_begin(b, &w, J_MSG_DEL, 8))
            return;
        put_u64(&w, m->store_id);
        rec_end(b, &w);
        return;
    }
    if (!rec_begin(b, &w, J_MSG_PUT, 18 + m->topic_len + m->payload_len))
        return;
    put_u64(&w, m->store_id);
    put_bytes(&w, msg_topic(m), m->topic_len);
    put_bytes(&w, msg_payload(m), m->payload_len);
    put_u8(&w, m->qos);
    put_u8(&w, m->retain ? 1 : 0);
    rec_end(b, &w);
}

void j_msg_ref(broker *b, msg *m)
{
    if (!m->store_id)
        m->store_id = b->jr.next_msg_id++;
    if (m->store_refs++ == 0)
        msg_record(b, m, true);
}

void j_msg_unref(broker *b, msg *m)
{
    ALWAYS(m->store_refs > 0);
    if (--m->store_refs == 0)
        msg_record(b, m, false);
}

void j_queue_put(broker *b, const session *s, const qentry *e)
{
    jw w;
    if (!journaled(b, s) || e->qos == 0 ||
        !rec_begin(b, &w, J_QUEUE_PUT, 4 + s->id_len + 8 + 8 + 2))
        return;
    put_bytes(&w, s->id, s->id_len);
    put_u64(&w, e->seq);
    put_u64(&w, e->m ? e->m->store_id : 0);
    put_u8(&w, e->qos);
    put_u8(&w, e->retain ? 1 : 0);
    rec_end(b, &w);
}

void j_queue_state(broker *b, const session *s, const qentry *e)
{
    jw w;
    if (!journaled(b, s) || e->qos == 0 ||
        !rec_begin(b, &w, J_QUEUE_STATE, 4 + s->id_len + 8 + 1 + 2))
        return;
    put_bytes(&w, s->id, s->id_len);
    put_u64(&w, e->seq);
    put_u8(&w, e->state);
    put_u16(&w, e->packet_id);
    rec_end(b, &w);
}

void j_queue_del(broker *b, const session *s, const qentry *e)
{
    jw w;
    if (!journaled(b, s) || e->qos == 0 ||
        !rec_begin(b, &w, J_QUEUE_DEL, 4 + s->id_len + 8))
        return;
    put_bytes(&w, s->id, s->id_len);
    put_u64(&w, e->seq);
    rec_end(b, &w);
}

void j_inqos2(broker *b, const session *s, uint16_t packet_id, bool put)
{
    jw w;
    if (!journaled(b, s) ||
        !rec_begin(b, &w, put ? J_INQOS2_PUT : J_INQOS2_DEL, 4 + s->id_len + 2))
        return;
    put_bytes(&w, s->id, s->id_len);
    put_u16(&w, packet_id);
    rec_end(b, &w);
}

/* ---- snapshot ---------------------------------------------------------- */

static void snap_retained(broker *b, void *ctx, msg *m)
{
    (void)ctx;
    j_retain_set(b, msg_topic(m), m->topic_len, msg_payload(m), m->payload_len, m->qos);
}

/* Everything durable, after a reset record: the disk will equal memory. */
static void snapshot(broker *b)
{
    jw w;
    if (!rec_begin(b, &w, J_RESET, 0))
        return;
    rec_end(b, &w);
    b->jr.open->has_reset = true;
    char *filter = bmem_alloc(b, TREE_FILTER_MAX); /* no big buffers on stacks */
    if (!filter) {
        b->jr.broken = true;
        return;
    }
    for (size_t i = 0; i < b->sessions.size; i++) {
        for (session *s = b->sessions.table[i]; s; s = s->hnext) {
            if (s->clean)
                continue;
            j_session_put(b, s);
            for (sub *x = s->subs; x; x = x->sess_next) {
                /* Every filter fits (TREE_FILTER_MAX); j_sub() refuses an
                 * empty one. */
                size_t flen = tree_filter_text(x->node, filter, TREE_FILTER_MAX);
                j_sub(b, s, (const uint8_t *)filter, flen, x->qos, true);
            }
            for (uint32_t k = 0; k < s->q_count; k++) {
                qentry *e = session_entry(s, k);
                if (e->state == Q_DONE || e->qos == 0)
                    continue;
                if (e->m)
                    msg_record(b, e->m, true); /* idempotent in the store */
                j_queue_put(b, s, e);
                if (e->state != Q_QUEUED)
                    j_queue_state(b, s, e);
            }
            for (uint32_t k = 0; k < s->in_qos2_count; k++)
                j_inqos2(b, s, s->in_qos2[k], true);
        }
    }
    bmem_free(b, filter);
    if (tree_for_all_retained(b, &b->tree, snap_retained, NULL) != 0)
        b->jr.broken = true;
}

/* ---- the platform's side ----------------------------------------------- */

bool broker_store_take(broker *b, broker_store_batch *out)
{
    journal *j = &b->jr;
    if (j->broken && !j->open)
        (void)reserve(b, 0); /* open a batch: the snapshot goes into it */
    jbatch *o = j->open;
    if (!o || o->records == 0)
        return false;
    j->open = NULL;
    if (j->taken_tail)
        j->taken_tail->next = o;
    else
        j->taken = o;
    j->taken_tail = o;
    j->pending_bytes += o->len;
    if (o->has_reset)
        j->reset_seq = o->seq;
    out->seq = o->seq;
    out->data = o->data;
    out->len = o->len;
    out->records = o->records;
    return true;
}

size_t broker_store_pending_bytes(const broker *b)
{
    return b->jr.pending_bytes;
}

static void waiter_link(broker *b, broker_conn *c)
{
    if (c->in_ackw)
        return;
    c->in_ackw = true;
    c->ackw_prev = NULL;
    c->ackw_next = b->jr.waiters;
    if (b->jr.waiters)
        b->jr.waiters->ackw_prev = c;
    b->jr.waiters = c;
}

static void waiter_unlink(broker *b, broker_conn *c)
{
    if (!c->in_ackw)
        return;
    if (c->ackw_prev)
        c->ackw_prev->ackw_next = c->ackw_next;
    else
        b->jr.waiters = c->ackw_next;
    if (c->ackw_next)
        c->ackw_next->ackw_prev = c->ackw_prev;
    c->ackw_prev = c->ackw_next = NULL;
    c->in_ackw = false;
}

static void acks_free(broker *b, broker_conn *c)
{
    for (uint32_t i = 0; i < c->acks_count; i++)
        bmem_free(b, c->acks[(c->acks_head + i) % c->acks_cap].codes);
    bmem_free(b, c->acks);
    c->acks = NULL;
    c->acks_head = c->acks_count = c->acks_cap = 0;
}

void acks_drop(broker *b, broker_conn *c)
{
    waiter_unlink(b, c);
    c->wire_wait = false;
    c->connack_held = false;
    acks_free(b, c);
}

void commit_wait(broker *b, broker_conn *c)
{
    c->wire_wait = true;
    waiter_link(b, c);
}

bool journal_committed(const broker *b, uint64_t jseq)
{
    const journal *j = &b->jr;
    if (jseq == 0)
        return true;
    if (j->broken || j->reset_seq > j->committed_seq)
        return false;
    return jseq <= j->committed_seq;
}

/* Send the held acknowledgements whose batches are committed, in order. */
static void release_acks(broker *b, broker_conn *c)
{
    while (c->acks_count > 0) {
        held_ack *a = &c->acks[c->acks_head];
        if (a->seq > b->jr.committed_seq)
            break;
        bool sent = a->type == MQTT_SUBACK
                        ? send_suback(b, c, a->packet_id, a->codes, a->ncodes)
                        : send_simple(b, c, (mqtt_type)a->type, a->packet_id);
        if (!sent)
            break; /* out of memory: retried at the next commit */
        if (a->type == MQTT_CONNACK)
            c->connack_held = false;
        bmem_free(b, a->codes);
        a->codes = NULL;
        c->acks_head = (c->acks_head + 1) % c->acks_cap;
        c->acks_count--;
    }
    if (c->acks_count == 0)
        acks_free(b, c);
}

/* A batch committed: release what c was waiting for. Its session's entries
 * go out through session_pump(), which waits again if it must. */
static void waiter_kick(broker *b, broker_conn *c)
{
    release_acks(b, c);
    if (c->wire_wait) {
        c->wire_wait = false;
        if (c->sess && c->state == CONN_ACTIVE)
            session_pump(b, c->sess);
    }
    if (c->acks_count == 0 && !c->wire_wait)
        waiter_unlink(b, c);
}

void broker_store_done(broker *b, uint64_t seq, bool ok)
{
    journal *j = &b->jr;
    jbatch *o = j->taken;
    ALWAYS(o != NULL && o->seq == seq);
    j->taken = o->next;
    if (!j->taken)
        j->taken_tail = NULL;
    j->pending_bytes -= o->len;
    bmem_free(b, o->data);
    bmem_free(b, o);

    if (ok) {
        j->committed_seq = seq;
        broker_conn *c = j->waiters;
        while (c) {
            broker_conn *next = c->ackw_next;
            waiter_kick(b, c);
            c = next;
        }
        return;
    }
    /* The disk now lacks this batch. Withhold its acknowledgements (and
     * everything behind them) by closing those connections: the clients
     * resend what they have not seen acknowledged. Then rewrite the whole
     * durable state from memory in the next batch. */
    j->failures++;
    blog(b, BROKER_LOG_ERROR, "store: batch %llu failed; withholding its acknowledgements",
         (unsigned long long)seq);
    broker_conn *c = j->waiters;
    while (c) {
        /* Later batches may refer to rows of the failed one, so every
         * acknowledgement that waits for any batch is withheld. */
        broker_conn *next = c->ackw_next;
        bool affected = false;
        for (uint32_t i = 0; i < c->acks_count; i++)
            if (c->acks[(c->acks_head + i) % c->acks_cap].seq != 0)
                affected = true;
        if (affected) {
            acks_drop(b, c);
            conn_end(b, c, false, "store failure: acknowledgement withheld", b->now_ms);
        }
        /* Queue entries waiting on the failed batch just keep waiting:
         * journal_committed() says no until the repairing snapshot is on
         * disk, and that commit kicks them. */
        c = next;
    }
    j->broken = true;
}

uint64_t journal_gate(const broker *b, uint64_t records_before)
{
    const journal *j = &b->jr;
    if (!b->durable)
        return 0;
    if (j->broken)
        return j->next_seq; /* the batch that will carry the snapshot */
    if (j->records != records_before && j->open)
        return j->open->seq;
    if (j->reset_seq > j->committed_seq)
        return j->reset_seq; /* the disk is being repaired */
    return 0;
}

uint64_t journal_gate_if_changed(const broker *b, uint64_t records_before)
{
    if (b->jr.records == records_before && !b->jr.broken)
        return 0;
    return journal_gate(b, records_before);
}

/* Append to c's held ring; codes (SUBACK) are copied. */
static bool hold(broker *b, broker_conn *c, mqtt_type type, uint16_t packet_id,
                 const uint8_t *codes, uint32_t ncodes, uint64_t gate_seq)
{
    uint8_t *copy = NULL;
    if (codes) {
        copy = bmem_alloc(b, ncodes ? ncodes : 1);
        if (!copy)
            return false;
        memcpy(copy, codes, ncodes);
    }
    if (c->acks_count == c->acks_cap) {
        uint32_t cap = c->acks_cap ? c->acks_cap * 2 : 8;
        held_ack *a = bmem_alloc(b, cap * sizeof *a);
        if (!a) {
            bmem_free(b, copy);
            return false;
        }
        for (uint32_t i = 0; i < c->acks_count; i++)
            a[i] = c->acks[(c->acks_head + i) % c->acks_cap];
        bmem_free(b, c->acks);
        c->acks = a;
        c->acks_cap = cap;
        c->acks_head = 0;
    }
    held_ack *h = &c->acks[(c->acks_head + c->acks_count) % c->acks_cap];
    h->seq = gate_seq;
    h->codes = copy;
    h->ncodes = ncodes;
    h->packet_id = packet_id;
    h->type = (uint8_t)type;
    c->acks_count++;
    waiter_link(b, c);
    return true;
}

bool ack_send_or_hold(broker *b, broker_conn *c, mqtt_type type, uint16_t packet_id,
                      uint64_t gate_seq)
{
    if (gate_seq == 0 && c->acks_count == 0)
        return send_simple(b, c, type, packet_id);
    return hold(b, c, type, packet_id, NULL, 0, gate_seq);
}

bool suback_send_or_hold(broker *b, broker_conn *c, uint16_t packet_id, const uint8_t *codes,
                         uint32_t ncodes, uint64_t gate_seq)
{
    if (gate_seq == 0 && c->acks_count == 0)
        return send_suback(b, c, packet_id, codes, ncodes);
    return hold(b, c, MQTT_SUBACK, packet_id, codes, ncodes, gate_seq);
}

void journal_free(broker *b)
{
    journal *j = &b->jr;
    if (j->open) {
        bmem_free(b, j->open->data);
        bmem_free(b, j->open);
        j->open = NULL;
    }
    while (j->taken) {
        jbatch *o = j->taken;
        j->taken = o->next;
        bmem_free(b, o->data);
        bmem_free(b, o);
    }
    j->taken_tail = NULL;
}

/* ---- decoding (the store's reader) ------------------------------------- */

typedef struct jr_reader {
    const uint8_t *p;
    size_t len, pos;
    bool bad;
} jr_reader;

static uint64_t get_uint(jr_reader *r, unsigned n)
{
    uint64_t v = 0;
    if (r->bad || r->len - r->pos < n) {
        r->bad = true;
        return 0;
    }
    for (unsigned i = 0; i < n; i++)
        v = v << 8 | r->p[r->pos++];
    return v;
}

static journal_bytes get_bytes(jr_reader *r)
{
    journal_bytes out = {NULL, 0};
    uint32_t n = (uint32_t)get_uint(r, 4);
    if (r->bad || r->len - r->pos < n) {
        r->bad = true;
        return out;
    }
    out.p = r->p + r->pos;
    out.len = n;
    r->pos += n;
    return out;
}

int journal_next(const uint8_t *data, size_t len, size_t *pos, journal_rec *out)
{
    if (*pos >= len)
        return 0;
    jr_reader r = {data, len, *pos, false};
    memset(out, 0, sizeof *out);
    out->type = (journal_type)get_uint(&r, 1);
    switch (out->type) {
    case J_RETAIN_SET:
        out->topic = get_bytes(&r);
        out->payload = get_bytes(&r);
        out->qos = (uint8_t)get_uint(&r, 1);
        break;
    case J_RETAIN_DEL:
        out->topic = get_bytes(&r);
        break;
    case J_SESSION_PUT:
        out->client_id = get_bytes(&r);
        out->identity = get_bytes(&r);
        out->flags = (uint8_t)get_uint(&r, 1);
        break;
    case J_SESSION_DEL:
        out->client_id = get_bytes(&r);
        break;
    case J_SUB_PUT:
    case J_SUB_DEL:
        out->client_id = get_bytes(&r);
        out->topic = get_bytes(&r);
        if (out->type == J_SUB_PUT)
            out->qos = (uint8_t)get_uint(&r, 1);
        break;
    case J_MSG_PUT:
        out->msg_id = get_uint(&r, 8);
        out->topic = get_bytes(&r);
        out->payload = get_bytes(&r);
        out->qos = (uint8_t)get_uint(&r, 1);
        out->flags = (uint8_t)get_uint(&r, 1);
        break;
    case J_MSG_DEL:
        out->msg_id = get_uint(&r, 8);
        break;
    case J_QUEUE_PUT:
        out->client_id = get_bytes(&r);
        out->seq = get_uint(&r, 8);
        out->msg_id = get_uint(&r, 8);
        out->qos = (uint8_t)get_uint(&r, 1);
        out->flags = (uint8_t)get_uint(&r, 1);
        break;
    case J_QUEUE_STATE:
        out->client_id = get_bytes(&r);
        out->seq = get_uint(&r, 8);
        out->state = (uint8_t)get_uint(&r, 1);
        out->packet_id = (uint16_t)get_uint(&r, 2);
        break;
    case J_QUEUE_DEL:
        out->client_id = get_bytes(&r);
        out->seq = get_uint(&r, 8);
        break;
    case J_INQOS2_PUT:
    case J_INQOS2_DEL:
        out->client_id = get_bytes(&r);
        out->packet_id = (uint16_t)get_uint(&r, 2);
        break;
    case J_RESET:
        break;
    default:
        return -1;
    }
    if (r.bad)
        return -1;
    *pos = r.pos;
    return 1;
}
