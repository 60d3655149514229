/*
 * scen_conn.c - the connection scenarios: handshake (full connections per
 * second) and idle (many open connections: time to open, memory each).
 */
#include "scen.h"

#include <stdio.h>

static conn_role plan_handshake(size_t i, const bench_opts *o, uint32_t *topic)
{
    (void)i;
    (void)o;
    *topic = 0;
    return ROLE_HANDSHAKE;
}

static conn_role plan_idle(size_t i, const bench_opts *o, uint32_t *topic)
{
    (void)i;
    (void)o;
    *topic = 0;
    return ROLE_IDLE;
}

int scen_handshake(const bench_opts *o)
{
    bench_set s;
    if (set_start(&s, o, o->conns, plan_handshake) != 0)
        return 1;
    set_phase(&s, PHASE_SETUP);
    cpu_sample a, b;
    cpu_sample_take(&a, o->pid);
    set_phase(&s, PHASE_RUN);
    sleep_s(o->duration);
    set_phase(&s, PHASE_DRAIN);
    cpu_sample_take(&b, o->pid);
    int fatal = atomic_load(&s.run.fatal);
    if (set_finish(&s) != 0 || fatal)
        return 1;

    double wall = (double)(b.t_ns - a.t_ns) / 1e9;
    json j;
    json_begin(&j);
    json_head(&j, o);
    json_obj(&j, "results");
    json_u64(&j, "handshakes", s.sum.handshakes);
    json_f64(&j, "per_s", (double)s.sum.handshakes / wall);
    json_u64(&j, "errors", s.sum.errors);
    if (a.has_broker && s.sum.handshakes)
        json_f64(&j, "broker_cpu_ms_per_handshake",
                 (b.broker_s - a.broker_s) * 1e3 / (double)s.sum.handshakes);
    if (s.sum.handshakes)
        json_f64(&j, "generator_cpu_ms_per_handshake",
                 (b.self_s - a.self_s) * 1e3 / (double)s.sum.handshakes);
    json_latency(&j, "connect_latency", &s.lat);
    json_end(&j);
    json_cpu(&j, &a, &b, o->threads);
    return json_finish(&j, stdout) == 0 ? 0 : 1;
}

/* Wait for a $SYS publication after the `after`-th; true when one came. */
static bool sys_wait(bench_set *s, uint64_t after, double timeout)
{
    uint64_t t0 = now_ns();
    while (set_sys_updates(s) <= after) {
        if ((double)(now_ns() - t0) / 1e9 >= timeout)
            return false;
        sleep_s(0.01);
    }
    return true;
}

int scen_idle(const bench_opts *o)
{
    bench_set s;
    if (set_start(&s, o, o->conns, plan_idle) != 0)
        return 1;
    uint64_t rss0 = 0, rss1 = 0, sys0 = 0, sys1 = 0;
    bool have_rss = o->pid > 0 && proc_rss_kib(o->pid, &rss0) == 0;
    bool have_sys = o->sys && sys_wait(&s, 0, o->sys_wait);
    if (have_sys)
        sys0 = atomic_load(&s.run.sys_value);

    cpu_sample a, b;
    cpu_sample_take(&a, o->pid);
    set_phase(&s, PHASE_SETUP);
    double took = set_wait_ready(&s, o->setup_timeout);
    cpu_sample_take(&b, o->pid);
    uint64_t t_ready = now_ns();
    uint32_t ready = atomic_load(&s.run.ready), failed = atomic_load(&s.run.failed);

    /* Let the broker finish its per-connection work before measuring. */
    sleep_s(1.0);
    have_rss = have_rss && proc_rss_kib(o->pid, &rss1) == 0;
    /* Brokers may publish $SYS only when a value changes (Mosquitto does):
     * a value that arrived after every connection was up is current;
     * otherwise wait for the next one. */
    if (have_sys && atomic_load(&s.run.sys_t_ns) < t_ready)
        have_sys = sys_wait(&s, set_sys_updates(&s), o->sys_wait);
    if (have_sys)
        sys1 = atomic_load(&s.run.sys_value);
    sleep_s(o->hold);
    int fatal = atomic_load(&s.run.fatal);
    if (set_finish(&s) != 0 || fatal)
        return 1;

    json j;
    json_begin(&j);
    json_head(&j, o);
    json_obj(&j, "results");
    json_u64(&j, "connected", ready);
    json_u64(&j, "failed", failed);
    json_u64(&j, "lost", s.sum.lost);
    json_f64(&j, "connect_all_s", took);
    json_f64(&j, "connects_per_s", took > 0 ? ready / took : 0);
    if (have_rss) {
        json_u64(&j, "rss_before_kib", rss0);
        json_u64(&j, "rss_after_kib", rss1);
        if (ready)
            json_f64(&j, "rss_bytes_per_conn",
                     ((double)rss1 - (double)rss0) * 1024.0 / (double)ready);
    }
    if (have_sys) {
        json_u64(&j, "sys_before", sys0);
        json_u64(&j, "sys_after", sys1);
        if (ready)
            json_f64(&j, "sys_bytes_per_conn", ((double)sys1 - (double)sys0) / (double)ready);
    } else if (o->sys) {
        json_str(&j, "sys_error", "no $SYS value received (no permission, or sys.interval too long)");
    }
    if (a.has_broker && ready)
        json_f64(&j, "broker_cpu_ms_per_connect", (b.broker_s - a.broker_s) * 1e3 / ready);
    json_end(&j);
    json_cpu(&j, &a, &b, o->threads);
    return json_finish(&j, stdout) == 0 ? 0 : 1;
}
