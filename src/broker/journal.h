/*
 * journal.h - the durable-state records the broker core produces, and the
 * restore calls that rebuild the core from them. The whole public face of
 * the core's side of persistence (SPEC D1); src/store/ is the other side.
 *
 * With broker_config.durable set, every change to state that must survive a
 * restart is appended as a record to the open batch: retained messages,
 * persistent sessions, their subscriptions, their queued and inflight
 * messages, and inbound QoS 2 packet ids awaiting PUBREL. Clean sessions
 * produce no records. The platform takes a batch after each loop turn, has
 * the store commit it (on another thread, possibly merging several batches
 * into one transaction), and reports the outcome. An acknowledgement
 * (PUBACK/PUBREC) of a PUBLISH that produced records is held back until the
 * batch holding them is committed; later acknowledgements on the same
 * connection wait behind it, so their order is kept [MQTT-4.6.0-2].
 *
 * Batch memory belongs to the core; it stays valid and unchanged from
 * broker_store_take() until broker_store_done() for that batch.
 *
 * Record encoding (all integers big-endian): u8 type, then the fields in
 * the order listed in journal_rec for that type; byte strings are u32
 * length + bytes. Readers use journal_next(), which bounds-checks
 * everything; the store never parses bytes itself.
 */
#ifndef TERN_BROKER_JOURNAL_H
#define TERN_BROKER_JOURNAL_H

#include "broker/broker.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum journal_type {
    J_RETAIN_SET = 1, /* topic, payload, qos */
    J_RETAIN_DEL,     /* topic */
    J_SESSION_PUT,    /* client_id, identity (empty = anonymous), flags bit0 operator */
    J_SESSION_DEL,    /* client_id: the session and all its rows */
    J_SUB_PUT,        /* client_id, filter, qos */
    J_SUB_DEL,        /* client_id, filter */
    J_MSG_PUT,        /* msg_id, topic, payload, qos, flags bit0 retain */
    J_MSG_DEL,        /* msg_id */
    J_QUEUE_PUT,      /* client_id, seq, msg_id, qos, flags bit0 retain */
    J_QUEUE_STATE,    /* client_id, seq, state (qentry_state), packet_id */
    J_QUEUE_DEL,      /* client_id, seq */
    J_INQOS2_PUT,     /* client_id, packet_id */
    J_INQOS2_DEL,     /* client_id, packet_id */
    J_RESET,          /* (no fields) delete everything: a full snapshot follows in
                         the same batch. Sent after a failed batch, so the disk
                         matches memory again once it commits. */
} journal_type;

typedef struct journal_bytes {
    const uint8_t *p;
    uint32_t len;
} journal_bytes;

/* One decoded record; only the fields of its type are meaningful. Views
 * point into the batch. */
typedef struct journal_rec {
    journal_type type;
    journal_bytes client_id;
    journal_bytes identity;
    journal_bytes topic;   /* topic (retained, message) or filter (sub) */
    journal_bytes payload;
    uint64_t msg_id;
    uint64_t seq;
    uint16_t packet_id;
    uint8_t qos;
    uint8_t state;
    uint8_t flags;
} journal_rec;

/* Outbound queue entry states, as stored (same values as the core's). */
enum {
    JOURNAL_Q_QUEUED = 0,
    JOURNAL_Q_WAIT_PUBACK = 1,
    JOURNAL_Q_WAIT_PUBREC = 2,
    JOURNAL_Q_WAIT_PUBCOMP = 3,
};

/* Decode the record at *pos of data[0..len); advances *pos. Returns 1 on a
 * record, 0 at the end, -1 on a malformed batch (a bug: batches come from
 * the core). */
int journal_next(const uint8_t *data, size_t len, size_t *pos, journal_rec *out);

typedef struct broker_store_batch {
    uint64_t seq;          /* increasing; 1 for the first batch */
    const uint8_t *data;   /* records, owned by the core */
    size_t len;
    uint32_t records;
} broker_store_batch;

/* Close the open batch and hand it out; false when there is none. Call it
 * until it returns false after every loop turn. */
bool broker_store_take(broker *b, broker_store_batch *out);

/* The store finished batch seq: committed (ok) or failed. Batches are
 * reported in order. On success the acknowledgements waiting for it are
 * released; on failure they are dropped, the failure is logged and counted,
 * and the publishers' connections are closed so they resend when the store
 * works again (nothing unacknowledged is lost by the client). */
void broker_store_done(broker *b, uint64_t seq, bool ok);

/* Bytes of batches taken but not yet done (for back-pressure and $SYS). */
size_t broker_store_pending_bytes(const broker *b);

/* The store's health, as the platform last saw it; published under
 * $SYS/broker/store/ (SPEC D1: a failing disk is reported, not hidden). A
 * change of `failing` is published at once; counters follow at the next
 * $SYS refresh. Logging is the platform's. */
typedef struct broker_store_status {
    uint64_t commits;          /* successful transactions */
    uint64_t failed_commits;
    uint64_t records;          /* records committed */
    uint64_t commit_p50_us;    /* commit latency over a recent window */
    uint64_t commit_p99_us;
    uint64_t backups_done;
    uint64_t backups_failed;
    bool failing;              /* the last transaction failed */
    bool restored_at_open;     /* the database was replaced by a backup at open */
} broker_store_status;

void broker_set_store_status(broker *b, const broker_store_status *st);

/*
 * Restore, before any connection is opened: rebuild state from committed
 * records. These produce no new records. Queue entries must be restored in
 * seq order per session, after their session and message. Return 0, or -1
 * on allocation failure or inconsistent input (a missing session/message).
 */
int broker_restore_retained(broker *b, const uint8_t *topic, size_t tlen,
                            const uint8_t *payload, size_t plen, uint8_t qos);
int broker_restore_session(broker *b, const uint8_t *id, size_t idlen, const uint8_t *identity,
                           size_t identity_len, bool is_operator);
int broker_restore_sub(broker *b, const uint8_t *id, size_t idlen, const uint8_t *filter,
                       size_t flen, uint8_t qos);
int broker_restore_msg(broker *b, uint64_t msg_id, const uint8_t *topic, size_t tlen,
                       const uint8_t *payload, size_t plen, uint8_t qos, bool retain);
int broker_restore_queued(broker *b, const uint8_t *id, size_t idlen, uint64_t seq,
                          uint64_t msg_id, uint8_t qos, bool retain, uint8_t state,
                          uint16_t packet_id);
int broker_restore_inqos2(broker *b, const uint8_t *id, size_t idlen, uint16_t packet_id);
/* End of restore: drop messages no queue entry referenced, log a summary. */
void broker_restore_done(broker *b);

#endif
