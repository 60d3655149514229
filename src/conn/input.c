/*
 * input.c - reading: bytes from the transport (through the TLS half on TLS
 * connections) to the core, input the core leaves for later, and the end
 * of a peer's input.
 *
 * Per connection and turn: what waits inside the layer goes first (one
 * broker_input call for pending plaintext, then the records the TLS
 * adapter holds), then the transport is read for at most CONN_READ_BUDGET
 * bytes. Whenever the core leaves input (its work budget ran out), the
 * connection goes on the ready list and the turn moves on. While the core
 * pauses the connection (its output is backed up, or a subscriber it
 * publishes to is behind) nothing is read: the bytes stay in the
 * transport, whose window pushes back on the client.
 *
 * The end of input (EOF, or TLS close_notify) is acted on only once every
 * byte before it reached the core: then the answers are written once and
 * the connection closes gracefully, so a DISCONNECT followed by a close
 * still counts as a clean disconnect.
 */
#include "conn/internal.h"

#include <string.h>

bool conni_has_input(const conn_server *s, const conn *c)
{
    return c->pending != NULL || (c->tls != NULL && s->tls_ops->has_input(c->tls));
}

void conni_drop_input(conn_server *s, conn *c)
{
    conni_free(s, c->pending);
    c->pending = NULL;
    c->pending_off = c->pending_len = 0;
}

/* Keep data[0..len) for later: by taking over one of the server's buffers
 * when the rest is large, else as a copy. */
static bool keep(conn_server *s, conn *c, const uint8_t *data, size_t off, size_t len,
                 uint64_t now)
{
    uint8_t **shared = data == s->rbuf ? &s->rbuf : data == s->pbuf ? &s->pbuf : NULL;
    char peer[CONN_PEER_TEXT];

    if (c->pending != NULL)
        tern_panic(__FILE__, __LINE__, "input kept twice");
    if (shared != NULL && len >= CONN_ADOPT_MIN) {
        uint8_t *fresh = conni_alloc(s, CONN_READ_BUF_SIZE);

        if (fresh != NULL) {
            c->pending = *shared;
            c->pending_off = (uint32_t)off;
            c->pending_len = (uint32_t)len;
            *shared = fresh;
            return true;
        }
    }
    c->pending = conni_alloc(s, len);
    if (c->pending == NULL) {
        conni_peer(s, c, peer);
        conni_log(s, BROKER_LOG_WARN, "out of memory holding input from %s; closing", peer);
        return conni_end(s, c, CONN_CLOSE_ABORT, now);
    }
    memcpy(c->pending, data + off, len);
    c->pending_off = 0;
    c->pending_len = (uint32_t)len;
    return true;
}

bool conni_deliver(conn_server *s, conn *c, const uint8_t *data, size_t len, uint64_t now)
{
    size_t taken = len == 0 ? 0 : broker_input(s->b, c->bc, data, len, now);

    if (taken >= len || broker_wants_close(c->bc))
        return true;
    return keep(s, c, data, taken, len - taken, now);
}

/* One broker_input call for the pending plaintext. */
static void serve_pending(conn_server *s, conn *c, uint64_t now)
{
    size_t n = broker_input(s->b, c->bc, c->pending + c->pending_off, c->pending_len, now);

    if (n >= c->pending_len || broker_wants_close(c->bc)) {
        conni_drop_input(s, c);
        return;
    }
    c->pending_off += (uint32_t)n;
    c->pending_len -= (uint32_t)n;
}

/* The core paused c's input: stop reading until its output drains
 * (conni_after_flush resumes it). */
static bool block_input(conn_server *s, conn *c, uint64_t now)
{
    char peer[CONN_PEER_TEXT];

    if (s->log_level >= BROKER_LOG_DEBUG) {
        conni_peer(s, c, peer);
        conni_log(s, BROKER_LOG_DEBUG, "%s: input paused", peer);
    }
    c->input_blocked = 1;
    conni_ready_remove(s, c);
    return conni_update_interest(s, c, now);
}

/* The peer finished sending and everything it sent reached the core. */
static bool finish(conn_server *s, conn *c, uint64_t now)
{
    char peer[CONN_PEER_TEXT];

    if (c->bc == NULL) {
        conni_peer(s, c, peer);
        conni_log(s, BROKER_LOG_DEBUG, "%s closed during the TLS handshake", peer);
        return conni_end(s, c, CONN_CLOSE_GRACEFUL, now);
    }
    /* The answers to its last packets go out once; the close follows
     * them on the wire. */
    if (!conni_write_out(s, c, now))
        return false;
    return conni_end(s, c, CONN_CLOSE_GRACEFUL, now);
}

/* Move c's input along until the core stops taking, the input runs out or
 * a budget ends. */
static bool pump(conn_server *s, conn *c, uint64_t now)
{
    size_t budget = CONN_READ_BUDGET;
    bool fed = false; /* the core had input from this call already */

    for (;;) {
        long n;

        if (c->bc != NULL) {
            if (broker_wants_close(c->bc))
                return true; /* the dirty pass writes what is left and closes */
            if (broker_input_paused(c->bc))
                return block_input(s, c, now);
            if (c->pending != NULL) {
                if (fed) {
                    conni_ready_add(s, c); /* the core's work budget ran out */
                    return true;
                }
                serve_pending(s, c, now);
                fed = true;
                continue;
            }
        } else if (s->handshake_steps == 0) {
            conni_ready_add(s, c); /* this turn's handshakes are spent */
            return true;
        }
        if (c->tls != NULL && s->tls_ops->has_input(c->tls)) {
            if (!s->tls_ops->input(s, c, NULL, 0, now))
                return false;
            fed = true;
            continue;
        }
        if (c->peer_eof)
            return finish(s, c, now);
        if (budget == 0) {
            conni_ready_add(s, c); /* its share of this turn is read */
            return true;
        }
        n = s->io->read(s->io_ctx, c, s->rbuf,
                        budget < CONN_READ_BUF_SIZE ? budget : CONN_READ_BUF_SIZE);
        if (n == CONN_IO_AGAIN)
            return true;
        if (n == CONN_IO_EOF) {
            c->peer_eof = 1;
            continue;
        }
        if (n < 0) {
            char peer[CONN_PEER_TEXT];

            conni_peer(s, c, peer);
            conni_log(s, BROKER_LOG_DEBUG, "%s: read failed; closing", peer);
            return conni_end(s, c, CONN_CLOSE_ABORT, now);
        }
        budget -= (size_t)n;
        if (c->tls != NULL) {
            if (!s->tls_ops->input(s, c, s->rbuf, (size_t)n, now))
                return false;
        } else if (!conni_deliver(s, c, s->rbuf, (size_t)n, now)) {
            return false;
        }
        fed = true;
    }
}

bool conn_readable(conn_server *s, conn *c, uint64_t now)
{
    /* Served from the ready list, or not reading until something else
     * happens (output drains, the linger ends). */
    if (c->on_ready || c->input_blocked || c->timer == CONN_TIMER_LINGER)
        return true;
    return pump(s, c, now);
}

bool conn_hangup(conn_server *s, conn *c, uint64_t now)
{
    if (c->on_ready)
        return true; /* reads what is left, then the EOF, next turn */
    if (!c->input_blocked && c->timer != CONN_TIMER_LINGER)
        return pump(s, c, now);
    return conni_end(s, c, CONN_CLOSE_ABORT, now); /* nothing more can move */
}
