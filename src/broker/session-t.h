/*
 * session-t.h - the types of MQTT sessions (session.c): the table by client
 * id, and each session's ordered outbound queue of QoS 1/2 messages.
 * Types only; the calls are in session.h.
 */
#ifndef TERN_BROKER_SESSION_T_H
#define TERN_BROKER_SESSION_T_H

#include "broker/broker.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct msg msg;
typedef struct sub sub;
typedef struct session session;

/* What all sessions of one TLS identity hold together (ident.c), for the
 * per-identity limits. Anonymous sessions have none. */
typedef struct bk_ident {
    struct bk_ident *hnext;   /* chain in the identity table */
    uint64_t q_bytes;         /* sum of its sessions' q_bytes */
    uint32_t refs;            /* sessions of this identity */
    uint32_t persistent;      /* of them, persistent (clean_session = 0) */
    uint32_t hashv;
    uint16_t len;
    char name[];              /* the identity, NUL-terminated */
} bk_ident;

typedef struct ident_table {
    bk_ident **table;         /* NULL while no session has an identity */
    size_t size;              /* power of two */
    size_t count;
} ident_table;

typedef enum qentry_state {
    Q_QUEUED = 0,     /* not sent yet */
    Q_WAIT_PUBACK,    /* QoS 1 sent */
    Q_WAIT_PUBREC,    /* QoS 2 sent */
    Q_WAIT_PUBCOMP,   /* QoS 2 PUBREL sent */
    Q_DONE,           /* acknowledged; a hole until the head passes it */
} qentry_state;

/* One outbound QoS 1/2 message for a session, in delivery order. */
typedef struct qentry {
    msg *m;
    uint64_t seq;     /* per-session, increasing: its key in the store */
    uint16_t packet_id;
    uint8_t qos;
    uint8_t state;    /* qentry_state */
    bool retain;      /* deliver with the retain flag (retained on subscribe,
                         or Retain As Published) */
    bool sent;        /* transmitted at least once (resends carry DUP) */
    /* MQTT 5.0 Subscription Identifiers the delivery carries: sub_id is
     * the one (0 = none); a message matching several of the session's
     * subscriptions that have identifiers carries all of them
     * [MQTT-3.3.4-4]: the rest in sub_ids_more, owned, [count, id, ...],
     * NULL when there are none. Journaled with the entry (J_QUEUE_PUT). */
    uint32_t sub_id;
    /* Delivered through a shared subscription: its group's serial
     * (sgroup.serial, tree-t.h), so the entry goes to another member when
     * this one leaves before receiving it; 0 = not shared. Not journaled:
     * restored entries are 0. (In what was padding.) */
    uint32_t shared;
    uint32_t *sub_ids_more;
    /* Batch that must commit before this entry's current state may go on
     * the wire (0 = no wait). Set for QoS 2 only: a QoS 2 receiver knows
     * a message by its packet id, so the id must be on disk before the
     * receiver sees it, and a PUBREL before the PUBLISH can be forgotten. */
    uint64_t jseq;
} qentry;

/* What one delivery came through (routing, deliver.c): the Subscription
 * Identifiers it carries (MQTT 5.0), as a qentry holds them (sub_id, and
 * the rest in `more`, [count, id...], borrowed), and the shared group's
 * serial (qentry.shared). */
typedef struct bk_via {
    uint32_t sub_id;
    const uint32_t *more;
    uint32_t shared;
} bk_via;

struct session {
    session *hnext;           /* chain in the session hash table */
    session *off_prev, *off_next; /* list of offline persistent sessions */
    broker_conn *conn;        /* NULL while offline */
    /* Subscriptions: a list in no particular order, and an index by topic
     * tree node (tree.c), so finding one of them costs the same whatever
     * the session's count. The index is a power-of-two table, NULL while
     * the session has none; it grows and shrinks with the count. */
    sub *subs;
    sub **sub_index;
    uint32_t sub_index_size;
    uint32_t sub_count;
    /* Outbound ring: entries [head, head+count), sent ones first. */
    qentry *q;
    uint32_t q_cap, q_head, q_count;
    uint32_t q_sent;          /* entries at the front given a packet id (incl. holes) */
    /* Entries at the front whose current state went out on the current
     * connection; q_wire <= q_sent. The gap holds entries waiting for their
     * batch to commit (qentry.jseq), sent in order once it has. */
    uint32_t q_wire;
    uint32_t inflight;        /* sent and not yet fully acknowledged */
    uint64_t q_bytes;         /* payload bytes of queued, unsent entries; change it
                                 through bk_session_bytes_add/_sub (session.h), which
                                 keep the identity's sum */
    uint16_t next_packet_id;
    uint16_t id_len;          /* of id[] (here: in what was padding) */
    /* Some sent entry's packet id did not come from next_packet_id in
     * queue order (restored, or a busy id was skipped): the next id must be
     * checked against every sent entry. Cleared when none is left
     * (bk_session_next_packet_id). */
    bool ids_scattered;
    uint64_t next_seq;        /* seq of the next queue entry */
    /* Inbound QoS 2 packet ids delivered and awaiting PUBREL. */
    uint16_t *in_qos2;
    uint32_t in_qos2_count, in_qos2_cap;
    uint64_t expires_at;      /* ms, offline persistent sessions; 0 = never */
    /* MQTT 5.0 Session Expiry Interval in seconds, with 5.0's meaning for
     * every session: 0 = ends when its connection does, UINT32_MAX = never
     * expires. A 3.1.1 session gets 0 (clean) or limits.session_expiry_s
     * (0 there meaning UINT32_MAX). Journaled with the session; the time
     * an offline session expires is journaled as a wall-clock time
     * (broker_set_wall_clock) so it runs while the broker is down. */
    uint32_t expiry_interval_s;
    /* MQTT 5.0 delayed will (Will Delay Interval): the will of the
     * session's last connection, published at will_at_ms (core time)
     * unless a new connection resumes the session first, or when the
     * session ends, whichever comes first [MQTT-3.1.2-8]
     * [MQTT-3.1.3-9]. Owned reference; NULL = none. Journaled
     * (J_WILL_PUT / J_WILL_DEL). Unlike other messages it keeps its
     * Message Expiry Interval among its properties: the interval counts
     * from its publication (bk_will_publish). */
    msg *will;
    uint64_t will_at_ms;
    uint64_t match_epoch;     /* bk_tree_match dedup stamp */
    uint32_t match_idx;
    uint32_t hashv;
    bool clean;
    bool is_operator;         /* of the identity that last connected */
    /* Back-pressure (flow.c), in what was padding: */
    bool holding;             /* may hold publishers (b->holds has entries for it) */
    bool stalled;             /* held them without progress: holds no one now */
    uint32_t progress_ms;     /* low 32 bits of the time it last sent, while holding */
    const char *identity;     /* ident->name; NULL = anonymous */
    bk_ident *ident;          /* NULL = anonymous */
    /* Payload bytes of the sent entries that still hold their message
     * (until PUBACK, PUBREC or completion): the window also closes at
     * limits.max_queued_bytes of them (deliver.c), so a large max_inflight
     * cannot make one session hold max_inflight large messages. */
    uint64_t inflight_bytes;
    char id[];                /* client id, NUL-terminated */
};

typedef struct session_table {
    uint64_t key[2];          /* hash key (broker_config.hash_key) */
    session **table;
    size_t size;              /* power of two */
    size_t count;
    session *offline;         /* persistent sessions without a connection */
    size_t offline_count;
    /* No offline session has a will or an expiry due before this (ms,
     * core time; UINT64_MAX = none). May be early, never late:
     * bk_sessions_tick recomputes it. */
    uint64_t next_event_ms;
    bool freeing;             /* bk_sessions_free: keep the table's size */
} session_table;

#endif
