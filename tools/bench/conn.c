/*
 * conn.c - one client connection: non-blocking connect, TLS or not,
 * buffered output and the MQTT packets a client sends during set-up.
 *
 * Buffers are allocated once per connection (sized for its role) and reused
 * for every message and, in the handshake scenario, every reconnection:
 * the hot path never allocates. Output is appended to one buffer and
 * written with as few calls as possible (batched writes).
 */
#define _GNU_SOURCE
#include "bench.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

/* Largest PUBLISH this tool sends or expects, header and topic included. */
static size_t packet_max(const bench_opts *o)
{
    return o->size + 256;
}

int conn_init(bench_conn *c, bench_worker *w, conn_role role, uint32_t idx, uint32_t topic)
{
    memset(c, 0, sizeof *c);
    c->w = w;
    c->fd = -1;
    c->role = role;
    c->idx = idx;
    c->topic = topic;
    c->next_id = 1;
    const bench_opts *o = w->run->o;
    /* Idle and handshake connections carry a few small packets; traffic
     * connections hold at least two whole packets plus a batch. */
    if (role == ROLE_PUB || role == ROLE_SUB) {
        c->in_cap = 64 * 1024 + 2 * packet_max(o);
        c->out_cap = 64 * 1024 + 2 * packet_max(o) + o->batch;
    } else {
        c->in_cap = 4096;
        c->out_cap = 1024;
    }
    c->in = malloc(c->in_cap);
    c->out = malloc(c->out_cap);
    if (!c->in || !c->out) {
        conn_release(c);
        return -1;
    }
    return 0;
}

void conn_release(bench_conn *c)
{
    conn_close(c);
    free(c->in);
    free(c->out);
    free(c->tmpl);
    c->in = c->out = c->tmpl = NULL;
}

int conn_start(bench_conn *c)
{
    const bench_run *r = c->w->run;
    c->in_len = c->out_off = c->out_len = c->tls_wlen = 0;
    c->stalled = false;
    c->inflight = 0;
    c->t_start = now_ns();
    /* Subscribers (or all but the $SYS reader) may be far away. */
    bool far = c->role == ROLE_SUB || (r->o->rtt_all && c->role != ROLE_SYS);
    const struct sockaddr_storage *to = far ? &r->far_addr : &r->addr;
    socklen_t to_len = far ? r->far_addr_len : r->addr_len;
    c->fd = socket(to->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        return -1;
    /* Latency is the point: no Nagle delay on small packets. */
    int one = 1;
    if (setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
        goto fail;
    if (connect(c->fd, (const struct sockaddr *)to, to_len) != 0 &&
        errno != EINPROGRESS)
        goto fail;
    /* Completion (or failure) of the connect shows up as writability. */
    struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = c };
    if (epoll_ctl(c->w->epfd, EPOLL_CTL_ADD, c->fd, &ev) != 0)
        goto fail;
    c->events = EPOLLOUT;
    c->state = ST_TCP;
    return 0;
fail:
    close(c->fd);
    c->fd = -1;
    return -1;
}

void conn_close(bench_conn *c)
{
    tls_free(c->tls);
    c->tls = NULL;
    if (c->fd >= 0)
        (void)close(c->fd); /* also leaves the epoll set */
    c->fd = -1;
    c->state = ST_CLOSED;
    c->events = 0;
}

int conn_watch(bench_conn *c, bool want_out)
{
    uint32_t ev = EPOLLIN | (want_out ? (uint32_t)EPOLLOUT : 0u);
    if (ev == c->events)
        return 0;
    struct epoll_event e = { .events = ev, .data.ptr = c };
    if (epoll_ctl(c->w->epfd, EPOLL_CTL_MOD, c->fd, &e) != 0)
        return -1;
    c->events = ev;
    return 0;
}

uint8_t *conn_reserve(bench_conn *c, size_t n)
{
    if (c->out_cap - c->out_len < n && c->out_off > 0 && c->tls_wlen == 0) {
        /* Move unwritten bytes to the front; not while wolfSSL waits to
         * repeat a write, which must see the same buffer again. */
        memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
        c->out_len -= c->out_off;
        c->out_off = 0;
    }
    if (c->out_cap - c->out_len < n)
        return NULL;
    return c->out + c->out_len;
}

int conn_flush(bench_conn *c)
{
    while (c->out_off < c->out_len) {
        size_t n = c->out_len - c->out_off;
        ssize_t w;
        if (c->tls) {
            /* A write that would block must be repeated with the same
             * length; later output waits behind it. */
            if (c->tls_wlen)
                n = c->tls_wlen;
            else if (n > 64 * 1024)
                n = 64 * 1024;
            w = tls_write(c->tls, c->out + c->out_off, n);
            c->tls_wlen = w == 0 ? n : 0;
        } else {
            w = send(c->fd, c->out + c->out_off, n, MSG_NOSIGNAL);
            if (w < 0)
                w = errno == EAGAIN || errno == EINTR ? 0 : -1;
        }
        if (w < 0)
            return -1;
        if (w == 0)
            return conn_watch(c, true) == 0 ? 0 : -1;
        c->out_off += (size_t)w;
    }
    c->out_off = c->out_len = 0;
    return 1;
}

ssize_t conn_read(bench_conn *c)
{
    size_t room = c->in_cap - c->in_len;
    if (room == 0)
        return 0;
    if (c->tls)
        return tls_read(c->tls, c->in + c->in_len, room);
    ssize_t n = recv(c->fd, c->in + c->in_len, room, 0);
    if (n > 0)
        return n;
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    return -1;
}

int conn_send_connect(bench_conn *c)
{
    const bench_run *r = c->w->run;
    const bench_opts *o = r->o;
    char id[64];
    int idn = snprintf(id, sizeof id, "%s%u", r->id_prefix, (unsigned)c->idx);
    if (idn < 0 || (size_t)idn >= sizeof id)
        return -1;
    const char *user = o->username, *pass = o->password;
    if (c->role == ROLE_SYS && o->sys_user) {
        user = o->sys_user;
        pass = o->sys_pass;
    }
    mqtt_connect m = {
        .level = o->level,
        /* --persistent: the broker keeps a subscriber's session (and must
         * store what is queued for it); everyone else starts clean. */
        .clean_session = !(o->persistent && c->role == ROLE_SUB),
        .keepalive = o->keepalive,
        .client_id = { (const uint8_t *)id, (size_t)idn },
        .username_flag = user != NULL,
        .password_flag = user != NULL && pass != NULL,
    };
    if (user)
        m.username = (mqtt_bytes){ (const uint8_t *)user, strlen(user) };
    if (m.password_flag)
        m.password = (mqtt_bytes){ (const uint8_t *)pass, strlen(pass) };
    uint8_t *p = conn_reserve(c, 512);
    size_t n = p ? mqtt_encode_connect(p, 512, &m) : 0;
    if (n == 0)
        return -1;
    c->out_len += n;
    c->state = ST_CONNACK;
    return conn_flush(c) < 0 ? -1 : 0;
}

int conn_send_subscribe(bench_conn *c, const char *filter, uint8_t qos)
{
    mqtt_bytes f = { (const uint8_t *)filter, strlen(filter) };
    uint8_t *p = conn_reserve(c, 512);
    size_t n = p ? mqtt_encode_subscribe(p, 512, c->w->run->o->level, 1, &f, &qos, 1) : 0;
    if (n == 0)
        return -1;
    c->out_len += n;
    c->state = ST_SUBACK;
    return conn_flush(c) < 0 ? -1 : 0;
}

int conn_send_empty(bench_conn *c, mqtt_type type)
{
    uint8_t *p = conn_reserve(c, 2);
    size_t n = p ? mqtt_encode_empty(p, 2, type) : 0;
    if (n == 0)
        return -1;
    c->out_len += n;
    return conn_flush(c) < 0 ? -1 : 0;
}
