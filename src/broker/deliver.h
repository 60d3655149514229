/*
 * deliver.h - the outbound path (deliver.c): connection output buffers and
 * the dirty list, routing a PUBLISH to the sessions it matches, and moving
 * a session's queue onto the wire.
 */
#ifndef TERN_BROKER_DELIVER_H
#define TERN_BROKER_DELIVER_H

#include "broker/broker.h"
#include "broker/conn-t.h"
#include "broker/msg.h"
#include "broker/session-t.h"
#include "broker/tree-t.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Reserve n bytes at the end of c's output; NULL on allocation failure. The
 * caller writes exactly n bytes then calls bk_out_commit(). */
uint8_t *bk_out_reserve(broker *b, broker_conn *c, size_t n);
void bk_out_commit(broker *b, broker_conn *c, size_t n);
/* Everything pending was written: free the buffer, remember its peak. */
void bk_out_drained(broker *b, broker_conn *c);
/* Free every pooled output buffer. */
void bk_out_pool_trim(broker *b);
/* Trim the pool if it went unused for a while (broker_tick). */
void bk_out_pool_tick(broker *b, uint64_t now_ms);
/* When bk_out_pool_tick next releases an unused pool (UINT64_MAX: empty). */
uint64_t bk_out_pool_next_deadline(const broker *b);
size_t bk_out_pending(const broker_conn *c);
/* Put c on the dirty list the platform drains (once until popped). */
void bk_conn_mark_dirty(broker *b, broker_conn *c);
/* A message (on topic) was not delivered to s: count it and say so, with
 * its publisher and why (rate-limited: log.c). */
void bk_dropped(broker *b, const session *s, uint8_t qos, const uint8_t *topic, size_t tlen,
                const char *why);
/* Why bk_session_enqueue() refused m for s, in words naming the limit. */
const char *bk_enqueue_refusal(const broker *b, const session *s, const msg *m, char *buf,
                               size_t size);
/* Deliver a message to a session (live or queued); via (NULL = none)
 * gives its Subscription Identifiers and shared group. False when it was
 * dropped (counted and logged). */
bool bk_deliver(broker *b, session *s, msg *m, uint8_t qos, bool retain, const bk_via *via);
/* Send what the session's queue and the connection's room allow. */
void bk_session_pump(broker *b, session *s);
/* Resend unacknowledged messages after a reconnect. */
void bk_session_resend(broker *b, session *s);
/* Put entries [q_wire, q_sent) on the wire, in order, as far as their
 * commits and the connection's room allow. */
void bk_session_transmit(broker *b, session *s);
/* Shared subscription x (`$share/...`) is about to be removed while its
 * session stays (UNSUBSCRIBE, a new ACL): the unsent messages it was
 * given go to other members of its group; the sent ones stay with it. */
void bk_share_leave(broker *b, sub *x);
/* Session s is ending (bk_session_destroy): what its shared subscriptions
 * gave it and it did not finish goes to other members (QoS 2 messages
 * already sent excepted [MQTT-4.8.2-5]). */
void bk_share_session_end(broker *b, session *s);
/* Route a PUBLISH to every matching subscription (retained handling
 * included). m may be NULL when the caller has only views; then a msg is
 * built only if someone needs one. */
void bk_route_publish(broker *b, const uint8_t *topic, size_t tlen, const uint8_t *payload,
                      size_t plen, uint8_t qos, bool retain, msg *m);
/* The same for a message with MQTT 5.0 properties and expiry (views of an
 * inbound PUBLISH; m NULL, or the msg v views). Returns the sessions it
 * reached: sent, queued, or dropped only for a client's Maximum Packet
 * Size (as good as sent [MQTT-3.1.2-25]); copies dropped for other
 * reasons are counted in stats.publish_dropped. An already expired
 * message reaches no one (counted in stats.msgs_expired). v is taken by
 * value: its callers then hold no address-taken local (no stack canary on
 * the 3.1.1 path). */
long bk_route_view(broker *b, bk_pubview v, uint8_t qos, bool retain, msg *m);

#endif
