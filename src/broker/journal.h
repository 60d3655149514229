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
 * everything; the store never parses bytes itself. Fields added for MQTT
 * 5.0 come after the 3.1.1 ones of each record.
 *
 * Times that must run while the broker is down (a message's expiry, an
 * offline session's expiry, a delayed will's firing) are recorded as
 * wall-clock milliseconds since the Unix epoch (broker_set_wall_clock), 0 =
 * none. Without a wall clock the core records a message's or a will's time
 * left instead, marked with JOURNAL_TIME_LEFT, which restore counts from
 * the moment of restore; and no session expiry time (the session gets its
 * whole interval again at restore, broker.h).
 */
#ifndef TERN_BROKER_JOURNAL_H
#define TERN_BROKER_JOURNAL_H

#include "broker/broker.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum journal_type {
    J_RETAIN_SET = 1, /* topic, payload, qos, props, expiry_at */
    J_RETAIN_DEL,     /* topic */
    J_SESSION_PUT,    /* client_id, identity (empty = anonymous), flags bit0 operator,
                         expiry_interval, expiry_at (0 = online when recorded,
                         or no wall clock) */
    J_SESSION_DEL,    /* client_id: the session and all its rows */
    J_SUB_PUT,        /* client_id, filter, qos, options, sub_id */
    J_SUB_DEL,        /* client_id, filter */
    J_MSG_PUT,        /* msg_id, topic, payload, qos, flags bit0 retain, props, expiry_at */
    J_MSG_DEL,        /* msg_id */
    J_QUEUE_PUT,      /* client_id, seq, msg_id, qos, flags bit0 retain, sub_id, sub_ids */
    J_QUEUE_STATE,    /* client_id, seq, state (qentry_state), packet_id */
    J_QUEUE_DEL,      /* client_id, seq */
    J_INQOS2_PUT,     /* client_id, packet_id */
    J_INQOS2_DEL,     /* client_id, packet_id */
    J_RESET,          /* (no fields) delete everything: a full snapshot follows in
                         the same batch. Sent after a failed batch, so the disk
                         matches memory again once it commits. */
    J_WILL_PUT,       /* client_id, topic, payload, qos, flags bit0 retain, props,
                         expiry_at, fire_at: an offline session's delayed will */
    J_WILL_DEL,       /* client_id: its delayed will fired or was dropped */
} journal_type;

typedef struct journal_bytes {
    const uint8_t *p;
    uint32_t len;
} journal_bytes;

/* A recorded time that is the milliseconds left when it was recorded (no
 * wall clock), not a wall-clock time. Wall-clock times stay far below it. */
#define JOURNAL_TIME_LEFT (UINT64_C(1) << 63)

/* One decoded record; only the fields of its type are meaningful. Views
 * point into the batch. */
typedef struct journal_rec {
    journal_type type;
    journal_bytes client_id;
    journal_bytes identity;
    journal_bytes topic;   /* topic (retained, message, will) or filter (sub) */
    journal_bytes payload;
    /* MQTT 5.0 properties forwarded with the message (msg-t.h), as on the
     * wire; empty for a 3.1.1 message. */
    journal_bytes props;
    /* J_QUEUE_PUT: the entry's Subscription Identifiers after sub_id, each
     * a big-endian u32 (length a multiple of 4); empty when none. */
    journal_bytes sub_ids;
    uint64_t msg_id;
    uint64_t seq;
    /* When the message expires (J_RETAIN_SET, J_MSG_PUT, J_WILL_PUT: its
     * Message Expiry) or the offline session does (J_SESSION_PUT): a
     * recorded time (above), 0 = never / not offline. */
    uint64_t expiry_at;
    uint64_t fire_at;          /* J_WILL_PUT: when the will is published */
    uint32_t expiry_interval;  /* J_SESSION_PUT: Session Expiry Interval, s */
    uint32_t sub_id;           /* J_SUB_PUT, J_QUEUE_PUT: 0 = none */
    uint16_t packet_id;
    uint8_t qos;
    uint8_t state;
    uint8_t flags;
    uint8_t options;           /* J_SUB_PUT: subscription options (MQTT_SUBOPT_*) */
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
 * change of `failing` or `full` is published at once; counters follow at the next
 * $SYS refresh. Logging is the platform's. */
/* The disk under the store, where the platform has one of its own (the
 * kernel's layout: docs/DISK.md); all zero elsewhere, and then not
 * published. */
typedef struct broker_disk_status {
    uint64_t disk_bytes;       /* the device's capacity now */
    uint64_t partition_bytes;  /* the tern data partition's */
    uint64_t database_bytes;   /* the database region's */
    uint64_t growths;          /* layout growths since boot (at boot or live) */
    char last_growth[96];      /* what the last one did; "" before any */
} broker_disk_status;

typedef struct broker_store_status {
    uint64_t commits;          /* successful transactions */
    uint64_t failed_commits;
    uint64_t records;          /* records committed */
    uint64_t commit_p50_us;    /* commit latency over a recent window */
    uint64_t commit_p99_us;
    uint64_t backups_done;
    uint64_t backups_failed;
    bool failing;              /* the last transaction failed */
    bool full;                 /* no room: commits (or checkpoints) fail for
                                  lack of space; the state reads "full" */
    bool restored_at_open;     /* the database was replaced by a backup at open */
    /* The unikernel's disk scrubber (SPEC D6); scrub_on false: none. */
    bool scrub_on;
    uint32_t scrub_progress_pct;   /* of the current pass */
    uint64_t scrub_passes;
    uint64_t scrub_corrupt;        /* damaged places found, all passes */
    uint64_t scrub_last_pass_ms;
    char scrub_last_corrupt[160];  /* "REGION, byte N: what", or "none" */
    broker_disk_status disk;
} broker_store_status;

void broker_set_store_status(broker *b, const broker_store_status *st);

/*
 * Restore, before any connection is opened: rebuild state from committed
 * records, in this order: sessions, subscriptions, messages, queue entries
 * (in seq order per session), inbound QoS 2 ids, wills, retained messages,
 * then broker_restore_done(). Return 0, or -1 on allocation failure or
 * inconsistent input (a missing session/message).
 *
 * Recorded times (expiry_at, fire_at) are as in the records; call
 * broker_set_wall_clock() first so they can be compared with the time now.
 * What expired while the broker was down is dropped and never delivered:
 * a retained message, a queue entry not yet sent (one already sent stays:
 * its delivery has begun), a session (at broker_restore_done, after its
 * will). These are the only records restore produces: the removal of
 * those rows, so the disk forgets them too. Everything else keeps only
 * the time it had left.
 *
 * A session's expiry_interval 0 means the core did not record one (a
 * version-1 row, or a 3.1.1-only core): the 3.1.1 value applies
 * (limits.session_expiry_s, 0 there meaning never). A persistent session
 * never has 0 (it would end with its connection: a clean session).
 */
int broker_restore_retained(broker *b, const uint8_t *topic, size_t tlen,
                            const uint8_t *payload, size_t plen, uint8_t qos,
                            const uint8_t *props, size_t props_len, uint64_t expiry_at);
int broker_restore_session(broker *b, const uint8_t *id, size_t idlen, const uint8_t *identity,
                           size_t identity_len, bool is_operator, uint32_t expiry_interval,
                           uint64_t expiry_at);
int broker_restore_sub(broker *b, const uint8_t *id, size_t idlen, const uint8_t *filter,
                       size_t flen, uint8_t qos, uint8_t options, uint32_t sub_id);
int broker_restore_msg(broker *b, uint64_t msg_id, const uint8_t *topic, size_t tlen,
                       const uint8_t *payload, size_t plen, uint8_t qos, bool retain,
                       const uint8_t *props, size_t props_len, uint64_t expiry_at);
/* sub_ids: the further Subscription Identifiers, big-endian u32 each. */
int broker_restore_queued(broker *b, const uint8_t *id, size_t idlen, uint64_t seq,
                          uint64_t msg_id, uint8_t qos, bool retain, uint8_t state,
                          uint16_t packet_id, uint32_t sub_id, const uint8_t *sub_ids,
                          size_t sub_ids_len);
int broker_restore_inqos2(broker *b, const uint8_t *id, size_t idlen, uint16_t packet_id);
int broker_restore_will(broker *b, const uint8_t *id, size_t idlen, const uint8_t *topic,
                        size_t tlen, const uint8_t *payload, size_t plen, uint8_t qos,
                        bool retain, const uint8_t *props, size_t props_len, uint64_t expiry_at,
                        uint64_t fire_at);
/* End of restore: drop messages no queue entry referenced, end the
 * sessions that expired while the broker was down (publishing their
 * wills), publish the wills whose delay passed, log a summary. */
void broker_restore_done(broker *b);

#endif
