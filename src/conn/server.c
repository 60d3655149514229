/*
 * server.c - the connection layer's server: its buffers and lists,
 * logging, and the turn that serves leftover input, runs the core's
 * timers, writes every connection's output and expires deadlines.
 *
 * Lists are intrusive and doubly linked, so moving a connection on or off
 * one never allocates and removal is O(1). The deadline lists stay in
 * deadline order by construction: every member of one list got the same
 * delay, so appending keeps them sorted.
 */
#include "conn/internal.h"

#include "broker/logwin.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *conni_alloc(conn_server *s, size_t n)
{
    return s->alloc.alloc != NULL ? s->alloc.alloc(s->alloc.ctx, n) : malloc(n);
}

void conni_free(conn_server *s, void *p)
{
    if (p == NULL)
        return;
    if (s->alloc.free != NULL)
        s->alloc.free(s->alloc.ctx, p);
    else
        free(p);
}

void conni_log(conn_server *s, broker_log_level level, const char *fmt, ...)
{
    char msg[320];
    va_list ap;

    if (s->log == NULL || level > s->log_level)
        return;
    va_start(ap, fmt);
    (void)vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    s->log(s->log_ctx, level, msg);
}

static const char *const log_kind_name[CONN_LOGK_COUNT] = {
    [CONN_LOGK_TLS_FAILED] = "TLS handshake failed",
    [CONN_LOGK_TLS_ERROR] = "TLS error after the handshake",
    [CONN_LOGK_TLS_TIMEOUT] = "TLS handshake timed out",
};

bool conni_log_admit(conn_server *s, conn_log_kind kind, broker_log_level level, uint64_t now)
{
    log_sink sink = {s->log, s->log_ctx};

    if (s->log == NULL || level > s->log_level)
        return false;
    return broker_logwin_admit(&s->logw[kind], log_kind_name[kind], level, now, &sink,
                            &s->log_deadline);
}

/* The summaries of windows that ended by now (all of them when force). */
static void log_tick(conn_server *s, uint64_t now, bool force)
{
    log_sink sink = {s->log, s->log_ctx};
    uint64_t next = UINT64_MAX;

    for (int k = 0; k < CONN_LOGK_COUNT; k++) {
        uint64_t due = broker_logwin_tick(&s->logw[k], log_kind_name[k], now, force, &sink);

        if (due < next)
            next = due;
    }
    s->log_deadline = next;
}

void conni_peer(conn_server *s, const conn *c, char buf[CONN_PEER_TEXT])
{
    buf[0] = '?';
    buf[1] = '\0';
    s->io->peer(s->io_ctx, c, buf, CONN_PEER_TEXT);
    buf[CONN_PEER_TEXT - 1] = '\0';
}

/* ---- lists ----------------------------------------------------------- */

/* The links of c that belong to list l. */
static conn_link *link_of(conn_server *s, const conn_list *l, conn *c)
{
    return l == &s->ready ? &c->ready_link : &c->timer_link;
}

static void list_push(conn_server *s, conn_list *l, conn *c)
{
    conn_link *k = link_of(s, l, c);

    k->prev = l->tail;
    k->next = NULL;
    if (l->tail != NULL)
        link_of(s, l, l->tail)->next = c;
    else
        l->head = c;
    l->tail = c;
    l->count++;
}

static void list_remove(conn_server *s, conn_list *l, conn *c)
{
    conn_link *k = link_of(s, l, c);

    if (k->prev != NULL)
        link_of(s, l, k->prev)->next = k->next;
    else
        l->head = k->next;
    if (k->next != NULL)
        link_of(s, l, k->next)->prev = k->prev;
    else
        l->tail = k->prev;
    k->prev = k->next = NULL;
    l->count--;
}

void conni_ready_add(conn_server *s, conn *c)
{
    if (!c->on_ready) {
        list_push(s, &s->ready, c);
        c->on_ready = 1;
    }
}

void conni_ready_remove(conn_server *s, conn *c)
{
    if (c->on_ready) {
        list_remove(s, &s->ready, c);
        c->on_ready = 0;
    }
}

static conn_list *timer_list(conn_server *s, conn_timer_list which)
{
    return which == CONN_TIMER_HANDSHAKE ? &s->handshakes
           : which == CONN_TIMER_LINGER  ? &s->lingering
                                         : &s->input_wait;
}

void conni_timer_clear(conn_server *s, conn *c)
{
    if (c->timer == CONN_TIMER_HANDSHAKE)
        conni_peer_leave(s, c);
    if (c->timer != CONN_TIMER_NONE) {
        list_remove(s, timer_list(s, (conn_timer_list)c->timer), c);
        c->timer = CONN_TIMER_NONE;
    }
}

/* A list's delay: one per list, so each list stays in deadline order. */
static uint64_t timer_delay(const conn_server *s, conn_timer_list which)
{
    return which == CONN_TIMER_HANDSHAKE ? s->handshake_timeout_ms
           : which == CONN_TIMER_LINGER  ? CONN_LINGER_MS
                                         : CONN_INPUT_WAIT_MS;
}

/* A connection keeps its deadline's low 32 bits (struct conn is kept
 * small); every deadline is at most a list's delay (seconds) from the
 * server's latest time, far inside the 2^31 ms a wrap-safe difference
 * tells apart. */
static uint64_t deadline_of(const conn_server *s, const conn *c)
{
    int32_t ahead = (int32_t)(c->deadline - (uint32_t)s->now_ms);

    if (ahead < 0 && (uint64_t)-(int64_t)ahead > s->now_ms)
        return 0;
    return (uint64_t)((int64_t)s->now_ms + ahead);
}

/* Whether c's deadline has come at now. */
static bool due(const conn *c, uint64_t now)
{
    return (int32_t)(c->deadline - (uint32_t)now) <= 0;
}

void conni_timer_set(conn_server *s, conn *c, conn_timer_list which, uint64_t now)
{
    conni_timer_clear(s, c);
    if (now > s->now_ms)
        s->now_ms = now;
    c->deadline = (uint32_t)(now + timer_delay(s, which));
    c->timer = (unsigned)which & 3u; /* conn_timer_list fits its two bits */
    list_push(s, timer_list(s, which), c);
    if (which == CONN_TIMER_HANDSHAKE)
        conni_peer_enter(s, c);
}

/* ---- the server ------------------------------------------------------- */

static void release_tls(conn_server *s)
{
    if (s->tls != NULL)
        s->tls_ops->release_server(s->tls);
    s->tls = NULL;
}

conn_server *conn_server_create(const conn_server_config *cfg)
{
    conn_server *s;

    if (cfg->b == NULL || cfg->io == NULL || (cfg->tls != NULL && cfg->tls_ops == NULL))
        return NULL;
    s = cfg->allocator.alloc != NULL ? cfg->allocator.alloc(cfg->allocator.ctx, sizeof *s)
                                     : malloc(sizeof *s);
    if (s == NULL) {
        if (cfg->tls != NULL)
            cfg->tls_ops->release_server(cfg->tls);
        return NULL;
    }
    memset(s, 0, sizeof *s);
    s->b = cfg->b;
    s->io = cfg->io;
    s->io_ctx = cfg->io_ctx;
    s->tls_ops = cfg->tls_ops;
    s->handshake_timeout_ms = cfg->handshake_timeout_ms;
    s->clock_us = cfg->clock_us;
    s->alloc = cfg->allocator;
    s->log = cfg->log;
    s->log_ctx = cfg->log_ctx;
    s->log_level = cfg->log_level;
    s->handshake_steps = CONN_HANDSHAKE_STEPS_PER_TURN;
    s->log_deadline = UINT64_MAX;
    s->max_handshakes = cfg->max_handshakes;
    s->hs_cap = cfg->max_handshakes;
    s->max_per_address = cfg->max_handshakes_per_address;
    s->max_input = cfg->max_input_bytes;
    s->ws_sha1 = cfg->ws_sha1;
    s->ws_max_message = cfg->ws_max_message;
    s->hash_key[0] = cfg->hash_key[0];
    s->hash_key[1] = cfg->hash_key[1];
    s->rbuf = conni_alloc(s, CONN_READ_BUF_SIZE);
    if (s->tls_ops != NULL)
        s->pbuf = conni_alloc(s, CONN_READ_BUF_SIZE);
    s->tls = cfg->tls; /* the caller's reference, also on failure */
    if (s->rbuf == NULL || (s->tls_ops != NULL && s->pbuf == NULL) || !conni_peers_init(s)) {
        conn_server_destroy(s);
        return NULL;
    }
    return s;
}

void conn_server_destroy(conn_server *s)
{
    if (s == NULL)
        return;
    log_tick(s, s->now_ms, true);
    release_tls(s);
    conni_free(s, s->rbuf);
    conni_free(s, s->pbuf);
    conni_free(s, s->peers);
    conni_free(s, s);
}

void conn_server_set_tls(conn_server *s, tern_tls_server *tls)
{
    release_tls(s);
    s->tls = tls;
}

void conn_server_set_log_level(conn_server *s, broker_log_level level)
{
    s->log_level = level;
}

uint32_t conn_handshake_slots(const conn_server *s)
{
    if (s->hs_cap == 0)
        return UINT32_MAX;
    return s->handshakes.count >= s->hs_cap ? 0 : s->hs_cap - s->handshakes.count;
}

uint32_t conn_handshake_room(const conn_server *s)
{
    /* Handshakes already waiting for CPU (this turn's steps ran out with
     * some left over) come first: a new one would only make every one of
     * them later, and past their clients' patience all of that work is
     * lost (a storm then completes almost nothing). Handshakes waiting
     * for their client (the network) cost no steps and hold nothing. */
    if (s->steps_short)
        return 0;
    return conn_handshake_slots(s);
}

void conn_server_set_admission(conn_server *s, uint64_t accept_holds, uint64_t syns_dropped)
{
    s->stats.accept_holds = accept_holds;
    s->stats.syns_dropped = syns_dropped;
}

void conn_server_get_stats(const conn_server *s, conn_stats *out)
{
    *out = s->stats;
    out->input_held = s->input_held;
}

/* ---- the turn --------------------------------------------------------- */

/* Input left over from the last turn (the core's work budget), and
 * connections whose read or handshake budget ran out. Only those queued
 * before this turn: one going back on the list waits for the next. */
static void serve_ready(conn_server *s, uint64_t now)
{
    for (uint32_t n = s->ready.count; n > 0 && s->ready.head != NULL; n--) {
        conn *c = s->ready.head;

        conni_ready_remove(s, c);
        (void)conn_readable(s, c, now);
    }
}

void conn_turn_begin(conn_server *s, uint64_t now)
{
    s->handshake_steps = CONN_HANDSHAKE_STEPS_PER_TURN;
    s->handshake_us = 0;
    s->steps_short = false;
    serve_ready(s, now);
}

static void expire(conn_server *s, uint64_t now)
{
    char peer[CONN_PEER_TEXT];

    while (s->lingering.head != NULL && due(s->lingering.head, now)) {
        conn *c = s->lingering.head;

        conni_peer(s, c, peer);
        conni_log(s, BROKER_LOG_DEBUG, "closing %s: output not taken in %u ms", peer,
                  (unsigned)CONN_LINGER_MS);
        s->stats.linger_timeouts++;
        (void)conni_end(s, c, CONN_CLOSE_ABORT, now);
    }
    while (s->input_wait.head != NULL && due(s->input_wait.head, now))
        conni_input_expired(s, s->input_wait.head, now);
    while (s->handshakes.head != NULL && due(s->handshakes.head, now)) {
        conn *c = s->handshakes.head;

        if (conni_log_admit(s, CONN_LOGK_TLS_TIMEOUT, BROKER_LOG_INFO, now)) {
            conni_peer(s, c, peer);
            conni_log(s, BROKER_LOG_INFO, "TLS handshake with %s timed out after %u s", peer,
                      (unsigned)(s->handshake_timeout_ms / 1000u));
        }
        s->stats.handshake_timeouts++;
        (void)conni_end(s, c, CONN_CLOSE_ABORT, now);
    }
}

/* The layer's counters, for the core's next $SYS refresh (the core reads
 * no one's memory but its own). */
static void report_stats(conn_server *s)
{
    broker_layer_stats ls = {
        .handshakes_failed = s->stats.handshakes_failed,
        .handshake_timeouts = s->stats.handshake_timeouts,
        .handshakes_refused = s->stats.handshakes_refused,
        .handshakes_refused_address = s->stats.handshakes_refused_address,
        .handshakes_abandoned = s->stats.handshakes_abandoned,
        .accept_holds = s->stats.accept_holds,
        .syns_dropped = s->stats.syns_dropped,
        .input_waits = s->stats.input_waits,
        .input_closes = s->stats.input_closes,
        .input_bytes = s->input_held,
        .ws_refused = s->stats.ws_refused,
        .ws_errors = s->stats.ws_errors,
    };

    broker_set_layer_stats(s->b, &ls);
}

/* Once a window: the handshakes worth running at once (tunables.h,
 * CONN_HANDSHAKE_WINDOW_MS). */
static void size_handshakes(conn_server *s, uint64_t now)
{
    uint64_t elapsed = now - s->hs_window_ms, cap;

    if (s->hs_window_ms == 0) { /* the first turn starts the first window */
        s->hs_window_ms = now;
        return;
    }
    if (elapsed < CONN_HANDSHAKE_WINDOW_MS)
        return;
    cap = s->max_handshakes;
    if (s->window_short) {
        cap = (s->stats.handshakes_ok - s->hs_window_ok) * CONN_HANDSHAKE_TARGET_MS / elapsed;
        if (cap < CONN_HANDSHAKE_MIN_RUNNING)
            cap = CONN_HANDSHAKE_MIN_RUNNING;
        if (s->max_handshakes != 0 && cap > s->max_handshakes)
            cap = s->max_handshakes;
    }
    s->hs_cap = (uint32_t)cap;
    s->hs_window_ms = now;
    s->hs_window_ok = s->stats.handshakes_ok;
    s->window_short = false;
}

void conn_turn_end(conn_server *s, uint64_t now)
{
    broker_conn *bc;

    size_handshakes(s, now);
    if (now >= broker_next_deadline(s->b)) {
        report_stats(s);
        broker_tick(s->b, now);
    }
    while ((bc = broker_next_dirty(s->b)) != NULL)
        (void)conn_flush(s, broker_conn_ctx(bc), now);
    expire(s, now);
    s->now_ms = now;
    if (now >= s->log_deadline)
        log_tick(s, now, false);
}

uint64_t conn_next_deadline(const conn_server *s)
{
    uint64_t d = broker_next_deadline(s->b);

    if (s->ready.count > 0)
        return 0;
    if (s->lingering.head != NULL && deadline_of(s, s->lingering.head) < d)
        d = deadline_of(s, s->lingering.head);
    if (s->handshakes.head != NULL && deadline_of(s, s->handshakes.head) < d)
        d = deadline_of(s, s->handshakes.head);
    if (s->input_wait.head != NULL && deadline_of(s, s->input_wait.head) < d)
        d = deadline_of(s, s->input_wait.head);
    if (s->log_deadline < d)
        d = s->log_deadline;
    /* While CPU pressure lowered the handshake bound, the window's end may
     * raise it again: a platform holding its listener for want of room
     * must wake then, not when the running handshakes (which may all wait
     * for their clients) time out. */
    if (s->hs_cap != s->max_handshakes && s->hs_window_ms + CONN_HANDSHAKE_WINDOW_MS < d)
        d = s->hs_window_ms + CONN_HANDSHAKE_WINDOW_MS;
    return d;
}

broker_conn *conn_core(const conn *c)
{
    return c->bc;
}
