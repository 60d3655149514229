/*
 * wsock.c - the core thread's side of connections whose sockets belong to
 * I/O threads (`workers = N`, worker.h, ADR-061): the connection layer's
 * transport calls over the rings, and the I/O threads' messages turned
 * into layer events. The threads run the TLS sessions (ADR-065): the
 * transport says so (runs_tls), and the outcome of a handshake reaches the
 * layer as conn_tls_established or conn_tls_failed.
 *
 * The transport keeps epoll's level-triggered promise: a connection that
 * wants input and has some (or its end) waiting, or wants to write and
 * has output credit, is on the ready list and gets its event every turn
 * until that is no longer so (tern_loop_wsock_turn).
 */
#define _GNU_SOURCE

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "platform/posix/loop_internal.h"
#include "platform/posix/pool.h"
#include "platform/posix/worker.h"

static tern_wconn *wconn_of(const tern_loop *l, conn *c)
{
    return l->wby_fd[tern_sock_of(c)->fd];
}

static bool has_room(tern_wconn *w)
{
    return atomic_load(&w->out_used) < TERN_WORKER_OUT_CREDIT;
}

static bool wants_event(tern_wconn *w)
{
    if (w->closing)
        return false;
    if (w->hup)
        return true;
    if (w->want_read && (w->in_head != NULL || w->eof))
        return true;
    return w->want_write && has_room(w);
}

static void ready_add(tern_loop *l, tern_wconn *w)
{
    if (w->on_ready || !wants_event(w))
        return;
    if (l->wready_len == l->wready_cap) {
        size_t cap = l->wready_cap == 0 ? 64 : l->wready_cap * 2;
        tern_wconn **p = realloc(l->wready, cap * sizeof *p);

        if (p == NULL)
            tern_panic(__FILE__, __LINE__, "out of memory (ready list)");
        l->wready = p;
        l->wready_cap = cap;
    }
    w->on_ready = true;
    l->wready[l->wready_len++] = w;
}

static void post(tern_loop *l, tern_wconn *w, tern_wmsg_kind kind, const uint8_t *data, size_t len)
{
    tern_wmsg *m = tern_wmsg_new(w, kind, data, len);

    if (m == NULL)
        tern_panic(__FILE__, __LINE__, "out of memory (I/O thread message)");
    tern_worker_post(w->wk, m);
    (void)l;
}

static long wsock_read(void *ctx, conn *c, uint8_t *buf, size_t cap)
{
    tern_loop *l = ctx;
    tern_wconn *w = wconn_of(l, c);
    size_t got = 0;

    while (got < cap && w->in_head != NULL) {
        tern_wmsg *m = w->in_head;
        size_t n = m->len - m->off;

        if (n > cap - got)
            n = cap - got;
        memcpy(buf + got, m->data + m->off, n);
        got += n;
        m->off += (uint32_t)n;
        if (m->off == m->len) {
            w->in_head = m->next;
            if (w->in_head == NULL)
                w->in_tail = NULL;
            free(m);
        }
    }
    if (got > 0) {
        (void)atomic_fetch_sub(&w->in_used, (uint32_t)got);
        if (atomic_exchange(&w->io_waits, false))
            post(l, w, TERN_WM_RESUME, NULL, 0);
        return (long)got;
    }
    if (w->err)
        return CONN_IO_ERROR;
    if (w->eof || w->hup)
        return CONN_IO_EOF;
    return CONN_IO_AGAIN;
}

static long wsock_write(void *ctx, conn *c, const uint8_t *data, size_t len)
{
    tern_loop *l = ctx;
    tern_wconn *w = wconn_of(l, c);
    uint32_t used;
    size_t n;

    if (w->err || w->hup)
        return CONN_IO_ERROR;
    used = atomic_load(&w->out_used);
    n = used < TERN_WORKER_OUT_CREDIT ? TERN_WORKER_OUT_CREDIT - used : 0;
    if (n > len)
        n = len;
    if (n > 0) {
        (void)atomic_fetch_add(&w->out_used, (uint32_t)n);
        post(l, w, TERN_WM_DATA, data, n);
    }
    if (n < len) {
        /* Short: the I/O thread sends ROOM once credit comes back; it may
         * have come back already (then the ready list has it). */
        atomic_store(&w->core_waits, true);
        if (has_room(w) && atomic_exchange(&w->core_waits, false))
            ready_add(l, w);
    }
    return (long)n;
}

static bool wsock_interest(void *ctx, conn *c, bool read, bool write)
{
    tern_loop *l = ctx;
    tern_wconn *w = wconn_of(l, c);

    w->want_read = read;
    w->want_write = write;
    ready_add(l, w);
    return true;
}

static void free_input(tern_wconn *w)
{
    while (w->in_head != NULL) {
        tern_wmsg *m = w->in_head;

        w->in_head = m->next;
        free(m);
    }
    w->in_tail = NULL;
}

/* The socket is the I/O thread's: it closes it (after the output it
 * holds, within the linger, when graceful) and answers FREED, when the
 * record goes. */
static void wsock_close(void *ctx, conn *c, conn_close_how how)
{
    tern_loop *l = ctx;
    tern_sock *k = tern_sock_of(c);

    l->by_fd[k->fd] = NULL;
    l->nconns--;
    l->closes++;
    tern_loop_wsock_release(l, k, how == CONN_CLOSE_GRACEFUL);
}

void tern_loop_wsock_release(tern_loop *l, tern_sock *k, bool graceful)
{
    tern_wconn *w = l->wby_fd[k->fd];

    /* The descriptor stays the I/O thread's until it closes it, so no new
     * connection takes its slot before FREED; the record goes with that. */
    l->wby_fd[k->fd] = NULL;
    w->closing = true;
    free_input(w);
    if (w->on_ready) { /* the record goes at FREED: off the ready list now */
        size_t i = 0;

        while (l->wready[i] != w)
            i++;
        memmove(l->wready + i, l->wready + i + 1, (l->wready_len - i - 1) * sizeof l->wready[0]);
        l->wready_len--;
        w->on_ready = false;
    }
    post(l, w, graceful ? TERN_WM_CLOSE : TERN_WM_ABORT, NULL, 0);
}

const conn_transport tern_wsock_transport = {
    .read = wsock_read,         .short_read_drains = true,
    .write = wsock_write,       .ack_now = tern_sock_ack_now,
    .interest = wsock_interest, .close = wsock_close,
    .peer = tern_sock_peer,     .peer_addr = tern_sock_peer_addr,
    .runs_tls = true,
};

void tern_loop_wsock_adopt(tern_loop *l, tern_sock *k, tern_wconn *w)
{
    w->owner = k;
    if (k == NULL) { /* refused: the thread closes it and FREED comes back */
        w->closing = true;
        post(l, w, TERN_WM_ABORT, NULL, 0);
        return;
    }
    k->kind = TERN_HANDLE_CONN;
    k->fd = w->fd;
    w->want_read = true;
    l->wby_fd[k->fd] = w;
}

/* One connection's event, as a socket's would be. */
static void serve(tern_loop *l, tern_wconn *w, uint64_t now)
{
    conn *c = &((tern_sock *)w->owner)->c;

    if (w->hup) {
        if (!conn_hangup(l->cs, c, now) || w->closing)
            return;
    } else if (w->want_read && (w->in_head != NULL || w->eof)) {
        if (!conn_readable(l->cs, c, now) || w->closing)
            return;
    }
    if (w->want_write && has_room(w))
        (void)conn_writable(l->cs, c, now);
}

void tern_loop_wsock_turn(tern_loop *l, uint64_t now)
{
    size_t n = l->wready_len;

    if (n == 0)
        return;
    /* Served in order; what they add (and what stays ready) goes after. */
    for (size_t i = 0; i < n; i++) {
        tern_wconn *w = l->wready[i];

        w->on_ready = false;
        if (!w->closing) {
            serve(l, w, now);
            ready_add(l, w); /* still wanting: served again next turn (level) */
        }
    }
    /* Those added meanwhile and those still ready stay, in order. */
    if (l->wready_len > n)
        memmove(l->wready, l->wready + n, (l->wready_len - n) * sizeof l->wready[0]);
    l->wready_len -= n;
}

bool tern_loop_wsock_pending(const tern_loop *l)
{
    return l->wready_len > 0;
}

/* The connection's tern_sock, from the loop's pool (accept.c). */
static void free_owner(void *ctx, void *owner)
{
    tern_loop *l = ctx;

    tern_pool_free(l->pool, owner);
}

static void take_messages(tern_loop *l, tern_worker *wk, uint64_t now);

void tern_loop_worker_event(tern_loop *l, void *handle, uint64_t now)
{
    tern_worker_ack(handle);
    take_messages(l, handle, now);
}

void tern_loop_workers_poll(tern_loop *l, uint64_t now)
{
    for (size_t i = 0; i < l->nworkers; i++)
        take_messages(l, l->workers[i], now);
}

bool tern_loop_workers_may_sleep(tern_loop *l)
{
    for (size_t i = 0; i < l->nworkers; i++)
        if (!tern_worker_may_sleep(l->workers[i]))
            return false;
    return true;
}

void tern_loop_workers_awake(tern_loop *l)
{
    for (size_t i = 0; i < l->nworkers; i++)
        tern_worker_awake(l->workers[i]);
}

/* The I/O thread's TLS_UP: flags, identity (when flag 2), version and
 * cipher, each NUL-terminated (worker.h). */
static void tls_up(tern_loop *l, tern_wconn *w, const tern_wmsg *m, uint64_t now)
{
    const char *p = (const char *)m->data + 1, *end = (const char *)m->data + m->len;
    const char *id = NULL, *version, *cipher;

    if (m->len < 1 || end[-1] != '\0')
        tern_panic(__FILE__, __LINE__, "malformed TLS_UP message");
    if (m->data[0] & 2) {
        id = p;
        p += strlen(p) + 1;
    }
    version = p < end ? p : "?";
    p += p < end ? strlen(p) + 1 : 0;
    cipher = p < end ? p : "?";
    (void)conn_tls_established(l->cs, &((tern_sock *)w->owner)->c, id, (m->data[0] & 1) != 0,
                               version, cipher, now);
}

static void take_messages(tern_loop *l, tern_worker *wk, uint64_t now)
{
    tern_wmsg *m;
    bool any = false;

    while ((m = tern_worker_take(wk)) != NULL) {
        tern_wconn *w = m->w;

        any = true;
        if (m->kind == TERN_WM_FREED) {
            free_input(w);
            if (w->owner != NULL) /* NULL: refused when it was accepted */
                free_owner(l, w->owner);
            free(w);
            free(m);
            continue;
        }
        if (w->closing) {
            free(m);
            continue;
        }
        switch (m->kind) {
        case TERN_WM_IN:
            m->next = NULL;
            if (w->in_tail != NULL)
                w->in_tail->next = m;
            else
                w->in_head = m;
            w->in_tail = m;
            m = NULL; /* kept */
            break;
        case TERN_WM_EOF:
            w->eof = true;
            break;
        case TERN_WM_HUP:
            w->hup = true;
            w->err = m->len > 0;
            break;
        case TERN_WM_ROOM:
            break;
        case TERN_WM_TLS_GAVE_UP:
            conn_tls_abandoned(l->cs, &((tern_sock *)w->owner)->c, now);
            break;
        case TERN_WM_ACCEPTED: /* its first message; the handshake may be over already */
            if (m->len < 1)
                tern_panic(__FILE__, __LINE__, "malformed ACCEPTED message");
            tern_loop_accepted(l, w, m->data[0], now);
            break;
        case TERN_WM_TLS_UP: /* before the plaintext that follows it in the ring */
            tls_up(l, w, m, now);
            break;
        case TERN_WM_TLS_FAIL:
            if (m->len < 2 || m->data[m->len - 1] != '\0')
                tern_panic(__FILE__, __LINE__, "malformed TLS_FAIL message");
            conn_tls_failed(l->cs, &((tern_sock *)w->owner)->c, m->data[0] == 1,
                            (const char *)m->data + 1, now);
            break;
        default:
            tern_panic(__FILE__, __LINE__, "core thread: unknown I/O thread message");
        }
        free(m);
        ready_add(l, w);
    }
    if (any)
        tern_loop_wsock_turn(l, now);
}

bool tern_loop_workers_start(tern_loop *l, unsigned n)
{
    l->workers = calloc(n, sizeof l->workers[0]);
    l->wby_fd = calloc(l->by_fd_len, sizeof l->wby_fd[0]);
    if (l->workers == NULL || l->wby_fd == NULL)
        return false;
    for (unsigned i = 0; i < n; i++) {
        struct epoll_event ev;

        l->workers[i] = tern_worker_start(i, l->log);
        if (l->workers[i] == NULL)
            return false;
        l->nworkers = i + 1;
        memset(&ev, 0, sizeof ev);
        ev.events = EPOLLIN;
        ev.data.ptr = tern_worker_handle(l->workers[i]);
        if (epoll_ctl(l->ep, EPOLL_CTL_ADD, tern_worker_fd(l->workers[i]), &ev) != 0) {
            tern_logf(l->log, BROKER_LOG_ERROR, "epoll_ctl: %s", strerror(errno));
            return false;
        }
    }
    return true;
}

void tern_loop_workers_set_tls(tern_loop *l, tern_tls_server *tls)
{
    for (size_t i = 0; i < l->nworkers; i++)
        tern_worker_set_tls(l->workers[i], tern_tls_server_retain(tls));
}

bool tern_loop_workers_flush(tern_loop *l)
{
    bool waiting = false;

    for (size_t i = 0; i < l->nworkers; i++)
        waiting |= tern_worker_flush(l->workers[i]);
    return waiting;
}

void tern_loop_workers_stop(tern_loop *l)
{
    for (size_t i = 0; i < l->nworkers; i++)
        tern_worker_stop(l->workers[i], free_owner, l);
    free(l->workers);
    l->workers = NULL;
    l->nworkers = 0;
    free(l->wby_fd);
    l->wby_fd = NULL;
    free(l->wready);
    l->wready = NULL;
    l->wready_len = l->wready_cap = 0;
}
