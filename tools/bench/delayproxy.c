/*
 * delayproxy.c - the delaying TCP proxy of tern-bench (delayproxy.h).
 *
 * One thread, one epoll set: the listening socket, an eventfd that asks the
 * thread to stop, a timerfd armed (absolute, CLOCK_MONOTONIC) at the
 * earliest chunk due anywhere, and both sockets of every forwarded
 * connection. Each read() becomes a chunk stamped with when it may leave
 * (arrival + delay); chunks of one direction leave in order, so byte order
 * is kept and the delay is the same for every byte. Nothing paces the
 * bytes beyond that: a link is as fast as loopback, only farther away.
 *
 * A direction holding more than QUEUE_CAP bytes stops reading its source
 * until it drains (the sender then sees TCP back-pressure, as behind a
 * full link); this bounds memory, and at the rates and delays measured
 * (tens of MB/s x 100 ms) it is not reached.
 */
#define _GNU_SOURCE
#include "delayproxy.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define READ_MAX 65536
#define QUEUE_CAP (32u << 20)

typedef struct chunk {
    struct chunk *next;
    uint64_t due_ns;
    size_t len, off;
    uint8_t data[];
} chunk;

/* Bytes read from side `from` and written to the other side. */
typedef struct pipe_dir {
    chunk *head, *tail;
    size_t queued;
    bool eof;       /* the source closed its sending side */
    bool blocked;   /* the destination's socket buffer is full */
    bool shut;      /* the eof has been passed on */
} pipe_dir;

struct link;
typedef struct endpoint {
    struct link *l;
    int side;       /* 0: the client's socket, 1: the broker's */
} endpoint;

typedef struct link {
    struct link *next;
    int fd[2];
    endpoint ep[2];
    uint32_t events[2];
    bool connecting; /* the broker side's connect() is in progress */
    bool dead;       /* closed; freed by sweep() */
    pipe_dir d[2];   /* d[k]: read from fd[k], written to fd[1 - k] */
} link_t;

struct delay_proxy {
    pthread_t thread;
    int epfd, lfd, tfd, efd;
    struct sockaddr_storage to;
    socklen_t to_len;
    uint64_t delay_ns;
    link_t *links;
    /* epoll tags for the three fixed descriptors (their address is the tag) */
    char tag_listen, tag_timer, tag_stop;
};

static uint64_t mono_ns(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void dir_clear(pipe_dir *d)
{
    while (d->head) {
        chunk *c = d->head;
        d->head = c->next;
        free(c);
    }
    d->tail = NULL;
    d->queued = 0;
}

/* Close l's sockets now (they leave the epoll set) and free it after the
 * current batch of events, which may still name it. */
static void link_kill(link_t *l)
{
    for (int k = 0; k < 2; k++) {
        if (l->fd[k] >= 0)
            (void)close(l->fd[k]);
        l->fd[k] = -1;
        dir_clear(&l->d[k]);
    }
    l->dead = true;
}

static void sweep(delay_proxy *p, bool all)
{
    for (link_t **pp = &p->links; *pp;) {
        link_t *l = *pp;
        if (all || l->dead) {
            *pp = l->next;
            link_kill(l);
            free(l);
        } else {
            pp = &l->next;
        }
    }
}

/* Register fd[side] for what it needs now: input while its direction has
 * room and has not ended, output while the other direction is blocked on
 * it (or its connect is in progress). */
static int link_watch(delay_proxy *p, link_t *l, int side)
{
    uint32_t ev = 0;
    const pipe_dir *in = &l->d[side], *out = &l->d[1 - side];
    if (!in->eof && in->queued < QUEUE_CAP)
        ev |= EPOLLIN;
    if (out->blocked || (side == 1 && l->connecting))
        ev |= EPOLLOUT;
    if (ev == l->events[side])
        return 0;
    struct epoll_event e = { .events = ev, .data.ptr = &l->ep[side] };
    if (epoll_ctl(p->epfd, EPOLL_CTL_MOD, l->fd[side], &e) != 0)
        return -1;
    l->events[side] = ev;
    return 0;
}

/* Read what side offers into stamped chunks. 0, or -1: close the link. */
static int link_read(delay_proxy *p, link_t *l, int side, uint64_t now)
{
    pipe_dir *d = &l->d[side];
    uint8_t buf[READ_MAX];
    while (!d->eof && d->queued < QUEUE_CAP) {
        ssize_t n = read(l->fd[side], buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
        }
        if (n == 0) {
            d->eof = true;
            break;
        }
        chunk *c = malloc(sizeof *c + (size_t)n);
        if (!c)
            return -1;
        c->next = NULL;
        c->due_ns = now + p->delay_ns;
        c->len = (size_t)n;
        c->off = 0;
        memcpy(c->data, buf, (size_t)n);
        if (d->tail)
            d->tail->next = c;
        else
            d->head = c;
        d->tail = c;
        d->queued += (size_t)n;
    }
    return 0;
}

/* Write the chunks of direction k that are due. 0, or -1: close the link. */
static int link_write(link_t *l, int k, uint64_t now)
{
    pipe_dir *d = &l->d[k];
    int fd = l->fd[1 - k];
    if (k == 0 && l->connecting)
        return 0;
    d->blocked = false;
    while (d->head && d->head->due_ns <= now) {
        chunk *c = d->head;
        ssize_t n = write(fd, c->data + c->off, c->len - c->off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                d->blocked = true;
                return 0;
            }
            return -1;
        }
        c->off += (size_t)n;
        d->queued -= (size_t)n;
        if (c->off == c->len) {
            d->head = c->next;
            if (!d->head)
                d->tail = NULL;
            free(c);
        }
    }
    if (d->eof && !d->head && !d->shut) {
        d->shut = true;
        (void)shutdown(fd, SHUT_WR);
    }
    return 0;
}

/* Move everything that can move on l; -1 when it should be closed. */
static int link_step(delay_proxy *p, link_t *l, uint64_t now)
{
    for (int k = 0; k < 2; k++)
        if (link_write(l, k, now) != 0)
            return -1;
    if (l->d[0].shut && l->d[1].shut)
        return -1; /* both sides said all they had: done */
    for (int k = 0; k < 2; k++)
        if (link_watch(p, l, k) != 0)
            return -1;
    return 0;
}

static void on_accept(delay_proxy *p)
{
    for (;;) {
        int cfd = accept4(p->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0)
            return; /* EAGAIN, or a failed attempt the client will see */
        link_t *l = calloc(1, sizeof *l);
        int bfd = socket(p->to.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        int one = 1;
        if (!l || bfd < 0) {
            free(l);
            (void)close(cfd);
            if (bfd >= 0)
                (void)close(bfd);
            continue;
        }
        l->fd[0] = cfd;
        l->fd[1] = bfd;
        l->ep[0] = (endpoint){ l, 0 };
        l->ep[1] = (endpoint){ l, 1 };
        l->next = p->links;
        p->links = l;
        /* The proxy must not add a Nagle delay of its own. */
        (void)setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        (void)setsockopt(bfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(bfd, (const struct sockaddr *)&p->to, p->to_len) != 0) {
            if (errno != EINPROGRESS) {
                link_kill(l);
                continue;
            }
            l->connecting = true;
        }
        bool ok = true;
        for (int k = 0; k < 2 && ok; k++) {
            struct epoll_event e = { .events = 0, .data.ptr = &l->ep[k] };
            ok = epoll_ctl(p->epfd, EPOLL_CTL_ADD, l->fd[k], &e) == 0 &&
                 link_watch(p, l, k) == 0;
        }
        if (!ok)
            link_kill(l);
    }
}

static void on_endpoint(delay_proxy *p, endpoint *ep, uint32_t ev, uint64_t now)
{
    link_t *l = ep->l;
    int side = ep->side;
    if (side == 1 && l->connecting && (ev & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(l->fd[1], SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
            link_kill(l);
            return;
        }
        l->connecting = false;
    }
    if ((ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) && link_read(p, l, side, now) != 0) {
        link_kill(l);
        return;
    }
    if (ev & (EPOLLHUP | EPOLLERR)) {
        /* Reported whatever the mask: the socket is gone both ways, so what
         * still waits for it cannot be delivered. Whatever it sent before
         * is dropped with the link (only at the end of a run). */
        link_kill(l);
        return;
    }
    if (link_step(p, l, now) != 0)
        link_kill(l);
}

/* Arm the timer at the earliest chunk due that is not waiting for room. */
static int arm_timer(delay_proxy *p)
{
    uint64_t next = UINT64_MAX;
    for (link_t *l = p->links; l; l = l->next)
        for (int k = 0; k < 2; k++)
            if (l->d[k].head && !l->d[k].blocked && l->d[k].head->due_ns < next)
                next = l->d[k].head->due_ns;
    struct itimerspec its = { 0 };
    if (next != UINT64_MAX) {
        if (next == 0)
            next = 1; /* 0 would disarm */
        its.it_value.tv_sec = (time_t)(next / 1000000000ull);
        its.it_value.tv_nsec = (long)(next % 1000000000ull);
    }
    return timerfd_settime(p->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void *proxy_main(void *arg)
{
    delay_proxy *p = arg;
    struct epoll_event evs[64];
    for (;;) {
        if (arm_timer(p) != 0) {
            perror("tern-bench: delay proxy timer");
            return NULL;
        }
        int n = epoll_wait(p->epfd, evs, (int)(sizeof evs / sizeof evs[0]), -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            perror("tern-bench: delay proxy epoll_wait");
            return NULL;
        }
        uint64_t now = mono_ns();
        bool timer = false;
        for (int i = 0; i < n; i++) {
            void *tag = evs[i].data.ptr;
            if (tag == &p->tag_stop)
                return NULL;
            if (tag == &p->tag_listen) {
                on_accept(p);
            } else if (tag == &p->tag_timer) {
                uint64_t ticks;
                (void)!read(p->tfd, &ticks, sizeof ticks);
                timer = true;
            } else {
                endpoint *ep = tag;
                if (!ep->l->dead)
                    on_endpoint(p, ep, evs[i].events, now);
            }
        }
        if (timer)
            for (link_t *l = p->links; l; l = l->next)
                if (!l->dead && link_step(p, l, now) != 0)
                    link_kill(l);
        sweep(p, false);
    }
}

static int add_fd(delay_proxy *p, int fd, void *tag)
{
    struct epoll_event e = { .events = EPOLLIN, .data.ptr = tag };
    return epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &e);
}

static int bind_loopback(delay_proxy *p, struct sockaddr_storage *a, socklen_t *alen)
{
    memset(a, 0, sizeof *a);
    if (p->to.ss_family == AF_INET6) {
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)a;
        a6->sin6_family = AF_INET6;
        a6->sin6_addr = in6addr_loopback;
        *alen = sizeof *a6;
    } else {
        struct sockaddr_in *a4 = (struct sockaddr_in *)a;
        a4->sin_family = AF_INET;
        a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        *alen = sizeof *a4;
    }
    p->lfd = socket(a->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (p->lfd < 0 || bind(p->lfd, (struct sockaddr *)a, *alen) != 0 ||
        listen(p->lfd, 1024) != 0 || getsockname(p->lfd, (struct sockaddr *)a, alen) != 0)
        return -1;
    return 0;
}

delay_proxy *delay_proxy_start(const struct sockaddr_storage *to, socklen_t to_len,
                               uint64_t one_way_ns, struct sockaddr_storage *listen_addr,
                               socklen_t *listen_len)
{
    delay_proxy *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->epfd = p->lfd = p->tfd = p->efd = -1;
    p->to = *to;
    p->to_len = to_len;
    p->delay_ns = one_way_ns;
    p->epfd = epoll_create1(EPOLL_CLOEXEC);
    p->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (p->epfd < 0 || p->tfd < 0 || p->efd < 0 || bind_loopback(p, listen_addr, listen_len) != 0 ||
        add_fd(p, p->lfd, &p->tag_listen) != 0 || add_fd(p, p->tfd, &p->tag_timer) != 0 ||
        add_fd(p, p->efd, &p->tag_stop) != 0 ||
        pthread_create(&p->thread, NULL, proxy_main, p) != 0) {
        perror("tern-bench: starting the delay proxy");
        int fds[] = { p->epfd, p->lfd, p->tfd, p->efd };
        for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
            if (fds[i] >= 0)
                (void)close(fds[i]);
        free(p);
        return NULL;
    }
    return p;
}

void delay_proxy_stop(delay_proxy *p)
{
    if (!p)
        return;
    uint64_t one = 1;
    (void)!write(p->efd, &one, sizeof one);
    (void)pthread_join(p->thread, NULL);
    sweep(p, true);
    (void)close(p->lfd);
    (void)close(p->tfd);
    (void)close(p->efd);
    (void)close(p->epfd);
    free(p);
}
