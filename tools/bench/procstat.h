/*
 * procstat.h - CPU and memory figures from /proc and getrusage.
 *
 * A result is only believable if the load generator was not the limit, so
 * every run samples the generator's own CPU time, the broker's (from
 * /proc/PID/stat) and the whole machine's (/proc/stat), and the JSON shows
 * how much CPU other processes took on a shared machine.
 */
#ifndef TERN_BENCH_PROCSTAT_H
#define TERN_BENCH_PROCSTAT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct cpu_sample {
    uint64_t t_ns;        /* CLOCK_MONOTONIC */
    double self_s;        /* this process, user + system */
    bool has_broker;
    double broker_s;      /* broker user + system */
    bool has_machine;
    double machine_busy_s; /* every CPU, non-idle time */
} cpu_sample;

/* Take a sample; pid 0 skips the broker. Missing figures are flagged. */
void cpu_sample_take(cpu_sample *s, pid_t pid);

/* Resident set size of pid in KiB; 0 or -1. */
int proc_rss_kib(pid_t pid, uint64_t *kib);
/* 1-minute load average; 0 or -1. */
int proc_loadavg(double *l1);

#endif
