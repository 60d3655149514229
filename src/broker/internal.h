/*
 * internal.h - data structures shared by the files of the broker core.
 * Nothing outside src/broker/ includes this; broker.h is the public face.
 *
 * Ownership in one picture:
 *   broker ── owns ──> sessions (hash by client id), connections (list),
 *                      topic tree (subscriptions + retained messages)
 *   session ── owns ──> its subscriptions, its outbound queue entries
 *   conn ──── owns ──> its input tail, output buffer, will message ref
 *   msg ───── shared by reference count: tree (retained), queues, wills
 */
#ifndef TERN_BROKER_INTERNAL_H
#define TERN_BROKER_INTERNAL_H

#include "broker/acl.h"
#include "broker/broker.h"
#include "broker/journal.h"
#include "mqtt/mqtt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Invariant checks that stay on in production builds: a broken invariant is
 * a bug, and continuing would corrupt state. */
#define ALWAYS(cond) ((cond) ? (void)0 : tern_panic(__FILE__, __LINE__, #cond))

/* Size classes of pooled output buffers (deliver.c). */
#define OUT_POOL_CLASSES 4

/* ---- memory (mem.c) ---------------------------------------------------- */

void *bmem_alloc(broker *b, size_t size);
void *bmem_calloc(broker *b, size_t size);
void *bmem_realloc(broker *b, void *p, size_t size);
void bmem_free(broker *b, void *p);
char *bmem_strdup(broker *b, const char *s); /* NULL in, NULL out */

/* ---- messages (msg.c) -------------------------------------------------- */

/* An application message, immutable once built and shared by reference. */
typedef struct msg {
    uint32_t refs;
    uint32_t store_refs; /* references that are on disk (queue rows) */
    uint64_t store_id;   /* id of its row in the store; 0 = never stored */
    uint32_t payload_len;
    uint16_t topic_len;
    uint8_t qos;      /* QoS it was published with */
    uint8_t retain;   /* published with the retain flag */
    uint8_t data[];   /* topic bytes, then payload bytes */
} msg;

msg *msg_new(broker *b, const uint8_t *topic, size_t topic_len, const uint8_t *payload,
             size_t payload_len, uint8_t qos, bool retain);
static inline const uint8_t *msg_topic(const msg *m) { return m->data; }
static inline const uint8_t *msg_payload(const msg *m) { return m->data + m->topic_len; }
static inline msg *msg_ref(msg *m) { m->refs++; return m; }
void msg_unref(broker *b, msg *m);

/* ---- topic tree (tree.c) ----------------------------------------------- */

typedef struct session session;
typedef struct tnode tnode;

/* One subscription: a session's filter, linked into the node of that filter
 * and into the session's own list. */
typedef struct sub {
    struct sub *node_prev, *node_next;
    struct sub *sess_next;
    tnode *node;
    session *sess;
    uint8_t qos;
    bool acl_check;   /* a deny rule overlaps the filter: check each message */
} sub;

struct tnode {
    tnode *parent;
    tnode *first_child, *next_sibling, *prev_sibling; /* ordinary levels */
    tnode *plus, *hash;       /* the '+' and '#' children */
    tnode *hnext;             /* chain in the tree's child hash table */
    sub *subs;                /* subscriptions whose filter ends here */
    msg *retained;            /* retained message whose topic ends here */
    uint32_t hashv;
    uint16_t seg_len;
    char seg[];               /* this level's text, not terminated */
};

/* A match result: one entry per session, at the highest granted QoS. */
typedef struct match {
    session *sess;
    uint8_t qos;
    bool acl_check;   /* every matching subscription needs a per-message check */
} match;

#define TREE_LAST_TOPIC_MAX 128u

typedef struct tree {
    uint64_t key[2];          /* hash key (broker_config.hash_key) */
    tnode *root;
    tnode **table;            /* child lookup: hash(parent, segment) */
    size_t table_size;        /* power of two */
    size_t node_count;
    /* Scratch owned by the tree and reused across calls, so matching
     * allocates only while it grows to the largest fan-out seen. */
    match *matches;
    size_t matches_cap;
    struct tstack { tnode *node; size_t pos; } *stack;
    size_t stack_cap;
    uint64_t epoch;           /* stamps sessions during one match */
    /* The last topic matched, whose result is still in `matches`: a
     * publisher's messages arrive in batches on one topic, so most matches
     * repeat the previous one. Any change to subscriptions clears it. */
    bool last_valid;
    uint16_t last_len;
    size_t last_count;
    uint8_t last_topic[TREE_LAST_TOPIC_MAX];
} tree;

int tree_init(broker *b, tree *t);
void tree_free(broker *b, tree *t);
/* Add or update sess's subscription to filter f. *is_new tells if it was
 * added. Returns the sub, or NULL on allocation failure. */
sub *tree_subscribe(broker *b, tree *t, session *sess, const uint8_t *f, size_t flen,
                    uint8_t qos, bool *is_new);
/* Remove sess's subscription to f; false when there was none. */
bool tree_unsubscribe(broker *b, tree *t, session *sess, const uint8_t *f, size_t flen);
/* Remove one subscription (session teardown). */
void tree_remove_sub(broker *b, tree *t, sub *s);
/* Sessions subscribed to topic, deduplicated, each at its highest QoS.
 * Returns the count; *out points into tree scratch valid until the next
 * call (callers must not change it). -1 on allocation failure. */
long tree_match(broker *b, tree *t, const uint8_t *topic, size_t tlen, match **out);
/* Set (m != NULL) or clear (m == NULL) the retained message of a topic.
 * Takes a reference on m. Returns 0, or -1 on allocation failure. */
int tree_set_retained(broker *b, tree *t, const uint8_t *topic, size_t tlen, msg *m);
/* Longest filter the tree holds: an MQTT string has a 2-byte length, and
 * restore refuses longer ones. A buffer of this size takes any filter. */
#define TREE_FILTER_MAX ((size_t)UINT16_MAX)
/* The filter text of node n written to buf (not terminated); 0 when it does
 * not fit in cap. */
size_t tree_filter_text(const tnode *n, char *buf, size_t cap);
/* Topic + payload bytes of the message retained on topic (0 = none). */
uint64_t tree_retained_size(const tree *t, const uint8_t *topic, size_t tlen);
/* Call fn for every retained message matching filter f. */
typedef void (*retained_fn)(broker *b, void *ctx, msg *m);
int tree_for_retained(broker *b, tree *t, const uint8_t *f, size_t flen, retained_fn fn,
                      void *ctx);
/* Something a match result depends on changed outside tree.c: forget the
 * last result. tree_subscribe and every removal do it themselves, so
 * setting acl_check on the sub tree_subscribe just returned needs nothing
 * more; changing it later (a new ACL) does. */
static inline void tree_forget_last(tree *t) { t->last_valid = false; }
/* Call fn for every retained message, '$' topics included. */
int tree_for_all_retained(broker *b, tree *t, retained_fn fn, void *ctx);

/* ---- sessions (session.c) ---------------------------------------------- */

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
    bool retain;      /* deliver with the retain flag (retained on subscribe) */
    bool sent;        /* transmitted at least once (resends carry DUP) */
    /* Batch that must commit before this entry's current state may go on
     * the wire (0 = no wait). Set for QoS 2 only: a QoS 2 receiver knows
     * a message by its packet id, so the id must be on disk before the
     * receiver sees it, and a PUBREL before the PUBLISH can be forgotten. */
    uint64_t jseq;
} qentry;

typedef struct broker_conn broker_conn;

struct session {
    session *hnext;           /* chain in the session hash table */
    session *off_prev, *off_next; /* list of offline persistent sessions */
    broker_conn *conn;        /* NULL while offline */
    sub *subs;
    /* Outbound ring: entries [head, head+count), sent ones first. */
    qentry *q;
    uint32_t q_cap, q_head, q_count;
    uint32_t q_sent;          /* entries at the front given a packet id (incl. holes) */
    /* Entries at the front whose current state went out on the current
     * connection; q_wire <= q_sent. The gap holds entries waiting for their
     * batch to commit (qentry.jseq), sent in order once it has. */
    uint32_t q_wire;
    uint32_t inflight;        /* sent and not yet fully acknowledged */
    uint64_t q_bytes;         /* payload bytes of queued, unsent entries */
    uint16_t next_packet_id;
    uint64_t next_seq;        /* seq of the next queue entry */
    /* Inbound QoS 2 packet ids delivered and awaiting PUBREL. */
    uint16_t *in_qos2;
    uint32_t in_qos2_count, in_qos2_cap;
    uint64_t expires_at;      /* ms, offline persistent sessions; 0 = never */
    uint64_t match_epoch;     /* tree_match dedup stamp */
    uint32_t match_idx;
    uint32_t hashv;
    bool clean;
    bool is_operator;         /* of the identity that last connected */
    /* Back-pressure (flow.c), in what was padding: */
    bool holding;             /* may hold publishers (b->holds has entries for it) */
    bool stalled;             /* held them without progress: holds no one now */
    uint32_t progress_ms;     /* low 32 bits of the time it last sent, while holding */
    char *identity;           /* owned; NULL = anonymous */
    uint16_t id_len;
    char id[];                /* client id, NUL-terminated */
};

typedef struct session_table {
    uint64_t key[2];          /* hash key (broker_config.hash_key) */
    session **table;
    size_t size;              /* power of two */
    size_t count;
    session *offline;         /* persistent sessions without a connection */
    size_t offline_count;
} session_table;

int sessions_init(broker *b, session_table *st);
void sessions_free(broker *b, session_table *st);
session *session_find(session_table *st, const uint8_t *id, size_t len);
session *session_create(broker *b, session_table *st, const uint8_t *id, size_t len, bool clean);
/* Remove and free a session with its subscriptions and queue. */
void session_destroy(broker *b, session *s);
void session_set_offline(broker *b, session *s, uint64_t now_ms);
void session_set_online(broker *b, session *s, broker_conn *c);
/* Append an outbound entry; false when the session's bounds refuse it.
 * QoS 0 entries are queued only while a connection waits for its CONNACK. */
bool session_enqueue(broker *b, session *s, msg *m, uint8_t qos, bool retain);
/* Append a retained message sent for a new subscription (any QoS). These
 * are bounded by max_retained rather than max_queued: a subscriber to '#'
 * expects every retained message, not the first max_queued of them. */
bool session_enqueue_retained(broker *b, session *s, msg *m, uint8_t qos);
/* Entry holding packet_id among the sent ones, or NULL. */
qentry *session_find_sent(session *s, uint16_t packet_id);
/* Mark an entry acknowledged and drop holes at the head. */
void session_complete(broker *b, session *s, qentry *e);
uint16_t session_next_packet_id(session *s);
/* The i-th entry of the outbound ring, counted from its head. */
static inline qentry *session_entry(const session *s, uint32_t i)
{
    return &s->q[(s->q_head + i) % s->q_cap];
}
/* Mark a sent QoS 0 entry (retained-on-subscribe) finished. */
void session_sent_qos0(broker *b, session *s, qentry *e);
/* Inbound QoS 2 ids. */
bool session_in_qos2_has(const session *s, uint16_t id);
int session_in_qos2_add(broker *b, session *s, uint16_t id);
void session_in_qos2_del(broker *b, session *s, uint16_t id);
/* Append a restored entry in any state (restore.c). */
bool session_restore_entry(broker *b, session *s, msg *m, uint64_t seq, uint8_t qos,
                           bool retain, uint8_t state, uint16_t packet_id);

/* ---- connections (conn.c, out.c) --------------------------------------- */

typedef enum conn_state {
    CONN_NEW = 0,     /* waiting for CONNECT */
    CONN_ACTIVE,      /* CONNECT accepted */
    CONN_CLOSING,     /* ended: flushing output, then the platform closes */
} conn_state;

struct broker_conn {
    broker_conn *prev, *next;       /* all connections */
    broker_conn *dirty_prev, *dirty_next; /* dirty list */
    broker_conn *wheel_prev, *wheel_next; /* timer wheel slot */
    void *ctx;                      /* platform handle */
    session *sess;                  /* set while ACTIVE */
    msg *will;                      /* owned reference, NULL when none */
    /* Input tail: bytes of an incomplete packet, owned. */
    uint8_t *in;
    uint32_t in_len, in_cap;
    /* Output: bytes [out_head, out_len) are pending, owned. */
    uint8_t *out;
    uint32_t out_head, out_len, out_cap;
    uint64_t last_rx_ms;
    uint64_t deadline_ms;           /* keepalive / connect timeout; 0 = none */
    uint32_t in_pause_at;           /* output bytes that pause input */
    uint16_t keepalive_s;
    uint8_t level;                  /* protocol level from CONNECT */
    uint8_t state;                  /* conn_state */
    bool in_dirty;
    bool in_wheel;
    bool is_operator;
    /* Output buffer sizing (deliver.c), in what was padding: the most bytes
     * pending in this buffer's life, and log2 of the size the next buffer
     * starts at (0 = the minimum). */
    uint8_t out_next_log2;
    uint32_t out_peak;
    /* Acknowledgements waiting for a store commit, in order: owned ring. */
    struct held_ack *acks;
    uint32_t acks_head, acks_count, acks_cap;
    broker_conn *ackw_prev, *ackw_next; /* list of connections waiting for commits */
    bool in_ackw;
    bool wire_wait;                 /* its session has entries waiting for a commit */
    bool connack_held;              /* CONNACK waits for a commit: send nothing else */
    uint32_t hold_idx;              /* 1 + its entry in b->holds; 0 = not held */
    char *peer;                     /* owned, for logs */
    char *identity;                 /* owned, TLS identity or NULL */
};

/* Reserve n bytes at the end of c's output; NULL on allocation failure. The
 * caller writes exactly n bytes then calls out_commit(). */
uint8_t *out_reserve(broker *b, broker_conn *c, size_t n);
void out_commit(broker *b, broker_conn *c, size_t n);
/* Everything pending was written: free the buffer, remember its peak. */
void out_drained(broker *b, broker_conn *c);
/* Free every pooled output buffer. */
void out_pool_trim(broker *b);
/* Trim the pool if it went unused for a while (broker_tick). */
void out_pool_tick(broker *b, uint64_t now_ms);
size_t out_pending(const broker_conn *c);
void conn_mark_dirty(broker *b, broker_conn *c);
/* End a connection: fire the will if asked, detach the session, ask the
 * platform to close. Idempotent. */
void conn_end(broker *b, broker_conn *c, bool fire_will, const char *why, uint64_t now_ms);
/* Deliver a message to a session (live or queued). */
void deliver(broker *b, session *s, msg *m, uint8_t qos, bool retain);
/* Send what the session's queue and the connection's room allow. */
void session_pump(broker *b, session *s);
/* Resend unacknowledged messages after a reconnect. */
void session_resend(broker *b, session *s);
/* Put entries [q_wire, q_sent) on the wire, in order, as far as their
 * commits and the connection's room allow. */
void session_transmit(broker *b, session *s);
/* Route a PUBLISH to every matching subscription (retained handling
 * included). m may be NULL when the caller has only views; then a msg is
 * built only if someone needs one. */
void route_publish(broker *b, const uint8_t *topic, size_t tlen, const uint8_t *payload,
                   size_t plen, uint8_t qos, bool retain, msg *m);

/* ---- back-pressure to publishers (flow.c) ------------------------------ */

/* A QoS 1/2 message was queued for s: hold b->publisher (the connection
 * whose PUBLISH is being handled, if any) when s is behind. */
void flow_routed(broker *b, session *s);
/* s sent queued messages: release its publishers once it has drained. */
void flow_progress(broker *b, session *s);
/* s went offline or is being destroyed: release everyone it holds. */
void flow_session_gone(broker *b, session *s);
/* c is ending: it is held by no one any more. */
void flow_conn_gone(broker *b, broker_conn *c);
/* Release the publishers of sessions that made no progress in time. */
void flow_tick(broker *b, uint64_t now_ms);
uint64_t flow_next_deadline(const broker *b);

/* ---- persistence (journal.c, restore.c) ------------------------------- */

/* Held acknowledgements per connection before its input pauses. */
#define MAX_HELD_ACKS 4096u

typedef struct held_ack {
    uint64_t seq;      /* batch that must commit first; 0 = only order */
    uint8_t *codes;    /* SUBACK return codes, owned; NULL for other types */
    uint32_t ncodes;
    uint16_t packet_id;
    uint8_t type;      /* mqtt_type */
} held_ack;

typedef struct jbatch {
    struct jbatch *next;
    uint64_t seq;
    uint8_t *data;     /* owned */
    size_t len, cap;
    uint32_t records;
    bool has_reset;
} jbatch;

typedef struct journal {
    jbatch *open;                 /* records being appended; NULL = none yet */
    jbatch *taken, *taken_tail;   /* handed to the store, not yet done */
    uint64_t next_seq;            /* seq the next opened batch gets */
    uint64_t committed_seq;       /* every batch up to this one is on disk */
    uint64_t reset_seq;           /* batch holding the latest snapshot */
    uint64_t records;             /* records appended, ever */
    size_t pending_bytes;
    bool broken;                  /* a record was lost: snapshot at next append */
    uint64_t next_msg_id;
    broker_conn *waiters;         /* connections holding acknowledgements or
                                     waiting to transmit queue entries */
    uint64_t failures;
} journal;

/* Is this session's state persisted? */
bool journaled(const broker *b, const session *s);
void journal_free(broker *b);
void j_retain_set(broker *b, const uint8_t *topic, size_t tlen, const uint8_t *payload,
                  size_t plen, uint8_t qos);
void j_retain_del(broker *b, const uint8_t *topic, size_t tlen);
void j_session_put(broker *b, const session *s);
void j_session_del(broker *b, const session *s);
void j_sub(broker *b, const session *s, const uint8_t *filter, size_t flen, uint8_t qos,
           bool put);
void j_queue_put(broker *b, const session *s, const qentry *e);
void j_queue_state(broker *b, const session *s, const qentry *e);
void j_queue_del(broker *b, const session *s, const qentry *e);
void j_inqos2(broker *b, const session *s, uint16_t packet_id, bool put);
/* A persisted reference to m was added / dropped (emits MSG_PUT / MSG_DEL). */
void j_msg_ref(broker *b, msg *m);
void j_msg_unref(broker *b, msg *m);
/* The batch an acknowledgement must wait for, given how many records
 * existed before the packet was handled; 0 = no wait. */
uint64_t journal_gate(const broker *b, uint64_t records_before);
/* Send an acknowledgement now, or hold it behind earlier held ones. False on
 * allocation failure. */
bool ack_send_or_hold(broker *b, broker_conn *c, mqtt_type type, uint16_t packet_id,
                      uint64_t gate_seq);
/* The same for a SUBACK with its return codes (copied when held). */
bool suback_send_or_hold(broker *b, broker_conn *c, uint16_t packet_id, const uint8_t *codes,
                         uint32_t ncodes, uint64_t gate_seq);
/* Write a SUBACK (conn.c). False on allocation failure. */
bool send_suback(broker *b, broker_conn *c, uint16_t packet_id, const uint8_t *codes,
                 uint32_t ncodes);
/* The gate for a packet that may or may not have changed durable state:
 * 0 when it recorded nothing (and nothing was lost), else journal_gate(). */
uint64_t journal_gate_if_changed(const broker *b, uint64_t records_before);
/* Forget a closing connection's held acknowledgements and commit waits. */
void acks_drop(broker *b, broker_conn *c);
/* May a queue entry recorded with gate jseq (journal_gate) go on the wire?
 * No while the disk is being repaired after a failed batch: the batch
 * numbers committed since then do not cover what the failed one held. */
bool journal_committed(const broker *b, uint64_t jseq);
/* c's session has an entry waiting for a commit: transmit again after the
 * next successful one. */
void commit_wait(broker *b, broker_conn *c);
/* Low-level ack writer shared with conn.c. */
bool send_simple(broker *b, broker_conn *c, mqtt_type type, uint16_t packet_id);

/* ---- timers (wheel.c) -------------------------------------------------- */

#define WHEEL_SLOTS 1024u
#define WHEEL_TICK_MS 256u

typedef struct wheel {
    broker_conn *slots[WHEEL_SLOTS];
    uint64_t next_tick;       /* index of the next tick to process */
    size_t count;
} wheel;

void wheel_init(wheel *w, uint64_t now_ms);
void wheel_set(wheel *w, broker_conn *c, uint64_t deadline_ms);
void wheel_remove(wheel *w, broker_conn *c);
/* Expire due connections by calling conn_timeout for each. */
void wheel_advance(broker *b, wheel *w, uint64_t now_ms);
uint64_t wheel_next_deadline(const wheel *w);
void conn_timeout(broker *b, broker_conn *c, uint64_t now_ms);

/* ---- $SYS (sys.c) ------------------------------------------------------ */

typedef struct sys_state {
    uint64_t next_ms;
    uint64_t last_ms;
    uint64_t last_received, last_sent;
    uint64_t load_received, load_sent; /* messages/minute x1000, 1-minute EMA */
} sys_state;

void sys_publish(broker *b, uint64_t now_ms);

/* ---- access control (acl.c) ------------------------------------------ */

/* The filter is readable but a deny rule overlaps part of it. */
bool acl_filter_partly_denied(const broker_acl *acl, const char *identity,
                              const char *client_id, const char *filter, size_t len);
/* May session s receive / may it publish this topic? */
bool session_may(const broker *b, const session *s, const uint8_t *topic, size_t len,
                 broker_acl_access access);

/* ---- the broker -------------------------------------------------------- */

struct broker {
    broker_limits lim;
    broker_allocator alloc;
    broker_log_fn log;
    void *log_ctx;
    broker_log_level log_level;
    uint64_t (*memory_used)(void *ctx); /* broker_config.memory_used, may be NULL */
    void *memory_ctx;
    uint64_t hash_key[2];     /* broker_config.hash_key */
    bool allow_anonymous;
    bool sys_public;
    char *version;
    uint64_t start_ms;
    uint64_t now_ms;          /* time of the event being handled */
    broker_acl *acl;          /* owned; NULL = no ACL */
    bool durable;             /* journal records and gate acknowledgements */
    bool restoring;           /* broker_restore_*: no records */
    journal jr;
    broker_store_status store_status;
    bool has_store_status;
    struct restore_state *restore; /* only between restore calls */
    broker_conn *conns;
    broker_conn *dirty_head, *dirty_tail;
    broker_conn *publisher;   /* whose PUBLISH is being routed, else NULL */
    /* Connections held by slow sessions (flow.c): unordered, grown on
     * demand, freed when empty. */
    struct hold { broker_conn *c; session *s; } *holds;
    uint32_t holds_count, holds_cap;
    uint64_t holds_deadline;  /* no hold times out before this; UINT64_MAX = none */
    session_table sessions;
    tree tree;
    wheel wheel;
    sys_state sys;
    broker_stats stats;
    uint64_t next_expiry_check_ms;
    /* Drained output buffers kept for reuse (deliver.c): a free list per
     * size class (4, 8, 16, 32 KiB), linked through the buffers, 4 MiB in
     * all, emptied when unused for a second or when no connection is left. */
    uint8_t *out_pool[OUT_POOL_CLASSES];
    size_t out_pool_bytes;
    uint64_t out_pool_used_ms;
    uint32_t conn_count;      /* open transport connections */
    uint64_t auto_id_counter;
};

void blog(broker *b, broker_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
