/*
 * sock.c - the socket transport: the connection layer's transport calls
 * (src/conn/transport.h) over a non-blocking TCP socket and epoll, and
 * socket events turned into layer events.
 *
 * Epoll is level-triggered, so the layer stopping early (a read budget,
 * the handshake budget) never loses a wake-up; interest changes are one
 * epoll_ctl each, made only when the layer's wishes change.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "platform/posix/bridges.h"
#include "platform/posix/loop_internal.h"
#include "platform/posix/net.h"
#include "platform/posix/pool.h"

static long sock_read(void *ctx, conn *c, uint8_t *buf, size_t cap)
{
    tern_sock *k = tern_sock_of(c);

    (void)ctx;
    for (;;) {
        ssize_t n = recv(k->fd, buf, cap, 0);

        if (n > 0)
            return (long)n;
        if (n == 0)
            return CONN_IO_EOF;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return CONN_IO_AGAIN;
        return CONN_IO_ERROR;
    }
}

static long sock_write(void *ctx, conn *c, const uint8_t *data, size_t len)
{
    tern_sock *k = tern_sock_of(c);

    (void)ctx;
    for (;;) {
        ssize_t n = send(k->fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);

        if (n >= 0)
            return (long)n;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        return CONN_IO_ERROR;
    }
}

/* TCP_QUICKACK sends an acknowledgement that is due at once (and leaves
 * delayed acknowledgements on for later: Linux falls back by itself). */
void tern_sock_ack_now(void *ctx, conn *c)
{
    tern_loop *l = ctx;
    int one = 1;

    if (setsockopt(tern_sock_of(c)->fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one) != 0)
        tern_logf(l->log, BROKER_LOG_DEBUG, "TCP_QUICKACK: %s", strerror(errno));
}

static bool sock_interest(void *ctx, conn *c, bool read, bool write)
{
    tern_loop *l = ctx;
    tern_sock *k = tern_sock_of(c);
    struct epoll_event ev;
    uint32_t want = (read ? EPOLLIN : 0u) | (write ? EPOLLOUT : 0u);

    if (want == k->events)
        return true;
    memset(&ev, 0, sizeof ev);
    ev.events = want;
    ev.data.ptr = k;
    if (epoll_ctl(l->ep, EPOLL_CTL_MOD, k->fd, &ev) != 0) {
        tern_logf(l->log, BROKER_LOG_WARN, "epoll_ctl: %s", strerror(errno));
        return false;
    }
    k->events = (uint8_t)want;
    return true;
}

/* Graceful or not, close(): the kernel still sends what the socket holds,
 * and an abort only ever follows a failed or stalled peer. close() also
 * leaves the epoll set; on Linux the descriptor is released even when
 * close reports an error, so there is nothing to retry. */
static void sock_close(void *ctx, conn *c, conn_close_how how)
{
    tern_loop *l = ctx;
    tern_sock *k = tern_sock_of(c);

    (void)how;
    /* Events of this turn's batch not handled yet must not reach k. */
    for (int i = l->next_event; i < l->nevents; i++)
        if (l->events[i].data.ptr == k)
            l->events[i].data.ptr = NULL;
    l->by_fd[k->fd] = NULL;
    l->nconns--;
    l->closes++; /* for the heap trim (heaptrim.h) */
    if (close(k->fd) != 0)
        tern_logf(l->log, BROKER_LOG_DEBUG, "close: %s", strerror(errno));
    tern_pool_free(l->pool, k);
}

void tern_sock_peer(void *ctx, const conn *c, char *buf, size_t n)
{
    const tern_sock *k = tern_sock_of((conn *)c);
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;

    (void)ctx;
    if (k->bridge) /* a socketpair: no address */
        snprintf(buf, n, "bridge link");
    else if (getpeername(k->fd, (struct sockaddr *)&ss, &len) == 0)
        tern_net_format((const struct sockaddr *)&ss, buf, n);
}

size_t tern_sock_peer_addr(void *ctx, const conn *c, uint8_t *buf, size_t cap)
{
    const tern_sock *k = tern_sock_of((conn *)c);
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;

    (void)ctx;
    if (getpeername(k->fd, (struct sockaddr *)&ss, &len) != 0 || cap < 16)
        return 0;
    if (ss.ss_family == AF_INET) {
        memcpy(buf, &((const struct sockaddr_in *)&ss)->sin_addr, 4);
        return 4;
    }
    if (ss.ss_family == AF_INET6) {
        memcpy(buf, &((const struct sockaddr_in6 *)&ss)->sin6_addr, 16);
        return 16;
    }
    return 0;
}

/* Sockets have no identity of their own, except the broker's end of a
 * bridge's local link: the bridge's (bridges.h). */
static const char *sock_identity(void *ctx, const conn *c, bool *is_operator)
{
    const tern_sock *k = tern_sock_of((conn *)c);

    if (!k->bridge)
        return NULL;
    if (is_operator != NULL)
        *is_operator = false;
    return tern_bridges_identity(ctx, k->fd);
}

/* The socket cannot tell its room, and every send goes out by itself:
 * no write_room, no push. */
const conn_transport tern_sock_transport = {
    .read = sock_read,          .short_read_drains = true,
    .write = sock_write,        .ack_now = tern_sock_ack_now,
    .interest = sock_interest,  .close = sock_close,
    .peer = tern_sock_peer,     .peer_addr = tern_sock_peer_addr,
    .identity = sock_identity,
};

void tern_loop_sock_event(tern_loop *l, tern_sock *k, uint32_t events, uint64_t now)
{
    conn *c = &k->c;

    /* A reset or error: what the peer sent before it (a TLS alert saying
     * why it gave up, say) is still read when the layer can take it. */
    if (events & (EPOLLHUP | EPOLLERR)) {
        if (!conn_hangup(l->cs, c, now))
            return;
    } else if (events & EPOLLIN) {
        if (!conn_readable(l->cs, c, now))
            return;
    }
    if (events & EPOLLOUT)
        (void)conn_writable(l->cs, c, now);
}
