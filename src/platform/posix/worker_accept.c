/*
 * worker_accept.c - an I/O thread accepting new connections itself
 * (worker.h, tern_wlisten; ADR-070): a ticket from the core thread's
 * admission before each accept, the listener out of the thread's epoll
 * set while no ticket is free ("held") or after an error ("paused"), and
 * the new connection started here and announced to the core thread with
 * a message that does not wake it.
 *
 * Why here and not on the core thread: a connection accepted there
 * crossed to its I/O thread (a wake-up), its identity back (another), its
 * CONNACK out again (a third); accepted here, the core thread hears of it
 * with its identity and CONNECT, and the handshake starts one wake-up
 * earlier.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "platform/posix/net.h"
#include "platform/posix/worker_internal.h"

enum {
    /* Per readable event: then the thread's sockets get their turn (the
     * listener, level-triggered, reports the rest next turn). */
    WK_ACCEPT_PER_TURN = 64,
    WK_ACCEPT_PAUSE_MS = 100,  /* out of descriptors or memory: retry after */
    WK_ACCEPT_WARN_MS = 10000, /* at most one such warning per thread this often */
};

/* In the epoll set (a new connection wakes one thread) or out of it. */
static bool listen_ctl(tern_worker *wk, size_t slot, bool on)
{
    struct epoll_event ev;

    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN | EPOLLEXCLUSIVE;
    ev.data.u64 = slot + 1; /* worker.c tells listeners from sockets by it */
    if (on)
        return epoll_ctl(wk->ep, EPOLL_CTL_ADD, wk->listens[slot]->fd, &ev) == 0 ||
               errno == EEXIST;
    return epoll_ctl(wk->ep, EPOLL_CTL_DEL, wk->listens[slot]->fd, NULL) == 0 || errno == ENOENT;
}

bool tern_worker_listen(tern_worker *wk, tern_wlisten *ls)
{
    uint8_t slot = (uint8_t)wk->nlistens;
    tern_wmsg *m;

    if (slot == TERN_WORKER_LISTENERS)
        return false;
    wk->listens[slot] = ls;
    atomic_init(&wk->held[slot], false);
    m = tern_wmsg_new(NULL, TERN_WM_LISTEN, &slot, 1);
    if (m == NULL)
        return false;
    wk->nlistens++;
    tern_worker_post(wk, m); /* the ring orders the slot's writes before the thread's reads */
    /* Now: the core thread's first flush comes only after its first wait,
     * which nothing but a client of this listener might end. */
    (void)tern_worker_flush(wk);
    return true;
}

void tern_wk_listen(tern_worker *wk, size_t slot)
{
    if (slot != wk->listening)
        tern_panic(__FILE__, __LINE__, "I/O thread: LISTEN out of order");
    wk->listening++;
    if (!listen_ctl(wk, slot, true))
        tern_logf(wk->log, BROKER_LOG_ERROR, "I/O thread %u: epoll_ctl (listener): %s", wk->index,
                  strerror(errno));
}

static bool ticket_free(const tern_wlisten *ls)
{
    return atomic_load(&ls->taken) < atomic_load(&ls->limit);
}

static bool ticket_take(tern_wlisten *ls)
{
    uint64_t t = atomic_load(&ls->taken);

    while (t < atomic_load(&ls->limit))
        if (atomic_compare_exchange_weak(&ls->taken, &t, t + 1))
            return true;
    return false;
}

static void ticket_back(tern_wlisten *ls)
{
    (void)atomic_fetch_sub(&ls->taken, 1);
}

/*
 * No ticket: out of the epoll set, then `held`, then a second look. The
 * core thread re-arms only a listener it finds held with a ticket free,
 * after raising the limit, and both take `held` back with an exchange, so
 * exactly one of them puts it back (sequentially consistent atomics: one
 * of the two looks sees the other's store), and never before it was out.
 */
static void hold(tern_worker *wk, size_t slot)
{
    tern_wlisten *ls = wk->listens[slot];

    if (atomic_load(&wk->held[slot]))
        return; /* a stale event of this turn's batch */
    (void)listen_ctl(wk, slot, false);
    atomic_store(&wk->held[slot], true);
    (void)atomic_fetch_add(&ls->holds, 1);
    if (ticket_free(ls) && atomic_exchange(&wk->held[slot], false))
        (void)listen_ctl(wk, slot, true);
}

void tern_worker_rearm(tern_worker *wk)
{
    for (size_t i = 0; i < wk->nlistens; i++)
        if (atomic_load(&wk->held[i]) && ticket_free(wk->listens[i]) &&
            atomic_exchange(&wk->held[i], false))
            (void)listen_ctl(wk, i, true);
}

/* Out of descriptors or memory: accepting again at once would spin on the
 * same error, so the listener leaves this thread's set for a moment. */
static void pause_listener(tern_worker *wk, size_t slot, int err, uint64_t now)
{
    (void)listen_ctl(wk, slot, false);
    wk->paused_until[slot] = now + WK_ACCEPT_PAUSE_MS;
    if (err == EINVAL) /* shut down for the end of the process */
        return;
    if (wk->accept_warned_ms != 0 && now - wk->accept_warned_ms < WK_ACCEPT_WARN_MS)
        return;
    wk->accept_warned_ms = now;
    tern_logf(wk->log, BROKER_LOG_WARN,
              "I/O thread %u: accept: %s (%zu connections here); pausing new connections for "
              "%d ms", wk->index, strerror(err), wk->live, WK_ACCEPT_PAUSE_MS);
}

void tern_wk_accept_resume(tern_worker *wk, uint64_t now, uint64_t *next)
{
    for (size_t i = 0; i < wk->listening; i++) {
        uint64_t due = wk->paused_until[i];

        if (due == 0 || wk->stop)
            continue;
        if (now >= due) {
            wk->paused_until[i] = 0;
            (void)listen_ctl(wk, i, true);
        } else if (due < *next) {
            *next = due;
        }
    }
}

void tern_wk_accept_stop(tern_worker *wk)
{
    for (size_t i = 0; i < wk->listening; i++)
        (void)listen_ctl(wk, i, false);
}

/* A connection accepted on fd: its record, this thread's from now on. */
static void start(tern_worker *wk, tern_wlisten *ls, int fd, uint64_t now)
{
    tern_wconn *w;

    if ((size_t)fd >= ls->max_fd) { /* the core's tables end before it */
        tern_logf(wk->log, BROKER_LOG_DEBUG, "I/O thread %u: refused fd %d: descriptor table full",
                  wk->index, fd);
        (void)close(fd);
        ticket_back(ls);
        return;
    }
    if (tern_net_tune_accepted(fd) != 0)
        tern_logf(wk->log, BROKER_LOG_DEBUG, "TCP_NODELAY/TCP_NOTSENT_LOWAT on fd %d: %s", fd,
                  strerror(errno));
    w = calloc(1, sizeof *w);
    if (w == NULL) {
        tern_logf(wk->log, BROKER_LOG_WARN, "I/O thread %u: refused a connection: out of memory",
                  wk->index);
        (void)close(fd);
        ticket_back(ls);
        return;
    }
    w->fd = fd;
    w->wk = wk;
    atomic_init(&w->in_used, 0);
    atomic_init(&w->out_used, 0);
    atomic_init(&w->core_waits, false);
    atomic_init(&w->io_waits, false);
    /* First in the ring: everything the session says comes after it. */
    tern_wk_post_lazy(wk, w, TERN_WM_ACCEPTED, &ls->index, 1, now);
    tern_wk_adopt(wk, w, ls->tls);
}

void tern_wk_accept(tern_worker *wk, size_t slot, uint64_t now)
{
    tern_wlisten *ls = wk->listens[slot];

    if (wk->stop || wk->paused_until[slot] != 0)
        return; /* a stale event of this turn's batch */
    for (int i = 0; i < WK_ACCEPT_PER_TURN; i++) {
        int fd;

        if (!ticket_take(ls)) {
            hold(wk, slot);
            return;
        }
        fd = accept4(ls->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            start(wk, ls, fd, now);
            continue;
        }
        ticket_back(ls);
        switch (tern_net_accept_error(errno)) {
        case TERN_ACCEPT_NEXT:
            continue;
        case TERN_ACCEPT_DRAINED:
            return;
        case TERN_ACCEPT_PAUSE: /* EINVAL too, once shut down */
            pause_listener(wk, slot, errno, now);
            return;
        }
    }
}
