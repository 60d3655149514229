/*
 * io.c - reading and writing the connections the core knows, over
 * plaintext TCP or TLS, and closing them.
 *
 * Reading: a connection is read for at most READ_BUDGET bytes per turn into
 * the loop's shared buffer. On TLS the bytes are decrypted into a second
 * shared buffer first; either way the plaintext goes to the core, and input
 * the core's work budget did not take waits in the connection's `pending`
 * buffer for the next turn (the connection sits on the ready list, and epoll
 * then does not block), so one busy client cannot starve the others.
 * Decrypted input still inside the TLS adapter waits the same way.
 *
 * Writing: once per turn for every connection with output (the core's dirty
 * list). Plaintext goes straight from the core's buffer to send(). On TLS,
 * once the adapter's queue has drained, everything the core has pending is
 * encrypted in one go (full 16 KiB records for bulk data, one record for a
 * turn's worth of small packets) and sent; while ciphertext is still queued
 * the core keeps its output, so its back-pressure rules see a slow reader.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "platform/posix/loop_internal.h"

static bool tls_has_input(const tern_conn *c)
{
    return c->tls != NULL && tern_tls_has_input(c->tls);
}

size_t tern_loop_out_pending(const tern_conn *c)
{
    return (c->bc != NULL ? broker_out_pending(c->bc) : 0) +
           (c->tls != NULL ? tern_tls_out_pending(c->tls) : 0);
}

static void unlist(tern_loop *l, tern_conn *c)
{
    if (c->list != TERN_LIST_NONE)
        tern_conn_list_remove(&l->lists[c->list], c);
}

void tern_loop_close(tern_loop *l, tern_conn *c, uint64_t now)
{
    unlist(l, c);
    l->by_fd[c->fd] = NULL;
    l->nconns--;
    /* close() also leaves the epoll set; on Linux the descriptor is released
     * even when close reports an error, so there is nothing to retry. */
    if (close(c->fd) != 0)
        tern_logf(l->log, BROKER_LOG_DEBUG, "close: %s", strerror(errno));
    if (c->bc != NULL)
        broker_closed(l->b, c->bc, now);
    tern_conn_free(c);
}

bool tern_loop_set_interest(tern_loop *l, tern_conn *c)
{
    struct epoll_event ev;
    uint32_t want = 0;

    if (!c->input_blocked && c->list != TERN_LIST_CLOSING)
        want |= EPOLLIN;
    if (tern_loop_out_pending(c) > 0)
        want |= EPOLLOUT;
    if (want == c->events)
        return true;
    memset(&ev, 0, sizeof ev);
    ev.events = want;
    ev.data.ptr = c;
    if (epoll_ctl(l->ep, EPOLL_CTL_MOD, c->fd, &ev) != 0) {
        tern_logf(l->log, BROKER_LOG_WARN, "epoll_ctl: %s", strerror(errno));
        return false;
    }
    c->events = want;
    return true;
}

/* Stop reading c until its output drains (broker_input_paused). */
static bool block_input(tern_loop *l, tern_conn *c)
{
    tern_logf(l->log, BROKER_LOG_DEBUG, "fd %d: output backed up, input paused", c->fd);
    c->input_blocked = true;
    if (c->list == TERN_LIST_READY)
        tern_conn_list_remove(&l->lists[TERN_LIST_READY], c);
    return tern_loop_set_interest(l, c);
}

/* The core wants c closed: stop reading, forget unread input and give the
 * output LINGER_MS to leave. */
static bool enter_closing(tern_loop *l, tern_conn *c, uint64_t now)
{
    if (c->list == TERN_LIST_CLOSING)
        return true;
    unlist(l, c);
    tern_conn_drop_input(c);
    c->deadline_ms = now + LINGER_MS;
    tern_conn_list_push(&l->lists[TERN_LIST_CLOSING], c);
    return tern_loop_set_interest(l, c);
}

/* After input reached the core (whatever it left is in c->pending), decide
 * where c goes next. False when c was closed. */
static bool after_input(tern_loop *l, tern_conn *c, uint64_t now)
{
    bool ok = true;

    if (broker_wants_close(c->bc)) {
        /* The dirty pass writes what is left and closes it. */
        ok = enter_closing(l, c, now);
    } else if (c->pending != NULL || tls_has_input(c)) {
        if (broker_input_paused(c->bc))
            ok = block_input(l, c);
        else if (c->list != TERN_LIST_READY)
            tern_conn_list_push(&l->lists[TERN_LIST_READY], c);
    }
    if (!ok)
        tern_loop_close(l, c, now);
    return ok;
}

/* Leftovers at least this long are kept by handing the connection the read
 * buffer itself (the loop takes a new one) rather than copying them: under
 * a flood most of a 64 KiB read is left over when the work budget ends. */
#define ADOPT_MIN (8 * 1024)

bool tern_loop_deliver(tern_loop *l, tern_conn *c, const uint8_t *data, size_t len,
                       uint64_t now)
{
    size_t taken = len == 0 ? 0 : broker_input(l->b, c->bc, data, len, now);

    if (taken < len && !broker_wants_close(c->bc) && data == l->rbuf &&
        len - taken >= ADOPT_MIN && c->pending == NULL) {
        uint8_t *fresh = malloc(READ_BUF_SIZE);

        if (fresh != NULL) {
            tern_conn_adopt_input(c, l->rbuf, taken, len - taken);
            l->rbuf = fresh;
            return after_input(l, c, now);
        }
    }
    if (taken < len && !broker_wants_close(c->bc) &&
        !tern_conn_keep_input(c, data + taken, len - taken)) {
        tern_logf(l->log, BROKER_LOG_WARN, "out of memory holding input; closing");
        tern_loop_close(l, c, now);
        return false;
    }
    return after_input(l, c, now);
}

/* Log why a TLS connection the core knows ended, and close it. */
static void tls_gone(tern_loop *l, tern_conn *c, uint64_t now)
{
    tern_tls_conn *t = c->tls;

    if (tern_tls_state_of(t) == TERN_TLS_FAILED)
        tern_logf(l->log, BROKER_LOG_INFO, "fd %d: TLS error, closing: %s (%d)", c->fd,
                  tern_tls_failure_text(tern_tls_failure_of(t)), tern_tls_error_code(t));
    /* An alert may be queued: one try to send it, no waiting. */
    if (tern_tls_out_pending(t) > 0 && !tern_loop_send_tls(l, c, now))
        return;
    tern_loop_close(l, c, now);
}

/* Decrypt n bytes from c's socket (n may be 0: drain what the adapter
 * holds) and hand the plaintext to the core, more while the core takes all
 * and the adapter has some. False when c was closed. */
static bool tls_input(tern_loop *l, tern_conn *c, size_t n, uint64_t now)
{
    const uint8_t *in = n > 0 ? l->rbuf : NULL;

    for (;;) {
        size_t plain = 0;
        tern_tls_state st = tern_tls_read(c->tls, in, n, l->pbuf, PLAIN_BUF_SIZE, &plain);

        in = NULL;
        n = 0;
        if (plain > 0 && !tern_loop_deliver(l, c, l->pbuf, plain, now))
            return false;
        if (st == TERN_TLS_FAILED || (st == TERN_TLS_PEER_CLOSED && c->pending == NULL)) {
            tls_gone(l, c, now);
            return false;
        }
        /* close_notify with input still waiting for the core: the close
         * comes once the core has it all (serve_pending), so a DISCONNECT
         * in that input still counts. */
        /* A reply the adapter produced by itself (e.g. to a key update). */
        if (tern_tls_out_pending(c->tls) > 0 && !tern_loop_send_tls(l, c, now))
            return false;
        /* Nothing came out: more needs more bytes from the socket. */
        if (plain == 0 || c->pending != NULL || broker_wants_close(c->bc) ||
            !tern_tls_has_input(c->tls))
            return true;
    }
}

/* Read c until EAGAIN, EOF or its budget. False when c was closed. */
static bool read_conn(tern_loop *l, tern_conn *c, uint64_t now)
{
    size_t budget = READ_BUDGET;

    while (budget > 0) {
        size_t want = budget < READ_BUF_SIZE ? budget : READ_BUF_SIZE;
        ssize_t n;

        if (broker_input_paused(c->bc)) {
            if (!block_input(l, c)) {
                tern_loop_close(l, c, now);
                return false;
            }
            return true;
        }
        n = recv(c->fd, l->rbuf, want, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return true;
            tern_logf(l->log, BROKER_LOG_DEBUG, "read: %s", strerror(errno));
            tern_loop_close(l, c, now);
            return false;
        }
        if (n == 0) {
            tern_loop_close(l, c, now); /* peer closed */
            return false;
        }
        budget -= (size_t)n;
        if (c->tls != NULL) {
            if (!tls_input(l, c, (size_t)n, now))
                return false;
        } else if (!tern_loop_deliver(l, c, l->rbuf, (size_t)n, now)) {
            return false;
        }
        if (c->pending != NULL || tls_has_input(c) || broker_wants_close(c->bc))
            return true; /* after_input put it where it belongs */
        if ((size_t)n < want)
            return true; /* short read: the socket is drained */
    }
    return true;
}

/* Give c's leftover input to the core once more: first what waits in
 * `pending`, then what the TLS adapter still holds. */
static void serve_pending(tern_loop *l, tern_conn *c, uint64_t now)
{
    if (broker_input_paused(c->bc)) {
        if (!block_input(l, c))
            tern_loop_close(l, c, now);
        return;
    }
    if (c->pending != NULL) {
        size_t taken =
            broker_input(l->b, c->bc, c->pending + c->pending_off, c->pending_len, now);

        tern_conn_input_taken(c, taken);
        if (!after_input(l, c, now))
            return;
        if (c->pending == NULL && c->tls != NULL &&
            tern_tls_state_of(c->tls) == TERN_TLS_PEER_CLOSED && !broker_wants_close(c->bc))
            tls_gone(l, c, now);
        return;
    }
    if (tls_has_input(c))
        (void)tls_input(l, c, 0, now);
}

void tern_loop_serve_ready(tern_loop *l, uint64_t now)
{
    size_t n = l->lists[TERN_LIST_READY].count;

    while (n-- > 0) {
        tern_conn *c = tern_conn_list_pop(&l->lists[TERN_LIST_READY]);

        if (c == NULL)
            break;
        serve_pending(l, c, now);
    }
}

/* One send of out[0..len): the bytes sent (0 when the socket buffer is
 * full), or -1 when the connection failed and has been closed. */
static ssize_t send_once(tern_loop *l, tern_conn *c, const uint8_t *out, size_t len,
                         uint64_t now)
{
    for (;;) {
        ssize_t n = send(c->fd, out, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n >= 0)
            return n;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        tern_logf(l->log, BROKER_LOG_DEBUG, "write: %s", strerror(errno));
        tern_loop_close(l, c, now);
        return -1;
    }
}

bool tern_loop_send_tls(tern_loop *l, tern_conn *c, uint64_t now)
{
    for (;;) {
        size_t len = 0;
        const uint8_t *out = tern_tls_out_peek(c->tls, &len);

        if (len == 0)
            return true;
        ssize_t n = send_once(l, c, out, len, now);
        if (n < 0)
            return false;
        tern_tls_out_consume(c->tls, (size_t)n);
        if ((size_t)n < len)
            return true; /* socket buffer full: wait for EPOLLOUT */
    }
}

/* Encrypt what the core has for c once the adapter's queue is empty, and
 * send. False when c was closed. */
static bool flush_tls(tern_loop *l, tern_conn *c, uint64_t now)
{
    if (!tern_loop_send_tls(l, c, now))
        return false;
    if (c->bc == NULL || tern_tls_out_pending(c->tls) > 0)
        return true;
    while (tern_tls_out_pending(c->tls) < TLS_OUT_HIGH) {
        size_t len = 0;
        const uint8_t *out = broker_out_peek(c->bc, &len);

        if (len == 0)
            break;
        if (!tern_tls_write(c->tls, out, len)) {
            tls_gone(l, c, now);
            return false;
        }
        /* The core refills its buffer from the session's queue. */
        broker_out_consume(l->b, c->bc, len);
    }
    return tern_loop_send_tls(l, c, now);
}

/* Send the core's plaintext output for c. False when c was closed. */
static bool flush_plain(tern_loop *l, tern_conn *c, uint64_t now)
{
    for (;;) {
        size_t len = 0;
        const uint8_t *out = broker_out_peek(c->bc, &len);

        if (len == 0)
            return true;
        ssize_t n = send_once(l, c, out, len, now);
        if (n < 0)
            return false;
        broker_out_consume(l->b, c->bc, (size_t)n);
        if ((size_t)n < len)
            return true; /* socket buffer full: wait for EPOLLOUT */
    }
}

bool tern_loop_flush(tern_loop *l, tern_conn *c, uint64_t now)
{
    if (!(c->tls != NULL ? flush_tls(l, c, now) : flush_plain(l, c, now)))
        return false;
    if (c->bc == NULL) { /* handshake output only */
        if (tern_loop_set_interest(l, c))
            return true;
        tern_loop_close(l, c, now);
        return false;
    }
    if (broker_wants_close(c->bc)) {
        bool lingering;

        if (c->tls != NULL && tern_loop_out_pending(c) == 0) {
            /* Everything is out: say goodbye properly, one try. */
            tern_tls_shutdown(c->tls);
            if (!tern_loop_send_tls(l, c, now))
                return false;
            tern_tls_out_consume(c->tls, tern_tls_out_pending(c->tls));
        }
        lingering = tern_loop_out_pending(c) > 0 && enter_closing(l, c, now) &&
                    tern_loop_set_interest(l, c);
        if (!lingering)
            tern_loop_close(l, c, now); /* flushed (or cannot wait): done */
        return lingering;
    }
    if (c->input_blocked && !broker_input_paused(c->bc)) {
        tern_logf(l->log, BROKER_LOG_DEBUG, "fd %d: output drained, input resumed", c->fd);
        c->input_blocked = false;
        if ((c->pending != NULL || tls_has_input(c)) && c->list == TERN_LIST_NONE)
            tern_conn_list_push(&l->lists[TERN_LIST_READY], c);
    }
    if (!tern_loop_set_interest(l, c)) {
        tern_loop_close(l, c, now);
        return false;
    }
    return true;
}

void tern_loop_flush_dirty(tern_loop *l, uint64_t now)
{
    broker_conn *bc;

    while ((bc = broker_next_dirty(l->b)) != NULL)
        (void)tern_loop_flush(l, broker_conn_ctx(bc), now);
}

/* Closing connections whose peer never took the last output. The list is in
 * deadline order because every entry gets the same linger. */
void tern_loop_expire_closing(tern_loop *l, uint64_t now)
{
    tern_conn_list *closing = &l->lists[TERN_LIST_CLOSING];

    while (closing->head != NULL && closing->head->deadline_ms <= now) {
        tern_logf(l->log, BROKER_LOG_DEBUG, "closing fd %d: output not taken in %d ms",
                  closing->head->fd, LINGER_MS);
        tern_loop_close(l, closing->head, now);
    }
}

void tern_loop_conn_event(tern_loop *l, tern_conn *c, uint32_t events, uint64_t now)
{
    bool reading;

    if (c->bc == NULL) {
        tern_loop_handshake_event(l, c, events, now);
        return;
    }
    reading = !c->input_blocked && c->list != TERN_LIST_CLOSING && c->pending == NULL &&
              !tls_has_input(c);
    if (events & EPOLLERR) {
        tern_loop_close(l, c, now);
        return;
    }
    if (events & (EPOLLIN | EPOLLHUP)) {
        if (reading) {
            if (!read_conn(l, c, now))
                return;
        } else if ((events & EPOLLHUP) && c->list != TERN_LIST_READY) {
            /* Hung up while paused or closing: nothing more can move. (A
             * connection with input still to serve reads the EOF later.) */
            tern_loop_close(l, c, now);
            return;
        }
    }
    if (events & EPOLLOUT)
        (void)tern_loop_flush(l, c, now);
}
