/*
 * scen_storm.c - the handshake storm (issue 19, SPEC B7): new clients
 * arrive at an open-loop rate (--rate per second, whatever the broker
 * manages), each one connecting like a real device: a connect timeout
 * covering TCP, TLS and CONNACK (--connect-timeout), then a retry after
 * --retry-delay, up to --retries more times. A client that got its CONNACK
 * stays --hold seconds, proves it is still served (PINGREQ/PINGRESP) and
 * disconnects; a close by the broker in between is a post-CONNACK drop,
 * the one thing overload must never cause.
 *
 * Beside the storm, --bystanders clients connected before it starts each
 * publish to their own topic (--bystander-rate per second, one message
 * out at a time, QoS --qos) and time the message's return: the latency of
 * already-connected clients while the broker is under the storm.
 *
 * Open loop matters: a closed loop (the `handshake` scenario) slows down
 * with the broker and so can never overload it. Attempts with a socket
 * open are capped by --conns (hundreds in parallel, as many as the
 * process's file descriptors allow); a client waiting to retry holds no
 * socket and does not count against it, so a storm's offered rate is not
 * cut by retries waiting out their delay. An arrival finding no free slot
 * is counted as skipped, so the offered rate actually reached is in the
 * output.
 *
 * Two threads: the storm's, whose TLS work scales with the handshakes
 * the broker completes, not with the attempts it drops (one core does
 * thousands of client handshakes per second with wolfSSL), and the
 * bystanders', with an epoll set of their own so the storm's thousands of
 * sockets never delay their messages. --threads is not used.
 */
#define _GNU_SOURCE
#include "scen.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

enum {
    DEV_FREE,  /* unused slot */
    DEV_WAIT,  /* waiting to retry */
    DEV_TRY,   /* TCP, TLS or CONNECT in progress (c.state says which) */
    DEV_HOLD,  /* CONNACK received: holding the connection */
    DEV_PING,  /* PINGREQ sent at the end of the hold */
    DEV_BYS,   /* a bystander (c.state: set-up, then ST_READY) */
};

typedef struct storm_dev {
    bench_conn c; /* first: epoll's data.ptr is &c */
    uint8_t mode;
    uint8_t tries;      /* attempts made for this client */
    bool has_out;       /* bystander: a message is on its way */
    bool answered;      /* this attempt: the broker sent TLS bytes (its first flight) */
    uint64_t deadline;  /* ns: of the attempt, the hold, the ping or the retry */
    uint64_t t_first;   /* ns: the client's first attempt */
    uint64_t t_sent;    /* bystander: when its message went out */
    uint64_t next_send; /* bystander: when the next one is due */
    uint16_t pid;
} storm_dev;

typedef struct storm_counts {
    uint64_t arrivals, skipped, attempts, retries, completed, completed_first_try;
    uint64_t gave_up, tcp_timeouts, tcp_refused, hs_timeouts, hs_failed, connack_refused;
    /* hs_timeouts split by how far the broker got: never answered (queued
     * in Linux's backlog or not yet served: cost it nothing), answered but
     * the client's side unfinished, or the client's side done (in TLS 1.3
     * right after the broker's first flight) and CONNACK late: the
     * broker's key exchange and signature, perhaps its verification of
     * the client too, were wasted. */
    uint64_t hs_timeouts_unanswered, hs_timeouts_answered, connack_timeouts;
    uint64_t dropped_after_connack, ping_timeouts, disconnected;
    uint64_t bys_sent, bys_received, bys_lost, bys_late;
} storm_counts;

typedef struct storm {
    const bench_opts *o;
    bench_run run;
    bench_worker w;
    storm_dev *dev;
    size_t ndev;
    size_t *free;       /* stack of free storm slots */
    size_t nfree;
    size_t trying;      /* DEV_TRY: attempts with a socket open (<= --conns) */
    size_t nbys;
    uint32_t next_idx;  /* client id suffix: unique for every attempt */
    bool running;       /* arrivals on */
    uint64_t t0, t_end;
    uint64_t *per_s;    /* completions in each second of the run */
    size_t nsec;
    storm_counts n;
    hist connect_lat;   /* first attempt to CONNACK, completed clients */
    hist bys_lat;
    uint8_t *payload;
} storm;

/* ---- one client --------------------------------------------------------- */

/* Every change of a client's mode goes through here: it keeps the count of
 * open attempts that --conns caps. */
static void set_mode(storm *s, storm_dev *d, uint8_t mode)
{
    if (d->mode == DEV_TRY)
        s->trying--;
    if (mode == DEV_TRY)
        s->trying++;
    d->mode = mode;
}

static void slot_free(storm *s, storm_dev *d)
{
    conn_close(&d->c);
    set_mode(s, d, DEV_FREE);
    s->free[s->nfree++] = (size_t)(d - s->dev);
}

static int dev_try(storm *s, storm_dev *d, uint64_t now)
{
    d->c.idx = s->next_idx++;
    d->tries++;
    d->answered = false;
    s->n.attempts++;
    set_mode(s, d, DEV_TRY);
    d->deadline = now + (uint64_t)(s->o->connect_timeout * 1e9);
    if (conn_start(&d->c) != 0) {
        s->n.tcp_refused++; /* a local failure to even send the SYN */
        return -1;
    }
    return 0;
}

/* The current attempt failed (already counted): retry later or give up. */
static void attempt_failed(storm *s, storm_dev *d, uint64_t now)
{
    conn_close(&d->c);
    if (d->tries <= s->o->retries && s->running) {
        /* Jitter of +-25% so retries do not arrive in lock-step. */
        double j = 0.75 + 0.5 * (double)((d->c.idx * 2654435761u) % 1000u) / 1000.0;
        set_mode(s, d, DEV_WAIT);
        d->deadline = now + (uint64_t)(s->o->retry_delay * j * 1e9);
        s->n.retries++;
        return;
    }
    s->n.gave_up++;
    slot_free(s, d);
}

/* The broker closed (or reset) the connection. */
static void dev_broken(storm *s, storm_dev *d, uint64_t now, bool timeout)
{
    switch (d->mode) {
    case DEV_TRY:
        if (d->c.state == ST_TCP) {
            if (timeout)
                s->n.tcp_timeouts++;
            else
                s->n.tcp_refused++;
        } else if (timeout) {
            s->n.hs_timeouts++;
            if (d->c.state != ST_TLS)
                s->n.connack_timeouts++;
            else if (d->answered)
                s->n.hs_timeouts_answered++;
            else
                s->n.hs_timeouts_unanswered++;
        } else {
            s->n.hs_failed++;
        }
        attempt_failed(s, d, now);
        break;
    case DEV_HOLD:
    case DEV_PING:
        if (timeout)
            s->n.ping_timeouts++;
        else
            s->n.dropped_after_connack++;
        slot_free(s, d);
        break;
    case DEV_BYS:
        if (d->c.state == ST_READY)
            s->n.bys_lost++;
        conn_close(&d->c);
        break;
    default:
        break;
    }
}

static void arrival(storm *s, uint64_t now)
{
    s->n.arrivals++;
    if (s->nfree == 0 || s->trying >= s->o->conns) {
        s->n.skipped++;
        return;
    }
    storm_dev *d = &s->dev[s->free[--s->nfree]];
    d->tries = 0;
    d->t_first = now;
    if (dev_try(s, d, now) != 0)
        attempt_failed(s, d, now);
}

static void completed(storm *s, storm_dev *d, uint64_t now)
{
    s->n.completed++;
    if (d->tries == 1)
        s->n.completed_first_try++;
    hist_add(&s->connect_lat, now - d->t_first);
    if (now >= s->t0 && now < s->t_end) {
        size_t sec = (size_t)((now - s->t0) / 1000000000ull);
        if (sec < s->nsec)
            s->per_s[sec]++;
    }
    set_mode(s, d, DEV_HOLD);
    d->deadline = now + (uint64_t)(s->o->hold * 1e9);
}

/* ---- bystanders ----------------------------------------------------------- */

static int bys_send(storm *s, storm_dev *d, uint64_t now)
{
    char topic[96];
    int tn = snprintf(topic, sizeof topic, "%sb%u", s->run.topic_prefix, (unsigned)d->c.topic);
    if (tn < 0 || (size_t)tn >= sizeof topic)
        return -1;
    memcpy(s->payload, &now, sizeof now);
    if (++d->pid == 0)
        d->pid = 1;
    mqtt_publish p = {
        .qos = (uint8_t)s->o->qos,
        .packet_id = s->o->qos ? d->pid : 0,
        .topic = { (const uint8_t *)topic, (size_t)tn },
        .payload = { s->payload, s->o->size },
    };
    size_t cap = mqtt_publish_size(s->o->level, (size_t)tn, s->o->size, p.qos);
    uint8_t *out = conn_reserve(&d->c, cap);
    size_t n = out ? mqtt_encode_publish(out, cap, s->o->level, &p) : 0;
    if (n == 0)
        return -1;
    d->c.out_len += n;
    d->has_out = true;
    d->t_sent = now;
    s->n.bys_sent++;
    return conn_flush(&d->c) < 0 ? -1 : 0;
}

static void bys_tick(storm *s, uint64_t now)
{
    uint64_t period = (uint64_t)(1e9 / s->o->bystander_rate);
    for (size_t i = 0; i < s->nbys; i++) {
        storm_dev *d = &s->dev[i];
        if (d->c.state != ST_READY || now < d->next_send)
            continue;
        d->next_send += period;
        if (d->next_send < now)
            d->next_send = now + period;
        if (d->has_out) {
            s->n.bys_late++; /* the last one has not come back yet */
            continue;
        }
        if (bys_send(s, d, now) != 0)
            dev_broken(s, d, now, false);
    }
}

/* ---- packets ---------------------------------------------------------------- */

static int on_packet(storm *s, storm_dev *d, const mqtt_packet *pk, uint64_t now)
{
    char filter[96];
    int n;
    switch (pk->type) {
    case MQTT_CONNACK:
        if (d->c.state != ST_CONNACK)
            return -1;
        if (pk->u.connack.return_code != MQTT_CONNACK_ACCEPTED) {
            s->n.connack_refused++;
            return -1;
        }
        d->c.state = ST_READY;
        if (d->mode == DEV_BYS) {
            n = snprintf(filter, sizeof filter, "%sb%u", s->run.topic_prefix,
                         (unsigned)d->c.topic);
            if (n < 0 || (size_t)n >= sizeof filter)
                return -1;
            return conn_send_subscribe(&d->c, filter, (uint8_t)s->o->qos);
        }
        completed(s, d, now);
        return 0;
    case MQTT_SUBACK: {
        size_t pos = 0;
        uint8_t code;
        if (d->mode != DEV_BYS || d->c.state != ST_SUBACK)
            return -1;
        while (mqtt_suback_next(&pk->u.suback, &pos, &code))
            if (code == MQTT_SUBACK_FAILURE) {
                fprintf(stderr, "tern-bench: storm: a bystander's subscription was refused "
                                "(an ACL?)\n");
                return -1;
            }
        d->c.state = ST_READY;
        return 0;
    }
    case MQTT_PINGRESP:
        if (d->mode == DEV_PING) {
            s->n.disconnected++;
            (void)conn_send_empty(&d->c, MQTT_DISCONNECT);
            slot_free(s, d);
            return 1;
        }
        return 0;
    case MQTT_PUBLISH:
        if (d->mode != DEV_BYS)
            return 0;
        if (d->has_out && pk->u.publish.payload.len >= sizeof(uint64_t)) {
            uint64_t sent;
            memcpy(&sent, pk->u.publish.payload.p, sizeof sent);
            if (sent == d->t_sent) {
                d->has_out = false;
                s->n.bys_received++;
                if (s->running)
                    hist_add(&s->bys_lat, now - sent);
            }
        }
        if (pk->u.publish.qos > 0) {
            uint8_t *o = conn_reserve(&d->c, 4);
            if (!o || mqtt_encode_ack(o, 4, s->o->level, MQTT_PUBACK,
                                      pk->u.publish.packet_id) != 4)
                return -1;
            d->c.out_len += 4;
        }
        return 0;
    default:
        return 0;
    }
}

static int process_input(storm *s, storm_dev *d, uint64_t now)
{
    bench_conn *c = &d->c;
    size_t off = 0;
    while (off < c->in_len) {
        mqtt_packet pk;
        size_t used = 0;
        mqtt_err e = mqtt_decode(c->in + off, c->in_len - off, MQTT_FROM_SERVER,
                                 s->o->level, 0, &pk, &used);
        if (e == MQTT_NEED_MORE)
            break;
        if (e != MQTT_OK)
            return -1;
        int h = on_packet(s, d, &pk, now);
        if (h != 0)
            return h;
        off += used;
    }
    memmove(c->in, c->in + off, c->in_len - off);
    c->in_len -= off;
    return 0;
}

static void on_event(storm *s, storm_dev *d, uint32_t ev, uint64_t now)
{
    bench_conn *c = &d->c;
    if (c->state == ST_CLOSED)
        return;
    if (c->state == ST_TCP) {
        if (conn_connected(c) != 0) {
            dev_broken(s, d, now, false);
            return;
        }
        c->tls = s->w.tls ? tls_new(s->w.tls, c->fd) : NULL;
        if (s->w.tls && !c->tls) {
            dev_broken(s, d, now, false);
            return;
        }
        c->state = s->w.tls ? ST_TLS : ST_CONNACK;
        if (!s->w.tls && (conn_watch(c, false) != 0 || conn_send_connect(c) != 0))
            dev_broken(s, d, now, false);
        if (!s->w.tls)
            return;
    }
    if (c->state == ST_TLS) {
        uint32_t want = 0;
        if (ev & EPOLLIN)
            d->answered = true;
        int h = tls_handshake(c->tls, &want);
        if (h < 0 || (h == 0 && conn_watch(c, want == EPOLLOUT) != 0) ||
            (h == 1 && (conn_watch(c, false) != 0 || conn_send_connect(c) != 0)))
            dev_broken(s, d, now, false);
        return;
    }
    if ((ev & EPOLLOUT) && conn_flush(c) == 1 && conn_watch(c, false) != 0) {
        dev_broken(s, d, now, false);
        return;
    }
    if (!(ev & (EPOLLIN | EPOLLHUP | EPOLLERR)))
        return;
    for (;;) {
        ssize_t n = conn_read(c);
        if (n < 0 || (n == 0 && c->in_len == c->in_cap)) {
            dev_broken(s, d, now, false);
            return;
        }
        if (n == 0)
            break;
        c->in_len += (size_t)n;
        int h = process_input(s, d, now);
        if (h < 0) {
            dev_broken(s, d, now, false);
            return;
        }
        if (h > 0)
            return;
    }
    if (c->out_len > c->out_off && conn_flush(c) < 0)
        dev_broken(s, d, now, false);
}

/* Deadlines of the storm's clients: attempts, holds, pings and retries. */
static void check_deadlines(storm *s, uint64_t now)
{
    for (size_t i = s->nbys; i < s->ndev; i++) {
        storm_dev *d = &s->dev[i];
        if (d->mode == DEV_FREE || now < d->deadline)
            continue;
        switch (d->mode) {
        case DEV_WAIT:
            if (!s->running) {
                s->n.gave_up++;
                slot_free(s, d);
            } else if (dev_try(s, d, now) != 0) {
                attempt_failed(s, d, now);
            }
            break;
        case DEV_HOLD: {
            uint8_t *p = conn_reserve(&d->c, 2);
            if (!p || mqtt_encode_empty(p, 2, MQTT_PINGREQ) != 2) {
                dev_broken(s, d, now, false);
                break;
            }
            d->c.out_len += 2;
            set_mode(s, d, DEV_PING);
            d->deadline = now + (uint64_t)(s->o->connect_timeout * 1e9);
            if (conn_flush(&d->c) < 0)
                dev_broken(s, d, now, false);
            break;
        }
        default: /* DEV_TRY, DEV_PING */
            dev_broken(s, d, now, true);
            break;
        }
    }
}

/* ---- the run ---------------------------------------------------------------- */

static int loop_once(storm *s, int timeout_ms)
{
    struct epoll_event evs[256];
    int n = epoll_wait(s->w.epfd, evs, (int)(sizeof evs / sizeof evs[0]), timeout_ms);
    if (n < 0)
        return errno == EINTR ? 0 : -1;
    uint64_t now = now_ns();
    for (int i = 0; i < n; i++)
        on_event(s, evs[i].data.ptr, evs[i].events, now);
    return 0;
}

static bool bystanders_ready(storm *s, uint64_t now, uint64_t until)
{
    size_t ready = 0;
    for (size_t i = 0; i < s->nbys; i++) {
        storm_dev *d = &s->dev[i];
        if (d->c.state == ST_READY)
            ready++;
        else if (d->c.state == ST_CLOSED && now < until && conn_start(&d->c) != 0)
            return false;
    }
    return ready == s->nbys;
}

/* nbys bystanders, and slots for the storm when storm_slots. */
static int storm_init(storm *s, const bench_opts *o, size_t nbys, bool storm_slots, const char *tagc)
{
    memset(s, 0, sizeof *s);
    s->o = o;
    s->run.o = o;
    s->w.run = &s->run;
    s->w.epfd = -1;
    s->w.tfd = -1;
    unsigned tag = (unsigned)((o->seed * 2654435761u) ^ (uint64_t)getpid() ^ now_ns());
    snprintf(s->run.topic_prefix, sizeof s->run.topic_prefix, "tern-bench/%08x/", tag);
    snprintf(s->run.id_prefix, sizeof s->run.id_prefix, "t%s%08x-", tagc, tag);
    /* Clients holding their connection after CONNACK need slots too: up to
     * --hold plus a ping's time of completions at the offered rate (capped:
     * no broker here completes more than a few thousand a second); so do
     * clients waiting to retry (no socket): each arrival waits at most
     * --retries delays of up to 1.25 --retry-delay. */
    double held = (o->rate < 4000 ? o->rate : 4000) * (o->hold + 1.0) + 64;
    double waiting = o->rate * o->retries * o->retry_delay * 1.25 + 64;
    s->nbys = nbys;
    s->ndev = s->nbys + (storm_slots ? o->conns + (size_t)held + (size_t)waiting : 0);
    s->nsec = (size_t)o->duration + 1;
    s->dev = calloc(s->ndev + 1, sizeof *s->dev);
    s->free = calloc(s->ndev + 1, sizeof *s->free);
    s->per_s = calloc(s->nsec, sizeof *s->per_s);
    s->payload = calloc(1, o->size);
    s->w.epfd = epoll_create1(EPOLL_CLOEXEC);
    if (!s->dev || !s->free || !s->per_s || !s->payload || s->w.epfd < 0)
        return -1;
    /* No delay proxy here: the bystanders (subscribers) connect directly. */
    if (run_resolve(&s->run, o) != 0)
        return -1;
    if (s->run.addr.ss_family != AF_INET) {
        fprintf(stderr, "tern-bench: storm: --host must be an IPv4 address\n");
        return -1;
    }
    if (o->cafile && !(s->w.tls = tls_ctx_new(o->cafile, o->cert, o->key, o->group)))
        return -1;
    for (size_t i = 0; i < s->ndev; i++) {
        storm_dev *d = &s->dev[i];
        if (conn_init(&d->c, &s->w, i < s->nbys ? ROLE_SUB : ROLE_HANDSHAKE, 0, (uint32_t)i) != 0)
            return -1;
        d->mode = i < s->nbys ? DEV_BYS : DEV_FREE;
        d->c.idx = (uint32_t)i;
        if (i >= s->nbys)
            s->free[s->nfree++] = s->ndev - 1 - (i - s->nbys);
    }
    s->next_idx = (uint32_t)s->nbys;
    return 0;
}

static void storm_free(storm *s)
{
    for (size_t i = 0; s->dev && i < s->ndev; i++)
        conn_release(&s->dev[i].c);
    free(s->dev);
    free(s->free);
    free(s->per_s);
    free(s->payload);
    tls_ctx_free(s->w.tls);
    if (s->w.epfd >= 0)
        close(s->w.epfd);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void report(storm *s, const cpu_sample *a, const cpu_sample *b)
{
    const storm_counts *n = &s->n;
    double wall = (double)(s->t_end - s->t0) / 1e9;
    /* Per-second completions: the median says the sustained rate, the
     * minimum whether it ever collapsed. The first second is left out
     * (the backlog of the first arrivals is still being worked). */
    size_t full = (size_t)wall, from = full > 2 ? 1 : 0;
    uint64_t sorted[4096], in_window = 0;
    size_t k = 0;
    for (size_t i = from; i < full && k < 4096; i++)
        sorted[k++] = s->per_s[i];
    for (size_t i = 0; i < s->nsec; i++)
        in_window += s->per_s[i];
    qsort(sorted, k, sizeof sorted[0], cmp_u64);
    json j;
    json_begin(&j);
    json_head(&j, s->o);
    json_obj(&j, "results");
    json_f64(&j, "offered_per_s", (double)n->arrivals / wall);
    json_u64(&j, "arrivals", n->arrivals);
    json_u64(&j, "skipped_no_slot", n->skipped);
    json_u64(&j, "attempts", n->attempts);
    json_u64(&j, "retries", n->retries);
    json_u64(&j, "completed", n->completed);
    json_u64(&j, "completed_first_try", n->completed_first_try);
    /* The rate counts what completed during the storm only: clients that
     * complete while the last ones drain would flatter it. */
    json_f64(&j, "completed_per_s", (double)in_window / wall);
    json_u64(&j, "completed_per_s_median", k ? sorted[k / 2] : 0);
    json_u64(&j, "completed_per_s_min", k ? sorted[0] : 0);
    json_obj(&j, "completed_by_second");
    for (size_t i = 0; i < full && i < s->nsec; i++) {
        char key[24];
        snprintf(key, sizeof key, "%zu", i);
        json_u64(&j, key, s->per_s[i]);
    }
    json_end(&j);
    json_u64(&j, "gave_up", n->gave_up);
    json_u64(&j, "tcp_timeouts", n->tcp_timeouts);
    json_u64(&j, "tcp_refused_or_reset", n->tcp_refused);
    json_u64(&j, "handshake_timeouts", n->hs_timeouts);
    json_u64(&j, "handshake_timeouts_unanswered", n->hs_timeouts_unanswered);
    json_u64(&j, "handshake_timeouts_answered", n->hs_timeouts_answered);
    json_u64(&j, "connack_timeouts", n->connack_timeouts);
    json_u64(&j, "handshake_failed", n->hs_failed);
    json_u64(&j, "connack_refused", n->connack_refused);
    json_u64(&j, "dropped_after_connack", n->dropped_after_connack);
    json_u64(&j, "ping_timeouts", n->ping_timeouts);
    json_u64(&j, "disconnected_clean", n->disconnected);
    json_latency(&j, "connect_latency", &s->connect_lat);
    json_obj(&j, "bystanders");
    json_u64(&j, "clients", s->nbys);
    json_u64(&j, "sent", n->bys_sent);
    json_u64(&j, "received", n->bys_received);
    json_u64(&j, "late", n->bys_late);
    json_u64(&j, "lost", n->bys_lost);
    json_end(&j);
    json_latency(&j, "bystander_latency", &s->bys_lat);
    /* The CPU sample spans the storm, so per handshake completed in it. */
    if (a->has_broker && in_window)
        json_f64(&j, "broker_cpu_ms_per_completed",
                 (b->broker_s - a->broker_s) * 1e3 / (double)in_window);
    json_end(&j);
    json_cpu(&j, a, b, 1);
    (void)json_finish(&j, stdout);
}

/* The bystanders' thread: their own epoll loop, so the storm's thousands
 * of sockets never delay their messages (their latency is the broker's). */
static void *bys_main(void *arg)
{
    storm *b = arg;
    uint64_t period = (uint64_t)(1e9 / b->o->bystander_rate);
    for (size_t i = 0; i < b->nbys; i++)
        b->dev[i].next_send = b->t0 + period * i / b->nbys;
    b->running = true;
    while (now_ns() < b->t_end) {
        bys_tick(b, now_ns());
        if (loop_once(b, 1) != 0)
            break;
    }
    b->running = false;
    return NULL;
}

int scen_storm(const bench_opts *o)
{
    storm s, b;
    int rc = 1;
    bool joined = true;
    pthread_t bt;
    memset(&s, 0, sizeof s);
    memset(&b, 0, sizeof b);
    s.w.epfd = b.w.epfd = -1;
    if (storm_init(&s, o, 0, true, "s") != 0 || storm_init(&b, o, o->bystanders, false, "b") != 0) {
        fprintf(stderr, "tern-bench: storm: set-up failed\n");
        goto out;
    }
    /* Bystanders first, all connected and subscribed before the storm. */
    uint64_t until = now_ns() + (uint64_t)(o->setup_timeout * 1e9);
    while (!bystanders_ready(&b, now_ns(), until)) {
        if (now_ns() >= until) {
            fprintf(stderr, "tern-bench: storm: bystanders not connected in %g s\n",
                    o->setup_timeout);
            goto out;
        }
        if (loop_once(&b, 5) != 0)
            goto out;
    }
    if (o->phases)
        fprintf(stderr, "tern-bench: storm: %zu bystanders ready; storm at %g/s\n", b.nbys,
                o->rate);
    uint64_t period = (uint64_t)(1e9 / o->rate);
    cpu_sample ca, cb;
    cpu_sample_take(&ca, o->pid);
    s.t0 = b.t0 = now_ns();
    s.t_end = b.t_end = s.t0 + (uint64_t)(o->duration * 1e9);
    if (b.nbys > 0) {
        if (pthread_create(&bt, NULL, bys_main, &b) != 0)
            goto out;
        joined = false;
    }
    s.running = true;
    uint64_t next_arrival = s.t0, next_check = s.t0;
    for (;;) {
        uint64_t now = now_ns();
        if (s.running && now >= s.t_end) {
            s.running = false;
            cpu_sample_take(&cb, o->pid);
            if (o->phases)
                fprintf(stderr, "tern-bench: storm: arrivals stopped; draining\n");
        }
        /* Open loop: every arrival due by now starts, late or not. */
        while (s.running && next_arrival <= now) {
            arrival(&s, now);
            next_arrival += period;
        }
        if (now >= next_check) {
            check_deadlines(&s, now);
            next_check = now + 5000000ull;
        }
        if (!s.running && s.nfree == s.ndev)
            break;
        if (loop_once(&s, 1) != 0) {
            perror("tern-bench: epoll_wait");
            goto out;
        }
    }
    if (!joined)
        (void)pthread_join(bt, NULL);
    joined = true;
    s.n.bys_sent = b.n.bys_sent;
    s.n.bys_received = b.n.bys_received;
    s.n.bys_late = b.n.bys_late;
    s.n.bys_lost = b.n.bys_lost;
    s.nbys = b.nbys;
    s.bys_lat = b.bys_lat;
    report(&s, &ca, &cb);
    rc = 0;
out:
    if (!joined)
        (void)pthread_join(bt, NULL);
    storm_free(&s);
    storm_free(&b);
    return rc;
}
