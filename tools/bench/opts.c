/*
 * opts.c - tern-bench's command line. Hand-written like ternd's: every
 * option is --name VALUE or --name=VALUE, numbers are checked for range,
 * and defaults depend on the scenario (sizes that fit a 2-core machine).
 */
#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: tern-bench SCENARIO [options]\n"
    "scenarios:\n"
    "  handshake  full connections (TLS when --cafile) + CONNECT/CONNACK + DISCONNECT\n"
    "  idle       open --conns connections and keep them: time, broker memory each\n"
    "  latency    --pairs publisher/subscriber pairs at --rate msg/s each\n"
    "  fanout     1 publisher at --rate to --subs subscribers\n"
    "  flood      --pairs pairs publishing as fast as the broker takes it\n"
    "  storm      new clients arriving at --rate/s (open loop, up to --conns attempts open at\n"
    "             once, each held --hold s after CONNACK) beside --bystanders clients\n"
    "             timing their own messages; handshake rates, timeouts, resets, drops\n"
    "options (defaults in brackets):\n"
    "  --host ADDR [127.0.0.1]  --port N [1883, 8883 with TLS]  --label NAME [broker]\n"
    "  --case ID --rep N  copied into the JSON (for scripts)\n"
    "  --cafile F --cert F --key F   mutual TLS 1.3 (wolfSSL)\n"
    "  --group x25519|p256 [x25519]   key exchange offered (the other one is the fallback)\n"
    "  --username U --password P\n"
    "  --pid PID          broker process: CPU and RSS figures\n"
    "  --threads N [1]    worker threads   --cpus LIST   pin the generator (e.g. 1 or 1,2)\n"
    "  --qos 0|1|2 [0]  --size BYTES [64]  --pairs N [8; flood 16]  --subs N [100]\n"
    "  --rate R [100; fanout 500]  --duration S [10]  --drain S [2]  --window N [64]\n"
    "  --ack event|batch|immediate [event]  when subscribers acknowledge: after each\n"
    "                     readiness event's reads, after each read(), or one write each\n"
    "  --rtt-ms MS [0]    put clients behind a proxy adding this round trip (MS/2 each way)\n"
    "  --rtt-for subs|all [subs]  which clients the proxy carries\n"
    "  --sub-rate R [0]   each subscriber takes at most R msg/s (a slow consumer; 0 = all)\n"
    "  --batch BYTES [16384]  --conns N [handshake 32, idle 1000]  --concurrency N [64]\n"
    "  --hold S [2]  --setup-timeout S [60]  --seed N [1]\n"
    "  storm: --bystanders K [20]  --bystander-rate R [10]  --connect-timeout S [5]\n"
    "         --retries N [2]  --retry-delay S [1]  (--rate [100] --conns [500] --hold [1])\n"
    "         --sources N [0]  spread clients over loopback sources 127.1.0.1.. (0: one)\n"
    "  --keepalive S [60]  (a PINGREQ goes out every S/2 seconds; 0 = none)\n"
    "  --mqtt 3.1.1|5 [3.1.1]  protocol version every client speaks\n"
    "  --persistent       subscribers keep persistent sessions (clean session 0): every\n"
    "                     QoS 1 message to them is queued durably (a broker with a store\n"
    "                     acknowledges it once on disk)\n"
    "  --phases           print a line to stderr as each phase starts (run, drain, ...)\n"
    "  --sys  --sys-topic T [$SYS/broker/memory/used]  --sys-wait S [15]\n"
    "  --sys-cert F --sys-key F --sys-user U --sys-pass P   identity of the $SYS reader\n"
    "Output: one JSON object per line on stdout.\n";

static int bad(const char *name, const char *v, const char *want)
{
    fprintf(stderr, "tern-bench: %s: expected %s, got '%s'\n", name, want, v);
    return 2;
}

static int num(const char *name, const char *v, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || end == v || *end || d < lo || d > hi) {
        char want[96];
        snprintf(want, sizeof want, "a number %g..%g", lo, hi);
        return bad(name, v, want);
    }
    *out = d;
    return 0;
}

static int scenario(const char *s, bench_opts *o)
{
    static const struct {
        const char *name;
        bench_scenario s;
    } names[] = {
        { "handshake", SCEN_HANDSHAKE }, { "idle", SCEN_IDLE },   { "latency", SCEN_LATENCY },
        { "fanout", SCEN_FANOUT },       { "flood", SCEN_FLOOD },
        { "storm", SCEN_STORM },
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i].name) == 0) {
            o->scenario = names[i].s;
            o->scenario_name = names[i].name;
            return 0;
        }
    fprintf(stderr, "tern-bench: unknown scenario '%s'\n%s", s, usage);
    return 2;
}

/* Apply one option; returns 0 or 2. */
static int apply(bench_opts *o, const char *n, const char *v, bool *port_set)
{
    double d;
    int rc = 0;
#define NUM(name, lo, hi, field, type)                                                            \
    if (strcmp(n, name) == 0) {                                                                  \
        rc = num(n, v, lo, hi, &d);                                                              \
        if (rc == 0)                                                                             \
            o->field = (type)d;                                                                  \
        return rc;                                                                               \
    }
#define STR(name, field)                                                                         \
    if (strcmp(n, name) == 0) {                                                                  \
        o->field = v;                                                                            \
        return 0;                                                                                \
    }
    if (strcmp(n, "--mqtt") == 0) {
        if (strcmp(v, "3.1.1") == 0 || strcmp(v, "4") == 0)
            o->level = MQTT_LEVEL_311;
        else if (strcmp(v, "5") == 0 || strcmp(v, "5.0") == 0)
            o->level = MQTT_LEVEL_5;
        else
            return bad("--mqtt", v, "3.1.1 or 5");
        return 0;
    }
    if (strcmp(n, "--ack") == 0) {
        if (strcmp(v, "event") == 0)
            o->ack = ACK_EVENT;
        else if (strcmp(v, "batch") == 0)
            o->ack = ACK_BATCH;
        else if (strcmp(v, "immediate") == 0)
            o->ack = ACK_IMMEDIATE;
        else
            return bad("--ack", v, "event, batch or immediate");
        return 0;
    }
    if (strcmp(n, "--rtt-for") == 0) {
        if (strcmp(v, "subs") == 0)
            o->rtt_all = false;
        else if (strcmp(v, "all") == 0)
            o->rtt_all = true;
        else
            return bad("--rtt-for", v, "subs or all");
        return 0;
    }
    STR("--host", host)
    STR("--label", label)
    STR("--case", case_id)
    STR("--cafile", cafile)
    STR("--cert", cert)
    STR("--key", key)
    STR("--group", group)
    STR("--username", username)
    STR("--password", password)
    STR("--cpus", cpus)
    STR("--sys-topic", sys_topic)
    STR("--sys-cert", sys_cert)
    STR("--sys-key", sys_key)
    STR("--sys-user", sys_user)
    STR("--sys-pass", sys_pass)
    if (strcmp(n, "--port") == 0) {
        *port_set = true;
        rc = num(n, v, 1, 65535, &d);
        o->port = (uint16_t)d;
        return rc;
    }
    NUM("--pid", 1, 4194304, pid, pid_t)
    NUM("--threads", 1, 64, threads, unsigned)
    NUM("--rep", 0, 1000000, rep, unsigned)
    NUM("--qos", 0, 2, qos, unsigned)
    NUM("--size", 8, 1048576, size, size_t)
    NUM("--pairs", 1, 10000, pairs, unsigned)
    NUM("--subs", 1, 100000, subs, unsigned)
    NUM("--conns", 1, 1000000, conns, unsigned)
    NUM("--concurrency", 1, 100000, concurrency, unsigned)
    NUM("--rate", 0.01, 1e7, rate, double)
    NUM("--sub-rate", 0, 1e7, sub_rate, double)
    NUM("--duration", 0.1, 3600, duration, double)
    NUM("--hold", 0, 3600, hold, double)
    NUM("--drain", 0, 600, drain, double)
    NUM("--setup-timeout", 1, 3600, setup_timeout, double)
    NUM("--window", 1, 65535, window, unsigned)
    NUM("--rtt-ms", 0, 10000, rtt_ms, double)
    NUM("--batch", 64, 1048576, batch, size_t)
    NUM("--seed", 0, 9007199254740991.0, seed, uint64_t)
    NUM("--keepalive", 0, 65535, keepalive, uint16_t)
    NUM("--sys-wait", 0, 3600, sys_wait, double)
    NUM("--bystanders", 0, 10000, bystanders, unsigned)
    NUM("--bystander-rate", 0.1, 1000, bystander_rate, double)
    NUM("--connect-timeout", 0.1, 600, connect_timeout, double)
    NUM("--retries", 0, 100, retries, unsigned)
    NUM("--retry-delay", 0, 600, retry_delay, double)
    NUM("--sources", 0, 65000, sources, unsigned)
#undef NUM
#undef STR
    fprintf(stderr, "tern-bench: unknown option '%s'\n%s", n, usage);
    return 2;
}

int opts_parse(int argc, char **argv, bench_opts *o)
{
    memset(o, 0, sizeof *o);
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 1;
    }
    if (scenario(argv[1], o) != 0)
        return 2;
    o->host = "127.0.0.1";
    o->port = 1883;
    o->label = "broker";
    o->threads = 1;
    o->size = 64;
    o->pairs = o->scenario == SCEN_FLOOD ? 16 : 8;
    o->subs = 100;
    o->conns = o->scenario == SCEN_HANDSHAKE ? 32 : o->scenario == SCEN_STORM ? 500 : 1000;
    o->concurrency = 64;
    o->rate = o->scenario == SCEN_FANOUT ? 500 : 100;
    o->duration = 10;
    o->hold = o->scenario == SCEN_STORM ? 1 : 2;
    o->bystanders = 20;
    o->bystander_rate = 10;
    o->connect_timeout = 5;
    o->retries = 2;
    o->retry_delay = 1;
    o->drain = 2;
    o->setup_timeout = 60;
    o->window = 64;
    o->batch = 16384;
    o->seed = 1;
    o->keepalive = 60;
    o->level = MQTT_LEVEL_311;
    o->sys_topic = "$SYS/broker/memory/used";
    o->group = "x25519";
    o->sys_wait = 15;
    bool port_set = false, sys = false;
    for (int i = 2; i < argc; i++) {
        const char *n = argv[i];
        /* Flags: options without a value. */
        bool *flag = strcmp(n, "--sys") == 0          ? &sys
                     : strcmp(n, "--persistent") == 0 ? &o->persistent
                     : strcmp(n, "--phases") == 0     ? &o->phases
                                                      : NULL;
        if (flag) {
            *flag = true;
            continue;
        }
        if (strncmp(n, "--", 2) != 0) {
            fprintf(stderr, "tern-bench: unexpected argument '%s'\n", n);
            return 2;
        }
        char name[64];
        const char *v;
        const char *eq = strchr(n, '=');
        if (eq) {
            size_t len = (size_t)(eq - n);
            if (len >= sizeof name)
                return bad("option", n, "a known option");
            memcpy(name, n, len);
            name[len] = '\0';
            n = name;
            v = eq + 1;
        } else {
            if (i + 1 >= argc) {
                fprintf(stderr, "tern-bench: %s needs a value\n", n);
                return 2;
            }
            v = argv[++i];
        }
        int rc = apply(o, n, v, &port_set);
        if (rc)
            return rc;
    }
    o->sys = sys;
    if (o->scenario == SCEN_FLOOD)
        o->rate = 0; /* flood: no pacing, whatever --rate says */
    if (o->cafile && !port_set)
        o->port = 8883;
    if ((o->cert == NULL) != (o->key == NULL) || (o->cert && !o->cafile))
        return bad("--cert/--key", o->cert ? o->cert : "(none)",
                   "both --cert and --key, with --cafile");
    if (strcmp(o->group, "x25519") != 0 && strcmp(o->group, "p256") != 0)
        return bad("--group", o->group, "x25519 or p256");
    if (o->password && !o->username)
        return bad("--password", "(set)", "--username as well");
    if (o->persistent && (o->scenario == SCEN_HANDSHAKE || o->scenario == SCEN_IDLE))
        return bad("--persistent", o->scenario_name, "a scenario with subscribers");
    if ((o->sys_cert == NULL) != (o->sys_key == NULL))
        return bad("--sys-cert/--sys-key", "(one)", "both");
    return 0;
}
