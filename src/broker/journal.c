/*
 * journal.c - the core's side of persistence: durable-state changes appended
 * as records to batches the platform hands to the store, acknowledgements
 * held until the batch they depend on is committed, and the full snapshot
 * that repairs the disk after a failed batch. Contract: journal.h; the
 * reader of the records is journal_decode.c.
 */
#include "broker/base.h"
#include "broker/broker-t.h"
#include "broker/conn.h"
#include "broker/deliver.h"
#include "broker/journal.h"
#include "broker/mem.h"
#include "broker/msg.h"
#include "broker/persist.h"
#include "broker/publish.h"
#include "broker/session.h"
#include "broker/tree.h"

#include <string.h>

#define BATCH_MIN_CAP 4096u

bool bk_journaled(const broker *b, const session *s)
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
        jbatch *nb = bk_mem_calloc(b, sizeof *nb);
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
        uint8_t *d = bk_mem_realloc(b, o->data, cap);
        if (!d)
            goto fail;
        o->data = d;
        o->cap = cap;
    }
    return o->data + o->len;
fail:
    if (!j->broken)
        bk_log(b, BROKER_LOG_ERROR, "out of memory recording durable state: the store will be "
                                    "rewritten from memory at the next batch");
    j->broken = true;
    return NULL;
}

/* ---- record encoding --------------------------------------------------- */

/* A record is written from a list of its fields, and its size is computed
 * from the same list, so the size reserved and the bytes written cannot
 * disagree. The encoding is journal.h's: u8 type, then each field
 * big-endian; a byte string is a u32 length and the bytes. */
typedef enum jf_kind { JF_U8, JF_U16, JF_U32, JF_U64, JF_BYTES, JF_U32S } jf_kind;

typedef struct jfield {
    jf_kind kind;
    uint64_t v;     /* the value; for JF_BYTES the length, for JF_U32S the count */
    const void *p;  /* JF_BYTES: the bytes, JF_U32S: the uint32_t values (NULL
                       allowed when empty) */
} jfield;

#define F_U8(x) {.kind = JF_U8, .v = (x)}
#define F_U16(x) {.kind = JF_U16, .v = (x)}
#define F_U32(x) {.kind = JF_U32, .v = (x)}
#define F_U64(x) {.kind = JF_U64, .v = (x)}
#define F_BYTES(ptr, len) {.kind = JF_BYTES, .v = (len), .p = (ptr)}
/* n u32 values, written as a byte string of their big-endian bytes. */
#define F_U32S(ptr, n) {.kind = JF_U32S, .v = (n), .p = (ptr)}
#define NFIELDS(a) (sizeof(a) / sizeof((a)[0]))

/* Bytes of each kind's fixed part (for byte strings, the length prefix). */
static const uint8_t jf_width[] = {[JF_U8] = 1, [JF_U16] = 2, [JF_U32] = 4,
                                   [JF_U64] = 8, [JF_BYTES] = 4, [JF_U32S] = 4};

/* Bytes of a string field's contents. */
static size_t field_data_len(const jfield *f)
{
    uint64_t n = f->kind == JF_U32S ? f->v * 4 : f->v;
    ALWAYS(n <= UINT32_MAX); /* the length prefix is a u32 */
    return (size_t)n;
}

static size_t field_size(const jfield *f)
{
    if (f->kind != JF_BYTES && f->kind != JF_U32S)
        return jf_width[f->kind];
    return jf_width[f->kind] + field_data_len(f);
}

/* The bytes of one record being written, and the room it was given. Every
 * put checks that what it writes fits before writing: a put that does not
 * fit means the size computation is wrong, a broken invariant. */
typedef struct jrec_w {
    uint8_t *p;
    size_t n, cap;
} jrec_w;

static void put_uint(jrec_w *w, uint64_t v, size_t width)
{
    ALWAYS(w->cap - w->n >= width);
    ALWAYS(width == 8 || v >> (8 * width) == 0); /* the value fits its field */
    for (size_t i = width; i-- > 0;)
        w->p[w->n++] = (uint8_t)(v >> (8 * i));
}

static void put_raw(jrec_w *w, const void *p, size_t len)
{
    ALWAYS(w->cap - w->n >= len);
    if (len)
        memcpy(w->p + w->n, p, len);
    w->n += len;
}

static void put_field(jrec_w *w, const jfield *f)
{
    if (f->kind == JF_U32S) {
        const uint32_t *v = f->p;
        put_uint(w, field_data_len(f), jf_width[JF_U32S]);
        for (uint64_t i = 0; i < f->v; i++)
            put_uint(w, v[i], 4);
        return;
    }
    put_uint(w, f->v, jf_width[f->kind]); /* the value, or a string's length */
    if (f->kind == JF_BYTES)
        put_raw(w, f->p, (size_t)f->v);
}

/* Append one record of type t with fields f[0..nf) to the open batch.
 * False when memory ran out: the journal is then broken, and the next
 * batch carries a snapshot instead. */
static bool emit(broker *b, journal_type t, const jfield *f, size_t nf)
{
    size_t size = 1; /* the type byte */
    for (size_t i = 0; i < nf; i++)
        size += field_size(&f[i]);
    uint8_t *p = reserve(b, size);
    if (!p) {
        b->jr.lost++; /* moves the mark: the packet's gate waits for the snapshot */
        return false;
    }
    jrec_w w = {p, 0, size};
    put_uint(&w, (uint8_t)t, 1);
    for (size_t i = 0; i < nf; i++)
        put_field(&w, &f[i]);
    ALWAYS(w.n == size); /* written exactly what was measured */
    jbatch *o = b->jr.open;
    ALWAYS(o->cap - o->len >= size);
    o->len += size;
    o->records++;
    b->jr.records++;
    return true;
}

/* ---- recorded times ---------------------------------------------------- */

/* A core time (now_ms scale) as journal.h records it: wall-clock ms, or
 * with no wall clock the ms left marked JOURNAL_TIME_LEFT. 0 and
 * UINT64_MAX (never) record as 0. */
static uint64_t recorded_time(const broker *b, uint64_t core_ms)
{
    if (core_ms == 0 || core_ms == UINT64_MAX)
        return 0;
    if (b->wall_base_ms == 0) {
        uint64_t left = core_ms > b->now_ms ? core_ms - b->now_ms : 0;
        return JOURNAL_TIME_LEFT | (left & ~JOURNAL_TIME_LEFT);
    }
    /* wall_base_ms + (core_ms - wall_at_now), in either direction. */
    uint64_t wall = core_ms >= b->wall_at_now ? b->wall_base_ms + (core_ms - b->wall_at_now)
                                              : b->wall_base_ms - (b->wall_at_now - core_ms);
    if (wall == 0 || wall >= JOURNAL_TIME_LEFT)
        wall = wall == 0 ? 1 : JOURNAL_TIME_LEFT - 1; /* clock far off: keep it a wall time */
    return wall;
}

/* ---- records ----------------------------------------------------------- */

static bool is_sys_topic(const uint8_t *t, size_t len)
{
    return len >= 4 && memcmp(t, "$SYS", 4) == 0 && (len == 4 || t[4] == '/');
}

void bk_journal_retain_set(broker *b, const msg *m)
{
    /* $SYS values are regenerated at every start: never stored. */
    if (!b->durable || b->restoring || is_sys_topic(bk_msg_topic(m), m->topic_len))
        return;
    const jfield f[] = {F_BYTES(bk_msg_topic(m), m->topic_len),
                        F_BYTES(bk_msg_payload(m), m->payload_len), F_U8(m->qos),
                        F_BYTES(bk_msg_props(m), m->props_len),
                        F_U64(recorded_time(b, m->expiry_ms))};
    (void)emit(b, J_RETAIN_SET, f, NFIELDS(f));
}

void bk_journal_retain_del(broker *b, const uint8_t *topic, size_t tlen)
{
    if (!b->durable || b->restoring || is_sys_topic(topic, tlen))
        return;
    const jfield f[] = {F_BYTES(topic, tlen)};
    (void)emit(b, J_RETAIN_DEL, f, NFIELDS(f));
}

void bk_journal_session_put(broker *b, const session *s)
{
    if (!bk_journaled(b, s))
        return;
    size_t il = s->identity ? strlen(s->identity) : 0;
    /* An offline session's expiry runs while the broker is down: its time
     * is recorded (expires_at is nonzero only while offline). Without a
     * wall clock it is not (broker.h: the interval restarts at restore). */
    uint64_t expiry_at = !s->conn && s->expires_at && b->wall_base_ms
                             ? recorded_time(b, s->expires_at)
                             : 0;
    const jfield f[] = {F_BYTES(s->id, s->id_len), F_BYTES(s->identity, il),
                        F_U8(s->is_operator ? 1u : 0u), F_U32(s->expiry_interval_s),
                        F_U64(expiry_at)};
    (void)emit(b, J_SESSION_PUT, f, NFIELDS(f));
}

void bk_journal_session_del(broker *b, const session *s)
{
    if (!bk_journaled(b, s))
        return;
    const jfield f[] = {F_BYTES(s->id, s->id_len)};
    (void)emit(b, J_SESSION_DEL, f, NFIELDS(f));
}

void bk_journal_sub(broker *b, const session *s, const uint8_t *filter, size_t flen,
                    const sub *x, bool put)
{
    /* A subscription row is keyed by its filter: an empty one would name no
     * row, and a delete of it would leave the store keeping what memory
     * dropped. Such a record comes only from a bug; stop before it is
     * written rather than let the disk and memory diverge. */
    ALWAYS(flen > 0 && flen <= TREE_FILTER_MAX && (!put || x));
    if (!bk_journaled(b, s))
        return;
    /* The qos, options and identifier come last and only in a put. */
    const jfield f[] = {F_BYTES(s->id, s->id_len), F_BYTES(filter, flen), F_U8(put ? x->qos : 0),
                        F_U8(put ? x->options : 0), F_U32(put ? x->sub_id : 0)};
    (void)emit(b, put ? J_SUB_PUT : J_SUB_DEL, f, put ? NFIELDS(f) : 2);
}

static void msg_record(broker *b, const msg *m, bool put)
{
    if (!put) {
        const jfield f[] = {F_U64(m->store_id)};
        (void)emit(b, J_MSG_DEL, f, NFIELDS(f));
        return;
    }
    const jfield f[] = {F_U64(m->store_id), F_BYTES(bk_msg_topic(m), m->topic_len),
                        F_BYTES(bk_msg_payload(m), m->payload_len), F_U8(m->qos),
                        F_U8(m->retain ? 1u : 0u), F_BYTES(bk_msg_props(m), m->props_len),
                        F_U64(recorded_time(b, m->expiry_ms))};
    (void)emit(b, J_MSG_PUT, f, NFIELDS(f));
}

void bk_journal_msg_ref(broker *b, msg *m)
{
    if (!m->store_id)
        m->store_id = b->jr.next_msg_id++;
    if (m->store_refs++ == 0)
        msg_record(b, m, true);
}

void bk_journal_msg_unref(broker *b, msg *m)
{
    ALWAYS(m->store_refs > 0);
    if (--m->store_refs == 0)
        msg_record(b, m, false);
}

void bk_journal_queue_put(broker *b, const session *s, const qentry *e)
{
    if (!bk_journaled(b, s) || e->qos == 0)
        return;
    /* sub_ids_more is [count, id, ...]: the ids go as they are. */
    const uint32_t *more = e->sub_ids_more;
    const jfield f[] = {F_BYTES(s->id, s->id_len), F_U64(e->seq),
                        F_U64(e->m ? e->m->store_id : 0), F_U8(e->qos),
                        F_U8(e->retain ? 1u : 0u), F_U32(e->sub_id),
                        F_U32S(more ? more + 1 : NULL, more ? more[0] : 0)};
    (void)emit(b, J_QUEUE_PUT, f, NFIELDS(f));
}

void bk_journal_queue_state(broker *b, const session *s, const qentry *e)
{
    if (!bk_journaled(b, s) || e->qos == 0)
        return;
    const jfield f[] = {F_BYTES(s->id, s->id_len), F_U64(e->seq), F_U8(e->state),
                        F_U16(e->packet_id)};
    (void)emit(b, J_QUEUE_STATE, f, NFIELDS(f));
}

void bk_journal_queue_del(broker *b, const session *s, const qentry *e)
{
    if (!bk_journaled(b, s) || e->qos == 0)
        return;
    const jfield f[] = {F_BYTES(s->id, s->id_len), F_U64(e->seq)};
    (void)emit(b, J_QUEUE_DEL, f, NFIELDS(f));
}

void bk_journal_inqos2(broker *b, const session *s, uint16_t packet_id, bool put)
{
    if (!bk_journaled(b, s))
        return;
    const jfield f[] = {F_BYTES(s->id, s->id_len), F_U16(packet_id)};
    (void)emit(b, put ? J_INQOS2_PUT : J_INQOS2_DEL, f, NFIELDS(f));
}

void bk_journal_will(broker *b, const session *s)
{
    if (!bk_journaled(b, s))
        return;
    const msg *w = s->will;
    if (!w) {
        const jfield f[] = {F_BYTES(s->id, s->id_len)};
        (void)emit(b, J_WILL_DEL, f, NFIELDS(f));
        return;
    }
    /* A will due now (will_at_ms 0 or passed) records a time at or before
     * now, so a restore publishes it at once. */
    uint64_t fire = recorded_time(b, s->will_at_ms ? s->will_at_ms : b->now_ms);
    const jfield f[] = {F_BYTES(s->id, s->id_len), F_BYTES(bk_msg_topic(w), w->topic_len),
                        F_BYTES(bk_msg_payload(w), w->payload_len), F_U8(w->qos),
                        F_U8(w->retain ? 1u : 0u), F_BYTES(bk_msg_props(w), w->props_len),
                        F_U64(recorded_time(b, w->expiry_ms)), F_U64(fire)};
    (void)emit(b, J_WILL_PUT, f, NFIELDS(f));
}

/* ---- snapshot ---------------------------------------------------------- */

static void snap_retained(broker *b, void *ctx, msg *m)
{
    (void)ctx;
    bk_journal_retain_set(b, m);
}

/* Everything durable, after a reset record: the disk will equal memory. */
static void snapshot(broker *b)
{
    if (!emit(b, J_RESET, NULL, 0))
        return;
    b->jr.open->has_reset = true;
    char *filter = bk_mem_alloc(b, TREE_FILTER_MAX); /* no big buffers on stacks */
    if (!filter) {
        b->jr.broken = true;
        return;
    }
    for (size_t i = 0; i < b->sessions.size; i++) {
        for (session *s = b->sessions.table[i]; s; s = s->hnext) {
            if (s->clean)
                continue;
            bk_journal_session_put(b, s);
            for (sub *x = s->subs; x; x = x->sess_next) {
                /* Every filter fits (TREE_FILTER_MAX); bk_journal_sub() refuses an
                 * empty one. */
                size_t flen = bk_sub_filter_text(x, filter, TREE_FILTER_MAX);
                bk_journal_sub(b, s, (const uint8_t *)filter, flen, x, true);
            }
            for (uint32_t k = 0; k < s->q_count; k++) {
                qentry *e = bk_session_entry(s, k);
                if (e->state == Q_DONE || e->qos == 0)
                    continue;
                if (e->m)
                    msg_record(b, e->m, true); /* idempotent in the store */
                bk_journal_queue_put(b, s, e);
                if (e->state != Q_QUEUED)
                    bk_journal_queue_state(b, s, e);
            }
            for (uint32_t k = 0; k < s->in_qos2_count; k++)
                bk_journal_inqos2(b, s, s->in_qos2[k], true);
            if (s->will)
                bk_journal_will(b, s);
        }
    }
    bk_mem_free(b, filter);
    if (bk_tree_for_all_retained(b, &b->tree, snap_retained, NULL) != 0)
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
        bk_mem_free(b, c->acks[(c->acks_head + i) % c->acks_cap].codes);
    bk_mem_free(b, c->acks);
    c->acks = NULL;
    c->acks_head = c->acks_count = c->acks_cap = 0;
}

void bk_acks_drop(broker *b, broker_conn *c)
{
    waiter_unlink(b, c);
    c->wire_wait = false;
    c->connack_held = false;
    acks_free(b, c);
}

void bk_commit_wait(broker *b, broker_conn *c)
{
    c->wire_wait = true;
    waiter_link(b, c);
}

bool bk_journal_committed(const broker *b, uint64_t jseq)
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
        bool sent = a->codes
                        ? bk_send_suback(b, c, (mqtt_type)a->type, a->packet_id, a->codes, a->ncodes)
                        : bk_send_ack(b, c, (mqtt_type)a->type, a->packet_id, a->reason);
        if (!sent)
            break; /* out of memory: retried at the next commit */
        if (a->type == MQTT_CONNACK)
            c->connack_held = false;
        bk_mem_free(b, a->codes);
        a->codes = NULL;
        c->acks_head = (c->acks_head + 1) % c->acks_cap;
        c->acks_count--;
    }
    if (c->acks_count == 0)
        acks_free(b, c);
}

/* A batch committed: release what c was waiting for. Its session's entries
 * go out through bk_session_pump(), which waits again if it must. */
static void waiter_kick(broker *b, broker_conn *c)
{
    release_acks(b, c);
    if (c->wire_wait) {
        c->wire_wait = false;
        if (c->sess && c->state == CONN_ACTIVE)
            bk_session_pump(b, c->sess);
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
    bk_mem_free(b, o->data);
    bk_mem_free(b, o);

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
    bk_log(b, BROKER_LOG_ERROR, "store: batch %llu failed; withholding its acknowledgements",
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
            bk_acks_drop(b, c);
            bk_conn_end(b, c, false, "store failure: acknowledgement withheld", b->now_ms);
        }
        /* Queue entries waiting on the failed batch just keep waiting:
         * bk_journal_committed() says no until the repairing snapshot is on
         * disk, and that commit kicks them. */
        c = next;
    }
    j->broken = true;
}

uint64_t bk_journal_mark(const broker *b)
{
    return b->jr.records + b->jr.lost;
}

uint64_t bk_journal_gate(const broker *b, uint64_t mark)
{
    const journal *j = &b->jr;
    if (!b->durable)
        return 0;
    if (j->broken)
        return j->next_seq; /* the batch that will carry the snapshot */
    if (bk_journal_mark(b) != mark && j->open)
        return j->open->seq;
    if (j->reset_seq > j->committed_seq)
        return j->reset_seq; /* the disk is being repaired */
    return 0;
}

uint64_t bk_journal_gate_if_changed(const broker *b, uint64_t mark)
{
    /* Nothing recorded, nothing lost: nothing of this packet must reach
     * the disk, whatever state the disk is in. */
    if (bk_journal_mark(b) == mark)
        return 0;
    return bk_journal_gate(b, mark);
}

/* The batch after whose commit everything recorded so far is on disk. */
static uint64_t gate_all(const broker *b)
{
    const journal *j = &b->jr;
    if (!b->durable)
        return 0;
    if (j->broken)
        return j->next_seq;
    if (j->open && j->open->records > 0)
        return j->open->seq;
    if (j->taken_tail)
        return j->taken_tail->seq; /* the repairing snapshot is at or before it */
    return 0;
}

uint64_t bk_journal_gate_session(const broker *b, const session *s, uint64_t mark)
{
    if (bk_journal_mark(b) != mark)
        return bk_journal_gate(b, mark);
    return bk_journaled(b, s) ? gate_all(b) : 0;
}

/* Append to c's held ring; codes (SUBACK) are copied. */
static bool hold(broker *b, broker_conn *c, mqtt_type type, uint16_t packet_id, uint8_t reason,
                 const uint8_t *codes, uint32_t ncodes, uint64_t gate_seq)
{
    uint8_t *copy = NULL;
    if (codes) {
        copy = bk_mem_alloc(b, ncodes ? ncodes : 1);
        if (!copy)
            return false;
        memcpy(copy, codes, ncodes);
    }
    if (c->acks_count == c->acks_cap) {
        uint32_t cap = c->acks_cap ? c->acks_cap * 2 : 8;
        held_ack *a = bk_mem_alloc(b, cap * sizeof *a);
        if (!a) {
            bk_mem_free(b, copy);
            return false;
        }
        for (uint32_t i = 0; i < c->acks_count; i++)
            a[i] = c->acks[(c->acks_head + i) % c->acks_cap];
        bk_mem_free(b, c->acks);
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
    h->reason = reason;
    c->acks_count++;
    waiter_link(b, c);
    return true;
}

bool bk_ack_rc_send_or_hold(broker *b, broker_conn *c, mqtt_type type, uint16_t packet_id,
                            uint8_t reason, uint64_t gate_seq)
{
    if (gate_seq == 0 && c->acks_count == 0)
        return bk_send_ack(b, c, type, packet_id, reason);
    return hold(b, c, type, packet_id, reason, NULL, 0, gate_seq);
}

bool bk_suback_send_or_hold(broker *b, broker_conn *c, mqtt_type type, uint16_t packet_id,
                            const uint8_t *codes, uint32_t ncodes, uint64_t gate_seq)
{
    if (gate_seq == 0 && c->acks_count == 0)
        return bk_send_suback(b, c, type, packet_id, codes, ncodes);
    return hold(b, c, type, packet_id, 0, codes, ncodes, gate_seq);
}

void bk_journal_free(broker *b)
{
    journal *j = &b->jr;
    if (j->open) {
        bk_mem_free(b, j->open->data);
        bk_mem_free(b, j->open);
        j->open = NULL;
    }
    while (j->taken) {
        jbatch *o = j->taken;
        j->taken = o->next;
        bk_mem_free(b, o->data);
        bk_mem_free(b, o);
    }
    j->taken_tail = NULL;
}
