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
 * The input budget (limits.max_input_bytes): what every connection holds
 * of unfinished input (the core's tail of a packet still arriving, input
 * the core has not taken yet) is counted; while the sum is at the budget,
 * a connection holding at least the average is not read (it waits on the
 * input_wait list, interest off) until the sum is down to three quarters.
 * Connections holding little keep being read, so small packets still flow
 * and finish; one that waits CONN_INPUT_WAIT_MS while the budget stays
 * spent is closed, so holders cannot wait for each other for ever.
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

/* What c holds now: the core's unfinished packet, input the core has
 * not taken, and a WebSocket opening request still arriving. */
static size_t held_by(const conn *c)
{
    return (c->bc != NULL ? broker_input_held(c->bc) : 0) + c->pending_len +
           conni_ws_request_held(c);
}

static uint64_t low_water(const conn_server *s)
{
    return s->max_input - s->max_input / 4;
}

void conni_account(conn_server *s, conn *c, size_t held)
{
    uint32_t now_held = held > UINT32_MAX ? UINT32_MAX : (uint32_t)held;

    s->input_held = s->input_held - c->held + now_held;
    if (c->held == 0 && now_held > 0)
        s->input_holders++;
    else if (c->held > 0 && now_held == 0)
        s->input_holders--;
    c->held = now_held;
    /* Budget back below the low mark: everyone waiting is read again. */
    while (s->input_wait.head != NULL && s->input_held <= low_water(s)) {
        conn *w = s->input_wait.head;

        conni_timer_clear(s, w);
        conni_ready_add(s, w);
    }
}

static bool budget_spent(const conn_server *s)
{
    return s->max_input != 0 && s->input_held >= s->max_input;
}

/* Lines about the input budget: at most one of each kind per
 * CONN_REFUSAL_LOG_MS (*last_ms is the kind's last), naming c's peer
 * first. */
static void input_log(conn_server *s, const conn *c, uint64_t now, uint64_t *last_ms,
                      const char *fmt, unsigned long long a, unsigned long long b)
{
    char peer[CONN_PEER_TEXT];

    if (*last_ms != 0 && now - *last_ms < CONN_REFUSAL_LOG_MS)
        return;
    *last_ms = now;
    conni_peer(s, c, peer);
    conni_log(s, BROKER_LOG_WARN, fmt, peer, a, b);
}

/* The budget is spent and c holds at least the average: wait. */
static bool input_wait(conn_server *s, conn *c, uint64_t now)
{
    s->stats.input_waits++;
    input_log(s, c, now, &s->input_wait_log_ms,
              "input budget spent: not reading %s, which holds %llu of the %llu bytes "
              "buffered (limits.max_input_bytes), until it frees up",
              c->held, s->input_held);
    conni_ready_remove(s, c);
    conni_timer_set(s, c, CONN_TIMER_INPUT, now);
    return conni_update_interest(s, c, now);
}

void conni_input_expired(conn_server *s, conn *c, uint64_t now)
{
    conni_timer_clear(s, c);
    if (!budget_spent(s)) {
        conni_ready_add(s, c);
        return;
    }
    s->stats.input_closes++;
    input_log(s, c, now, &s->input_close_log_ms,
              "closing %s: it holds %llu bytes of unfinished input and the input budget "
              "(limits.max_input_bytes) stayed spent for %llu s",
              c->held, CONN_INPUT_WAIT_MS / 1000u);
    (void)conni_end(s, c, CONN_CLOSE_ABORT, now);
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

bool conni_deliver(conn_server *s, conn *c, uint8_t *data, size_t len, uint64_t now)
{
    bool flush = false;

    if (c->is_ws && !conni_ws_input(s, c, data, len, &len, &flush))
        return false;

    size_t taken = len == 0 ? 0 : broker_input(s->b, c->bc, data, len, now);
    bool alive = taken >= len || broker_wants_close(c->bc) ||
                 keep(s, c, data, taken, len - taken, now);

    if (alive)
        conni_account(s, c, held_by(c));
    /* A WebSocket answer, pong or close leaves now, not with the core's
     * next output. */
    return alive && (!flush || conn_flush(s, c, now));
}

/* One broker_input call for the pending plaintext. */
static void serve_pending(conn_server *s, conn *c, uint64_t now)
{
    size_t n = broker_input(s->b, c->bc, c->pending + c->pending_off, c->pending_len, now);

    if (n >= c->pending_len || broker_wants_close(c->bc)) {
        conni_drop_input(s, c);
    } else {
        c->pending_off += (uint32_t)n;
        c->pending_len -= (uint32_t)n;
    }
    conni_account(s, c, held_by(c));
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

/* A client still in its TLS handshake whose input ends right after what
 * it sent has given up (its connect timeout passed, maybe while it waited
 * in the listen backlog): answering it would cost a signature and a key
 * exchange for no one, which under a storm of retrying clients is most of
 * the work. So after a read that drained the transport (a short read, on
 * a transport where that means empty) one more read, which can only find
 * the end or nothing (a few microseconds), asks whether the end follows. The bytes read so far
 * are in s->rbuf[0..have); returns their new count, or CONN_IO_EOF when
 * the input ended there (more bytes join the read). */
static long handshake_tail(conn_server *s, conn *c, size_t have, size_t ask, bool *drained)
{
    long m = have < ask ? s->io->read(s->io_ctx, c, s->rbuf + have, ask - have) : CONN_IO_AGAIN;

    if (m == CONN_IO_EOF)
        return CONN_IO_EOF;
    if (m > 0) {
        *drained = (size_t)m < ask - have && s->io->short_read_drains;
        return (long)(have + (size_t)m);
    }
    return (long)have; /* nothing more yet, or an error the next read reports */
}

/* Close a handshake whose client gave up (handshake_tail). */
static bool gave_up(conn_server *s, conn *c, uint64_t now)
{
    char peer[CONN_PEER_TEXT];

    s->stats.handshakes_abandoned++;
    if (s->log_level >= BROKER_LOG_DEBUG) {
        conni_peer(s, c, peer);
        conni_log(s, BROKER_LOG_DEBUG, "%s gave up during the TLS handshake; not answered", peer);
    }
    return conni_end(s, c, CONN_CLOSE_ABORT, now);
}

/* Move c's input along until the core stops taking, the input runs out or
 * a budget ends. */
static bool pump(conn_server *s, conn *c, uint64_t now)
{
    size_t budget = CONN_READ_BUDGET;
    bool fed = false;     /* the core had input from this call already */
    bool drained = false; /* a short read emptied the transport */

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
        } else if (!c->tls_remote && s->handshake_steps == 0) {
            conni_ready_add(s, c); /* this turn's handshakes are spent */
            s->steps_short = true; /* no new handshakes until these are served */
            s->window_short = true;
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
        if (c->bc != NULL && c->held > 0 && budget_spent(s) &&
            (uint64_t)c->held * s->input_holders >= s->input_held)
            return input_wait(s, c, now);
        size_t ask = budget < CONN_READ_BUF_SIZE ? budget : CONN_READ_BUF_SIZE;
        n = drained ? CONN_IO_AGAIN : s->io->read(s->io_ctx, c, s->rbuf, ask);
        if (n == CONN_IO_AGAIN) /* (read again after a wait: interest back on) */
            return c->want_read || conni_update_interest(s, c, now);
        drained = n > 0 && (size_t)n < ask && s->io->short_read_drains;
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
        if (c->tls != NULL && c->bc == NULL && drained) {
            n = handshake_tail(s, c, (size_t)n, ask, &drained);
            if (n == CONN_IO_EOF)
                return gave_up(s, c, now);
        }
        if (c->bc == NULL && c->tls == NULL) { /* a transport's handshake sends none */
            char peer[CONN_PEER_TEXT];

            conni_peer(s, c, peer);
            conni_log(s, BROKER_LOG_ERROR, "%s: input before its TLS handshake ended; closing",
                      peer);
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
    if (c->on_ready || c->input_blocked || c->timer == CONN_TIMER_LINGER ||
        c->timer == CONN_TIMER_INPUT)
        return true;
    return pump(s, c, now);
}

bool conn_hangup(conn_server *s, conn *c, uint64_t now)
{
    if (c->on_ready)
        return true; /* reads what is left, then the EOF, next turn */
    if (!c->input_blocked && c->timer != CONN_TIMER_LINGER && c->timer != CONN_TIMER_INPUT)
        return pump(s, c, now);
    return conni_end(s, c, CONN_CLOSE_ABORT, now); /* nothing more can move */
}
