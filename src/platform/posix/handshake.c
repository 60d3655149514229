/*
 * handshake.c - TLS connections before the core knows them.
 *
 * An accepted connection on the TLS listener gets a TLS session and a place
 * on the handshake list, whose order is deadline order (every connection
 * gets the same tls.handshake_timeout). Each readable event is one
 * handshake step: read what arrived, let the adapter answer, send the
 * answer. Steps are budgeted per loop turn (HANDSHAKE_STEPS_PER_TURN):
 * a connection over budget is left readable in the kernel and epoll
 * reports it again next turn, so a flood of handshakes costs established
 * clients at most one budget of public-key work per turn.
 *
 * When the handshake succeeds the core is told about the connection, with
 * the certificate's identity and operator role (broker_conn_info), and any
 * MQTT bytes that came with the client's Finished go straight to it. When
 * it fails, or the deadline passes, only this connection is closed, with a
 * log line saying why (after one try to send the alert that tells the
 * client).
 */
#define _GNU_SOURCE

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "platform/posix/loop_internal.h"

bool tern_loop_handshake_start(tern_loop *l, tern_conn *c, const char *peer, uint64_t now)
{
    c->tls = tern_tls_server_conn(l->tls);
    c->peer = strdup(peer);
    if (c->tls == NULL || c->peer == NULL)
        return false;
    c->deadline_ms = now + (uint64_t)l->cfg.tls.handshake_timeout_s * 1000u;
    tern_conn_list_push(&l->lists[TERN_LIST_HANDSHAKE], c);
    return true;
}

/* Alerts a client sends when it does not accept the server's certificate. */
static bool refuses_our_certificate(int alert)
{
    return alert == 42 || alert == 43 || alert == 45 || alert == 46 || alert == 48;
}

/* Why the handshake failed, in one line, then close. */
static void handshake_failed(tern_loop *l, tern_conn *c, uint64_t now)
{
    tern_tls_failure f = tern_tls_failure_of(c->tls);
    int alert = tern_tls_peer_alert(c->tls);

    if (f == TERN_TLS_FAIL_PEER_ALERT && alert >= 0)
        tern_logf(l->log, BROKER_LOG_INFO, "TLS handshake with %s failed: %s (%s)%s", c->peer,
                  tern_tls_failure_text(f), tern_tls_alert_text(alert),
                  refuses_our_certificate(alert)
                      ? ": the client does not accept tls.cert (does it trust the CA that "
                        "issued it, and the name it connects to?)"
                      : "");
    else
        tern_logf(l->log, BROKER_LOG_INFO, "TLS handshake with %s failed: %s (%d)", c->peer,
                  tern_tls_failure_text(f), tern_tls_error_code(c->tls));
    /* The alert that tells the client why: one try, no waiting. */
    if (tern_tls_out_pending(c->tls) > 0 && !tern_loop_send_tls(l, c, now))
        return;
    tern_loop_close(l, c, now);
}

/* The handshake is done: introduce the client to the core and hand over
 * the first plaintext. */
static void handshake_done(tern_loop *l, tern_conn *c, size_t plain, uint64_t now)
{
    const char *identity = tern_tls_identity(c->tls);
    broker_conn_info info;

    tern_conn_list_remove(&l->lists[TERN_LIST_HANDSHAKE], c);
    info.peer = c->peer;
    info.identity = identity;
    info.is_operator = tern_tls_is_operator(c->tls);
    c->bc = broker_open(l->b, c, &info, now);
    if (c->bc == NULL) {
        tern_logf(l->log, BROKER_LOG_DEBUG, "closing %s: refused by the core", c->peer);
        tern_loop_close(l, c, now);
        return;
    }
    tern_logf(l->log, BROKER_LOG_INFO, "TLS client %s: identity %s%s (%s, %s)", c->peer,
              identity != NULL ? identity : "none (no certificate)",
              info.is_operator ? ", operator" : "", tern_tls_version_name(c->tls),
              tern_tls_cipher_name(c->tls));
    free(c->peer); /* the core has its own copy */
    c->peer = NULL;
    if (!tern_loop_deliver(l, c, l->pbuf, plain, now))
        return;
    /* Everything the TLS adapter still holds waits on the ready list
     * (deliver put it there); the socket is read on the next event. */
    (void)tern_loop_set_interest(l, c);
}

void tern_loop_handshake_event(tern_loop *l, tern_conn *c, uint32_t events, uint64_t now)
{
    size_t plain = 0;
    tern_tls_state st;
    ssize_t n;

    if (events & EPOLLOUT) {
        if (!tern_loop_flush(l, c, now))
            return;
    }
    if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
        return;
    if (l->handshake_steps == 0)
        return; /* over this turn's budget: still readable next turn */
    do {
        n = recv(c->fd, l->rbuf, READ_BUF_SIZE, 0);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return;
    if (n <= 0) {
        tern_logf(l->log, BROKER_LOG_DEBUG, "%s closed during the TLS handshake%s%s", c->peer,
                  n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
        tern_loop_close(l, c, now);
        return;
    }
    l->handshake_steps--;
    st = tern_tls_read(c->tls, l->rbuf, (size_t)n, l->pbuf, PLAIN_BUF_SIZE, &plain);
    switch (st) {
    case TERN_TLS_HANDSHAKING:
        (void)tern_loop_flush(l, c, now); /* the server's flight */
        break;
    case TERN_TLS_ESTABLISHED:
        /* TLS 1.2: the server's Finished is still queued. */
        if (tern_loop_send_tls(l, c, now))
            handshake_done(l, c, plain, now);
        break;
    case TERN_TLS_FAILED:
        handshake_failed(l, c, now);
        break;
    case TERN_TLS_PEER_CLOSED:
        tern_loop_close(l, c, now);
        break;
    }
}

void tern_loop_expire_handshakes(tern_loop *l, uint64_t now)
{
    tern_conn_list *hs = &l->lists[TERN_LIST_HANDSHAKE];

    while (hs->head != NULL && hs->head->deadline_ms <= now) {
        tern_logf(l->log, BROKER_LOG_INFO, "TLS handshake with %s timed out after %u s",
                  hs->head->peer, l->cfg.tls.handshake_timeout_s);
        tern_loop_close(l, hs->head, now);
    }
}
