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
 *
 * Admission (SPEC B7): a listener is taken from only while a new
 * connection would be served: below limits.max_connections, and for TLS
 * while a handshake slot is free (conn_handshake_room). Otherwise the
 * listener leaves the epoll set ("held") and new connections wait in
 * Linux's listen backlog; once that is full Linux drops further SYNs
 * itself (the client retransmits later), so a storm costs tern nothing
 * instead of an accept, a TLS session and a close each. A held listener
 * is re-armed at the end of the turn that freed a slot
 * (tern_loop_accept_refresh). Connections are taken oldest first (the
 * backlog is a queue); one whose client gave up while waiting is closed
 * unanswered by the connection layer (handshake_tail in src/conn/input.c).
 *
 * With I/O threads (workers >= 2, ADR-070) the threads accept, each
 * behind a ticket (worker.h, tern_wlisten): at the end of every turn this
 * thread sets each listener's limit to the connections it heard of plus
 * its room less those accepted and not yet heard of, and re-arms the
 * listeners the threads held. The listener stays one socket, so its
 * backlog (and its sizing) is the same as with one thread.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "platform/posix/loop_internal.h"
#include "conn/ws.h"
#include "platform/posix/net.h"
#include "platform/posix/pool.h"
#include "version.h"

/* Listen for ls's new connections or not: only epoll_ctl on a change. */
static void arm(tern_loop *l, listener *ls, bool on)
{
    struct epoll_event ev;

    if (ls->armed == on)
        return;
    memset(&ev, 0, sizeof ev);
    ev.events = on ? EPOLLIN : 0;
    ev.data.ptr = ls;
    if (epoll_ctl(l->ep, EPOLL_CTL_MOD, ls->fd, &ev) != 0) {
        tern_logf(l->log, BROKER_LOG_WARN, "epoll_ctl (listener): %s", strerror(errno));
        return;
    }
    ls->armed = on;
}

void tern_loop_set_accepting(tern_loop *l, bool on)
{
    l->accept_paused = !on;
    for (size_t i = 0; i < l->nlisteners; i++)
        arm(l, &l->listeners[i], on && !l->listeners[i].held);
}

/* New connections ls may take now: connections below
 * limits.max_connections (counting those still in their handshake) and,
 * for TLS, free handshake slots. */
static uint32_t room(const tern_loop *l, const listener *ls)
{
    size_t max = l->cfg.limits.max_connections;
    uint32_t r = l->nconns >= max ? 0 : (max - l->nconns > UINT32_MAX ? UINT32_MAX
                                                                      : (uint32_t)(max - l->nconns));
    if (ls->tls) {
        uint32_t h = conn_handshake_room(l->cs);

        if (h < r)
            r = h;
    }
    return r;
}

static void hold(tern_loop *l, listener *ls)
{
    if (!ls->held)
        l->accept_holds++;
    ls->held = true;
    arm(l, ls, false);
    conn_server_set_admission(l->cs, l->accept_holds, 0);
}

/* The connection layer meets a new connection. */
static bool open_conn(tern_loop *l, tern_sock *k, const listener *ls, uint64_t now)
{
    return ls->ws ? conn_open_ws(l->cs, &k->c, ls->tls, now)
                  : conn_open(l->cs, &k->c, ls->tls, now);
}

/* Once a second: the TLS listeners' backlog to LISTEN_WAIT_MS of the
 * handshakes completed in the last second (listen() again only changes
 * the backlog). Connections already queued stay. */
static void size_backlog(tern_loop *l, uint64_t now)
{
    conn_stats st;
    uint64_t done, want;

    if (now - l->backlog_ms < 1000)
        return;
    conn_server_get_stats(l->cs, &st);
    done = (st.handshakes_ok - l->backlog_ok) * 1000u / (now - l->backlog_ms);
    l->backlog_ms = now;
    l->backlog_ok = st.handshakes_ok;
    want = done * LISTEN_WAIT_MS / 1000u;
    want = want < LISTEN_BACKLOG_TLS_MIN ? LISTEN_BACKLOG_TLS_MIN
           : want > LISTEN_BACKLOG_TLS    ? LISTEN_BACKLOG_TLS
                                          : want;
    for (size_t i = 0; i < l->nlisteners; i++) {
        listener *ls = &l->listeners[i];

        if (ls->tls && ls->backlog != (int)want && listen(ls->fd, (int)want) == 0)
            ls->backlog = (int)want;
    }
}

/* workers >= 2: each listener's limit (worker.h, tern_wlisten): what
 * it reported plus its room less what every listener accepted that this
 * thread has not heard of yet; then the held listeners re-armed, and the
 * threads' holds into $SYS. A limit set from a stale count of another
 * listener's accepts admits at most what they accepted meanwhile. */
static void publish_limits(tern_loop *l)
{
    uint64_t unheard = 0, holds = 0;

    for (size_t i = 0; i < l->nlisteners; i++)
        unheard += atomic_load(&l->listeners[i].wl.taken) - l->listeners[i].reported;
    for (size_t i = 0; i < l->nlisteners; i++) {
        listener *ls = &l->listeners[i];
        uint64_t r = room(l, ls), h = atomic_load(&ls->wl.holds);

        atomic_store(&ls->wl.limit, ls->reported + (r > unheard ? r - unheard : 0));
        holds += h - ls->holds;
        ls->holds = h;
    }
    for (size_t i = 0; i < l->nworkers; i++)
        tern_worker_rearm(l->workers[i]);
    if (holds > 0) {
        l->accept_holds += holds;
        conn_server_set_admission(l->cs, l->accept_holds, 0);
    }
}

void tern_loop_accepted(tern_loop *l, tern_wconn *w, uint8_t index, uint64_t now)
{
    listener *ls;
    tern_sock *k;

    if (index >= l->nlisteners)
        tern_panic(__FILE__, __LINE__, "ACCEPTED from an unknown listener");
    ls = &l->listeners[index];
    ls->reported++;
    k = tern_pool_calloc(l->pool, sizeof *k);
    if (k == NULL)
        tern_logf(l->log, BROKER_LOG_WARN, "refused a connection: out of memory");
    tern_loop_wsock_adopt(l, k, w);
    if (k == NULL)
        return;
    if (!open_conn(l, k, ls, now)) {
        tern_loop_wsock_release(l, k, false); /* its thread closes it */
        return;
    }
    l->by_fd[k->fd] = k;
    l->nconns++;
}

void tern_loop_accept_close(tern_loop *l)
{
    for (size_t i = 0; i < l->nlisteners; i++) {
        listener *ls = &l->listeners[i];

        if (l->nworkers == 0) {
            (void)close(ls->fd); /* a listener has no data to lose */
            ls->fd = -1;
            continue;
        }
        /* The threads may be in accept4 on it: no tickets, and the socket
         * stops listening (new clients are refused) but keeps its number
         * until they are gone (tern_loop_destroy closes it). */
        atomic_store(&ls->wl.limit, 0);
        (void)shutdown(ls->fd, SHUT_RD);
    }
    if (l->nworkers == 0)
        l->nlisteners = 0;
}

void tern_loop_accept_refresh(tern_loop *l, uint64_t now)
{
    size_backlog(l, now);
    if (l->nworkers > 0) {
        publish_limits(l);
        return;
    }
    for (size_t i = 0; i < l->nlisteners; i++) {
        listener *ls = &l->listeners[i];

        if (ls->held && room(l, ls) > 0) {
            ls->held = false;
            arm(l, ls, !l->accept_paused);
        }
    }
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

static void add_conn(tern_loop *l, int fd, const struct sockaddr *peer, const listener *ls,
                     uint64_t now)
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
    k = tern_pool_calloc(l->pool, sizeof *k);
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
        tern_pool_free(l->pool, k);
        (void)close(fd);
        return;
    }
    k->events = EPOLLIN;
    if (!open_conn(l, k, ls, now)) { /* the layer said why */
        tern_pool_free(l->pool, k);
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
        int fd;

        if (room(l, ls) == 0) { /* O(1): counters, no list walked */
            hold(l, ls);
            return;
        }
        fd = accept4(ls->fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd >= 0) {
            add_conn(l, fd, (const struct sockaddr *)&ss, ls, now);
            continue;
        }
        switch (tern_net_accept_error(errno)) {
        case TERN_ACCEPT_NEXT:
            continue;
        case TERN_ACCEPT_DRAINED:
            return;
        case TERN_ACCEPT_PAUSE:
            pause_accepting(l, errno, now);
            return;
        }
    }
}

bool tern_loop_add_listener(tern_loop *l, const tern_listen_addr *a, bool tls, bool ws)
{
    char err[160], name[TERN_NET_ADDR_TEXT];
    listener *ls = &l->listeners[l->nlisteners];
    struct epoll_event ev;

    ls->kind = TERN_HANDLE_LISTENER;
    ls->tls = tls;
    ls->ws = ws;
    ls->held = false;
    ls->armed = true;
    /* TLS: from the smallest backlog, grown as handshakes complete
     * (size_backlog); while tern keeps up it takes the queue every turn. */
    ls->backlog = tls ? LISTEN_BACKLOG_TLS_MIN : LISTEN_BACKLOG;
    ls->fd = tern_net_listen(a, ls->backlog, err, sizeof err);
    if (ls->fd < 0) {
        tern_logf(l->log, BROKER_LOG_ERROR, "%s", err);
        return false;
    }
    l->nlisteners++;
    if (l->nworkers > 0) { /* the I/O threads accept (publish_limits) */
        ls->armed = false;
        ls->wl.fd = ls->fd;
        ls->wl.index = (uint8_t)(l->nlisteners - 1);
        ls->wl.tls = tls;
        ls->wl.max_fd = l->by_fd_len;
        atomic_init(&ls->wl.taken, 0);
        atomic_init(&ls->wl.limit, room(l, ls));
        atomic_init(&ls->wl.holds, 0);
        for (size_t i = 0; i < l->nworkers; i++)
            if (!tern_worker_listen(l->workers[i], &ls->wl)) {
                tern_logf(l->log, BROKER_LOG_ERROR, "out of memory");
                return false;
            }
    } else {
        memset(&ev, 0, sizeof ev);
        ev.events = EPOLLIN;
        ev.data.ptr = ls;
        if (epoll_ctl(l->ep, EPOLL_CTL_ADD, ls->fd, &ev) != 0) {
            tern_logf(l->log, BROKER_LOG_ERROR, "epoll_ctl: %s", strerror(errno));
            return false;
        }
    }
    if (tern_net_local_name(ls->fd, name, sizeof name) != 0)
        strcpy(name, "?");
    tern_logf(l->log, BROKER_LOG_INFO, "tern %s listening on %s (%s%s)", TERN_VERSION, name,
              tls ? (l->cfg.tls.require_client_cert ? "mutual TLS" : "TLS") : "plaintext",
              ws ? ", WebSocket" : "");
    return true;
}
