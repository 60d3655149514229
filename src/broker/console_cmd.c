/*
 * console_cmd.c - the operator console's commands on the broker's own
 * state (docs/CONSOLE.md): status, kick, session-delete, log-level, and the
 * argument readers every command shares. The bounded lists are
 * console_list.c's; request handling and answers are console.c's.
 */
#include "broker/base.h"
#include "broker/broker-t.h"
#include "broker/conn.h"
#include "broker/console_cmd.h"
#include "broker/mem.h"
#include "broker/session.h"

#include <stdio.h>
#include <string.h>

/* ---- arguments ----------------------------------------------------------- */

int bk_con_args_only(bk_con_req *r, const char *const *names)
{
    size_t it = 0;
    jr_val key, val;
    while (jr_next(r->args, &it, &key, &val) == 1) {
        if (jr_string_is(&key, "command"))
            continue;
        bool known = false;
        for (const char *const *n = names; *n && !known; n++)
            known = jr_string_is(&key, *n);
        if (!known) {
            char k[48];
            if (jr_string(&key, k, sizeof k) < 0)
                snprintf(k, sizeof k, "(long)");
            return bk_con_fail(r, "unknown argument \"%s\"", k);
        }
    }
    return 0;
}

char *bk_con_arg_str(bk_con_req *r, const char *key, bool *present, size_t *len)
{
    jr_val v;
    *present = false;
    if (jr_get(r->args, key, &v) != 0)
        return NULL;
    *present = true;
    if (v.type != JR_STRING) {
        bk_con_fail(r, "\"%s\" must be a string", key);
        return NULL;
    }
    /* Unescaping never lengthens a string: its text (quotes included)
     * is room enough. */
    char *s = bk_mem_alloc(r->b, v.n);
    if (!s) {
        bk_con_fail(r, "out of memory");
        return NULL;
    }
    long n = jr_string(&v, s, v.n);
    if (n < 0) {
        bk_mem_free(r->b, s);
        bk_con_fail(r, "\"%s\" must not hold a NUL character", key);
        return NULL;
    }
    *len = (size_t)n;
    return s;
}

int bk_con_arg_u32(bk_con_req *r, const char *key, uint32_t def, uint32_t max, uint32_t *out)
{
    jr_val v;
    uint64_t x;
    if (jr_get(r->args, key, &v) != 0) {
        *out = def;
        return 0;
    }
    if (jr_u64(&v, &x) != 0 || x > max)
        return bk_con_fail(r, "\"%s\" must be an integer from 0 to %u", key, max);
    *out = (uint32_t)x;
    return 0;
}

/* The required "client" argument as a session, written to the answer.
 * NULL with *id NULL and err set when absent, not a string, or the
 * requester's own session: ending the connection whose PUBLISH is being
 * handled would pull the session from under its acknowledgement (the
 * operator reconnects with another client id for that). NULL with *id set
 * when no session has that client id. *id is freed by the caller. */
static session *arg_session(bk_con_req *r, char **id)
{
    bool present;
    size_t len = 0;
    *id = bk_con_arg_str(r, "client", &present, &len);
    if (!*id) {
        if (!present)
            bk_con_fail(r, "\"client\" (a client id) is required");
        return NULL;
    }
    session *s = bk_session_find(&r->b->sessions, (const uint8_t *)*id, len);
    if (s && s == r->c->sess) {
        bk_mem_free(r->b, *id);
        *id = NULL;
        bk_con_fail(r, "the requesting client cannot end its own session");
        return NULL;
    }
    jw_strn(r->w, "client", *id, len);
    return s;
}

/* ---- status -------------------------------------------------------------- */

static const char *store_state(const broker_store_status *st)
{
    return st->full ? "full" : st->failing ? "failing" : "ok";
}

int bk_con_status(bk_con_req *r)
{
    static const char *const none[] = {NULL};
    if (bk_con_args_only(r, none) != 0)
        return -1;
    broker *b = r->b;
    jw *w = r->w;
    broker_stats s;
    broker_get_stats(b, &s);
    jw_str(w, "version", b->version);
    jw_u64(w, "uptime_ms", b->now_ms - b->start_ms);
    if (b->wall_base_ms)
        jw_u64(w, "wall_clock_ms", b->wall_base_ms + (b->now_ms - b->wall_at_now));
    else
        jw_null(w, "wall_clock_ms");
    if (!b->wall_base_ms)
        jw_str(w, "wall_clock_ms_why", "the platform has no trustworthy clock");
    jw_str(w, "log_level", broker_log_level_name(b->log_level));
    jw_obj(w, "clients");
    jw_u64(w, "connected", s.clients_connected);
    jw_u64(w, "disconnected", b->sessions.offline_count);
    jw_u64(w, "total", s.clients_total);
    jw_u64(w, "maximum", s.clients_maximum);
    jw_u64(w, "sessions_refused", s.sessions_refused);
    jw_u64(w, "auth_failed", s.auth_failed);
    jw_end(w);
    jw_obj(w, "messages");
    jw_u64(w, "received", s.msgs_received);
    jw_u64(w, "sent", s.msgs_sent);
    jw_u64(w, "dropped", s.publish_dropped);
    jw_u64(w, "expired", s.msgs_expired);
    jw_u64(w, "over_client_maximum", s.msgs_over_client_max);
    jw_u64(w, "publishers_held", s.publishers_held);
    jw_u64(w, "hold_timeouts", s.hold_timeouts);
    jw_u64(w, "topics_refused", s.topics_refused);
    jw_end(w);
    jw_obj(w, "bytes");
    jw_u64(w, "received", s.bytes_received);
    jw_u64(w, "sent", s.bytes_sent);
    jw_end(w);
    jw_obj(w, "subscriptions");
    jw_u64(w, "count", s.subscriptions_count);
    jw_u64(w, "refused", s.subscriptions_refused);
    jw_end(w);
    jw_obj(w, "retained");
    jw_u64(w, "count", s.retained_count);
    jw_u64(w, "bytes", s.retained_bytes);
    jw_end(w);
    jw_obj(w, "connections");
    jw_u64(w, "protocol_errors", s.protocol_errors);
    jw_u64(w, "packets_too_large", s.packets_too_large);
    jw_u64(w, "acl_denied", s.acl_denied);
    if (b->has_layer_stats) {
        const broker_layer_stats *ls = &b->layer_stats;
        jw_u64(w, "handshakes_failed", ls->handshakes_failed);
        jw_u64(w, "handshake_timeouts", ls->handshake_timeouts);
        jw_u64(w, "handshakes_refused", ls->handshakes_refused);
        jw_u64(w, "handshakes_refused_per_address", ls->handshakes_refused_address);
        jw_u64(w, "handshakes_abandoned", ls->handshakes_abandoned);
        jw_u64(w, "accept_holds", ls->accept_holds);
        jw_u64(w, "syns_dropped", ls->syns_dropped);
        jw_u64(w, "input_waits", ls->input_waits);
        jw_u64(w, "input_closes", ls->input_closes);
        jw_u64(w, "input_bytes", ls->input_bytes);
        jw_u64(w, "websocket_refused", ls->ws_refused);
        jw_u64(w, "websocket_errors", ls->ws_errors);
    }
    jw_end(w);
    jw_obj(w, "memory");
    jw_u64(w, "core_bytes", s.memory_used);
    jw_u64(w, "used_bytes", b->memory_used ? b->memory_used(b->memory_ctx) : s.memory_used);
    jw_end(w);
    if (b->has_store_status) {
        const broker_store_status *st = &b->store_status;
        jw_obj(w, "store");
        jw_str(w, "state", store_state(st));
        jw_bool(w, "restored_from_backup", st->restored_at_open);
        jw_u64(w, "commits", st->commits);
        jw_u64(w, "failed_commits", st->failed_commits);
        jw_u64(w, "records", st->records);
        jw_u64(w, "commit_p50_us", st->commit_p50_us);
        jw_u64(w, "commit_p99_us", st->commit_p99_us);
        jw_u64(w, "backups_done", st->backups_done);
        jw_u64(w, "backups_failed", st->backups_failed);
        jw_end(w);
    } else {
        jw_null(w, "store");
        jw_str(w, "store_why", "no store: sessions and retained messages live in memory");
    }
    jw_obj(w, "console");
    jw_u64(w, "requests", b->console.requests);
    jw_u64(w, "refused", b->console.refused);
    jw_u64(w, "errors", b->console.errors);
    jw_end(w);
    return 0;
}

/* ---- kick, session-delete ------------------------------------------------ */

/* End s's connection as an administrative action: a level-5 client is
 * sent DISCONNECT 0x98 first; the will is published, as for any end the
 * client did not ask for (MQTT 5.0 3.1.2.5: only the client's own
 * DISCONNECT 0x00 deletes it). */
static void kick(bk_con_req *r, session *s)
{
    char why[128];
    snprintf(why, sizeof why, "kicked by operator %s",
             r->c->identity ? r->c->identity : "-");
    bk_conn_end_reason(r->b, s->conn, MQTT_RC_ADMINISTRATIVE_ACTION, true, why, r->b->now_ms);
}

/* Remove the (offline) session with client id id[0..len), if one is left:
 * a will it holds for its delay is published now, as when it expires. */
static bool delete_session(broker *b, const char *id, size_t len)
{
    session *s = bk_session_find(&b->sessions, (const uint8_t *)id, len);
    if (!s)
        return false;
    ALWAYS(s->conn == NULL);
    bk_session_end(b, s, b->now_ms);
    return true;
}

int bk_con_kick(bk_con_req *r)
{
    static const char *const names[] = {"client", "session", NULL};
    if (bk_con_args_only(r, names) != 0)
        return -1;
    bool del = false, present;
    size_t n = 0;
    char *how = bk_con_arg_str(r, "session", &present, &n);
    if (present && !how)
        return -1;
    if (how) {
        del = strcmp(how, "delete") == 0;
        bool keep = strcmp(how, "keep") == 0;
        bk_mem_free(r->b, how);
        if (!del && !keep)
            return bk_con_fail(r, "\"session\" must be \"keep\" or \"delete\"");
    }
    char *id;
    session *s = arg_session(r, &id);
    if (!id)
        return -1;
    size_t len = strlen(id);
    int rc = 0;
    if (!s || !s->conn) {
        rc = bk_con_fail(r, s ? "client not connected (session-delete removes its session)"
                              : "no such client");
    } else {
        kick(r, s);
        jw_bool(r->w, "kicked", true);
        jw_bool(r->w, "session_deleted", del && delete_session(r->b, id, len));
    }
    bk_mem_free(r->b, id);
    return rc;
}

int bk_con_session_delete(bk_con_req *r)
{
    static const char *const names[] = {"client", NULL};
    if (bk_con_args_only(r, names) != 0)
        return -1;
    char *id;
    session *s = arg_session(r, &id);
    if (!id)
        return -1;
    int rc = 0;
    if (!s) {
        rc = bk_con_fail(r, "no such session");
    } else {
        bool connected = s->conn != NULL;
        if (connected)
            kick(r, s);
        jw_bool(r->w, "was_connected", connected);
        /* A clean session ended with its connection. */
        (void)delete_session(r->b, id, strlen(id));
        jw_bool(r->w, "deleted", true);
    }
    bk_mem_free(r->b, id);
    return rc;
}

/* ---- log-level ----------------------------------------------------------- */

int bk_con_log_level(bk_con_req *r)
{
    static const char *const names[] = {"level", NULL};
    static const broker_log_level levels[] = {BROKER_LOG_ERROR, BROKER_LOG_WARN,
                                              BROKER_LOG_INFO, BROKER_LOG_DEBUG};
    if (bk_con_args_only(r, names) != 0)
        return -1;
    jr_val v;
    if (jr_get(r->args, "level", &v) != 0)
        return bk_con_fail(r, "\"level\" is required: error, warn, info or debug");
    size_t i = 0;
    while (i < sizeof levels / sizeof levels[0] &&
           !jr_string_is(&v, broker_log_level_name(levels[i])))
        i++;
    if (i == sizeof levels / sizeof levels[0])
        return bk_con_fail(r, "\"level\" must be error, warn, info or debug");
    broker *b = r->b;
    broker_log_level before = b->log_level;
    b->log_level = levels[i];
    jw_str(r->w, "level", broker_log_level_name(levels[i]));
    jw_str(r->w, "previous", broker_log_level_name(before));
    if (b->console.ops.log_level &&
        b->console.ops.log_level(b->console.ops.ctx, levels[i], r->w, r->err, r->errlen) != 0) {
        b->log_level = before;
        if (!r->err[0])
            snprintf(r->err, r->errlen, "the platform refused the level");
        return -1;
    }
    bk_log(b, BROKER_LOG_WARN, "log level %s (was %s), set by operator %s",
           broker_log_level_name(levels[i]), broker_log_level_name(before),
           r->c->identity ? r->c->identity : "-");
    return 0;
}
