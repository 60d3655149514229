/*
 * main.c - tern-bench: an MQTT 3.1.1 load generator for any broker
 * (SPEC F1). Parses options, prepares the process (file limit, CPU
 * pinning, TLS library) and runs one scenario; results are JSON lines.
 */
#define _GNU_SOURCE
#include "scen.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* Every connection is a descriptor: use the whole hard limit. */
static int raise_nofile(const bench_opts *o)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return -1;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        return -1;
    size_t need = (size_t)o->conns + 2 * (size_t)o->pairs + o->subs + o->bystanders + 64;
    if (rl.rlim_cur != RLIM_INFINITY && need > rl.rlim_cur)
        fprintf(stderr, "tern-bench: warning: open-file limit %llu may be too low\n",
                (unsigned long long)rl.rlim_cur);
    return 0;
}

/* "1" or "0,1" or "2-3": pin the generator (threads inherit it). */
static int pin(const char *list)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    const char *p = list;
    while (*p) {
        char *end;
        errno = 0;
        long a = strtol(p, &end, 10), b = a;
        if (errno || end == p || a < 0 || a >= CPU_SETSIZE)
            goto bad;
        if (*end == '-') {
            p = end + 1;
            b = strtol(p, &end, 10);
            if (errno || end == p || b < a || b >= CPU_SETSIZE)
                goto bad;
        }
        for (long c = a; c <= b; c++)
            CPU_SET((int)c, &set);
        if (*end == ',')
            end++;
        else if (*end)
            goto bad;
        p = end;
    }
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        perror("tern-bench: sched_setaffinity");
        return -1;
    }
    return 0;
bad:
    fprintf(stderr, "tern-bench: --cpus %s: expected a CPU list like 1 or 0,2-3\n", list);
    return -1;
}

int main(int argc, char **argv)
{
    bench_opts o;
    int rc = opts_parse(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    /* A broker closing on us must be an error code, not a signal. */
    if (signal(SIGPIPE, SIG_IGN) == SIG_ERR || raise_nofile(&o) != 0) {
        perror("tern-bench: process set-up");
        return 1;
    }
    if (o.cpus && pin(o.cpus) != 0)
        return 1;
    if (tls_global_init() != 0) {
        fprintf(stderr, "tern-bench: wolfSSL_Init failed\n");
        return 1;
    }
    switch (o.scenario) {
    case SCEN_HANDSHAKE:
        rc = scen_handshake(&o);
        break;
    case SCEN_IDLE:
        rc = scen_idle(&o);
        break;
    case SCEN_STORM:
        rc = scen_storm(&o);
        break;
    default:
        rc = scen_traffic(&o);
        break;
    }
    tls_global_cleanup();
    return rc;
}
