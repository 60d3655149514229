/*
 * procstat.c - reads the /proc files of procstat.h.
 */
#define _GNU_SOURCE
#include "procstat.h"
#include "bench.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static double tv_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* Read a small /proc file whole; returns its length or -1. */
static long slurp(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, cap - 1, f);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return -1;
    buf[n] = '\0';
    return (long)n;
}

/* utime + stime (fields 14 and 15) in clock ticks. The command name in
 * field 2 may hold spaces, so parsing starts after its closing ')'. */
static int broker_ticks(pid_t pid, uint64_t *ticks)
{
    char path[64], buf[2048];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (slurp(path, buf, sizeof buf) < 0)
        return -1;
    const char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    unsigned long long ut, st;
    /* After ')': state(3) ppid pgrp session tty tpgid flags minflt cminflt
     * majflt cmajflt(13) utime(14) stime(15). */
    if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    *ticks = ut + st;
    return 0;
}

static int machine_busy_ticks(uint64_t *busy)
{
    char buf[4096];
    if (slurp("/proc/stat", buf, sizeof buf) < 0)
        return -1;
    unsigned long long v[8];
    if (sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
               &v[4], &v[5], &v[6], &v[7]) != 8)
        return -1;
    /* user nice system idle iowait irq softirq steal: all but idle and iowait. */
    *busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    return 0;
}

void cpu_sample_take(cpu_sample *s, pid_t pid)
{
    long hz = sysconf(_SC_CLK_TCK);
    if (hz <= 0)
        hz = 100;
    s->t_ns = now_ns();
    struct rusage ru;
    s->self_s = getrusage(RUSAGE_SELF, &ru) == 0 ? tv_s(ru.ru_utime) + tv_s(ru.ru_stime) : 0.0;
    uint64_t t;
    s->has_broker = pid > 0 && broker_ticks(pid, &t) == 0;
    s->broker_s = s->has_broker ? (double)t / (double)hz : 0.0;
    s->has_machine = machine_busy_ticks(&t) == 0;
    s->machine_busy_s = s->has_machine ? (double)t / (double)hz : 0.0;
}

int proc_rss_kib(pid_t pid, uint64_t *kib)
{
    char path[64], buf[8192];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    if (slurp(path, buf, sizeof buf) < 0)
        return -1;
    const char *p = strstr(buf, "\nVmRSS:");
    unsigned long long v;
    if (!p || sscanf(p + 7, " %llu", &v) != 1)
        return -1;
    *kib = v;
    return 0;
}

int proc_loadavg(double *l1)
{
    char buf[256];
    if (slurp("/proc/loadavg", buf, sizeof buf) < 0 || sscanf(buf, "%lf", l1) != 1)
        return -1;
    return 0;
}
