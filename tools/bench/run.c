/*
 * run.c - the scenario-independent part of a run (run.h).
 */
#define _GNU_SOURCE
#include "run.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

uint64_t now_ns(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sleep_s(double s)
{
    if (s <= 0)
        return;
    struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int run_resolve(bench_run *r, const bench_opts *o)
{
    memset(&r->addr, 0, sizeof r->addr);
    struct sockaddr_in *a4 = (struct sockaddr_in *)&r->addr;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&r->addr;
    if (inet_pton(AF_INET, o->host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons(o->port);
        r->addr_len = sizeof *a4;
    } else if (inet_pton(AF_INET6, o->host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons(o->port);
        r->addr_len = sizeof *a6;
    } else {
        fprintf(stderr, "tern-bench: --host %s: an IPv4 or IPv6 address is needed\n", o->host);
        return -1;
    }
    /* Until a delay proxy says otherwise, far clients connect directly. */
    r->far_addr = r->addr;
    r->far_addr_len = r->addr_len;
    return 0;
}

static int make_ctxs(bench_worker *w, const bench_opts *o)
{
    if (o->cafile) {
        w->tls = tls_ctx_new(o->cafile, o->cert, o->key, o->group);
        if (!w->tls)
            return -1;
    }
    if (o->sys && o->cafile && o->sys_cert) {
        w->sys_tls = tls_ctx_new(o->cafile, o->sys_cert, o->sys_key, o->group);
        if (!w->sys_tls)
            return -1;
    }
    return 0;
}

int set_start(bench_set *s, const bench_opts *o, size_t total, plan_fn plan)
{
    memset(s, 0, sizeof *s);
    bench_run *r = &s->run;
    r->o = o;
    r->flood = o->rate <= 0;
    /* Topics and client ids unique to this run, so runs sharing a broker
     * (or a broker's retained state) cannot see each other's messages. */
    unsigned tag = (unsigned)((o->seed * 2654435761u) ^ (uint64_t)getpid() ^ now_ns());
    snprintf(r->topic_prefix, sizeof r->topic_prefix, "tern-bench/%08x/", tag);
    snprintf(r->id_prefix, sizeof r->id_prefix, "tb%08x-", tag);
    atomic_init(&r->phase, PHASE_PRE);
    if (run_resolve(r, o) != 0)
        return -1;
    if (o->rtt_ms > 0) {
        s->proxy = delay_proxy_start(&r->addr, r->addr_len, (uint64_t)(o->rtt_ms * 1e6 / 2),
                                     &r->far_addr, &r->far_addr_len);
        if (!s->proxy)
            return -1;
    }
    s->total = total;
    s->nw = o->threads;
    s->w = calloc(s->nw, sizeof *s->w);
    if (!s->w)
        return -1;
    size_t with_sys = total + (o->sys ? 1 : 0);
    for (unsigned k = 0; k < s->nw; k++) {
        bench_worker *w = &s->w[k];
        w->run = r;
        w->id = k;
        w->epfd = w->tfd = -1;
        w->concurrency = (o->concurrency + s->nw - 1) / s->nw;
        w->nconns = with_sys / s->nw + (k < with_sys % s->nw ? 1 : 0);
        w->conns = calloc(w->nconns ? w->nconns : 1, sizeof *w->conns);
        if (!w->conns || make_ctxs(w, o) != 0)
            return -1;
    }
    /* Connection i goes to worker i % threads; the $SYS reader is last. */
    for (size_t i = 0; i < with_sys; i++) {
        bench_worker *w = &s->w[i % s->nw];
        uint32_t topic = 0;
        conn_role role = i < total ? plan(i, o, &topic) : ROLE_SYS;
        if (conn_init(&w->conns[i / s->nw], w, role, (uint32_t)i, topic) != 0)
            return -1;
        if (role == ROLE_PUB && pub_prepare(&w->conns[i / s->nw], o->seed) != 0)
            return -1;
    }
    for (unsigned k = 0; k < s->nw; k++)
        if (worker_start(&s->w[k]) != 0) {
            perror("tern-bench: starting a worker");
            return -1;
        }
    return 0;
}

void set_phase(bench_set *s, int phase)
{
    static const char *const names[] = { "pre", "setup", "run", "drain", "stop" };
    atomic_store_explicit(&s->run.phase, phase, memory_order_release);
    /* For a driver that times other work against this run (--phases). */
    if (s->run.o->phases && phase >= 0 && (size_t)phase < sizeof names / sizeof names[0]) {
        fprintf(stderr, "tern-bench: phase %s\n", names[phase]);
        fflush(stderr);
    }
}

double set_wait_ready(bench_set *s, double timeout)
{
    uint64_t t0 = now_ns();
    for (;;) {
        uint32_t done = atomic_load(&s->run.ready) + atomic_load(&s->run.failed);
        double el = (double)(now_ns() - t0) / 1e9;
        if (done >= s->total || el >= timeout || atomic_load(&s->run.fatal))
            return el;
        sleep_s(0.001);
    }
}

uint64_t set_sys_updates(bench_set *s)
{
    return atomic_load(&s->run.sys_updates);
}

static void counts_add(bench_counts *d, const bench_counts *a)
{
    d->published += a->published;
    d->puback += a->puback;
    d->puback_in_run += a->puback_in_run;
    d->delivered += a->delivered;
    d->delivered_in_run += a->delivered_in_run;
    d->handshakes += a->handshakes;
    d->errors += a->errors;
    d->lost += a->lost;
    d->late += a->late;
    d->bad_payload += a->bad_payload;
}

int set_finish(bench_set *s)
{
    int rc = 0;
    set_phase(s, PHASE_STOP);
    for (unsigned k = 0; k < s->nw; k++) {
        bench_worker *w = &s->w[k];
        if (w->epfd >= 0 && worker_join(w) != 0)
            rc = -1;
        counts_add(&s->sum, &w->c);
        hist_merge(&s->lat, &w->lat);
        for (size_t i = 0; i < w->nconns; i++)
            conn_release(&w->conns[i]);
        free(w->conns);
        tls_ctx_free(w->tls);
        tls_ctx_free(w->sys_tls);
    }
    free(s->w);
    s->w = NULL;
    delay_proxy_stop(s->proxy); /* after the workers: their sockets are closed */
    s->proxy = NULL;
    return rc;
}

void json_head(json *j, const bench_opts *o)
{
    json_str(j, "scenario", o->scenario_name);
    json_str(j, "broker", o->label);
    if (o->case_id) {
        json_str(j, "case", o->case_id);
        json_u64(j, "rep", o->rep);
    }
    json_obj(j, "params");
    json_str(j, "transport", o->cafile ? "mtls" : "plain");
    if (o->cafile)
        json_str(j, "group", o->group);
    json_str(j, "host", o->host);
    json_u64(j, "port", o->port);
    json_u64(j, "threads", o->threads);
    json_str(j, "cpus", o->cpus);
    json_u64(j, "seed", o->seed);
    switch (o->scenario) {
    case SCEN_HANDSHAKE:
        json_u64(j, "parallel", o->conns);
        json_f64(j, "duration_s", o->duration);
        break;
    case SCEN_IDLE:
        json_u64(j, "connections", o->conns);
        json_u64(j, "concurrency", o->concurrency);
        json_f64(j, "hold_s", o->hold);
        break;
    case SCEN_STORM:
        json_f64(j, "rate", o->rate);
        json_u64(j, "max_attempts_in_progress", o->conns);
        json_f64(j, "connect_timeout_s", o->connect_timeout);
        json_u64(j, "retries", o->retries);
        json_f64(j, "retry_delay_s", o->retry_delay);
        json_f64(j, "hold_s", o->hold);
        json_u64(j, "bystanders", o->bystanders);
        json_f64(j, "bystander_rate", o->bystander_rate);
        json_u64(j, "qos", o->qos);
        json_f64(j, "duration_s", o->duration);
        break;
    default:
        json_u64(j, "qos", o->qos);
        json_str(j, "mqtt", o->level == MQTT_LEVEL_5 ? "5" : "3.1.1");
        json_u64(j, "payload", o->size);
        json_u64(j, "publishers", o->scenario == SCEN_FANOUT ? 1 : o->pairs);
        json_u64(j, "subscribers", o->scenario == SCEN_FANOUT ? o->subs : o->pairs);
        json_f64(j, "rate_per_publisher", o->rate);
        if (o->sub_rate > 0)
            json_f64(j, "rate_per_subscriber", o->sub_rate);
        json_f64(j, "duration_s", o->duration);
        if (o->qos) {
            static const char *const acks[] = { "event", "batch", "immediate" };
            json_u64(j, "window", o->window);
            json_str(j, "ack", acks[o->ack]);
        }
        if (o->rtt_ms > 0) {
            json_f64(j, "rtt_ms", o->rtt_ms);
            json_str(j, "rtt_for", o->rtt_all ? "all" : "subs");
        }
        json_bool(j, "persistent", o->persistent);
        break;
    }
    json_end(j);
}

void json_cpu(json *j, const cpu_sample *a, const cpu_sample *b, unsigned threads)
{
    double wall = (double)(b->t_ns - a->t_ns) / 1e9;
    double self = b->self_s - a->self_s;
    json_obj(j, "cpu");
    json_f64(j, "wall_s", wall);
    json_f64(j, "generator_s", self);
    json_f64(j, "generator_util", wall > 0 ? self / wall : 0);
    /* Near one busy core per thread means the generator may be the limit. */
    json_bool(j, "generator_saturated", wall > 0 && self / wall > 0.9 * threads);
    if (a->has_broker && b->has_broker) {
        double br = b->broker_s - a->broker_s;
        json_f64(j, "broker_s", br);
        json_f64(j, "broker_util", wall > 0 ? br / wall : 0);
        if (a->has_machine && b->has_machine) {
            double other = (b->machine_busy_s - a->machine_busy_s) - br - self;
            json_f64(j, "other_util", wall > 0 ? (other > 0 ? other : 0) / wall : 0);
        }
    }
    double l1;
    if (proc_loadavg(&l1) == 0)
        json_f64(j, "loadavg1", l1);
    json_end(j);
}

void json_latency(json *j, const char *key, const hist *h)
{
    json_obj(j, key);
    json_u64(j, "samples", h->count);
    json_f64(j, "p50_ms", (double)hist_quantile(h, 0.50) / 1e6);
    json_f64(j, "p99_ms", (double)hist_quantile(h, 0.99) / 1e6);
    json_f64(j, "max_ms", (double)h->max / 1e6);
    json_f64(j, "mean_ms", h->count ? (double)h->sum / (double)h->count / 1e6 : 0);
    json_end(j);
}
