/*
 * internal.h - shared by the files of src/conn/ only: the server's state,
 * the TLS half's interface, and the functions the files call in each
 * other (prefix conni_). conn.h is the layer's public face.
 *
 *   server.c  the server, its lists, logging, the turn
 *   input.c   reading: the transport to the core, pending input, EOF
 *   output.c  writing, interest, the linger/close policy, ending
 *   tls.c     the TLS half: handshake, identity, decryption, encryption
 *   peers.c   handshakes per peer address
 *   remote.c  the end of a handshake: the core meets the client, or why not
 *   ws.c      the WebSocket layer: opening request, frames in and out
 */
#ifndef TERN_CONN_INTERNAL_H
#define TERN_CONN_INTERNAL_H

#include "broker/log-t.h"
#include "conn/conn.h"

/* Kinds of the layer's log lines that a client can make it repeat, one per
 * connection: each is rate-limited on its own (conni_log_admit, the core's
 * window rules: broker/logwin.h). */
typedef enum conn_log_kind {
    CONN_LOGK_TLS_FAILED = 0, /* a TLS handshake failed (garbage, a bad certificate) */
    CONN_LOGK_TLS_ERROR,      /* a TLS session failed after its handshake */
    CONN_LOGK_TLS_TIMEOUT,    /* a TLS handshake did not finish in time */
    CONN_LOGK_COUNT
} conn_log_kind;

struct conn_server {
    broker *b;                   /* not owned */
    const conn_transport *io;
    void *io_ctx;                /* the platform's, first argument of every io call */
    const conn_tls_ops *tls_ops; /* NULL: no TLS in this build */
    tern_tls_server *tls;        /* reference held; NULL: no TLS listener */
    uint32_t handshake_timeout_ms;
    broker_allocator alloc;
    broker_log_fn log;
    void *log_ctx;
    broker_log_level log_level;
    unsigned handshake_steps;    /* left in this turn */
    uint64_t (*clock_us)(void);  /* NULL: steps counted only */
    uint64_t handshake_us;       /* spent on handshake steps this turn */
    bool steps_short;            /* this turn's steps ran out with handshakes waiting */
    bool window_short;           /* ... in some turn of the current window */
    uint32_t hs_cap;             /* handshakes worth running at once (conn_handshake_room) */
    uint64_t hs_window_ms;       /* start of the current window */
    uint64_t hs_window_ok;       /* handshakes_ok at its start */
    conn_list ready;             /* served at the start of the next turn */
    conn_list handshakes;        /* deadline order (one timeout for all) */
    conn_list lingering;         /* deadline order (one linger for all) */
    conn_list input_wait;        /* waiting for the input budget, deadline order */
    uint8_t *rbuf;               /* CONN_READ_BUF_SIZE: every read lands here */
    uint8_t *pbuf;               /* CONN_READ_BUF_SIZE: decrypted input; NULL without TLS */
    bool (*ws_sha1)(const uint8_t *data, size_t n, uint8_t out[20]); /* NULL: no WebSocket */
    uint32_t ws_max_message;     /* bytes of one WebSocket message */
    conn_stats stats;
    /* Handshakes running per peer address: open addressing on the keyed
     * hash of the address (0 = empty slot), linear probing. */
    uint32_t max_handshakes, max_per_address;
    uint64_t hash_key[2];
    struct conn_peer_slot {
        uint32_t hash, count;
    } *peers;
    uint32_t peers_mask;      /* capacity - 1 (a power of two) */
    uint64_t refusal_log_ms;  /* last refusal line: they are rate-limited */
    uint64_t refusals_unlogged;
    /* The input budget (input.c). */
    uint64_t max_input;       /* 0: none */
    uint64_t input_held;      /* sum of every connection's held */
    uint32_t input_holders;   /* connections with held > 0 */
    uint64_t input_wait_log_ms, input_close_log_ms; /* budget lines are rate-limited */
    /* Rate-limited lines (server.c): a window per kind, the earliest end
     * of one owing a summary (UINT64_MAX: none), the last turn's time. */
    bk_log_window logw[CONN_LOGK_COUNT];
    uint64_t log_deadline;
    uint64_t now_ms;          /* the latest time a turn or a timer was set at: deadlines
                                 (32 bits in each conn) are read back around it */
};

/* The TLS half (tls.c): the generic code calls these only for
 * connections with c->tls set. Every bool is the alive contract. */
struct conn_tls_ops {
    /* Drop a reference to a server context. */
    void (*release_server)(tern_tls_server *ctx);
    /* A session for a new connection from the server's context. */
    tern_tls_conn *(*start)(tern_tls_server *ctx);
    void (*free)(tern_tls_conn *t);
    /* Feed n bytes of ciphertext (in NULL, n 0: what the adapter already
     * holds): runs the handshake, introduces the client to the core when
     * it completes, delivers plaintext (conni_deliver), sends what the
     * adapter produced (flights, alerts, key-update replies). A
     * close_notify sets peer_eof. */
    bool (*input)(conn_server *s, conn *c, const uint8_t *in, size_t n, uint64_t now);
    /* Input buffered that input(NULL, 0) would turn into something. */
    bool (*has_input)(const tern_tls_conn *t);
    /* Send queued ciphertext; once it is all taken, encrypt and send the
     * core's output (encrypt-on-drain). */
    bool (*flush)(conn_server *s, conn *c, uint64_t now);
    size_t (*out_pending)(const tern_tls_conn *t);
    /* Everything is out: queue close_notify and try once to send it. */
    bool (*goodbye)(conn_server *s, conn *c, uint64_t now);
};

/* server.c */
void conni_log(conn_server *s, broker_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Whether a line of `kind` at `level` is to be written now: at most
 * TERN_LOG_BURST of a kind per window, the rest counted and summed up in
 * one line when the window ends (conn_turn_end, or the server's end). The
 * caller formats the line, and looks its peer up, only when true. */
bool conni_log_admit(conn_server *s, conn_log_kind kind, broker_log_level level, uint64_t now);
void *conni_alloc(conn_server *s, size_t n);
void conni_free(conn_server *s, void *p);
/* The ready list (idempotent). */
void conni_ready_add(conn_server *s, conn *c);
void conni_ready_remove(conn_server *s, conn *c);
/* The deadline lists: c goes to the tail of `which`, due the list's delay
 * after now (every member gets the same delay, so the tail is the latest),
 * or leaves its list. */
void conni_timer_set(conn_server *s, conn *c, conn_timer_list which, uint64_t now);
void conni_timer_clear(conn_server *s, conn *c);
/* peers.c: handshakes per address. The table (NULL without a limit). */
bool conni_peers_init(conn_server *s);
/* Handshakes running from c's address; *hash gets the address's key for
 * c->peer_hash (0: unknown or not limited). */
uint32_t conni_peer_handshakes(conn_server *s, const conn *c, uint32_t *hash);
/* Count c's handshake against its address (conni_timer_set does, for the
 * handshake list) and release it when the handshake ends. */
void conni_peer_enter(conn_server *s, conn *c);
void conni_peer_leave(conn_server *s, conn *c);
/* "address:port" of c's peer. */
void conni_peer(conn_server *s, const conn *c, char buf[CONN_PEER_TEXT]);

/* remote.c: the end of a handshake, wherever it ran (tls.c, or the
 * transport's own: conn_tls_established, conn_tls_failed). */
/* Introduce c to the core as the client the handshake proved; the log
 * line names it. Alive contract (closed when the core refuses it). */
bool conni_tls_introduce(conn_server *s, conn *c, const char *identity, bool is_operator,
                         const char *version, const char *cipher, uint64_t now);
/* Count a failed session and log why (rate-limited); c stays. */
void conni_tls_failure(conn_server *s, conn *c, bool handshaking, const char *why, uint64_t now);

/* input.c */
/* Plaintext for the core; what it does not take is kept in c->pending
 * (data is s->rbuf or s->pbuf: a large leftover adopts the buffer; a
 * WebSocket connection's frames are decoded in place there first). */
bool conni_deliver(conn_server *s, conn *c, uint8_t *data, size_t len, uint64_t now);
/* Input waiting inside the layer (pending plaintext, records in TLS). */
bool conni_has_input(const conn_server *s, const conn *c);
/* Forget input the core has not taken (the connection is closing). */
void conni_drop_input(conn_server *s, conn *c);
/* Count what c holds now against the input budget (after the core took
 * input, or c's input was dropped); held is 0 once c is released. */
void conni_account(conn_server *s, conn *c, size_t held);
/* Connections whose wait for the input budget ended (server.c's expiry):
 * closed when the budget is still spent, else read again. */
void conni_input_expired(conn_server *s, conn *c, uint64_t now);

/* output.c */
/* Write len bytes to the transport: *taken set to what it took. False
 * when the transport failed (c has been ended). */
bool conni_write(conn_server *s, conn *c, const uint8_t *data, size_t len, size_t *taken,
                 uint64_t now);
/* Bytes bound for the transport: the core's output, or ciphertext. */
typedef struct conni_source {
    const uint8_t *(*peek)(conn_server *s, conn *c, size_t *len);
    void (*consume)(conn_server *s, conn *c, size_t n);
} conni_source;
/* Write src's bytes until it is empty or the transport is full. */
bool conni_write_all(conn_server *s, conn *c, const conni_source *src, uint64_t now);
/* Write what c has now, as far as the transport takes it, then push. */
bool conni_write_out(conn_server *s, conn *c, uint64_t now);
/* Tell the transport what c waits for now. False when c was ended. */
bool conni_update_interest(conn_server *s, conn *c, uint64_t now);
/* End c: remove it from every list, tell the core (broker_closed, which
 * fires the will unless DISCONNECT came), free its parts, close the
 * transport. Returns false, for `return conni_end(...)`. */
bool conni_end(conn_server *s, conn *c, conn_close_how how, uint64_t now);
/* The source of c's plaintext output: the core's, framed on WebSocket. */
const conni_source *conni_plain_source(const conn *c);
/* After output was written: close or linger when the core wants it,
 * release paused input once output drained. */
bool conni_after_flush(conn_server *s, conn *c, uint64_t now);

/* ws.c: WebSocket connections (c->is_ws set). */
static inline conn_ws *conni_ws(const conn *c)
{
    return c->is_ws ? c->side.ws : NULL;
}
/* The drain measurement embedded in a WebSocket connection's block. */
conn_drain *conni_ws_drain(conn *c);
/* Frames (or the opening request) in data[0..len) decoded in place: the
 * MQTT bytes are data[0..*mqtt); *flush when control output was queued
 * (an answer, a pong, a close). */
bool conni_ws_input(conn_server *s, conn *c, uint8_t *data, size_t len, size_t *mqtt,
                    bool *flush);
/* The core closes an upgraded c: queue a close frame (1000) unless one
 * is queued already; true when it queued one. */
bool conni_ws_goodbye(conn *c);
/* A close (or a 400) is queued: read no more, end once it is out. */
bool conni_ws_closing(const conn *c);
/* Plaintext bytes still to leave, given the core's pending output. */
size_t conni_ws_pending(const conn *c, size_t core);
/* Bytes of an unanswered opening request held (0 once answered, or for a
 * connection that is not WebSocket): input like any other, counted
 * against limits.max_input_bytes. */
size_t conni_ws_request_held(const conn *c);
extern const conni_source conni_ws_output;
void conni_ws_free(conn_server *s, conn *c);

#endif
