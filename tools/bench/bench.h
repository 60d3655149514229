/*
 * bench.h - shared types of tern-bench, the MQTT load generator (SPEC F1).
 *
 * Shape of the tool: main.c parses options and picks a scenario; a scenario
 * (scen_*.c) builds a plan of connections, hands them to worker threads
 * (worker.c, one epoll loop each) and steps them through phases by writing
 * one atomic word; when the run is over it merges the workers' counters and
 * histograms and prints one JSON line (json.c).
 *
 * Cross-thread rules: a connection belongs to one worker for its whole life.
 * Workers publish only what the main thread must watch while they run
 * (connections ready/failed, $SYS values) through the atomics in bench_run;
 * everything else is per worker and read by the main thread after join.
 */
#ifndef TERN_BENCH_H
#define TERN_BENCH_H

#include "hist.h"
#include "mqtt/mqtt.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

/* Opaque here so only tls.c needs wolfSSL's headers. */
typedef struct bench_tls_ctx bench_tls_ctx;
typedef struct bench_tls bench_tls;

/* When a subscriber sends the acknowledgements (PUBACK, PUBREC, PUBCOMP) of
 * the packets it parsed. */
typedef enum bench_ack {
    ACK_EVENT,     /* after all reads of one readiness event (up to 16): the
                      tool's historical behaviour, kept as the default so
                      earlier results stay comparable */
    ACK_BATCH,     /* after each read(), for all PUBLISHes it held: a polling
                      client library that handles a read, then acknowledges */
    ACK_IMMEDIATE, /* one write per acknowledgement, as its packet is parsed */
} bench_ack;

typedef enum bench_scenario {
    SCEN_HANDSHAKE,
    SCEN_IDLE,
    SCEN_LATENCY,
    SCEN_FANOUT,
    SCEN_FLOOD,
} bench_scenario;

/* Command-line options; read-only once parsed. */
typedef struct bench_opts {
    bench_scenario scenario;
    const char *scenario_name;
    const char *host;
    uint16_t port;
    const char *label;        /* broker label in the JSON */
    const char *case_id;      /* caller's name for this measurement, or NULL */
    unsigned rep;             /* caller's repetition number */
    const char *cafile;       /* TLS when set */
    const char *cert;
    const char *key;
    const char *group;        /* TLS key exchange offered first: x25519 or p256 */
    const char *username;
    const char *password;
    pid_t pid;                /* broker process, 0 = unknown */
    unsigned threads;
    const char *cpus;         /* CPU list for sched_setaffinity, NULL = none */
    unsigned qos;
    bool persistent;          /* subscribers keep persistent sessions (clean 0) */
    bool phases;              /* announce each phase on stderr */
    size_t size;              /* payload bytes */
    unsigned pairs;
    unsigned subs;            /* fan-out subscribers */
    unsigned conns;           /* handshake: parallel connections; idle: total */
    unsigned concurrency;     /* connection attempts in flight during set-up */
    double rate;              /* msg/s per publisher; 0 = flood */
    double duration;          /* seconds of the measured phase */
    double hold;              /* idle: seconds to keep connections open */
    double drain;             /* seconds to wait for deliveries after publishing */
    double setup_timeout;
    unsigned window;          /* QoS 1 PUBLISHes in flight per publisher */
    bench_ack ack;            /* subscribers' acknowledgement policy */
    double rtt_ms;            /* round trip added by the delay proxy; 0 = none */
    bool rtt_all;             /* the proxy carries every client, not only subscribers */
    size_t batch;             /* flood: bytes queued per publisher per turn */
    uint64_t seed;
    uint16_t keepalive;
    uint8_t level;            /* MQTT protocol level spoken: 4 (3.1.1) or 5 */
    bool sys;                 /* idle: read the broker's own memory figure */
    const char *sys_topic;
    const char *sys_cert;     /* identity for the $SYS reader (TLS) */
    const char *sys_key;
    const char *sys_user;
    const char *sys_pass;
    double sys_wait;
} bench_opts;

/* Phases, in order; the main thread only moves forward. */
enum {
    PHASE_PRE,    /* only the $SYS reader connects */
    PHASE_SETUP,  /* everyone else connects and subscribes */
    PHASE_RUN,    /* measured: publish / handshake */
    PHASE_DRAIN,  /* publishers stop, subscribers keep counting */
    PHASE_STOP,   /* close everything and exit */
};

typedef enum conn_role {
    ROLE_HANDSHAKE, /* connect, CONNACK, DISCONNECT, again */
    ROLE_IDLE,      /* connect and stay */
    ROLE_PUB,
    ROLE_SUB,
    ROLE_SYS,       /* subscribes to the broker's memory topic */
} conn_role;

typedef enum conn_state {
    ST_CLOSED,
    ST_TCP,      /* non-blocking connect() in progress */
    ST_TLS,      /* TLS handshake in progress */
    ST_CONNACK,  /* CONNECT sent */
    ST_SUBACK,   /* SUBSCRIBE sent */
    ST_READY,
} conn_state;

struct bench_worker;

typedef struct bench_conn {
    struct bench_worker *w;
    int fd;
    bench_tls *tls;
    conn_role role;
    conn_state state;
    uint32_t events;      /* epoll mask currently registered */
    uint32_t idx;         /* unique over the run: client id */
    uint32_t topic;       /* topic number for PUB/SUB */
    uint64_t t_start;     /* ns when connect() was called */

    uint8_t *in;
    size_t in_len, in_cap;
    uint8_t *out;
    size_t out_off, out_len, out_cap;
    size_t tls_wlen;      /* length of a wolfSSL_write to repeat, 0 = none */
    bool stalled;         /* input waits for room to queue acknowledgements */

    /* Publisher: a pre-encoded PUBLISH patched per message. */
    uint8_t *tmpl;
    size_t tmpl_len, tmpl_payload, tmpl_id;
    uint64_t next_ns;     /* rate mode: when the next message is due */
    uint32_t inflight;
    uint16_t next_id;
} bench_conn;

/* Per-worker results, merged by the main thread after join. */
typedef struct bench_counts {
    uint64_t published;
    uint64_t puback;
    uint64_t puback_in_run; /* PUBACKs (QoS 2: PUBCOMPs) inside the measured window */
    uint64_t delivered;
    uint64_t delivered_in_run;
    uint64_t handshakes;
    uint64_t errors;
    uint64_t lost;        /* ready connections closed by the other side */
    uint64_t late;        /* rate mode: sends held back by a full QoS 1 window */
    uint64_t bad_payload; /* deliveries too short to carry a timestamp */
} bench_counts;

/* Shared by the main thread and every worker. */
typedef struct bench_run {
    const bench_opts *o;
    struct sockaddr_storage addr;
    socklen_t addr_len;
    /* Where subscribers (or everyone, --rtt-for all) connect: the delay
     * proxy's address with --rtt-ms, else addr. */
    struct sockaddr_storage far_addr;
    socklen_t far_addr_len;
    char topic_prefix[48];
    char id_prefix[32];
    bool flood;

    _Atomic int phase;
    _Atomic uint32_t ready;      /* connections through set-up */
    _Atomic uint32_t failed;     /* set-up attempts that failed */
    _Atomic uint64_t sys_value;  /* last $SYS memory figure */
    _Atomic uint64_t sys_updates;
    _Atomic uint64_t sys_t_ns;   /* when the last one arrived */
    _Atomic int fatal;           /* a worker could not continue */
} bench_run;

typedef struct bench_worker {
    bench_run *run;
    unsigned id;
    pthread_t thread;
    int epfd;
    int tfd;              /* timerfd for rate mode, -1 otherwise */
    bench_tls_ctx *tls;   /* NULL for plaintext */
    bench_tls_ctx *sys_tls;
    bench_conn *conns;
    size_t nconns;
    size_t next_start;    /* set-up: next connection to start */
    size_t connecting;    /* set-up: attempts in flight */
    size_t concurrency;
    hist lat;             /* ns: connect latency or end-to-end latency */
    bench_counts c;
} bench_worker;

/* --- opts.c --- */
/* Parse argv into *o. Returns 0, or prints to stderr and returns 2. */
int opts_parse(int argc, char **argv, bench_opts *o);

/* --- clock --- */
uint64_t now_ns(void);

/* --- tls.c --- */
int tls_global_init(void);
void tls_global_cleanup(void);
/* A TLS 1.3 client context; NULL on error with a message on stderr. */
bench_tls_ctx *tls_ctx_new(const char *cafile, const char *cert, const char *key,
                           const char *group);
void tls_ctx_free(bench_tls_ctx *ctx);
bench_tls *tls_new(bench_tls_ctx *ctx, int fd);
void tls_free(bench_tls *t);
/* Advance the handshake: 1 done, 0 waiting (*want = EPOLLIN/EPOLLOUT), -1 error. */
int tls_handshake(bench_tls *t, uint32_t *want);
/* > 0 bytes, 0 would block, -1 closed or error. */
ssize_t tls_read(bench_tls *t, uint8_t *buf, size_t n);
ssize_t tls_write(bench_tls *t, const uint8_t *buf, size_t n);

/* --- conn.c --- */
/* Allocate buffers sized for the role; 0 or -1 (out of memory). */
int conn_init(bench_conn *c, bench_worker *w, conn_role role, uint32_t idx, uint32_t topic);
void conn_release(bench_conn *c);
/* Open the TCP connection; 0 or -1 (the attempt failed). */
int conn_start(bench_conn *c);
void conn_close(bench_conn *c);
/* Room for n more output bytes (compacting if it may); NULL when full. */
uint8_t *conn_reserve(bench_conn *c, size_t n);
/* Write queued output: 1 all written, 0 some left (EPOLLOUT armed), -1 error. */
int conn_flush(bench_conn *c);
/* Set the epoll mask to EPOLLIN plus EPOLLOUT when wanted; 0 or -1. */
int conn_watch(bench_conn *c, bool want_out);
/* Read what is available into the input buffer: >= 0 bytes, -1 closed. */
ssize_t conn_read(bench_conn *c);
int conn_send_connect(bench_conn *c);
int conn_send_subscribe(bench_conn *c, const char *filter, uint8_t qos);
int conn_send_empty(bench_conn *c, mqtt_type type);

/* --- worker.c --- */
int worker_start(bench_worker *w);
int worker_join(bench_worker *w);

/* --- pub.c --- */
/* Build the publisher's PUBLISH template; 0 or -1. */
int pub_prepare(bench_conn *c, uint64_t seed);
/* Queue as many PUBLISHes as the mode allows now and flush; 0 or -1. */
int pub_fill(bench_conn *c, uint64_t now);

#endif
