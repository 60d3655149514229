/*
 * session.h - the calls of session.c: the session table, a session's
 * outbound queue (appending, acknowledging, packet ids) and its inbound
 * QoS 2 packet ids. Moving the queue onto the wire is deliver.h's.
 */
#ifndef TERN_BROKER_SESSION_H
#define TERN_BROKER_SESSION_H

#include "broker/broker.h"
#include "broker/session-t.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

int bk_sessions_init(broker *b, session_table *st);
void bk_sessions_free(broker *b, session_table *st);
session *bk_session_find(session_table *st, const uint8_t *id, size_t len);
session *bk_session_create(broker *b, session_table *st, const uint8_t *id, size_t len, bool clean);
/* Remove and free a session with its subscriptions and queue. */
void bk_session_destroy(broker *b, session *s);
/* Remove a session (bk_session_destroy) and publish the will it held for
 * its delay: the end of an offline session (expiry, a Clean Start). */
void bk_session_end(broker *b, session *s, uint64_t now_ms);
/* s's connection ended and s lives on: it expires after its Session
 * Expiry Interval (journaled with the time, when it is finite). */
void bk_session_set_offline(broker *b, session *s, uint64_t now_ms);
/* A connection takes s up: a will s held for its delay is dropped. */
void bk_session_set_online(broker *b, session *s, broker_conn *c);
/* Set s's Session Expiry Interval (session-t.h). 0 makes a persistent
 * session end with its connection: its records are deleted now. Never
 * from 0 to more (conn.c refuses that). */
void bk_session_set_expiry(broker *b, session *s, uint32_t interval_s);
/* Offline s holds will (the reference is taken) until its Will Delay
 * Interval from now has passed or s ends, whichever comes first. */
void bk_session_keep_will(broker *b, session *s, msg *will, uint32_t delay_s, uint64_t now_ms);
/* Publish a will message now (a Message Expiry Interval among its
 * properties counts from now). w keeps its references. */
void bk_will_publish(broker *b, msg *w, uint64_t now_ms);
/* Offline sessions whose time has come: delayed wills and expiries
 * (broker_tick, at st->next_event_ms). */
void bk_sessions_tick(broker *b, uint64_t now_ms);
/* Append an outbound entry; false when the session's bounds refuse it (or
 * memory for its identifiers runs out). via (NULL = nothing) gives its
 * Subscription Identifiers and shared group. QoS 0 entries are queued
 * only while a connection waits for its CONNACK. */
bool bk_session_enqueue(broker *b, session *s, msg *m, uint8_t qos, bool retain,
                        const bk_via *via);
/* Append a retained message sent for a new subscription (any QoS). These
 * are bounded by max_retained rather than max_queued: a subscriber to '#'
 * expects every retained message, not the first max_queued of them. */
bool bk_session_enqueue_retained(broker *b, session *s, msg *m, uint8_t qos,
                                 const bk_via *via);
/* A member left shared group `serial` (it unsubscribed): its unsent
 * entries delivered through the group are taken out of its queue, each
 * handed to fn first (to go to another member); its sent ones stay, to be
 * completed [MQTT-3.10.4-3], but lose the tag. */
void bk_session_take_shared(broker *b, session *s, uint32_t serial,
                            void (*fn)(broker *b, void *ctx, qentry *e), void *ctx);
/* Entry holding packet_id among the sent ones, or NULL. */
qentry *bk_session_find_sent(session *s, uint16_t packet_id);
/* Mark an entry acknowledged and drop holes at the head. */
void bk_session_complete(broker *b, session *s, qentry *e);
uint16_t bk_session_next_packet_id(session *s);
/* The i-th entry of the outbound ring, counted from its head. */
static inline qentry *bk_session_entry(const session *s, uint32_t i)
{
    return &s->q[(s->q_head + i) % s->q_cap];
}
/* Payload bytes queued for s changed: the session's count and its
 * identity's together. */
static inline void bk_session_bytes_add(session *s, uint64_t n)
{
    s->q_bytes += n;
    if (s->ident)
        s->ident->q_bytes += n;
}
static inline void bk_session_bytes_sub(session *s, uint64_t n)
{
    s->q_bytes -= n;
    if (s->ident)
        s->ident->q_bytes -= n;
}
/* A sent entry's message starts or stops counting against the window's
 * byte bound (session-t.h inflight_bytes). */
void bk_session_flight_add(session *s, const msg *m);
void bk_session_flight_sub(session *s, const msg *m);
/* Mark a sent QoS 0 entry (retained-on-subscribe) finished. */
void bk_session_sent_qos0(broker *b, session *s, qentry *e);
/* Inbound QoS 2 ids. */
bool bk_session_in_qos2_has(const session *s, uint16_t id);
int bk_session_in_qos2_add(broker *b, session *s, uint16_t id);
void bk_session_in_qos2_del(broker *b, session *s, uint16_t id);
/* Append a restored entry in any state (restore.c). */
bool bk_session_restore_entry(broker *b, session *s, msg *m, uint64_t seq, uint8_t qos,
                              bool retain, uint8_t state, uint16_t packet_id);

#endif
