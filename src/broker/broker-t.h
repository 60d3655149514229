/*
 * broker-t.h - the broker object itself: everything the core owns, in one
 * struct the platform holds by pointer (broker.h). Ownership in one
 * picture:
 *   broker ── owns ──> sessions (hash by client id), connections (list),
 *                      topic tree (subscriptions + retained messages)
 *   session ── owns ──> its subscriptions, its outbound queue entries
 *   conn ──── owns ──> its input tail, output buffer, will message ref
 *   msg ───── shared by reference count: tree (retained), queues, wills
 * Types only.
 */
#ifndef TERN_BROKER_BROKER_T_H
#define TERN_BROKER_BROKER_T_H

#include "broker/acl.h"
#include "broker/broker.h"
#include "broker/console-t.h"
#include "broker/journal.h"
#include "broker/log-t.h"
#include "broker/persist-t.h"
#include "broker/session-t.h"
#include "broker/sys-t.h"
#include "broker/tree-t.h"
#include "broker/wheel-t.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Size classes of pooled output buffers (deliver.c). */
#define OUT_POOL_CLASSES 4

struct restore_state; /* restore.c */

struct broker {
    broker_limits lim;
    /* Topics shorter than this are within max_topic_levels and
     * max_topic_length without looking (subscribe.c): min(max_topic_levels,
     * max_topic_length + 1), as len bytes hold at most len + 1 levels. */
    uint32_t topic_check_len;
    /* The broker_input call in progress (conn.c, subscribe.c): work units
     * left when a SUBSCRIBE or UNSUBSCRIBE is handled, and what became of
     * it (a bk_list_result; in_list_seen says one was handled). */
    uint32_t in_budget;
    uint8_t in_list;
    bool in_list_seen;
    broker_allocator alloc;
    broker_log_fn log;
    void *log_ctx;
    broker_log_level log_level;
    bk_log_state logs;        /* rate-limited lines (log.c) */
    uint64_t (*memory_used)(void *ctx); /* broker_config.memory_used, may be NULL */
    void *memory_ctx;
    /* broker_set_layer_stats: the connection layer's counters for $SYS. */
    broker_layer_stats layer_stats;
    bool has_layer_stats;
    uint64_t hash_key[2];     /* broker_config.hash_key */
    bool allow_anonymous;
    bool sys_public;
    bool retain_disabled;     /* broker_config's MQTT 5.0 switches */
    bool shared_subs_disabled;
    char *version;
    uint64_t start_ms;
    uint64_t now_ms;          /* time of the event being handled */
    /* broker_set_wall_clock: wall-clock ms at core time wall_at_now; both
     * 0 while unknown. Wall = wall_base_ms + (now - wall_at_now). */
    uint64_t wall_base_ms;
    uint64_t wall_at_now;
    broker_acl *acl;          /* owned; NULL = no ACL */
    struct broker_passwd *passwd; /* owned; NULL = no password file */
    broker_pbkdf2_fn pbkdf2;  /* broker_config.pbkdf2 */
    bool allow_plaintext_passwords;
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
    ident_table idents;       /* per-identity records (ident.c) */
    tree tree;
    wheel wheel;
    sys_state sys;
    bk_console console;       /* the operator console (console.c) */
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

#endif
