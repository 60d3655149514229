/*
 * loop.c - the epoll event loop of the Linux daemon.
 *
 * One turn: wait for events (no longer than the core's next deadline), give
 * connections with leftover input their next slice, read every readable
 * socket into one shared buffer and hand the bytes to the core, accept new
 * connections, tick the core when its deadline passed, then write everything
 * the turn produced (one pass over the core's dirty connections) and close
 * what the core wants closed once its output is out.
 *
 * Fairness: a connection is read for at most READ_BUDGET bytes per turn, and
 * input the core's work budget did not take waits in a per-connection buffer
 * for the next turn (epoll then does not block), so one busy client cannot
 * starve the others. Epoll is level-triggered, so stopping early never loses
 * a wake-up.
 */
#define _GNU_SOURCE

#include "platform/posix/loop.h"

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "platform/posix/conn.h"
#include "platform/posix/net.h"
#include "platform/posix/signals.h"
#include "platform/posix/version.h"

enum {
    READ_BUF_SIZE = 64 * 1024,
    READ_BUDGET = 4 * READ_BUF_SIZE, /* bytes read from one connection per turn */
    MAX_EVENTS = 256,
    LISTEN_BACKLOG = 4096,
    ACCEPT_PER_TURN = LISTEN_BACKLOG, /* one backlog's worth, then serve others */
    ACCEPT_PAUSE_MS = 100,            /* out of descriptors/memory: retry after */
    ACCEPT_WARN_MS = 10000,           /* at most one such warning this often */
    LINGER_MS = 5000,                 /* closing connection's time to take its output */
    FD_SLACK = 64,                    /* descriptors besides connections */
    MAX_LISTENERS = 1,                /* plaintext; TLS will add one */
};

typedef struct listener {
    uint8_t kind; /* TERN_HANDLE_LISTENER; first, like every epoll handle */
    int fd;       /* owned; -1 when closed */
} listener;

typedef struct signal_handle {
    uint8_t kind; /* TERN_HANDLE_SIGNAL */
    int fd;       /* owned signalfd */
} signal_handle;

struct tern_loop {
    tern_log *log; /* not owned */
    broker *b;     /* owned */
    int ep;        /* owned epoll instance */
    signal_handle sig;
    listener listeners[MAX_LISTENERS];
    size_t nlisteners;
    bool accept_paused;
    uint64_t accept_resume_ms;
    uint64_t accept_warned_ms;  /* last resource warning, for rate limiting */
    uint64_t accept_failures;   /* pauses not reported since that warning */
    uint8_t *rbuf;              /* owned, READ_BUF_SIZE: every read lands here */
    tern_conn_list lists[TERN_LIST_COUNT];
    tern_conn **by_fd;          /* owned table; owns the connections it points to */
    size_t by_fd_len;
    size_t nconns;
    int stop_signal; /* 0 while serving */
};

static uint64_t now_ms(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        tern_panic(__FILE__, __LINE__, "CLOCK_MONOTONIC unavailable");
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- connections -------------------------------------------------------- */

/* Take c off whatever work list holds it. */
static void unlist(tern_loop *l, tern_conn *c)
{
    if (c->list != TERN_LIST_NONE)
        tern_conn_list_remove(&l->lists[c->list], c);
}

/* The transport is gone or given up: tell the core and free c. */
static void close_conn(tern_loop *l, tern_conn *c, uint64_t now)
{
    unlist(l, c);
    l->by_fd[c->fd] = NULL;
    l->nconns--;
    /* close() also leaves the epoll set; on Linux the descriptor is released
     * even when close reports an error, so there is nothing to retry. */
    if (close(c->fd) != 0)
        tern_logf(l->log, BROKER_LOG_DEBUG, "close: %s", strerror(errno));
    broker_closed(l->b, c->bc, now);
    tern_conn_free(c);
}

/* Register the epoll interest c's state calls for: input unless paused or
 * closing, output while the core holds unwritten bytes. */
static bool set_interest(tern_loop *l, tern_conn *c)
{
    struct epoll_event ev;
    uint32_t want = 0;

    if (!c->input_blocked && c->list != TERN_LIST_CLOSING)
        want |= EPOLLIN;
    if (broker_out_pending(c->bc) > 0)
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
    return set_interest(l, c);
}

/* The core wants c closed: stop reading, forget unread input and give the
 * output LINGER_MS to leave. */
static bool enter_closing(tern_loop *l, tern_conn *c, uint64_t now)
{
    if (c->list == TERN_LIST_CLOSING)
        return true;
    unlist(l, c);
    tern_conn_drop_input(c);
    c->close_by_ms = now + LINGER_MS;
    tern_conn_list_push(&l->lists[TERN_LIST_CLOSING], c);
    return set_interest(l, c);
}

/* After a broker_input call on c (whatever it left is already in
 * c->pending), decide where c goes next. False when c was closed. */
static bool after_input(tern_loop *l, tern_conn *c, uint64_t now)
{
    bool ok = true;

    if (broker_wants_close(c->bc)) {
        /* The dirty pass writes what is left and closes it. */
        ok = enter_closing(l, c, now);
    } else if (c->pending != NULL) {
        if (broker_input_paused(c->bc))
            ok = block_input(l, c);
        else if (c->list != TERN_LIST_READY)
            tern_conn_list_push(&l->lists[TERN_LIST_READY], c);
    }
    if (!ok)
        close_conn(l, c, now);
    return ok;
}

/* Read c until EAGAIN, EOF or its budget. False when c was closed. */
static bool read_conn(tern_loop *l, tern_conn *c, uint64_t now)
{
    size_t budget = READ_BUDGET;

    while (budget > 0) {
        size_t want = budget < READ_BUF_SIZE ? budget : READ_BUF_SIZE;
        size_t taken;
        ssize_t n;

        if (broker_input_paused(c->bc)) {
            if (!block_input(l, c)) {
                close_conn(l, c, now);
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
            close_conn(l, c, now);
            return false;
        }
        if (n == 0) {
            close_conn(l, c, now); /* peer closed */
            return false;
        }
        budget -= (size_t)n;
        taken = broker_input(l->b, c->bc, l->rbuf, (size_t)n, now);
        if (taken < (size_t)n && !broker_wants_close(c->bc) &&
            !tern_conn_keep_input(c, l->rbuf + taken, (size_t)n - taken)) {
            tern_logf(l->log, BROKER_LOG_WARN, "out of memory holding input; closing");
            close_conn(l, c, now);
            return false;
        }
        if (c->pending != NULL || broker_wants_close(c->bc))
            return after_input(l, c, now);
        if ((size_t)n < want)
            return true; /* short read: the socket is drained */
    }
    return true;
}

/* Give c's leftover input to the core once more. */
static void serve_pending(tern_loop *l, tern_conn *c, uint64_t now)
{
    size_t taken;

    if (broker_input_paused(c->bc)) {
        if (!block_input(l, c))
            close_conn(l, c, now);
        return;
    }
    taken = broker_input(l->b, c->bc, c->pending + c->pending_off, c->pending_len, now);
    tern_conn_input_taken(c, taken);
    (void)after_input(l, c, now);
}

/* Each connection that was waiting with leftover input gets one slice;
 * those still not done go to the back of the list for the next turn. */
static void serve_ready(tern_loop *l, uint64_t now)
{
    size_t n = l->lists[TERN_LIST_READY].count;

    while (n-- > 0) {
        tern_conn *c = tern_conn_list_pop(&l->lists[TERN_LIST_READY]);

        if (c == NULL)
            break;
        serve_pending(l, c, now);
    }
}

/* Write what the core has for c. False when c was closed. */
static bool flush_conn(tern_loop *l, tern_conn *c, uint64_t now)
{
    for (;;) {
        size_t len = 0;
        const uint8_t *out = broker_out_peek(c->bc, &len);
        ssize_t n;

        if (len == 0)
            break;
        n = send(c->fd, out, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            tern_logf(l->log, BROKER_LOG_DEBUG, "write: %s", strerror(errno));
            close_conn(l, c, now);
            return false;
        }
        broker_out_consume(l->b, c->bc, (size_t)n);
        if ((size_t)n < len)
            break; /* socket buffer full: wait for EPOLLOUT */
    }
    if (broker_wants_close(c->bc)) {
        bool lingering = broker_out_pending(c->bc) > 0 && enter_closing(l, c, now) &&
                    set_interest(l, c);

        if (!lingering)
            close_conn(l, c, now); /* flushed (or cannot wait): done */
        return lingering;
    }
    if (c->input_blocked && !broker_input_paused(c->bc)) {
        tern_logf(l->log, BROKER_LOG_DEBUG, "fd %d: output drained, input resumed", c->fd);
        c->input_blocked = false;
        if (c->pending != NULL && c->list == TERN_LIST_NONE)
            tern_conn_list_push(&l->lists[TERN_LIST_READY], c);
    }
    if (!set_interest(l, c)) {
        close_conn(l, c, now);
        return false;
    }
    return true;
}

/* Write everything this turn produced. */
static void flush_dirty(tern_loop *l, uint64_t now)
{
    broker_conn *bc;

    while ((bc = broker_next_dirty(l->b)) != NULL)
        (void)flush_conn(l, broker_conn_ctx(bc), now);
}

/* Closing connections whose peer never took the last output. The list is in
 * deadline order because every entry gets the same linger. */
static void expire_closing(tern_loop *l, uint64_t now)
{
    tern_conn_list *closing = &l->lists[TERN_LIST_CLOSING];

    while (closing->head != NULL && closing->head->close_by_ms <= now) {
        tern_logf(l->log, BROKER_LOG_DEBUG, "closing fd %d: output not taken in %d ms",
                  closing->head->fd, LINGER_MS);
        close_conn(l, closing->head, now);
    }
}

static void conn_event(tern_loop *l, tern_conn *c, uint32_t events, uint64_t now)
{
    bool reading = !c->input_blocked && c->list != TERN_LIST_CLOSING && c->pending == NULL;

    if (events & EPOLLERR) {
        close_conn(l, c, now);
        return;
    }
    if (events & (EPOLLIN | EPOLLHUP)) {
        if (reading) {
            if (!read_conn(l, c, now))
                return;
        } else if ((events & EPOLLHUP) && c->list != TERN_LIST_READY) {
            /* Hung up while paused or closing: nothing more can move. (A
             * connection with input still to serve reads the EOF later.) */
            close_conn(l, c, now);
            return;
        }
    }
    if (events & EPOLLOUT)
        (void)flush_conn(l, c, now);
}

/* ---- accepting ---------------------------------------------------------- */

static void set_accepting(tern_loop *l, bool on)
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

/* Out of descriptors or memory: accepting again at once would spin on the
 * same error, so leave new connections in the backlog for a moment. */
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
    set_accepting(l, false);
}

static void add_conn(tern_loop *l, int fd, const struct sockaddr *peer, uint64_t now)
{
    char peer_text[TERN_NET_ADDR_TEXT];
    broker_conn_info info = {peer_text, NULL, false};
    struct epoll_event ev;
    tern_conn *c = NULL;

    tern_net_format(peer, peer_text, sizeof peer_text);
    if ((size_t)fd >= l->by_fd_len) {
        tern_logf(l->log, BROKER_LOG_DEBUG, "refused %s: descriptor table full", peer_text);
        goto refuse;
    }
    if (tern_net_tune_accepted(fd) != 0)
        tern_logf(l->log, BROKER_LOG_DEBUG, "TCP_NODELAY on %s: %s", peer_text, strerror(errno));
    c = tern_conn_new(fd);
    if (c == NULL) {
        tern_logf(l->log, BROKER_LOG_WARN, "refused %s: out of memory", peer_text);
        goto refuse;
    }
    c->bc = broker_open(l->b, c, &info, now);
    if (c->bc == NULL) {
        tern_logf(l->log, BROKER_LOG_DEBUG, "closing %s: refused by the core", peer_text);
        goto refuse;
    }
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN;
    ev.data.ptr = c;
    if (epoll_ctl(l->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
        tern_logf(l->log, BROKER_LOG_WARN, "epoll_ctl (new connection): %s", strerror(errno));
        broker_closed(l->b, c->bc, now);
        goto refuse;
    }
    c->events = EPOLLIN;
    l->by_fd[fd] = c;
    l->nconns++;
    return;

refuse:
    tern_conn_free(c);
    (void)close(fd); /* nothing was ever written to it */
}

static void accept_ready(tern_loop *l, listener *ls, uint64_t now)
{
    for (int i = 0; i < ACCEPT_PER_TURN; i++) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        int fd = accept4(ls->fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd >= 0) {
            add_conn(l, fd, (const struct sockaddr *)&ss, now);
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

/* ---- signals and the turn ---------------------------------------------- */

static void signal_event(tern_loop *l)
{
    int sig;

    while ((sig = tern_signals_read(l->sig.fd)) > 0)
        l->stop_signal = sig;
    if (sig < 0) {
        tern_logf(l->log, BROKER_LOG_ERROR, "reading signals: %s", strerror(errno));
        l->stop_signal = SIGTERM;
    }
}

static void dispatch(tern_loop *l, const struct epoll_event *ev, uint64_t now)
{
    uint8_t kind = *(const uint8_t *)ev->data.ptr;

    switch (kind) {
    case TERN_HANDLE_CONN:
        conn_event(l, ev->data.ptr, ev->events, now);
        break;
    case TERN_HANDLE_LISTENER:
        accept_ready(l, ev->data.ptr, now);
        break;
    case TERN_HANDLE_SIGNAL:
        signal_event(l);
        break;
    default:
        tern_panic(__FILE__, __LINE__, "epoll event with an unknown handle");
    }
}

/* How long epoll may sleep: until the earliest of the core's deadline, a
 * linger expiry and the end of an accept pause; not at all while input is
 * waiting to be served. */
static int wait_timeout(const tern_loop *l, uint64_t now)
{
    uint64_t deadline = broker_next_deadline(l->b);
    const tern_conn *closing = l->lists[TERN_LIST_CLOSING].head;

    if (l->lists[TERN_LIST_READY].count > 0)
        return 0;
    if (closing != NULL && closing->close_by_ms < deadline)
        deadline = closing->close_by_ms;
    if (l->accept_paused && l->accept_resume_ms < deadline)
        deadline = l->accept_resume_ms;
    if (deadline == UINT64_MAX)
        return -1;
    if (deadline <= now)
        return 0;
    return deadline - now > INT_MAX ? INT_MAX : (int)(deadline - now);
}

static const char *signal_name(int sig)
{
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "signal";
}

/* Stop accepting and hand the sockets what they take without waiting. */
static void wind_down(tern_loop *l)
{
    uint64_t now = now_ms();

    tern_logf(l->log, BROKER_LOG_INFO, "shutting down (%s, %zu connections)",
              signal_name(l->stop_signal), l->nconns);
    for (size_t i = 0; i < l->nlisteners; i++) {
        (void)close(l->listeners[i].fd); /* a listener has no data to lose */
        l->listeners[i].fd = -1;
    }
    l->nlisteners = 0;
    flush_dirty(l, now);
    for (size_t fd = 0; fd < l->by_fd_len; fd++) {
        tern_conn *c = l->by_fd[fd];

        if (c != NULL && broker_out_pending(c->bc) > 0)
            (void)flush_conn(l, c, now);
    }
}

int tern_loop_run(tern_loop *l)
{
    struct epoll_event events[MAX_EVENTS];
    int rc = 0;

    while (l->stop_signal == 0) {
        uint64_t now = now_ms();
        int n = epoll_wait(l->ep, events, MAX_EVENTS, wait_timeout(l, now));

        if (n < 0) {
            if (errno == EINTR)
                continue;
            tern_logf(l->log, BROKER_LOG_ERROR, "epoll_wait: %s", strerror(errno));
            l->stop_signal = SIGTERM;
            rc = 1;
            break;
        }
        now = now_ms();
        serve_ready(l, now);
        for (int i = 0; i < n; i++)
            dispatch(l, &events[i], now);
        if (l->accept_paused && now >= l->accept_resume_ms)
            set_accepting(l, true);
        if (now >= broker_next_deadline(l->b))
            broker_tick(l->b, now);
        flush_dirty(l, now);
        expire_closing(l, now);
    }
    wind_down(l);
    return rc;
}

/* ---- set-up and tear-down ---------------------------------------------- */

/* Each connection is a descriptor; the usual soft limit (1024) would cap
 * the broker far below max_connections, so take the hard limit. */
static size_t raise_fd_limit(tern_log *log)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        tern_logf(log, BROKER_LOG_WARN, "getrlimit: %s", strerror(errno));
        return 1024;
    }
    if (rl.rlim_cur < rl.rlim_max) {
        rlim_t old = rl.rlim_cur;

        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            tern_logf(log, BROKER_LOG_WARN, "raising the open-file limit: %s", strerror(errno));
            rl.rlim_cur = old;
        }
    }
    return rl.rlim_cur > (rlim_t)INT_MAX ? (size_t)INT_MAX : (size_t)rl.rlim_cur;
}

static bool epoll_add(tern_loop *l, int fd, void *handle)
{
    struct epoll_event ev;

    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN;
    ev.data.ptr = handle;
    if (epoll_ctl(l->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
        tern_logf(l->log, BROKER_LOG_ERROR, "epoll_ctl: %s", strerror(errno));
        return false;
    }
    return true;
}

static bool add_listener(tern_loop *l, const tern_listen_addr *a, const char *kind)
{
    char err[160], name[TERN_NET_ADDR_TEXT];
    listener *ls = &l->listeners[l->nlisteners];

    ls->kind = TERN_HANDLE_LISTENER;
    ls->fd = tern_net_listen(a, LISTEN_BACKLOG, err, sizeof err);
    if (ls->fd < 0) {
        tern_logf(l->log, BROKER_LOG_ERROR, "%s", err);
        return false;
    }
    l->nlisteners++;
    if (!epoll_add(l, ls->fd, ls))
        return false;
    if (tern_net_local_name(ls->fd, name, sizeof name) != 0)
        strcpy(name, "?");
    tern_logf(l->log, BROKER_LOG_INFO, "tern %s listening on %s (%s)", TERN_VERSION, name, kind);
    return true;
}

tern_loop *tern_loop_create(const tern_config *cfg, tern_log *log)
{
    tern_loop *l = calloc(1, sizeof *l);
    broker_config bcfg;
    size_t fd_limit;

    if (l == NULL) {
        tern_logf(log, BROKER_LOG_ERROR, "out of memory");
        return NULL;
    }
    l->log = log;
    l->ep = -1;
    l->sig.kind = TERN_HANDLE_SIGNAL;
    l->sig.fd = -1;
    for (int i = TERN_LIST_NONE; i < TERN_LIST_COUNT; i++)
        tern_conn_list_init(&l->lists[i], (tern_conn_list_id)i);

    fd_limit = raise_fd_limit(log);
    l->by_fd_len = (size_t)cfg->limits.max_connections + FD_SLACK;
    if (l->by_fd_len > fd_limit) {
        tern_logf(log, BROKER_LOG_WARN,
                  "the open-file limit (%zu) allows fewer connections than "
                  "limits.max_connections (%u)",
                  fd_limit, cfg->limits.max_connections);
        l->by_fd_len = fd_limit;
    }
    /* Pages of the table that no descriptor reaches are never touched. */
    l->by_fd = calloc(l->by_fd_len, sizeof l->by_fd[0]);
    l->rbuf = malloc(READ_BUF_SIZE);
    if (l->by_fd == NULL || l->rbuf == NULL) {
        tern_logf(log, BROKER_LOG_ERROR, "out of memory");
        goto fail;
    }
    l->ep = epoll_create1(EPOLL_CLOEXEC);
    if (l->ep < 0) {
        tern_logf(log, BROKER_LOG_ERROR, "epoll_create1: %s", strerror(errno));
        goto fail;
    }
    l->sig.fd = tern_signals_open();
    if (l->sig.fd < 0) {
        tern_logf(log, BROKER_LOG_ERROR, "signalfd: %s", strerror(errno));
        goto fail;
    }
    if (!epoll_add(l, l->sig.fd, &l->sig))
        goto fail;

    memset(&bcfg, 0, sizeof bcfg);
    tern_config_to_broker(cfg, &bcfg);
    bcfg.log = tern_log_broker;
    bcfg.log_ctx = log;
    bcfg.version = TERN_VERSION;
    l->b = broker_create(&bcfg, now_ms());
    if (l->b == NULL) {
        tern_logf(log, BROKER_LOG_ERROR, "cannot create the broker core (out of memory?)");
        goto fail;
    }
    if (cfg->listener_plain.family != TERN_ADDR_NONE &&
        !add_listener(l, &cfg->listener_plain, "plaintext"))
        goto fail;
    return l;

fail:
    tern_loop_destroy(l);
    return NULL;
}

void tern_loop_destroy(tern_loop *l)
{
    if (l == NULL)
        return;
    /* Connections are dropped without broker_closed: the core is going away
     * and must not publish wills for a shutdown. */
    for (size_t fd = 0; l->by_fd != NULL && fd < l->by_fd_len; fd++) {
        tern_conn *c = l->by_fd[fd];

        if (c != NULL) {
            (void)close(c->fd); /* output already flushed as far as it goes */
            tern_conn_free(c);
        }
    }
    for (size_t i = 0; i < l->nlisteners; i++)
        (void)close(l->listeners[i].fd);
    if (l->b != NULL)
        broker_destroy(l->b);
    if (l->sig.fd >= 0)
        (void)close(l->sig.fd);
    if (l->ep >= 0)
        (void)close(l->ep);
    free(l->rbuf);
    free(l->by_fd);
    free(l);
}
