/*
 * persist.h - the core's side of persistence (journal.c): recording each
 * change to durable state, the gate an acknowledgement waits for, and
 * holding acknowledgements until their batch is committed. The contract
 * with the store (batches, restore) is journal.h.
 */
#ifndef TERN_BROKER_PERSIST_H
#define TERN_BROKER_PERSIST_H

#include "broker/broker.h"
#include "broker/msg-t.h"
#include "broker/persist-t.h"
#include "broker/session-t.h"
#include "mqtt/mqtt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Is this session's state persisted? */
bool bk_journaled(const broker *b, const session *s);
void bk_journal_free(broker *b);
/* Records of durable changes; each does nothing when b or s is not durable. */
/* m is the retained message as the tree now holds it (topic, payload,
 * QoS, MQTT 5.0 properties and expiry). */
void bk_journal_retain_set(broker *b, const msg *m);
void bk_journal_retain_del(broker *b, const uint8_t *topic, size_t tlen);
/* Also when s goes offline (after bk_session_set_offline): the record then
 * carries the time it expires, which runs while the broker is down. */
void bk_journal_session_put(broker *b, const session *s);
void bk_journal_session_del(broker *b, const session *s);
/* flen must be 1..TREE_FILTER_MAX: an empty filter is a bug (panic). A put
 * records x's QoS, options and identifier; a delete passes x NULL. */
void bk_journal_sub(broker *b, const session *s, const uint8_t *filter, size_t flen,
                    const sub *x, bool put);
void bk_journal_queue_put(broker *b, const session *s, const qentry *e);
void bk_journal_queue_state(broker *b, const session *s, const qentry *e);
void bk_journal_queue_del(broker *b, const session *s, const qentry *e);
void bk_journal_inqos2(broker *b, const session *s, uint16_t packet_id, bool put);
/* s->will (its delayed will, fired at s->will_at_ms) was set: J_WILL_PUT;
 * or cleared (published, dropped, or the session resumed): J_WILL_DEL.
 * Call after changing them. */
void bk_journal_will(broker *b, const session *s);
/* A persisted reference to m was added / dropped (emits MSG_PUT / MSG_DEL). */
void bk_journal_msg_ref(broker *b, msg *m);
void bk_journal_msg_unref(broker *b, msg *m);
/*
 * The gate: which batch must commit before a packet that tells a client
 * something durable may go out (ADR-019), 0 = none. Only what reaches the
 * disk waits: a packet whose handling recorded nothing (a clean session's
 * message to clean subscribers, a message nobody subscribes to) has no
 * durable consequence and is answered at once, also while the disk fails
 * and is being repaired (docs/STORE.md).
 *
 * Callers take a mark before handling the packet; what it records, or
 * fails to record, moves the mark.
 */
uint64_t bk_journal_mark(const broker *b);
/* For a packet that recorded something (queue entries of journaled
 * sessions): the batch that carries it, or the repairing snapshot. */
uint64_t bk_journal_gate(const broker *b, uint64_t mark);
/* 0 when the packet recorded nothing, else bk_journal_gate(). */
uint64_t bk_journal_gate_if_changed(const broker *b, uint64_t mark);
/* For a packet of s's QoS 2 flows (PUBREC, PUBREL, PUBCOMP), which may
 * also vouch for state recorded by an earlier packet (a resent PUBLISH
 * whose id is already known, a second PUBREL): when it recorded nothing
 * and s is journaled, every batch not yet committed, else as
 * bk_journal_gate_if_changed(). */
uint64_t bk_journal_gate_session(const broker *b, const session *s, uint64_t mark);
/* May a queue entry recorded with gate jseq (bk_journal_gate) go on the wire?
 * No while the disk is being repaired after a failed batch: the batch
 * numbers committed since then do not cover what the failed one held. */
bool bk_journal_committed(const broker *b, uint64_t jseq);
/* Send an acknowledgement now, or hold it behind earlier held ones. False on
 * allocation failure. reason: the MQTT 5.0 reason code of a PUBACK,
 * PUBREC, PUBREL or PUBCOMP to a level-5 client (0 = success; ignored at
 * levels 3/4), written by bk_send_ack (publish.h). */
bool bk_ack_rc_send_or_hold(broker *b, broker_conn *c, mqtt_type type, uint16_t packet_id,
                            uint8_t reason, uint64_t gate_seq);
static inline bool bk_ack_send_or_hold(broker *b, broker_conn *c, mqtt_type type,
                                       uint16_t packet_id, uint64_t gate_seq)
{
    return bk_ack_rc_send_or_hold(b, c, type, packet_id, 0, gate_seq);
}
/* The same for a SUBACK with its return codes, or a level-5 UNSUBACK with
 * its reason codes (copied when held). */
bool bk_suback_send_or_hold(broker *b, broker_conn *c, mqtt_type type, uint16_t packet_id,
                            const uint8_t *codes, uint32_t ncodes, uint64_t gate_seq);
/* Forget a closing connection's held acknowledgements and commit waits. */
void bk_acks_drop(broker *b, broker_conn *c);
/* c's session has an entry waiting for a commit: transmit again after the
 * next successful one. */
void bk_commit_wait(broker *b, broker_conn *c);

#endif
