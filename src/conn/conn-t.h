/*
 * conn-t.h - the connection layer's types (prototypes are in conn.h).
 * Platforms embed `struct conn` in their own connection records, so its
 * fields are visible here; only src/conn/ reads or writes them.
 *
 * Threading: a conn_server and all its connections belong to the one
 * thread that drives it (one event loop); nothing here is shared.
 */
#ifndef TERN_CONN_T_H
#define TERN_CONN_T_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/broker.h"
#include "conn/drain.h"
#include "conn/transport.h"
#include "tls/tls.h"

typedef struct conn_server conn_server;
/* How a TLS session is run over a connection (src/conn/tls.c). Builds
 * without the TLS adapter (the simulator, the fuzzers) have none. */
typedef struct conn_tls_ops conn_tls_ops;
/* A WebSocket connection's state (src/conn/ws.c), NULL on the others. */
typedef struct conn_ws conn_ws;

typedef struct conn_link {
    conn *prev, *next;
} conn_link;

typedef struct conn_list {
    conn *head, *tail;
    uint32_t count;
} conn_list;

/* Which deadline list holds a connection (conn.timer). */
typedef enum conn_timer_list {
    CONN_TIMER_NONE = 0,
    CONN_TIMER_HANDSHAKE, /* TLS handshake running: tls.handshake_timeout */
    CONN_TIMER_LINGER,    /* the core wants it closed: CONN_LINGER_MS */
    CONN_TIMER_INPUT,     /* waiting for the input budget: CONN_INPUT_WAIT_MS */
} conn_timer_list;
_Static_assert(CONN_TIMER_INPUT <= 3, "conn.timer holds a conn_timer_list in two bits");

/*
 * Every connection embeds one (the kernel's in a 128-byte heap block with
 * its own 40 bytes: _Static_assert below), so it is kept at 88 bytes:
 * flags are one-bit fields, the deadline keeps the clock's low 32 bits
 * (deadlines are seconds away; compared wrap-safe, server.c), and the
 * QoS 0 drain measurement, which only a backed-up connection needs, is a
 * block of its own allocated while its output is backed up, sharing its
 * pointer with the WebSocket state (which carries its own measurement).
 */
struct conn {
    /* The connection's parts, owned. */
    broker_conn *bc;     /* the core's side; NULL while a TLS handshake runs */
    tern_tls_conn *tls;  /* TLS session; NULL on plaintext */
    uint8_t *pending;    /* plaintext the core has not taken yet, NULL if none */
    /* Side state, one pointer for two kinds (is_ws says which): on a
     * WebSocket connection its block (ws.c), which embeds its drain
     * measurement; on others the drain measurement (how fast it takes
     * output while backed up: the QoS 0 bound, drain.h), a block of its
     * own while output is backed up, NULL while it keeps up. Read through
     * conni_ws() and conni_drain(). */
    union {
        conn_ws *ws;
        conn_drain *drain;
    } side;
    uint32_t pending_off, pending_len;

    /* List membership: ready (work without a new transport event: input
     * left over, a budget ran out) and one deadline list. */
    conn_link ready_link, timer_link;
    uint32_t deadline;    /* of the timer list holding it: ms, the clock's low 32 bits */

    uint32_t peer_hash;   /* keyed hash of the peer's address, while handshaking */
    uint32_t held;        /* input bytes counted against the server's budget */

    /* State. */
    bool on_ready : 1;
    unsigned timer : 2;   /* conn_timer_list */
    bool want_read : 1, want_write : 1; /* interest last given to the transport */
    bool input_blocked : 1;             /* the core paused input: not reading */
    bool peer_eof : 1;    /* the peer finished sending (EOF or close_notify) */
    bool is_ws : 1;       /* side is a WebSocket block */
    bool ws_draining : 1; /* ... whose drain measurement is running */
    bool tls_remote : 1;  /* TLS run by the transport (conn_transport.runs_tls) */
};
#define CONN_SIZE_MAX 88u /* see above: the kernel's kconn is 40 + this */
_Static_assert(sizeof(struct conn) <= CONN_SIZE_MAX,
               "struct conn outgrew the size kconn's heap class allows");

/* Counters, for logs and the platform's own reports. */
typedef struct conn_stats {
    uint64_t handshakes_ok;
    uint64_t handshakes_failed;
    uint64_t handshake_timeouts;
    uint64_t linger_timeouts;   /* closing connections whose output was never taken */
    uint64_t refused;           /* by the core (limits) or for want of memory */
    uint64_t handshakes_refused; /* TLS connections refused: too many handshakes running
                                    (limits.max_handshakes) */
    uint64_t handshakes_refused_address; /* ... from one address
                                            (limits.max_handshakes_per_address) */
    uint64_t handshakes_abandoned; /* clients that closed after sending the start of their
                                      handshake, before any answer: not answered */
    uint64_t accept_holds;      /* the platform stopped taking new connections (a limit
                                   reached: left to the network stack), set by the platform */
    uint64_t syns_dropped;      /* the platform dropped new connections' SYNs (kernel's
                                   SYN admission), set by the platform */
    uint64_t input_waits;       /* connections not read for a while: input budget spent */
    uint64_t input_closes;      /* ... and closed because the budget stayed spent */
    uint64_t input_held;        /* input bytes buffered now, across connections */
    uint64_t ws_refused;        /* WebSocket opening requests answered 400 */
    uint64_t ws_errors;         /* WebSocket connections closed for a framing error */
} conn_stats;

typedef struct conn_server_config {
    broker *b;                     /* the core the connections talk to; not owned */
    const conn_transport *io;      /* the platform's transport calls */
    void *io_ctx;                  /* their first argument */
    const conn_tls_ops *tls_ops;   /* &conn_tls where the TLS adapter is linked, else NULL */
    tern_tls_server *tls;          /* TLS context for TLS listeners (the caller's reference
                                      passes to the server), NULL for none */
    uint32_t handshake_timeout_ms; /* tls.handshake_timeout */
    /* A monotonic clock in microseconds, or NULL: with it the handshake
     * steps of a turn are also bounded by their time
     * (CONN_HANDSHAKE_US_PER_TURN), so a slow CPU (an emulator) takes
     * fewer per turn and a turn stays short for established clients. */
    uint64_t (*clock_us)(void);
    /* TLS handshakes running at once, in all and from one address
     * (limits.max_handshakes, limits.max_handshakes_per_address); a new
     * TLS connection beyond either is refused at once, so unauthenticated
     * connections cannot take what authenticated clients need. 0 = no
     * limit. */
    uint32_t max_handshakes;
    uint32_t max_handshakes_per_address;
    uint64_t hash_key[2];          /* keys the per-address table (random from the platform) */
    /* Input buffered across all connections (limits.max_input_bytes): the
     * core's unfinished packets and input it has not taken yet. While it
     * is spent, connections holding the most are not read. 0 = no limit. */
    uint64_t max_input_bytes;
    /* WebSocket listeners (ws.h): SHA-1 for the accept key (conn_ws_sha1
     * where wolfCrypt is linked; NULL: WebSocket connections refused) and
     * the bytes one WebSocket message may carry (limits.max_packet_size). */
    bool (*ws_sha1)(const uint8_t *data, size_t n, uint8_t out[20]);
    uint32_t ws_max_message;
    broker_allocator allocator;    /* NULL members: malloc/realloc/free */
    broker_log_fn log;             /* may be NULL */
    void *log_ctx;
    broker_log_level log_level;    /* lines above it are not formatted */
} conn_server_config;

#endif
