/*
 * output.c - writing, the transport's interest, and every way a
 * connection ends.
 *
 * Output is written once per turn for each connection the core marked
 * dirty, as far as the transport takes it; the rest waits for
 * conn_writable(). The rate a backed-up connection takes its output at
 * bounds how long QoS 0 may wait in it (drain.h). Plaintext goes from the core's buffer to the transport;
 * TLS goes through the TLS half (tls.c), which encrypts only once its
 * previous records are gone.
 *
 * The close policy, for a connection the core wants closed: stop reading,
 * forget unread input, and give the output CONN_LINGER_MS to leave; once
 * it is all out, a TLS close_notify (one try) and a graceful close; when
 * the linger ends first, an abort (server.c). Transport errors abort at
 * once. Whatever the path, conni_end tells the core exactly once and
 * closes the transport last.
 */
#include "conn/internal.h"

#include <string.h>

/* c's drain measurement while one runs (conn.side), else NULL. */
static conn_drain *drain_of(conn *c)
{
    if (c->is_ws)
        return c->ws_draining ? conni_ws_drain(c) : NULL;
    return c->side.drain;
}

/* Start measuring (output backed up): NULL without memory. */
static conn_drain *drain_start(conn_server *s, conn *c)
{
    conn_drain *d;

    if (c->is_ws) {
        d = conni_ws_drain(c);
        c->ws_draining = true;
    } else {
        d = conni_alloc(s, sizeof *d);
        c->side.drain = d;
    }
    if (d != NULL)
        memset(d, 0, sizeof *d);
    return d;
}

static void drain_stop(conn_server *s, conn *c)
{
    if (c->is_ws) {
        c->ws_draining = false;
    } else {
        conni_free(s, c->side.drain);
        c->side.drain = NULL;
    }
}

size_t conn_out_pending(const conn_server *s, const conn *c)
{
    size_t core = c->bc != NULL ? broker_out_pending(c->bc) : 0;

    if (c->is_ws)
        core = conni_ws_pending(c, core);
    return core + (c->tls != NULL ? s->tls_ops->out_pending(c->tls) : 0);
}

bool conni_write(conn_server *s, conn *c, const uint8_t *data, size_t len, size_t *taken,
                 uint64_t now)
{
    long n = s->io->write(s->io_ctx, c, data, len);
    char peer[CONN_PEER_TEXT];

    if (n < 0 || (size_t)n > len) {
        conni_peer(s, c, peer);
        conni_log(s, BROKER_LOG_DEBUG, "%s: write failed; closing", peer);
        return conni_end(s, c, CONN_CLOSE_ABORT, now);
    }
    *taken = (size_t)n;
    conn_drain *d = drain_of(c);

    if (d != NULL)
        conn_drain_wrote(d, (size_t)n);
    return true;
}

bool conni_write_all(conn_server *s, conn *c, const conni_source *src, uint64_t now)
{
    for (;;) {
        size_t len = 0, n = 0;
        const uint8_t *out = src->peek(s, c, &len);

        if (len == 0)
            return true;
        if (!conni_write(s, c, out, len, &n, now))
            return false;
        src->consume(s, c, n);
        if (n < len)
            return true; /* the transport is full: wait for conn_writable */
    }
}

static const uint8_t *core_peek(conn_server *s, conn *c, size_t *len)
{
    (void)s;
    return broker_out_peek(c->bc, len);
}

static void core_consume(conn_server *s, conn *c, size_t n)
{
    broker_out_consume(s->b, c->bc, n); /* the core refills from the session's queue */
}

static const conni_source core_output = {core_peek, core_consume};

/* How fast it takes its output bounds how long QoS 0 waits (drain.h).
 * The measurement's block exists only while output is backed up, so a
 * connection that keeps up (nearly every idle one) does not carry it.
 * Without memory for it the connection keeps the bound it had (or none:
 * limits.max_out_bytes still bounds it). */
static void drain_update(conn_server *s, conn *c, uint64_t now)
{
    size_t pending = conn_out_pending(s, c);
    uint32_t before, limit;

    conn_drain *d = drain_of(c);

    if (d == NULL) {
        if (pending == 0)
            return;
        d = drain_start(s, c);
        if (d == NULL)
            return;
    }
    before = d->limit;
    limit = conn_drain_update(d, pending, now);
    if (limit != before)
        broker_set_qos0_out_max(c->bc, limit);
    if (pending == 0) /* it kept up: the measurement ended (limit 0) */
        drain_stop(s, c);
}

const conni_source *conni_plain_source(const conn *c)
{
    return c->is_ws ? &conni_ws_output : &core_output;
}

bool conni_write_out(conn_server *s, conn *c, uint64_t now)
{
    bool alive = c->tls != NULL ? s->tls_ops->flush(s, c, now)
                                : c->bc == NULL || conni_write_all(s, c, conni_plain_source(c), now);

    if (alive && s->io->push != NULL)
        s->io->push(s->io_ctx, c);
    if (alive && c->bc != NULL)
        drain_update(s, c, now);
    return alive;
}

bool conni_update_interest(conn_server *s, conn *c, uint64_t now)
{
    bool r = !c->input_blocked && c->timer != CONN_TIMER_LINGER &&
             c->timer != CONN_TIMER_INPUT && !c->peer_eof && !conni_ws_closing(c);
    bool w = conn_out_pending(s, c) > 0;
    char peer[CONN_PEER_TEXT];

    if (r == (bool)c->want_read && w == (bool)c->want_write)
        return true;
    if (!s->io->interest(s->io_ctx, c, r, w)) {
        conni_peer(s, c, peer);
        conni_log(s, BROKER_LOG_WARN, "%s: cannot wait for the transport; closing", peer);
        return conni_end(s, c, CONN_CLOSE_ABORT, now);
    }
    c->want_read = r;
    c->want_write = w;
    return true;
}

bool conni_after_flush(conn_server *s, conn *c, uint64_t now)
{
    char peer[CONN_PEER_TEXT];

    if (broker_wants_close(c->bc) || conni_ws_closing(c)) {
        /* A WebSocket peer is told with a close frame first. */
        if (conn_out_pending(s, c) == 0 && conni_ws_goodbye(c) && !conni_write_out(s, c, now))
            return false;
        if (conn_out_pending(s, c) == 0) {
            if (c->tls != NULL && !s->tls_ops->goodbye(s, c, now))
                return false;
            return conni_end(s, c, CONN_CLOSE_GRACEFUL, now);
        }
        if (c->timer != CONN_TIMER_LINGER) {
            conni_drop_input(s, c);
            conni_account(s, c, broker_input_held(c->bc));
            conni_ready_remove(s, c);
            conni_timer_set(s, c, CONN_TIMER_LINGER, now);
        }
        return conni_update_interest(s, c, now);
    }
    if (c->input_blocked && !broker_input_paused(c->bc)) {
        if (s->log_level >= BROKER_LOG_DEBUG) {
            conni_peer(s, c, peer);
            conni_log(s, BROKER_LOG_DEBUG, "%s: input resumed", peer);
        }
        c->input_blocked = 0;
        /* What waits inside the layer (and the end of input) is not
         * announced by the transport again. */
        if (conni_has_input(s, c) || c->peer_eof)
            conni_ready_add(s, c);
    }
    return conni_update_interest(s, c, now);
}

bool conn_flush(conn_server *s, conn *c, uint64_t now)
{
    if (!conni_write_out(s, c, now))
        return false;
    if (c->bc == NULL) /* handshake output only */
        return conni_update_interest(s, c, now);
    return conni_after_flush(s, c, now);
}

bool conn_writable(conn_server *s, conn *c, uint64_t now)
{
    return conn_flush(s, c, now);
}

/* Everything c owns, without telling anyone. */
static void release(conn_server *s, conn *c)
{
    conni_ready_remove(s, c);
    conni_timer_clear(s, c);
    conni_account(s, c, 0);
    if (c->tls != NULL)
        s->tls_ops->free(c->tls);
    c->tls = NULL;
    if (!c->is_ws)
        drain_stop(s, c);
    conni_ws_free(s, c);
    conni_drop_input(s, c);
}

bool conni_end(conn_server *s, conn *c, conn_close_how how, uint64_t now)
{
    release(s, c);
    if (c->bc != NULL) {
        broker_conn *bc = c->bc;

        c->bc = NULL;
        broker_closed(s->b, bc, now); /* fires the will unless DISCONNECT came */
    }
    s->io->close(s->io_ctx, c, how); /* last: may free c */
    return false;
}

void conn_failed(conn_server *s, conn *c, uint64_t now)
{
    (void)conni_end(s, c, CONN_CLOSE_ABORT, now);
}

void conn_drop(conn_server *s, conn *c)
{
    release(s, c);
    c->bc = NULL; /* the core frees its side in broker_destroy */
}

/* Refusals come in floods: one line per CONN_REFUSAL_LOG_MS with the
 * count of those not logged. The peer's name is looked up only for a line
 * that is written. */
static void log_refusal(conn_server *s, const conn *c, const char *why, uint64_t now)
{
    char peer[CONN_PEER_TEXT];

    if (s->refusal_log_ms != 0 && now - s->refusal_log_ms < CONN_REFUSAL_LOG_MS) {
        s->refusals_unlogged++;
        return;
    }
    conni_peer(s, c, peer);
    conni_log(s, BROKER_LOG_WARN, "refused %s: %s (%llu more refusals not logged)", peer, why,
              (unsigned long long)s->refusals_unlogged);
    s->refusal_log_ms = now;
    s->refusals_unlogged = 0;
}

/* Room for one more TLS handshake, in all and from c's address? */
static bool handshake_allowed(conn_server *s, conn *c, uint64_t now)
{
    uint32_t hash = 0;
    const char *why = NULL;

    if (s->max_handshakes != 0 && s->handshakes.count >= s->max_handshakes) {
        why = "too many TLS handshakes running (limits.max_handshakes)";
        s->stats.handshakes_refused++;
    } else if (s->max_per_address != 0 &&
               conni_peer_handshakes(s, c, &hash) >= s->max_per_address) {
        why = "too many TLS handshakes from its address (limits.max_handshakes_per_address)";
        s->stats.handshakes_refused_address++;
    }
    if (why != NULL) {
        log_refusal(s, c, why, now);
        return false;
    }
    c->peer_hash = hash;
    return true;
}

/* A TLS connection: a session and a handshake deadline. */
static bool open_tls(conn_server *s, conn *c, uint64_t now)
{
    char peer[CONN_PEER_TEXT];

    if (!handshake_allowed(s, c, now))
        return false;
    if (s->io->runs_tls) { /* the transport runs it: only counted here */
        c->tls_remote = 1;
        conni_timer_set(s, c, CONN_TIMER_HANDSHAKE, now);
        return true;
    }
    if (s->tls == NULL)
        tern_panic(__FILE__, __LINE__, "TLS connection without a TLS context");
    c->tls = s->tls_ops->start(s->tls);
    if (c->tls == NULL) {
        c->peer_hash = 0;
        s->stats.refused++;
        conni_peer(s, c, peer);
        conni_log(s, BROKER_LOG_WARN, "refused %s: out of memory for TLS", peer);
        return false;
    }
    conni_timer_set(s, c, CONN_TIMER_HANDSHAKE, now);
    return true;
}

bool conn_open(conn_server *s, conn *c, bool tls, uint64_t now)
{
    char peer[CONN_PEER_TEXT];
    broker_conn_info info = {peer, NULL, false, false};

    c->want_read = 1;
    if (tls)
        return open_tls(s, c, now);
    /* Plaintext: the core meets the client at once (and keeps its name). */
    conni_peer(s, c, peer);
    if (s->io->identity != NULL)
        info.identity = s->io->identity(s->io_ctx, c, &info.is_operator);
    c->bc = broker_open(s->b, c, &info, now);
    if (c->bc == NULL) {
        s->stats.refused++;
        conni_log(s, BROKER_LOG_DEBUG, "closing %s: refused by the core", peer);
        return false;
    }
    return true;
}
