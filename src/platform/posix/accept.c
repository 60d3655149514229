/*
 * accept.c - listening sockets and new connections.
 *
 * A new connection gets its socket record and is handed to the
 * connection layer (src/conn): a plaintext connection meets the core at
 * once, a TLS connection once its handshake has proved who the client is.
 *
 * Out of descriptors or memory, accepting again at once would spin on the
 * same error, so new connections are left in the backlog for a moment (and
 * the warning is rate-limited).
 */
#define _GNU_SOURCE

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "platform/posix/loop_internal.h"
#include "platform/posix/net.h"
#include "version.h"

void tern_loop_set_accepting(tern_loop *l, bool on)
{
    for (size_t i = 0; i < l->nlisteners; i++) {
        struct epoll_event ev;

        memset(&ev, 0, sizeof ev);
        ev.events = on ? EPOLLIN : 0;
        ev.data.ptr = &l->listeners[i];
        if (epoll_ctl(l->ep, EPOLL_CTL_MOD, l->listeners[i].fd, &ev) != 0)
            tern_logf(l->log, BROKER_LOG_WARN, "epoll_ctl (listener): %s", strerror(errno));
    }
    l->accept_paused = !on;
}

static void pause_accepting(tern_loop *l, int err, uint64_t now)
{
    if (l->accept_warned_ms == 0 || now - l->accept_warned_ms >= ACCEPT_WARN_MS) {
        tern_logf(l->log, BROKER_LOG_WARN,
                  "accept: %s (%zu connections open); pausing new connections for %d ms "
                  "(%llu more pauses since the last report)",
                  strerror(err), l->nconns, ACCEPT_PAUSE_MS,
                  (unsigned long long)l->accept_failures);
        l->accept_warned_ms = now;
        l->accept_failures = 0;
    } else {
        l->accept_failures++;
    }
    l->accept_resume_ms = now + ACCEPT_PAUSE_MS;
    tern_loop_set_accepting(l, false);
}

static void add_conn(tern_loop *l, int fd, const struct sockaddr *peer, bool tls, uint64_t now)
{
    char peer_text[TERN_NET_ADDR_TEXT];
    struct epoll_event ev;
    tern_sock *k;

    if ((size_t)fd >= l->by_fd_len) {
        tern_net_format(peer, peer_text, sizeof peer_text);
        tern_logf(l->log, BROKER_LOG_DEBUG, "refused %s: descriptor table full", peer_text);
        (void)close(fd);
        return;
    }
    if (tern_net_tune_accepted(fd) != 0)
        tern_logf(l->log, BROKER_LOG_DEBUG, "TCP_NODELAY/TCP_NOTSENT_LOWAT on fd %d: %s", fd, strerror(errno));
    k = calloc(1, sizeof *k);
    if (k == NULL) {
        tern_net_format(peer, peer_text, sizeof peer_text);
        tern_logf(l->log, BROKER_LOG_WARN, "refused %s: out of memory", peer_text);
        (void)close(fd);
        return;
    }
    k->kind = TERN_HANDLE_CONN;
    k->fd = fd;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN;
    ev.data.ptr = k;
    if (epoll_ctl(l->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
        tern_logf(l->log, BROKER_LOG_WARN, "epoll_ctl (new connection): %s", strerror(errno));
        free(k);
        (void)close(fd);
        return;
    }
    k->events = EPOLLIN;
    if (!conn_open(l->cs, &k->c, tls, now)) { /* the layer said why */
        free(k);
        (void)close(fd); /* nothing was ever written to it; leaves the epoll set */
        return;
    }
    l->by_fd[fd] = k;
    l->nconns++;
}

void tern_loop_accept(tern_loop *l, listener *ls, uint64_t now)
{
    for (int i = 0; i < ACCEPT_PER_TURN; i++) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        int fd = accept4(ls->fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd >= 0) {
            add_conn(l, fd, (const struct sockaddr *)&ss, ls->tls, now);
            continue;
        }
        switch (errno) {
        case EINTR:
        case ECONNABORTED: /* the peer gave up while queued */
        case EPROTO:
        case EPERM: /* firewall rules */
            continue;
        case EAGAIN:
#if EWOULDBLOCK != EAGAIN
        case EWOULDBLOCK:
#endif
            return;
        default: /* EMFILE, ENFILE, ENOBUFS, ENOMEM and anything unexpected */
            pause_accepting(l, errno, now);
            return;
        }
    }
}

bool tern_loop_add_listener(tern_loop *l, const tern_listen_addr *a, bool tls)
{
    char err[160], name[TERN_NET_ADDR_TEXT];
    listener *ls = &l->listeners[l->nlisteners];
    struct epoll_event ev;

    ls->kind = TERN_HANDLE_LISTENER;
    ls->tls = tls;
    ls->fd = tern_net_listen(a, LISTEN_BACKLOG, err, sizeof err);
    if (ls->fd < 0) {
        tern_logf(l->log, BROKER_LOG_ERROR, "%s", err);
        return false;
    }
    l->nlisteners++;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN;
    ev.data.ptr = ls;
    if (epoll_ctl(l->ep, EPOLL_CTL_ADD, ls->fd, &ev) != 0) {
        tern_logf(l->log, BROKER_LOG_ERROR, "epoll_ctl: %s", strerror(errno));
        return false;
    }
    if (tern_net_local_name(ls->fd, name, sizeof name) != 0)
        strcpy(name, "?");
    tern_logf(l->log, BROKER_LOG_INFO, "tern %s listening on %s (%s)", TERN_VERSION, name,
              tls ? (l->cfg.tls.require_client_cert ? "mutual TLS" : "TLS") : "plaintext");
    return true;
}
