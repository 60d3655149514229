/*
 * broker.c - the broker object: creation with defaults, connection
 * open/close, time (timeouts, session expiry, $SYS), and the action side of
 * the interface (the dirty list and output buffers the platform drains).
 */
#include "broker/access.h"
#include "broker/acl.h"
#include "broker/base.h"
#include "broker/broker-t.h"
#include "broker/conn.h"
#include "broker/deliver.h"
#include "broker/flow.h"
#include "broker/ident.h"
#include "broker/journal.h"
#include "broker/limits_default.h"
#include "broker/mem.h"
#include "broker/passwd.h"
#include "broker/persist.h"
#include "broker/session.h"
#include "broker/sys.h"
#include "broker/tree.h"
#include "broker/wheel.h"
#include "mqtt/mqtt.h"

#include <string.h>

#define EXPIRY_CHECK_MS 1000u

/* A limit left at 0 takes its default: one table, limits_default.h, shared
 * with the configuration parser. */
static void apply_defaults(broker_limits *l)
{
#define DEF(field, value)                                                                    \
    if (l->field == 0)                                                                       \
        l->field = (value);
    DEF(max_connections, TERN_DEFAULT_MAX_CONNECTIONS);
    DEF(max_packet_size, TERN_DEFAULT_MAX_PACKET_SIZE);
    DEF(max_inflight, TERN_DEFAULT_MAX_INFLIGHT);
    DEF(max_queued, TERN_DEFAULT_MAX_QUEUED);
    DEF(max_queued_bytes, TERN_DEFAULT_MAX_QUEUED_BYTES);
    DEF(max_out_bytes, TERN_DEFAULT_MAX_OUT_BYTES);
    DEF(max_inbound_qos2, TERN_DEFAULT_MAX_INBOUND_QOS2);
    DEF(connect_timeout_ms, TERN_DEFAULT_CONNECT_TIMEOUT_S * 1000u);
    DEF(sys_interval_s, TERN_DEFAULT_SYS_INTERVAL_S);
    DEF(max_retained, TERN_DEFAULT_MAX_RETAINED);
    DEF(max_retained_bytes, TERN_DEFAULT_MAX_RETAINED_BYTES);
    DEF(work_budget, TERN_DEFAULT_WORK_BUDGET);
    /* Not a constant: half of what max_queued came to (broker.h). */
    DEF(hold_queued, l->max_queued / 2 ? l->max_queued / 2 : 1u);
    DEF(publisher_hold_ms, TERN_DEFAULT_PUBLISHER_HOLD_S * 1000u);
    DEF(max_subscriptions, TERN_DEFAULT_MAX_SUBSCRIPTIONS);
    DEF(max_topic_levels, TERN_DEFAULT_MAX_TOPIC_LEVELS);
    DEF(max_topic_length, TERN_DEFAULT_MAX_TOPIC_LENGTH);
    DEF(max_keepalive, TERN_DEFAULT_MAX_KEEPALIVE);
    DEF(max_topic_alias, TERN_DEFAULT_MAX_TOPIC_ALIAS);
    DEF(receive_maximum, TERN_DEFAULT_RECEIVE_MAXIMUM);
    DEF(max_sessions_per_identity, TERN_DEFAULT_MAX_SESSIONS_PER_IDENTITY);
    DEF(max_queued_bytes_per_identity, TERN_DEFAULT_MAX_QUEUED_BYTES_PER_IDENTITY);
#undef DEF
    if (l->max_inflight > UINT16_MAX)
        l->max_inflight = UINT16_MAX; /* packet ids are 16 bits */
}

broker *broker_create(const broker_config *cfg, uint64_t now_ms)
{
    broker tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.alloc = cfg->allocator;
    /* The broker itself is allocated through its own allocator: bootstrap
     * from a stack copy, then move. */
    broker *b = bk_mem_calloc(&tmp, sizeof *b);
    if (!b)
        return NULL;
    *b = tmp;
    b->lim = cfg->limits;
    apply_defaults(&b->lim);
    b->topic_check_len = b->lim.max_topic_levels <= b->lim.max_topic_length
                             ? b->lim.max_topic_levels
                             : b->lim.max_topic_length + 1;
    b->log = cfg->log;
    b->log_ctx = cfg->log_ctx;
    b->log_level = cfg->log_level;
    /* A larger message would be accepted and acknowledged but could never
     * be queued for a QoS 1/2 subscriber: lost without a word. The
     * configuration parser refuses such a file; a platform that sets
     * limits itself gets them made consistent here. */
    uint32_t queue_bound = b->lim.max_queued_bytes;
    const char *queue_key = "limits.max_queued_bytes";
    if (b->lim.max_queued_bytes_per_identity < queue_bound) {
        queue_bound = b->lim.max_queued_bytes_per_identity;
        queue_key = "limits.max_queued_bytes_per_identity";
    }
    if (b->lim.max_packet_size > queue_bound) {
        bk_log(b, BROKER_LOG_WARN,
               "limits.max_packet_size (%u) is above %s (%u): lowered to %u, so that every "
               "message accepted can be queued for a subscriber",
               b->lim.max_packet_size, queue_key, queue_bound, queue_bound);
        b->lim.max_packet_size = queue_bound;
    }
    b->memory_used = cfg->memory_used;
    b->memory_ctx = cfg->memory_ctx;
    b->hash_key[0] = cfg->hash_key[0];
    b->hash_key[1] = cfg->hash_key[1];
    b->allow_anonymous = cfg->allow_anonymous;
    b->pbkdf2 = cfg->pbkdf2;
    b->allow_plaintext_passwords = cfg->allow_plaintext_passwords;
    b->sys_public = cfg->sys_public;
    b->retain_disabled = cfg->retain_disabled;
    b->shared_subs_disabled = cfg->shared_subs_disabled;
    b->durable = cfg->durable;
    b->holds_deadline = UINT64_MAX;
    bk_log_init(b);
    b->jr.next_seq = 1;
    b->jr.next_msg_id = 1;
    b->start_ms = now_ms;
    b->now_ms = now_ms;
    b->version = bk_mem_strdup(b, cfg->version ? cfg->version : "tern");
    bk_wheel_init(&b->wheel, now_ms);
    if (!b->version || bk_sessions_init(b, &b->sessions) != 0) {
        broker_destroy(b);
        return NULL;
    }
    if (bk_tree_init(b, &b->tree) != 0) {
        broker_destroy(b);
        return NULL;
    }
    b->sys.last_ms = now_ms;
    b->sys.next_ms = b->lim.sys_interval_s == UINT32_MAX ? UINT64_MAX : now_ms;
    b->next_expiry_check_ms = now_ms + EXPIRY_CHECK_MS;
    return b;
}

static void conn_free(broker *b, broker_conn *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        b->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    if (c->in_dirty) {
        if (c->dirty_prev)
            c->dirty_prev->dirty_next = c->dirty_next;
        else
            b->dirty_head = c->dirty_next;
        if (c->dirty_next)
            c->dirty_next->dirty_prev = c->dirty_prev;
        else
            b->dirty_tail = c->dirty_prev;
    }
    ALWAYS(b->conn_count > 0);
    b->conn_count--;
    bk_acks_drop(b, c);
    bk_mem_free(b, c->out);
    if (b->conn_count == 0)
        bk_out_pool_trim(b); /* nobody left to reuse them */
    bk_mem_free(b, c->peer);
    bk_mem_free(b, c->identity);
    bk_mem_free(b, c);
}

void broker_destroy(broker *b)
{
    if (!b)
        return;
    while (b->conns) {
        broker_conn *c = b->conns;
        /* Shutdown is not a network failure: no wills. */
        bk_conn_end(b, c, false, "broker shutting down", b->now_ms);
        conn_free(b, c);
    }
    if (b->sessions.table)
        bk_sessions_free(b, &b->sessions);
    bk_idents_free(b);
    if (b->tree.root)
        bk_tree_free(b, &b->tree);
    bk_out_pool_trim(b);
    bk_mem_free(b, b->version);
    bk_mem_free(b, b->holds); /* empty by now: every connection ended */
    broker_acl_free(b->acl);
    broker_passwd_free(b->passwd);
    bk_journal_free(b);
    if (b->restore)
        broker_restore_done(b);
    bk_log_flush(b);
    broker tmp = *b;
    bk_mem_free(&tmp, b);
}

void broker_shutdown(broker *b, uint64_t now_ms)
{
    b->now_ms = now_ms;
    for (broker_conn *c = b->conns; c; c = c->next) {
        /* A level-5 client is told why (DISCONNECT 0x8B); no wills: the
         * clients did nothing wrong, and their sessions outlive the
         * broker (delayed wills of offline sessions stay with them). */
        bk_conn_end_reason(b, c, MQTT_RC_SERVER_SHUTTING_DOWN, false, "broker shutting down",
                           now_ms);
    }
}

broker_conn *broker_open(broker *b, void *ctx, const broker_conn_info *info, uint64_t now_ms)
{
    b->now_ms = now_ms;
    if (b->conn_count >= b->lim.max_connections) {
        bk_log_limited(b, BK_LOGK_CONN_REFUSED, BROKER_LOG_WARN,
                       "connection from %s refused: max_connections (%u) reached",
                       info && info->peer ? info->peer : "?", b->lim.max_connections);
        return NULL;
    }
    broker_conn *c = bk_mem_calloc(b, sizeof *c);
    if (!c)
        return NULL;
    c->ctx = ctx;
    c->opened_ms = now_ms;
    c->last_rx_ms = now_ms;
    /* MQTT 5.0's "absent" values, which are also what 3.1.1 means. */
    c->client_receive_max = UINT16_MAX;
    c->client_max_packet = UINT32_MAX;
    c->request_problem_info = true;
    c->in_pause_at = b->lim.max_out_bytes > UINT32_MAX / 2 ? UINT32_MAX
                                                           : b->lim.max_out_bytes * 2;
    if (info) {
        c->is_operator = info->is_operator;
        c->secure = info->secure;
        c->peer = bk_mem_strdup(b, info->peer);
        c->identity = bk_mem_strdup(b, info->identity);
        if ((info->peer && !c->peer) || (info->identity && !c->identity)) {
            bk_mem_free(b, c->peer);
            bk_mem_free(b, c->identity);
            bk_mem_free(b, c);
            return NULL;
        }
    }
    c->next = b->conns;
    if (b->conns)
        b->conns->prev = c;
    b->conns = c;
    b->conn_count++;
    bk_wheel_set(&b->wheel, c, now_ms + b->lim.connect_timeout_ms);
    return c;
}

void broker_closed(broker *b, broker_conn *c, uint64_t now_ms)
{
    b->now_ms = now_ms;
    bk_conn_end(b, c, true, "connection lost", now_ms);
    conn_free(b, c);
}

void bk_conn_timeout(broker *b, broker_conn *c, uint64_t now_ms)
{
    if (c->state == CONN_NEW) {
        bk_conn_end(b, c, false, "no CONNECT in time", now_ms);
        return;
    }
    if (c->state == CONN_REFUSING) {
        bk_conn_refusal_due(b, c);
        return;
    }
    if (c->state != CONN_ACTIVE || c->keepalive_s == 0)
        return;
    uint64_t grace = (uint64_t)c->keepalive_s * KEEPALIVE_GRACE_MS_PER_S;
    if (c->hold_idx) {
        /* Held for a slow subscriber: we are not reading it, so its silence
         * proves nothing. Its keepalive restarts when it is released. */
        bk_wheel_set(&b->wheel, c, now_ms + grace);
        return;
    }
    /* [MQTT-3.1.2-24] (3.1.1's id; 5.0's [MQTT-3.1.2-22]): one and a half
     * keepalive periods of silence; a level-5 client is told (DISCONNECT
     * 0x8D), the will fires. */
    uint64_t deadline = c->last_rx_ms + grace;
    if (deadline <= now_ms)
        bk_conn_end_reason(b, c, MQTT_RC_KEEP_ALIVE_TIMEOUT, true, "keepalive timeout", now_ms);
    else
        bk_wheel_set(&b->wheel, c, deadline);
}

void broker_set_wall_clock(broker *b, uint64_t wall_ms, uint64_t now_ms)
{
    b->wall_base_ms = wall_ms;
    b->wall_at_now = wall_ms ? now_ms : 0;
}

void broker_tick(broker *b, uint64_t now_ms)
{
    b->now_ms = now_ms;
    bk_wheel_advance(b, &b->wheel, now_ms);
    bk_flow_tick(b, now_ms);
    bk_out_pool_tick(b, now_ms);
    bk_log_tick(b, now_ms);
    /* Offline sessions' expiries and delayed wills: a walk of them when
     * one is due, at most one a second (each fires up to a second late). */
    if (now_ms >= b->sessions.next_event_ms && now_ms >= b->next_expiry_check_ms) {
        b->next_expiry_check_ms = now_ms + EXPIRY_CHECK_MS;
        bk_sessions_tick(b, now_ms);
    }
    /* Expired retained messages nobody subscribes to leave too, a bounded
     * slice of the tree at a time (none while no retained message has an
     * expiry: nothing here for 3.1.1 traffic). */
    if (now_ms >= bk_tree_sweep_deadline(&b->tree))
        bk_tree_sweep(b, &b->tree, now_ms);
    if (now_ms >= b->sys.next_ms) {
        bk_sys_publish(b, now_ms);
        b->sys.next_ms = now_ms + (uint64_t)b->lim.sys_interval_s * 1000u;
    }
}

uint64_t broker_next_deadline(const broker *b)
{
    uint64_t d = bk_wheel_next_deadline(&b->wheel);
    if (b->sys.next_ms < d)
        d = b->sys.next_ms;
    if (bk_flow_next_deadline(b) < d)
        d = bk_flow_next_deadline(b);
    if (bk_tree_sweep_deadline(&b->tree) < d)
        d = bk_tree_sweep_deadline(&b->tree);
    uint64_t sessions_due = b->sessions.next_event_ms > b->next_expiry_check_ms
                                ? b->sessions.next_event_ms
                                : b->next_expiry_check_ms;
    if (sessions_due < d)
        d = sessions_due;
    /* An idle broker releases its pooled output buffers too, even with
     * nothing else to wake it. */
    if (bk_out_pool_next_deadline(b) < d)
        d = bk_out_pool_next_deadline(b);
    /* So is a count of suppressed log lines, even when the flood stopped. */
    if (bk_log_next_deadline(b) < d)
        d = bk_log_next_deadline(b);
    return d;
}

broker_conn *broker_next_dirty(broker *b)
{
    broker_conn *c = b->dirty_head;
    if (!c)
        return NULL;
    b->dirty_head = c->dirty_next;
    if (b->dirty_head)
        b->dirty_head->dirty_prev = NULL;
    else
        b->dirty_tail = NULL;
    c->dirty_next = c->dirty_prev = NULL;
    c->in_dirty = false;
    return c;
}

const uint8_t *broker_out_peek(const broker_conn *c, size_t *len)
{
    *len = bk_out_pending(c);
    return c->out ? c->out + c->out_head : NULL;
}

void broker_out_consume(broker *b, broker_conn *c, size_t n)
{
    ALWAYS(n <= bk_out_pending(c));
    c->out_head += (uint32_t)n;
    b->stats.bytes_sent += n;
    if (c->out_head == c->out_len)
        bk_out_drained(b, c); /* an idle connection keeps no buffer */
    if (c->sess && c->state == CONN_ACTIVE &&
        (c->sess->q_sent < c->sess->q_count || c->sess->q_wire < c->sess->q_sent))
        bk_session_pump(b, c->sess);
}

size_t broker_out_pending(const broker_conn *c)
{
    return bk_out_pending(c);
}

bool broker_wants_close(const broker_conn *c)
{
    return c->state == CONN_CLOSING;
}

void *broker_conn_ctx(const broker_conn *c)
{
    return c->ctx;
}

void broker_get_stats(const broker *b, broker_stats *out)
{
    *out = b->stats;
    out->clients_total = b->sessions.count;
}

void broker_set_passwd(broker *b, broker_passwd *p)
{
    broker_passwd_free(b->passwd);
    b->passwd = p;
}

void broker_set_acl(broker *b, broker_acl *acl)
{
    broker_acl_free(b->acl);
    b->acl = acl;
    /* Re-check every subscription under the new rules. Each filter is
     * rendered whole into a buffer that holds the longest one MQTT can
     * carry: a filter cut short would read as "not allowed" and be dropped
     * (and journalled as the removal of an empty filter). */
    char *filter = bk_mem_alloc(b, TREE_FILTER_MAX);
    if (!filter) {
        /* Nothing can be removed without its filter text (the journal
         * needs it), so keep every subscription and check each delivery
         * under the new rules instead: nothing the new ACL denies is
         * delivered. The next reload re-checks them whole. */
        bk_log(b, BROKER_LOG_ERROR, "out of memory re-checking subscriptions under the new ACL: "
                                    "checking every delivery instead");
        for (size_t i = 0; i < b->sessions.size; i++)
            for (session *s = b->sessions.table[i]; s; s = s->hnext)
                for (sub *x = s->subs; x; x = x->sess_next)
                    x->acl_check = true;
        bk_tree_forget_last(&b->tree);
        return;
    }
    for (size_t i = 0; i < b->sessions.size; i++) {
        for (session *s = b->sessions.table[i]; s; s = s->hnext) {
            sub *next;
            for (sub *x = s->subs; x; x = next) {
                next = x->sess_next;
                /* The ACL governs the FILTER of `$share/GROUP/FILTER`: the
                 * node's text; the journal keys the row by the whole. */
                size_t flen = bk_tree_filter_text(x->node, filter, TREE_FILTER_MAX);
                ALWAYS(flen > 0); /* every filter in the tree fits */
                if (!bk_session_may(b, s, (const uint8_t *)filter, flen, BROKER_ACL_READ)) {
                    bk_log(b, BROKER_LOG_INFO, "client %s: subscription removed by new ACL",
                           s->id);
                    bk_share_leave(b, x);
                    flen = bk_sub_filter_text(x, filter, TREE_FILTER_MAX);
                    bk_journal_sub(b, s, (const uint8_t *)filter, flen, NULL, false);
                    bk_tree_remove_sub(b, &b->tree, x);
                    continue;
                }
                x->acl_check =
                    bk_acl_filter_partly_denied(b->acl, s->identity, s->id, filter, flen);
                bk_tree_forget_last(&b->tree);
            }
        }
    }
    bk_mem_free(b, filter);
}
