/*
 * worker.c - one I/O thread of the daemon (worker.h): its rings to and
 * from the core thread, and its loop over its sockets (recv within the
 * input credit, send of queued output, linger and close); TLS sessions
 * are worker_tls.c's, accepting from the listeners worker_accept.c's.
 */
#define _GNU_SOURCE

#include "platform/posix/worker.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "conn/tunables.h"
#include "platform/posix/sock.h" /* TERN_HANDLE_WORKER */
#include "platform/posix/worker_internal.h"

uint64_t tern_wk_now_ms(void)
{
    struct timespec ts;

    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- channels ------------------------------------------------------------ */

static bool chan_init(chan *ch)
{
    ch->slots = calloc(TERN_WORKER_RING_SLOTS, sizeof ch->slots[0]);
    ch->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ch->slots == NULL || ch->efd < 0)
        return false;
    (void)spsc_init(&ch->ring, ch->slots, TERN_WORKER_RING_SLOTS);
    atomic_init(&ch->sleeping, false);
    return true;
}

static void chan_send(chan *ch, tern_wmsg *m)
{
    m->next = NULL;
    ch->pushed = true;
    if (ch->over_head == NULL && spsc_push(&ch->ring, m))
        return;
    if (ch->over_tail != NULL)
        ch->over_tail->next = m;
    else
        ch->over_head = m;
    ch->over_tail = m;
}

/* A message that needs no wake-up of its own (ACCEPTED): the consumer
 * takes it with the next one that wakes it, or on its own turn; only if
 * none comes within TERN_WORKER_LAZY_MS does chan_flush wake it. */
static void chan_send_lazy(chan *ch, tern_wmsg *m, uint64_t now)
{
    bool pushed = ch->pushed;

    chan_send(ch, m);
    ch->pushed = pushed;
    if (ch->lazy_due == 0)
        ch->lazy_due = now + TERN_WORKER_LAZY_MS;
}

/* Producer, end of its turn: the overflow into the ring, one wake-up
 * (also for lazy messages that waited long enough). True while messages
 * still wait. */
static bool chan_flush(chan *ch, uint64_t now)
{
    while (ch->over_head != NULL && spsc_push(&ch->ring, ch->over_head)) {
        ch->over_head = ch->over_head->next;
        if (ch->over_head == NULL)
            ch->over_tail = NULL;
    }
    if (ch->pushed || (ch->lazy_due != 0 && now >= ch->lazy_due)) {
        uint64_t one = 1;

        ch->pushed = false;
        ch->lazy_due = 0;
        atomic_thread_fence(memory_order_seq_cst);
        /* Fails only when the counter is near overflow: it is set anyway. */
        if (atomic_exchange(&ch->sleeping, false))
            (void)!write(ch->efd, &one, sizeof one);
    }
    return ch->over_head != NULL;
}

static tern_wmsg *chan_take(chan *ch)
{
    void *m;

    if (ch->held != NULL) {
        m = ch->held;
        ch->held = NULL;
        return m;
    }
    return spsc_pop(&ch->ring, &m) ? m : NULL;
}

/* Consumer, before it blocks: false when a message is already waiting
 * (then it must not block); true: the producer's next flush wakes it. */
static bool chan_may_sleep(chan *ch)
{
    void *m;

    if (ch->held != NULL)
        return false;
    atomic_store(&ch->sleeping, true);
    atomic_thread_fence(memory_order_seq_cst);
    if (spsc_pop(&ch->ring, &m)) {
        ch->held = m;
        atomic_store(&ch->sleeping, false);
        return false;
    }
    return true;
}

static void chan_awake(chan *ch)
{
    atomic_store(&ch->sleeping, false);
}

static void chan_ack(chan *ch)
{
    uint64_t v;

    (void)!read(ch->efd, &v, sizeof v);
}

/* After the threads are gone: everything still queued either way. */
static void chan_free(chan *ch, void (*free_owner)(void *ctx, void *owner), void *ctx)
{
    tern_wmsg *m;

    while ((m = chan_take(ch)) != NULL || (m = ch->over_head) != NULL) { /* held first */
        if (m == ch->over_head)
            ch->over_head = m->next;
        if (m->kind == TERN_WM_TLS) { /* never taken: the reference it carries */
            tern_tls_server *tls;

            memcpy(&tls, m->data, sizeof tls);
            tern_tls_server_release(tls);
        }
        if (m->kind == TERN_WM_FREED && free_owner != NULL) {
            if (m->w->owner != NULL) /* NULL: accepted, never the core's */
                free_owner(ctx, m->w->owner);
            free(m->w);
        }
        free(m);
    }
    free(ch->slots);
    if (ch->efd >= 0)
        (void)close(ch->efd);
}

tern_wmsg *tern_wmsg_new(tern_wconn *w, tern_wmsg_kind kind, const uint8_t *data, size_t len)
{
    tern_wmsg *m = malloc(sizeof *m + len);

    if (m == NULL)
        return NULL;
    m->next = NULL;
    m->w = w;
    m->len = (uint32_t)len;
    m->off = 0;
    m->kind = (uint8_t)kind;
    if (len > 0)
        memcpy(m->data, data, len);
    return m;
}

void tern_worker_set_tls(tern_worker *wk, tern_tls_server *tls)
{
    tern_wmsg *m = tern_wmsg_new(NULL, TERN_WM_TLS, (const uint8_t *)&tls, sizeof tls);

    if (m == NULL)
        tern_panic(__FILE__, __LINE__, "out of memory (I/O thread message)");
    chan_send(&wk->to_io, m);
}

void tern_worker_post(tern_worker *wk, tern_wmsg *m)
{
    chan_send(&wk->to_io, m);
}

tern_wmsg *tern_worker_take(tern_worker *wk)
{
    return chan_take(&wk->to_core);
}

bool tern_worker_flush(tern_worker *wk)
{
    return chan_flush(&wk->to_io, 0);
}

void tern_worker_ack(tern_worker *wk)
{
    chan_ack(&wk->to_core);
}

bool tern_worker_may_sleep(tern_worker *wk)
{
    return chan_may_sleep(&wk->to_core);
}

void tern_worker_awake(tern_worker *wk)
{
    chan_awake(&wk->to_core);
}

void *tern_worker_handle(tern_worker *wk)
{
    return wk;
}

int tern_worker_fd(const tern_worker *wk)
{
    return wk->to_core.efd;
}

/* ---- the I/O thread's sockets ------------------------------------------- */

void tern_wk_post(tern_worker *wk, tern_wconn *w, tern_wmsg_kind kind, const uint8_t *data,
                  size_t len)
{
    tern_wmsg *m = tern_wmsg_new(w, kind, data, len);

    if (m == NULL) /* no memory for a message: the process cannot go on safely */
        tern_panic(__FILE__, __LINE__, "out of memory in an I/O thread");
    chan_send(&wk->to_core, m);
}

void tern_wk_post_lazy(tern_worker *wk, tern_wconn *w, tern_wmsg_kind kind, const uint8_t *data,
                       size_t len, uint64_t now)
{
    tern_wmsg *m = tern_wmsg_new(w, kind, data, len);

    if (m == NULL)
        tern_panic(__FILE__, __LINE__, "out of memory in an I/O thread");
    chan_send_lazy(&wk->to_core, m, now);
}

static void set_events(tern_worker *wk, tern_wconn *w, uint32_t want)
{
    struct epoll_event ev;

    if (!w->in_epoll || want == w->events)
        return;
    memset(&ev, 0, sizeof ev);
    ev.events = want;
    ev.data.ptr = w;
    if (epoll_ctl(wk->ep, EPOLL_CTL_MOD, w->fd, &ev) != 0)
        tern_logf(wk->log, BROKER_LOG_WARN, "I/O thread %u: epoll_ctl: %s", wk->index,
                  strerror(errno));
    w->events = want;
}

/* Bytes still to go out: the core's, and (TLS) records sealed. */
static bool out_waiting(const tern_wconn *w)
{
    return w->tls != NULL ? tern_wtls_pending(w) : w->out_head != NULL;
}

static void free_out(tern_wconn *w)
{
    while (w->out_head != NULL) {
        tern_wmsg *m = w->out_head;

        w->out_head = m->next;
        free(m);
    }
    w->out_tail = NULL;
}

/* Close the socket; the connection goes back to the core thread at the
 * end of the turn (release_finished), since events of this turn's batch
 * may still name it. */
static void finish(tern_worker *wk, tern_wconn *w)
{
    free_out(w);
    tern_wtls_free(w);
    (void)close(w->fd); /* also leaves the epoll set */
    w->in_epoll = false;
    w->done_io = true;
    wk->live--;
    w->linger_next = wk->finished;
    wk->finished = w;
}

/* FREED only gives memory back: it wakes nobody (the next message that
 * does, or TERN_WORKER_LAZY_MS, takes it along). */
static void release_finished(tern_worker *wk, uint64_t now)
{
    while (wk->finished != NULL) {
        tern_wconn *w = wk->finished;

        wk->finished = w->linger_next;
        tern_wk_post_lazy(wk, w, TERN_WM_FREED, NULL, 0, now);
    }
}

/* Credit back to the core thread: the bytes left the process (or, on
 * TLS, were sealed into records). */
void tern_wk_sent(tern_worker *wk, tern_wconn *w, size_t n)
{
    (void)atomic_fetch_sub(&w->out_used, (uint32_t)n);
    if (atomic_exchange(&w->core_waits, false))
        tern_wk_post(wk, w, TERN_WM_ROOM, NULL, 0);
}

void tern_wk_failed(tern_worker *wk, tern_wconn *w)
{
    w->failed = true;
    free_out(w);
    tern_wk_post(wk, w, TERN_WM_HUP, (const uint8_t *)"e", 1);
}

/* Send queued output while the socket takes it. False when it failed. */
static bool send_out(tern_worker *wk, tern_wconn *w)
{
    if (w->tls != NULL)
        return tern_wtls_send(wk, w);
    while (w->out_head != NULL && !w->failed) {
        struct iovec iov[IO_IOV];
        int n = 0;
        ssize_t r;

        for (tern_wmsg *m = w->out_head; m != NULL && n < IO_IOV; m = m->next, n++) {
            iov[n].iov_base = m->data + m->off;
            iov[n].iov_len = m->len - m->off;
        }
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        r = sendmsg(w->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            tern_wk_failed(wk, w);
            return false;
        }
        tern_wk_sent(wk, w, (size_t)r);
        for (size_t left = (size_t)r; left > 0;) {
            tern_wmsg *m = w->out_head;
            size_t here = m->len - m->off;

            if (left < here) {
                m->off += (uint32_t)left;
                break;
            }
            left -= here;
            w->out_head = m->next;
            if (w->out_head == NULL)
                w->out_tail = NULL;
            free(m);
        }
    }
    return !w->failed;
}

/* The interest the connection needs now. */
static void update(tern_worker *wk, tern_wconn *w)
{
    uint32_t want = 0;

    if (!w->eof_io && !w->failed && !w->lingering && !w->tls_failed &&
        atomic_load(&w->in_used) < TERN_WORKER_IN_CREDIT)
        want |= EPOLLIN;
    if (out_waiting(w) && !w->failed)
        want |= EPOLLOUT;
    set_events(wk, w, want);
}

/* A client in its handshake whose input ends right after what it sent
 * (a short read, so the socket is drained) has given up, maybe while it
 * waited in the listen backlog: answering would cost a signature and a
 * key exchange for no one. One more read, which can only find the end or
 * nothing, asks (as the connection layer does with one thread,
 * handshake_tail in src/conn/input.c). True when it ended: the core
 * thread hears GAVE_UP and aborts the connection. Otherwise what the
 * read found (nothing, or more) joins wk->buf[0..*n). */
static bool gave_up(tern_worker *wk, tern_wconn *w, ssize_t *n, size_t cap)
{
    ssize_t m = recv(w->fd, wk->buf + *n, cap - (size_t)*n, 0);

    if (m > 0)
        *n += m;
    if (m != 0)
        return false; /* more, nothing yet, or an error the next read reports */
    w->eof_io = true;
    w->tls_failed = true; /* read no more */
    tern_wk_post(wk, w, TERN_WM_TLS_GAVE_UP, NULL, 0);
    return true;
}

static void do_read(tern_worker *wk, tern_wconn *w)
{
    while (!w->eof_io && !w->failed && !w->lingering && !w->tls_failed) {
        uint32_t used = atomic_load(&w->in_used);
        size_t cap;
        ssize_t n;

        /* This turn's handshakes are spent: the bytes wait in the socket,
         * and level-triggered epoll reports them again next turn. */
        if (w->tls != NULL && !w->tls_up && tern_wtls_budget_spent(wk))
            break;
        if (used >= TERN_WORKER_IN_CREDIT) {
            atomic_store(&w->io_waits, true);
            if (atomic_load(&w->in_used) >= TERN_WORKER_IN_CREDIT)
                break; /* RESUME comes when the core thread takes some */
            continue;
        }
        cap = TERN_WORKER_IN_CREDIT - used;
        if (cap > sizeof wk->buf)
            cap = sizeof wk->buf;
        n = recv(w->fd, wk->buf, cap, 0);
        if (n > 0 && w->tls != NULL && !w->tls_up && (size_t)n < cap && gave_up(wk, w, &n, cap)) {
            break;
        } else if (n > 0 && w->tls != NULL) {
            tern_wtls_input(wk, w, wk->buf, (size_t)n);
            if ((size_t)n < cap)
                break;
        } else if (n > 0) {
            (void)atomic_fetch_add(&w->in_used, (uint32_t)n);
            tern_wk_post(wk, w, TERN_WM_IN, wk->buf, (size_t)n);
            if ((size_t)n < cap)
                break; /* a socket's short read: drained for now */
        } else if (n == 0) {
            w->eof_io = true;
            tern_wk_post(wk, w, TERN_WM_EOF, NULL, 0);
        } else if (errno == EINTR) {
            continue;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            break;
        } else {
            tern_wk_failed(wk, w);
        }
    }
}

static void sock_event(tern_worker *wk, tern_wconn *w, uint32_t events)
{
    if (w->done_io)
        return; /* closed earlier in this turn */
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
        do_read(wk, w);
    if ((events & EPOLLOUT) || (events & (EPOLLHUP | EPOLLERR)))
        (void)send_out(wk, w);
    if ((events & (EPOLLHUP | EPOLLERR)) && !w->failed) {
        /* Gone both ways: what could be read within the credit was; the
         * layer hears of the hang-up after it. Out of the epoll set, or
         * level-triggered HUP would wake the thread again and again. */
        w->failed = true;
        free_out(w);
        tern_wk_post(wk, w, TERN_WM_HUP, NULL, 0);
    }
    if (w->failed && w->in_epoll) {
        (void)epoll_ctl(wk->ep, EPOLL_CTL_DEL, w->fd, NULL);
        w->in_epoll = false;
    }
    if (w->lingering && (!out_waiting(w) || w->failed)) {
        w->lingering = false; /* taken off the linger list by expire() */
        w->linger_deadline = 0;
        return;
    }
    update(wk, w);
}

static void linger_add(tern_worker *wk, tern_wconn *w)
{
    w->lingering = true;
    w->linger_deadline = tern_wk_now_ms() + CONN_LINGER_MS;
    w->linger_next = wk->lingering;
    wk->lingering = w;
    update(wk, w);
}

/* Lingering connections whose output left, failed or ran out of time
 * (or all of them, at shutdown). Earliest deadline in *next. */
static void expire(tern_worker *wk, uint64_t now, uint64_t *next)
{
    tern_wconn **pp = &wk->lingering;

    *next = UINT64_MAX;
    while (*pp != NULL) {
        tern_wconn *w = *pp;

        if (!w->lingering || !out_waiting(w) || w->failed || wk->stop ||
            now >= w->linger_deadline) {
            *pp = w->linger_next;
            finish(wk, w);
            continue;
        }
        if (w->linger_deadline < *next)
            *next = w->linger_deadline;
        pp = &w->linger_next;
    }
}

void tern_wk_adopt(tern_worker *wk, tern_wconn *w, bool tls)
{
    struct epoll_event ev;

    wk->live++;
    if (tls && !tern_wtls_open(wk, w))
        return; /* the core thread was told; it answers ABORT */
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN;
    ev.data.ptr = w;
    if (epoll_ctl(wk->ep, EPOLL_CTL_ADD, w->fd, &ev) == 0) {
        w->in_epoll = true;
        w->events = EPOLLIN;
    } else {
        w->failed = true;
        tern_wk_post(wk, w, TERN_WM_HUP, (const uint8_t *)"e", 1);
    }
}

static void core_message(tern_worker *wk, tern_wmsg *m)
{
    tern_wconn *w = m->w;

    switch (m->kind) {
    case TERN_WM_DATA:
        if (w->failed || w->tls_failed) {
            tern_wk_sent(wk, w, m->len); /* nowhere to go: the credit comes back */
            break;
        }
        if (w->out_tail != NULL)
            w->out_tail->next = m;
        else
            w->out_head = m;
        w->out_tail = m;
        m->next = NULL;
        (void)send_out(wk, w);
        update(wk, w);
        return; /* m is queued, not freed */
    case TERN_WM_CLOSE:
        if (w->tls != NULL)
            tern_wtls_goodbye(wk, w);
        (void)send_out(wk, w);
        if (!out_waiting(w) || w->failed || wk->stop)
            finish(wk, w);
        else
            linger_add(wk, w);
        break;
    case TERN_WM_ABORT:
        finish(wk, w);
        break;
    case TERN_WM_RESUME:
        atomic_store(&w->io_waits, false);
        if (w->tls != NULL && !w->done_io && !w->failed)
            tern_wtls_input(wk, w, NULL, 0); /* records the credit held back */
        if (!w->done_io)
            update(wk, w);
        break;
    case TERN_WM_TLS: {
        tern_tls_server *tls;

        memcpy(&tls, m->data, sizeof tls);
        tern_tls_server_release(wk->tls);
        wk->tls = tls;
        break;
    }
    case TERN_WM_LISTEN:
        tern_wk_listen(wk, m->len > 0 ? m->data[0] : TERN_WORKER_LISTENERS);
        break;
    case TERN_WM_STOP:
        wk->stop = true;
        tern_wk_accept_stop(wk);
        break;
    default:
        tern_panic(__FILE__, __LINE__, "I/O thread: unknown message");
    }
    free(m);
}

static void *io_main(void *arg)
{
    tern_worker *wk = arg;
    struct epoll_event events[IO_EVENTS];
    uint64_t next = UINT64_MAX;

    while (!(wk->stop && wk->live == 0)) {
        int timeout = -1, n;
        uint64_t now = tern_wk_now_ms(), due = next;

        tern_wmsg *m;

        wk->hs_steps = CONN_HANDSHAKE_STEPS_PER_TURN; /* this thread's handshake budget */
        wk->hs_us = 0;
        tern_wk_accept_resume(wk, now, &due);
        if (wk->to_core.lazy_due != 0 && wk->to_core.lazy_due < due)
            due = wk->to_core.lazy_due;
        if (wk->to_core.over_head != NULL)
            timeout = TERN_WORKER_RETRY_MS;
        else if (due != UINT64_MAX)
            timeout = due <= now ? 0 : (int)(due - now > INT_MAX ? INT_MAX : due - now);
        if (timeout != 0 && !chan_may_sleep(&wk->to_io))
            timeout = 0;
        n = epoll_wait(wk->ep, events, IO_EVENTS, timeout);
        chan_awake(&wk->to_io);
        if (n < 0 && errno != EINTR)
            tern_panic(__FILE__, __LINE__, "I/O thread: epoll_wait failed");
        now = tern_wk_now_ms();
        for (int i = 0; i < n; i++) {
            uint64_t tag = events[i].data.u64;

            if (tag == 0)
                chan_ack(&wk->to_io);
            else if (tag <= TERN_WORKER_LISTENERS) /* a listener: its slot + 1 */
                tern_wk_accept(wk, (size_t)(tag - 1), now);
            else
                sock_event(wk, events[i].data.ptr, events[i].events);
        }
        /* Every turn: messages come without a wake-up while awake. */
        while ((m = chan_take(&wk->to_io)) != NULL)
            core_message(wk, m);
        expire(wk, tern_wk_now_ms(), &next);
        release_finished(wk, now);
        (void)chan_flush(&wk->to_core, tern_wk_now_ms());
    }
    atomic_store(&wk->exited, true);
    /* What the full ring did not take stays in the overflow list:
     * tern_worker_stop frees it after the join. */
    return NULL;
}

tern_worker *tern_worker_start(unsigned index, tern_log *log)
{
    tern_worker *wk = calloc(1, sizeof *wk);
    struct epoll_event ev;

    if (wk == NULL) {
        tern_logf(log, BROKER_LOG_ERROR, "out of memory");
        return NULL;
    }
    wk->kind = TERN_HANDLE_WORKER;
    wk->index = index;
    wk->log = log;
    wk->to_io.efd = wk->to_core.efd = -1;
    wk->ep = epoll_create1(EPOLL_CLOEXEC);
    if (!chan_init(&wk->to_io) || !chan_init(&wk->to_core) || wk->ep < 0) {
        tern_logf(log, BROKER_LOG_ERROR, "I/O thread %u: %s", index, strerror(errno));
        goto fail;
    }
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN;
    ev.data.ptr = NULL; /* the core thread's messages */
    if (epoll_ctl(wk->ep, EPOLL_CTL_ADD, wk->to_io.efd, &ev) != 0) {
        tern_logf(log, BROKER_LOG_ERROR, "I/O thread %u: epoll_ctl: %s", index, strerror(errno));
        goto fail;
    }
    if (pthread_create(&wk->thread, NULL, io_main, wk) != 0) {
        tern_logf(log, BROKER_LOG_ERROR, "I/O thread %u: cannot start it", index);
        goto fail;
    }
    wk->started = true;
    return wk;

fail:
    tern_worker_stop(wk, NULL, NULL);
    return NULL;
}

/* Shutdown, the thread still running: its messages taken; a connection
 * the core never met (ACCEPTED) is aborted, records coming back freed. */
static void stop_drain(tern_worker *wk, void (*free_owner)(void *ctx, void *owner), void *ctx)
{
    tern_wmsg *m;

    while ((m = chan_take(&wk->to_core)) != NULL) {
        if (m->kind == TERN_WM_ACCEPTED) {
            m->kind = TERN_WM_ABORT;
            m->len = 0;
            chan_send(&wk->to_io, m);
            continue;
        }
        if (m->kind == TERN_WM_FREED) {
            if (m->w->owner != NULL && free_owner != NULL)
                free_owner(ctx, m->w->owner);
            free(m->w);
        }
        free(m);
    }
}

void tern_worker_stop(tern_worker *wk, void (*free_owner)(void *ctx, void *owner), void *ctx)
{
    if (wk == NULL)
        return;
    if (wk->started) {
        tern_wmsg *m = tern_wmsg_new(NULL, TERN_WM_STOP, NULL, 0);

        if (m == NULL)
            tern_panic(__FILE__, __LINE__, "out of memory stopping an I/O thread");
        chan_send(&wk->to_io, m);
        /* The thread ends once every socket it holds is closed; those it
         * accepted that the core never heard of are closed here. */
        while (!atomic_load(&wk->exited)) {
            (void)chan_flush(&wk->to_io, 0);
            stop_drain(wk, free_owner, ctx);
            (void)usleep(1000);
        }
        (void)pthread_join(wk->thread, NULL);
    }
    chan_free(&wk->to_io, NULL, NULL);
    chan_free(&wk->to_core, free_owner, ctx);
    tern_tls_server_release(wk->tls); /* the thread is gone: its reference */
    if (wk->ep >= 0)
        (void)close(wk->ep);
    free(wk);
}
