/*
 * pump.c - moving a session's queued QoS 1/2 messages onto the wire as its
 * window and its connection's output allow: first sends, PUBRELs, and the
 * resend after a reconnect [MQTT-4.4.0-1].
 */
#include "broker/base.h"
#include "broker/broker-t.h"
#include "broker/deliver.h"
#include "broker/deliver_internal.h"
#include "broker/flow.h"
#include "broker/msg.h"
#include "broker/persist.h"
#include "broker/publish5.h"
#include "broker/session.h"
#include "mqtt/mqtt.h"

/* A queue entry to a 5.0 client: out of line, so the 3.1.1 path below
 * stays as lean as it was. */
__attribute__((noinline)) static bk_send5 send_entry5(broker *b, broker_conn *c,
                                                      const qentry *e, bool dup)
{
    bk_pubview v = bk_msg_view(e->m);
    return bk_publish5_write(b, c, &v, e->qos, e->retain, dup, e->packet_id, e->sub_id,
                             e->sub_ids_more, NULL);
}

static inline __attribute__((always_inline)) bk_send5 send_entry(broker *b, broker_conn *c,
                                                                  const qentry *e, bool dup)
{
    const msg *m = e->m;
    if (c->level == MQTT_LEVEL_5) {
        bk_pubview v = bk_msg_view(m);
        if (!bk_publish5_bare(c, &v, dup, e->sub_id, e->sub_ids_more))
            return send_entry5(b, c, e, dup);
    }
    return bk_send_publish(b, c, bk_msg_topic(m), m->topic_len, bk_msg_payload(m),
                           m->payload_len, e->qos, e->retain, dup, e->packet_id);
}

static bool send_ack(broker *b, broker_conn *c, mqtt_type type, uint16_t packet_id)
{
    uint8_t *p = bk_out_reserve(b, c, 4);
    if (!p)
        return false;
    size_t w = mqtt_encode_ack(p, 4, c->level, type, packet_id);
    ALWAYS(w == 4);
    bk_out_commit(b, c, 4);
    return true;
}


/* Entries written on the current connection and not yet done with (those
 * before q_wire): what the client holds against its Receive Maximum. */
static uint32_t wire_unacked(const session *s)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->q_wire; i++)
        n += bk_session_entry(s, i)->state != Q_DONE;
    return n;
}

void bk_session_transmit(broker *b, session *s)
{
    broker_conn *c = s->conn;
    if (!conn_live(c))
        return;
    if (c->connack_held) {
        bk_commit_wait(b, c); /* nothing may precede the CONNACK */
        return;
    }
    /* More in flight than the window only after a reconnect with a smaller
     * Receive Maximum (or max_inflight): the resend then stops at the
     * window and goes on as acknowledgements free slots [MQTT-3.3.4-9],
     * in order. A PUBREL is never held by it [MQTT-3.3.4-10] but counts:
     * its message holds a slot until the PUBCOMP. (One behind a PUBLISH
     * the window holds waits for it: the wire keeps the queue's order.)
     * The count is taken only then (never on the usual path). */
    uint32_t w = window(b, c);
    bool capped = s->inflight > w;
    uint32_t on_wire = capped ? wire_unacked(s) : 0;
    while (s->q_wire < s->q_sent && bk_out_pending(c) < b->lim.max_out_bytes) {
        qentry *e = bk_session_entry(s, s->q_wire);
        if (e->state == Q_DONE) {
            s->q_wire++;
            continue;
        }
        if (capped && on_wire >= w && e->state != Q_WAIT_PUBCOMP)
            return; /* resumed by the acknowledgement that frees a slot */
        if (!bk_journal_committed(b, e->jseq)) {
            /* Later entries wait too: delivery order is kept across QoS. */
            bk_commit_wait(b, c);
            return;
        }
        if (!e->sent && e->state != Q_WAIT_PUBCOMP && bk_msg_expired(e->m, b->now_ms)) {
            /* [MQTT-3.3.2-5]: its packet id was given, but it never went
             * out (it waited for output room, the commit of that id, or a
             * connection): delivery has not started, and it expired
             * meanwhile. Done with as a PUBACK would (the receiver never
             * saw the id). */
            b->stats.msgs_expired++;
            bk_session_complete(b, s, e);
            continue;
        }
        bk_send5 r = e->state == Q_WAIT_PUBCOMP
                         ? (send_ack(b, c, MQTT_PUBREL, e->packet_id) ? BK_SEND5_OK
                                                                      : BK_SEND5_NOMEM)
                         : send_entry(b, c, e, e->sent);
        if (r == BK_SEND5_NOMEM) {
            bk_log_limited(b, BK_LOGK_NOMEM, BROKER_LOG_WARN, "client %s: out of memory sending",
                           s->id);
            return; /* retried on the next pump */
        }
        if (r == BK_SEND5_TOO_LARGE) {
            /* Above the client's Maximum Packet Size: discarded, and the
             * delivery is over as if the client had acknowledged it
             * [MQTT-3.1.2-25] (its window slot is free again). The entry
             * becomes a hole at q_wire, or leaves the ring as its head:
             * either way the loop goes on at the same index. */
            bk_session_complete(b, s, e);
            continue;
        }
        e->sent = true;
        s->q_wire++;
        on_wire++;
    }
}

/* The first unsent entry is done with without a packet id: a QoS 0 one
 * sent, or one never to be sent (its message expired). It is finished as
 * if sent and acknowledged, so the queue, the journal and the publishers
 * it holds see one path. QoS 0 entries only when nothing before them
 * waits (as bk_session_pump sends them). */
static void finish_front(broker *b, session *s, qentry *e)
{
    bk_session_bytes_sub(s, e->m->payload_len);
    if (e->qos == 0) {
        bk_session_sent_qos0(b, s, e);
        return;
    }
    e->packet_id = 0; /* no acknowledgement names 0 */
    e->state = Q_WAIT_PUBACK;
    s->q_sent++;
    s->inflight++;
    bk_session_flight_add(s, e->m);
    bk_session_complete(b, s, e);
}

void bk_session_pump(broker *b, session *s)
{
    broker_conn *c = s->conn;
    if (!conn_live(c))
        return;
    bk_session_transmit(b, s);
    if (c->connack_held)
        return;
    uint32_t unsent_before = s->q_count - s->q_sent;
    while (s->q_sent < s->q_count && bk_out_pending(c) < b->lim.max_out_bytes) {
        qentry *e = bk_session_entry(s, s->q_sent);
        /* [MQTT-3.3.2-5]: a message whose expiry passed before its
         * delivery to this session started is never sent to it: checked
         * when it is next to go (not while it waits behind a full window,
         * where it would be checked on every pump). */
        if (e->qos == 0) {
            /* QoS 0 entries (retained on subscribe) are never stored: they
             * go straight out, so only once nothing before them waits. One
             * above the client's Maximum Packet Size is done with too. */
            if (s->q_wire < s->q_sent)
                break;
            if (bk_msg_expired(e->m, b->now_ms))
                b->stats.msgs_expired++;
            else if (send_entry(b, c, e, false) == BK_SEND5_NOMEM)
                break;
            finish_front(b, s, e);
            continue;
        }
        if (window_full(b, s, c))
            break;
        if (bk_msg_expired(e->m, b->now_ms)) {
            b->stats.msgs_expired++;
            finish_front(b, s, e);
            continue;
        }
        uint64_t mark = bk_journal_mark(b);
        e->packet_id = bk_session_next_packet_id(s);
        e->state = e->qos == 1 ? Q_WAIT_PUBACK : Q_WAIT_PUBREC;
        bk_session_bytes_sub(s, e->m->payload_len);
        s->q_sent++;
        s->inflight++;
        bk_session_flight_add(s, e->m);
        /* The packet id must survive a restart: a QoS 2 receiver knows the
         * message by it, so a QoS 2 PUBLISH leaves only once the record is
         * on disk (a crash before that would resend it under another id, or
         * give its id to another message). A QoS 1 one may leave at once: a
         * receiver may see it again after a crash anyway. */
        bk_journal_queue_state(b, s, e);
        e->jseq = e->qos == 2 && bk_journaled(b, s) ? bk_journal_gate(b, mark) : 0;
        bk_session_transmit(b, s);
    }
    if (s->q_count - s->q_sent < unsent_before)
        bk_flow_progress(b, s);
}

void bk_session_resend(broker *b, session *s)
{
    /* [MQTT-4.4.0-1]: on reconnect, resend unacknowledged PUBLISH packets
     * (DUP set) and PUBREL packets, in their original order: the new
     * connection starts with nothing on its wire. */
    s->q_wire = 0;
    bk_session_pump(b, s);
}
