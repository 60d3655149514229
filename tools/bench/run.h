/*
 * run.h - what every scenario shares: building workers from a plan,
 * moving phases, waiting, merging results and the common JSON fields.
 */
#ifndef TERN_BENCH_RUN_H
#define TERN_BENCH_RUN_H

#include "bench.h"
#include "delayproxy.h"
#include "json.h"
#include "procstat.h"

/* The role (and topic) of connection i of n. */
typedef conn_role (*plan_fn)(size_t i, const bench_opts *o, uint32_t *topic);

typedef struct bench_set {
    bench_run run;
    bench_worker *w;
    unsigned nw;
    size_t total;         /* connections in the plan, $SYS reader excluded */
    bench_counts sum;     /* filled by set_finish */
    delay_proxy *proxy;   /* --rtt-ms: between the far clients and the broker */
    hist lat;
} bench_set;

/* r->addr from --host/--port (IPv4 or IPv6; the error said on stderr),
 * and r->far_addr the same (a delay proxy replaces it). 0 or -1. */
int run_resolve(bench_run *r, const bench_opts *o);
/* Resolve the address, create workers and their connections (plus the
 * $SYS reader when o->sys), start the threads in PHASE_PRE. 0 or -1. */
int set_start(bench_set *s, const bench_opts *o, size_t total, plan_fn plan);
void set_phase(bench_set *s, int phase);
/* Wait until every planned connection is ready or failed, or the timeout
 * passes; returns the seconds taken. */
double set_wait_ready(bench_set *s, double timeout);
/* Stop, join, merge counters and histograms into s->sum / s->lat, free. */
int set_finish(bench_set *s);
uint64_t set_sys_updates(bench_set *s);

void sleep_s(double s);

/* Fields every result line starts with: scenario, broker label, options. */
void json_head(json *j, const bench_opts *o);
/* CPU use between two samples over the measured window. */
void json_cpu(json *j, const cpu_sample *a, const cpu_sample *b, unsigned threads);
/* Latency percentiles in milliseconds under `key`. */
void json_latency(json *j, const char *key, const hist *h);

#endif
