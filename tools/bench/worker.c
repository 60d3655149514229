/*
 * worker.c - one load-generator thread: an epoll loop over the connections
 * it owns, stepping each through connect, TLS, CONNECT/CONNACK and
 * SUBSCRIBE/SUBACK, then doing its role's work in the phase the main thread
 * has set (bench.h). Sockets are non-blocking and level-triggered; a timerfd
 * paces rate-limited publishers.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

/* Reads per readiness event on a plaintext socket before serving others. */
#define READS_PER_EVENT 16
/* Rate-mode pacing tick. Latency is measured from the real send time, so
 * the tick only adds jitter to the send schedule, not to the figures. */
#define TICK_NS 1000000L

static int phase_of(const bench_worker *w)
{
    return atomic_load_explicit(&w->run->phase, memory_order_acquire);
}

static bool wants_out(const bench_conn *c)
{
    const bench_run *r = c->w->run;
    return (c->out_len > c->out_off) ||
           (c->role == ROLE_PUB && r->flood && r->o->qos == 0 && c->state == ST_READY &&
            phase_of(c->w) == PHASE_RUN);
}

/* Start set-up connections while fewer than `concurrency` are in flight. */
static void setup_more(bench_worker *w)
{
    while (w->connecting < w->concurrency && w->next_start < w->nconns) {
        bench_conn *c = &w->conns[w->next_start++];
        if (c->role == ROLE_SYS || c->role == ROLE_HANDSHAKE)
            continue;
        if (conn_start(c) != 0) {
            w->c.errors++;
            atomic_fetch_add(&w->run->failed, 1);
            continue;
        }
        w->connecting++;
    }
}

static int start_handshake(bench_worker *w, bench_conn *c)
{
    if (conn_start(c) == 0)
        return 0;
    w->c.errors++;
    return -1;
}

/* The connection broke or the broker refused it. */
static void conn_fail(bench_worker *w, bench_conn *c)
{
    bool was_ready = c->state == ST_READY;
    conn_close(c);
    switch (c->role) {
    case ROLE_HANDSHAKE:
        if (phase_of(w) == PHASE_RUN) {
            w->c.errors++;
            (void)start_handshake(w, c);
        }
        break;
    case ROLE_SYS:
        break;
    default:
        if (was_ready) {
            if (phase_of(w) < PHASE_STOP)
                w->c.lost++;
        } else {
            w->c.errors++;
            atomic_fetch_add(&w->run->failed, 1);
            w->connecting--;
            setup_more(w);
        }
        break;
    }
}

static void became_ready(bench_worker *w, bench_conn *c)
{
    c->state = ST_READY;
    if (c->role == ROLE_SYS)
        return;
    w->connecting--;
    atomic_fetch_add(&w->run->ready, 1);
    setup_more(w);
}

/* Returns 1 when the connection was closed (and maybe restarted). */
static int on_connack(bench_worker *w, bench_conn *c, uint64_t now)
{
    const bench_run *r = w->run;
    char filter[96];
    int n;
    switch (c->role) {
    case ROLE_HANDSHAKE:
        if (phase_of(w) != PHASE_RUN) {
            conn_close(c);
            return 1;
        }
        hist_add(&w->lat, now - c->t_start);
        w->c.handshakes++;
        /* Best effort: the handshake is already counted, and the 2 bytes
         * fit any socket buffer. */
        (void)conn_send_empty(c, MQTT_DISCONNECT);
        conn_close(c);
        (void)start_handshake(w, c);
        return 1;
    case ROLE_SUB:
        n = snprintf(filter, sizeof filter, "%s%u", r->topic_prefix, (unsigned)c->topic);
        if (n < 0 || (size_t)n >= sizeof filter)
            return -1;
        return conn_send_subscribe(c, filter, (uint8_t)r->o->qos);
    case ROLE_SYS:
        return conn_send_subscribe(c, r->o->sys_topic, 0);
    default:
        became_ready(w, c);
        return 0;
    }
}

static void on_sys_value(bench_worker *w, const mqtt_bytes *payload)
{
    uint64_t v = 0;
    size_t i = 0;
    for (; i < payload->len && i < 20; i++) {
        uint8_t ch = payload->p[i];
        if (ch < '0' || ch > '9')
            break;
        v = v * 10 + (uint64_t)(ch - '0');
    }
    if (i == 0)
        return;
    atomic_store(&w->run->sys_value, v);
    atomic_store(&w->run->sys_t_ns, now_ns());
    atomic_fetch_add(&w->run->sys_updates, 1);
}

/* Queue a 4-byte acknowledgement (room was checked by process_input);
 * written now in immediate mode, else after the read or the event. */
static int send_ack(bench_worker *w, bench_conn *c, mqtt_type type, uint16_t id)
{
    uint8_t *o = conn_reserve(c, 4);
    if (!o || mqtt_encode_ack(o, 4, w->run->o->level, type, id) != 4)
        return -1;
    c->out_len += 4;
    if (w->run->o->ack == ACK_IMMEDIATE && conn_flush(c) < 0)
        return -1;
    return 0;
}

static int on_publish(bench_worker *w, bench_conn *c, const mqtt_publish *p, uint64_t now)
{
    if (c->role == ROLE_SUB) {
        w->c.delivered++;
        if (phase_of(w) == PHASE_RUN)
            w->c.delivered_in_run++;
        uint64_t sent;
        if (p->payload.len >= sizeof sent) {
            memcpy(&sent, p->payload.p, sizeof sent);
            if (sent <= now)
                hist_add(&w->lat, now - sent);
            else
                w->c.bad_payload++;
        } else {
            w->c.bad_payload++;
        }
    } else if (c->role == ROLE_SYS) {
        on_sys_value(w, &p->payload);
    }
    if (p->qos == 0)
        return 0;
    return send_ack(w, c, p->qos == 1 ? MQTT_PUBACK : MQTT_PUBREC, p->packet_id);
}

static int on_packet(bench_worker *w, bench_conn *c, const mqtt_packet *pk, uint64_t now)
{
    size_t pos = 0;
    uint8_t code;
    switch (pk->type) {
    case MQTT_CONNACK:
        if (c->state != ST_CONNACK || pk->u.connack.return_code != MQTT_CONNACK_ACCEPTED)
            return -1;
        return on_connack(w, c, now);
    case MQTT_SUBACK:
        if (c->state != ST_SUBACK)
            return -1;
        while (mqtt_suback_next(&pk->u.suback, &pos, &code))
            if (code == MQTT_SUBACK_FAILURE)
                return -1;
        became_ready(w, c);
        return 0;
    case MQTT_PUBLISH:
        return on_publish(w, c, &pk->u.publish, now);
    case MQTT_PUBREC: /* QoS 2 publisher: release it */
        return c->role == ROLE_PUB ? send_ack(w, c, MQTT_PUBREL, pk->u.ack.packet_id) : 0;
    case MQTT_PUBREL: /* QoS 2 subscriber: the exchange ends */
        return send_ack(w, c, MQTT_PUBCOMP, pk->u.ack.packet_id);
    case MQTT_PUBACK:
    case MQTT_PUBCOMP:
        if (c->role == ROLE_PUB && c->inflight > 0) {
            c->inflight--;
            w->c.puback++;
            if (phase_of(w) == PHASE_RUN)
                w->c.puback_in_run++;
        }
        return 0;
    default:
        return 0;
    }
}

/* Handle every whole packet in the input buffer. Returns 0, 1 when the
 * connection was closed by a handler, -1 on a protocol error. */
static int process_input(bench_worker *w, bench_conn *c, uint64_t now)
{
    size_t off = 0;
    c->stalled = false;
    while (off < c->in_len) {
        mqtt_packet pk;
        size_t used = 0;
        mqtt_err e = mqtt_decode(c->in + off, c->in_len - off, MQTT_FROM_SERVER,
                                 w->run->o->level, 0, &pk, &used);
        if (e == MQTT_NEED_MORE)
            break;
        if (e != MQTT_OK) {
            fprintf(stderr, "tern-bench: client %u: bad packet from broker: %s\n",
                    (unsigned)c->idx, mqtt_err_str(e));
            return -1;
        }
        bool replies = (pk.type == MQTT_PUBLISH && pk.u.publish.qos > 0) ||
                       pk.type == MQTT_PUBREC || pk.type == MQTT_PUBREL;
        if (replies && !conn_reserve(c, 4)) {
            /* Output full of acknowledgements: stop reading until it drains. */
            if (conn_flush(c) < 0)
                return -1;
            if (!conn_reserve(c, 4)) {
                c->stalled = true;
                if (conn_watch(c, true) != 0)
                    return -1;
                break;
            }
        }
        int h = on_packet(w, c, &pk, now);
        if (h != 0)
            return h;
        off += used;
    }
    if (off > 0) {
        memmove(c->in, c->in + off, c->in_len - off);
        c->in_len -= off;
    }
    return 0;
}

static void on_readable(bench_worker *w, bench_conn *c)
{
    for (unsigned k = 0; c->tls || k < READS_PER_EVENT; k++) {
        if (c->stalled)
            break;
        ssize_t n = conn_read(c);
        if (n < 0) {
            conn_fail(w, c);
            return;
        }
        if (n == 0) {
            if (c->in_len == c->in_cap) { /* a packet larger than the buffer */
                conn_fail(w, c);
                return;
            }
            break;
        }
        c->in_len += (size_t)n;
        int h = process_input(w, c, now_ns());
        if (h < 0) {
            conn_fail(w, c);
            return;
        }
        if (h > 0)
            return;
        /* Batch: this read's acknowledgements go out before the next read. */
        if (w->run->o->ack == ACK_BATCH && c->out_len > c->out_off && conn_flush(c) < 0) {
            conn_fail(w, c);
            return;
        }
    }
    if (c->out_len > c->out_off && conn_flush(c) < 0) {
        conn_fail(w, c);
        return;
    }
    if (c->role == ROLE_PUB && w->run->o->qos > 0 && pub_fill(c, now_ns()) != 0)
        conn_fail(w, c);
}

/* TCP connected (and TLS done when used): send CONNECT. */
static void after_transport(bench_worker *w, bench_conn *c)
{
    if (conn_watch(c, false) != 0 || conn_send_connect(c) != 0)
        conn_fail(w, c);
}

static void on_event(bench_worker *w, bench_conn *c, uint32_t ev, uint64_t now)
{
    if (c->state == ST_CLOSED)
        return;
    if (c->state == ST_TCP) {
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
            conn_fail(w, c);
            return;
        }
        bench_tls_ctx *ctx = c->role == ROLE_SYS && w->sys_tls ? w->sys_tls : w->tls;
        if (!ctx) {
            after_transport(w, c);
            return;
        }
        c->tls = tls_new(ctx, c->fd);
        if (!c->tls) {
            conn_fail(w, c);
            return;
        }
        c->state = ST_TLS;
    }
    if (c->state == ST_TLS) {
        uint32_t want = 0;
        int h = tls_handshake(c->tls, &want);
        if (h < 0 || (h == 0 && conn_watch(c, want == EPOLLOUT) != 0))
            conn_fail(w, c);
        else if (h == 1)
            after_transport(w, c);
        return;
    }
    if (ev & EPOLLOUT) {
        int f = conn_flush(c);
        if (f < 0) {
            conn_fail(w, c);
            return;
        }
        if (f == 1) {
            if (conn_watch(c, wants_out(c)) != 0) {
                conn_fail(w, c);
                return;
            }
            if (c->stalled) {
                /* Acknowledgements went out: resume the held input. */
                int h = process_input(w, c, now);
                if (h < 0) {
                    conn_fail(w, c);
                    return;
                }
                ev |= EPOLLIN;
            }
        }
        if (c->role == ROLE_PUB && pub_fill(c, now) != 0) {
            conn_fail(w, c);
            return;
        }
    }
    if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR))
        on_readable(w, c);
}

static void for_each_pub(bench_worker *w, uint64_t now)
{
    for (size_t i = 0; i < w->nconns; i++) {
        bench_conn *c = &w->conns[i];
        if (c->role == ROLE_PUB && c->state == ST_READY && pub_fill(c, now) != 0)
            conn_fail(w, c);
    }
}

/* Do what entering `phase` asks of this worker. */
static void enter_phase(bench_worker *w, int phase)
{
    const bench_opts *o = w->run->o;
    uint64_t now = now_ns();
    switch (phase) {
    case PHASE_PRE:
        for (size_t i = 0; i < w->nconns; i++)
            if (w->conns[i].role == ROLE_SYS && conn_start(&w->conns[i]) != 0)
                w->c.errors++;
        break;
    case PHASE_SETUP:
        setup_more(w);
        break;
    case PHASE_RUN:
        for (size_t i = 0; i < w->nconns; i++) {
            bench_conn *c = &w->conns[i];
            if (c->role == ROLE_HANDSHAKE) {
                (void)start_handshake(w, c);
            } else if (c->role == ROLE_PUB && o->rate > 0) {
                /* Spread publishers over one period so they do not send in
                 * lock-step. */
                uint64_t period = (uint64_t)(1e9 / o->rate);
                uint64_t spread = (o->seed + (uint64_t)c->idx * 0x9e3779b97f4a7c15ull) >> 11;
                c->next_ns = now + (period ? spread % period : 0);
            }
        }
        if (o->rate <= 0)
            for_each_pub(w, now);
        break;
    case PHASE_DRAIN:
        for (size_t i = 0; i < w->nconns; i++) {
            bench_conn *c = &w->conns[i];
            if (c->role == ROLE_PUB && c->state == ST_READY && conn_watch(c, wants_out(c)) != 0)
                conn_fail(w, c);
        }
        break;
    default:
        break;
    }
}

/* Keep long-held connections alive: a PINGREQ at half the keepalive.
 * Busy connections would not need it; skipping those with full output
 * keeps it from ever failing a connection. */
static void ping_all(bench_worker *w)
{
    for (size_t i = 0; i < w->nconns; i++) {
        bench_conn *c = &w->conns[i];
        if (c->state != ST_READY || c->role == ROLE_HANDSHAKE)
            continue;
        uint8_t *p = conn_reserve(c, 2);
        if (!p || mqtt_encode_empty(p, 2, MQTT_PINGREQ) != 2)
            continue;
        c->out_len += 2;
        if (conn_flush(c) < 0)
            conn_fail(w, c);
    }
}

static void *worker_main(void *arg)
{
    bench_worker *w = arg;
    int seen = -1;
    struct epoll_event evs[256];
    uint64_t ping_every = (uint64_t)w->run->o->keepalive * 500000000ull;
    uint64_t next_ping = now_ns() + ping_every;
    for (;;) {
        int phase = phase_of(w);
        while (seen < phase)
            enter_phase(w, ++seen);
        if (phase >= PHASE_STOP)
            break;
        /* A handshake slot whose reconnect failed gets another try. */
        if (phase == PHASE_RUN)
            for (size_t i = 0; i < w->nconns; i++)
                if (w->conns[i].role == ROLE_HANDSHAKE && w->conns[i].state == ST_CLOSED)
                    (void)start_handshake(w, &w->conns[i]);
        int n = epoll_wait(w->epfd, evs, (int)(sizeof evs / sizeof evs[0]), 5);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            perror("tern-bench: epoll_wait");
            atomic_store(&w->run->fatal, 1);
            break;
        }
        uint64_t now = now_ns();
        if (ping_every && now >= next_ping) {
            next_ping = now + ping_every;
            ping_all(w);
        }
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == NULL) {
                uint64_t ticks;
                if (read(w->tfd, &ticks, sizeof ticks) < 0 && errno != EAGAIN) {
                    perror("tern-bench: timerfd");
                    atomic_store(&w->run->fatal, 1);
                }
                if (phase == PHASE_RUN)
                    for_each_pub(w, now);
                continue;
            }
            on_event(w, evs[i].data.ptr, evs[i].events, now);
        }
    }
    for (size_t i = 0; i < w->nconns; i++)
        conn_close(&w->conns[i]);
    return NULL;
}

int worker_start(bench_worker *w)
{
    w->tfd = -1;
    w->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (w->epfd < 0)
        return -1;
    bool paced = false;
    for (size_t i = 0; i < w->nconns && !paced; i++)
        paced = w->conns[i].role == ROLE_PUB && w->run->o->rate > 0;
    if (paced) {
        w->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        struct itimerspec its = { .it_interval = { 0, TICK_NS }, .it_value = { 0, TICK_NS } };
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
        if (w->tfd < 0 || timerfd_settime(w->tfd, 0, &its, NULL) != 0 ||
            epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->tfd, &ev) != 0)
            return -1;
    }
    return pthread_create(&w->thread, NULL, worker_main, w) == 0 ? 0 : -1;
}

int worker_join(bench_worker *w)
{
    int rc = pthread_join(w->thread, NULL) == 0 ? 0 : -1;
    if (w->tfd >= 0)
        (void)close(w->tfd);
    if (w->epfd >= 0)
        (void)close(w->epfd);
    w->tfd = w->epfd = -1;
    return rc;
}
