/*
 * scen_traffic.c - the message scenarios. latency and flood use P
 * publisher/subscriber pairs, one topic each (rate-limited vs. as fast as
 * the broker takes it); fanout has one publisher and K subscribers on one
 * topic. Subscribers come first in the plan so they are subscribed before
 * any publisher connects, and publishing starts only once everyone is.
 */
#include "scen.h"

#include <stdio.h>

static conn_role plan_pairs(size_t i, const bench_opts *o, uint32_t *topic)
{
    if (i < o->pairs) {
        *topic = (uint32_t)i;
        return ROLE_SUB;
    }
    *topic = (uint32_t)(i - o->pairs);
    return ROLE_PUB;
}

static conn_role plan_fanout(size_t i, const bench_opts *o, uint32_t *topic)
{
    *topic = 0;
    return i < o->subs ? ROLE_SUB : ROLE_PUB;
}

static int fail_json(const bench_opts *o, const char *why, uint32_t ready, uint32_t failed)
{
    json j;
    json_begin(&j);
    json_head(&j, o);
    json_str(&j, "error", why);
    json_u64(&j, "ready", ready);
    json_u64(&j, "failed", failed);
    (void)json_finish(&j, stdout);
    return 1;
}

int scen_traffic(const bench_opts *o)
{
    bool fan = o->scenario == SCEN_FANOUT;
    size_t total = fan ? (size_t)o->subs + 1 : 2 * (size_t)o->pairs;
    bench_set s;
    if (set_start(&s, o, total, fan ? plan_fanout : plan_pairs) != 0)
        return 1;
    set_phase(&s, PHASE_SETUP);
    double setup = set_wait_ready(&s, o->setup_timeout);
    uint32_t ready = atomic_load(&s.run.ready), failed = atomic_load(&s.run.failed);
    if (ready < total) {
        (void)set_finish(&s);
        return fail_json(o, "not every client connected and subscribed", ready, failed);
    }

    cpu_sample a, b;
    cpu_sample_take(&a, o->pid);
    set_phase(&s, PHASE_RUN);
    sleep_s(o->duration);
    cpu_sample_take(&b, o->pid);
    set_phase(&s, PHASE_DRAIN);
    sleep_s(o->drain);
    int fatal = atomic_load(&s.run.fatal);
    if (set_finish(&s) != 0 || fatal)
        return 1;

    double wall = (double)(b.t_ns - a.t_ns) / 1e9;
    uint64_t expected = s.sum.published * (fan ? o->subs : 1);
    json j;
    json_begin(&j);
    json_head(&j, o);
    json_obj(&j, "results");
    json_f64(&j, "setup_s", setup);
    json_u64(&j, "published", s.sum.published);
    json_f64(&j, "published_per_s", (double)s.sum.published / wall);
    if (o->qos) {
        json_u64(&j, "puback", s.sum.puback);
        /* Acknowledgements inside the measured window: with a store, the
         * durable rate (each one waited for its commit). */
        json_f64(&j, "puback_per_s", (double)s.sum.puback_in_run / wall);
    }
    json_u64(&j, "expected", expected);
    json_u64(&j, "delivered", s.sum.delivered);
    json_f64(&j, "delivered_ratio", expected ? (double)s.sum.delivered / (double)expected : 0);
    /* Deliveries inside the measured window only: the drain's backlog
     * would otherwise flatter a broker that queued instead of delivering. */
    json_f64(&j, "delivered_per_s", (double)s.sum.delivered_in_run / wall);
    json_u64(&j, "lost_connections", s.sum.lost);
    json_u64(&j, "errors", s.sum.errors);
    if (s.sum.late)
        json_u64(&j, "window_full_ticks", s.sum.late);
    if (s.sum.bad_payload)
        json_u64(&j, "bad_payload", s.sum.bad_payload);
    json_end(&j);
    json_latency(&j, "latency", &s.lat);
    json_cpu(&j, &a, &b, o->threads);
    return json_finish(&j, stdout) == 0 ? 0 : 1;
}
