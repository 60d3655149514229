/*
 * tcp.h - the kernel's server and its lwIP connections, shared by serve.c
 * (start-up, the turn, the console line) and tcp.c (lwIP's callbacks and
 * the TCP transport under the connection layer). serve.h is the public
 * face.
 *
 * lwIP callbacks only record what happened (data queued, peer closed, pcb
 * gone, send room) and put the connection on the server's work list; the
 * connection layer is driven from the main loop (serve.c), never from
 * inside lwIP, so no callback ever has to abort a pcb or re-enter the
 * core.
 */
#ifndef TERN_KSERVE_TCP_H
#define TERN_KSERVE_TCP_H

#include "broker/broker.h"
#include "conn/conn.h"

#include "lwip/err.h"
#include "net/synflow.h"

#include <stdbool.h>
#include <stdint.h>

struct tcp_pcb;
struct pbuf;
struct kconn;

struct kconn_list {
    struct kconn *head, *tail;
    uint32_t len;
};

/* The kernel's one server: a boot-time structure (there is one broker
 * per kernel, like the one network interface), reached by lwIP's
 * callbacks through their argument pointers. */
struct kserver {
    broker *b;
    conn_server *cs;                     /* the connection layer */
    struct tcp_pcb *listener;            /* plaintext, or NULL */
    struct tcp_pcb *tls_listener;        /* mutual TLS, or NULL */
    struct tcp_pcb *ws_listener;         /* WebSocket, or NULL */
    struct tcp_pcb *wss_listener;        /* WebSocket over TLS, or NULL */
    uint16_t port, tls_port, ws_port, wss_port;
    struct kconn_list work;              /* connections lwIP reported something for */
    uint32_t nconns;                     /* struct kconn alive, closing included */
    uint64_t accepted, refused, aborted;
    uint32_t max_conns;                  /* limits.max_connections */
    uint64_t syns_dropped;               /* SYN admission (kconn_syn_gate) */
    syn_table refused_flows;             /* flows whose SYN was dropped, lately */
    broker_log_level log_level;          /* log lines above it are dropped */
    struct kstore *store;                /* the durable store's thread, or NULL */
};

/* One per connection, so it is kept small: the work list is singly
 * linked (a FIFO, see tcp.c), flags are one-bit fields, and the
 * peer-close deadline keeps the clock's low 32 bits (it is 2 s away,
 * compared wrap-safe). Its own fields take 40 bytes and the connection
 * layer's `conn` at most CONN_SIZE_MAX (88, conn-t.h): the 128-byte heap
 * class (PERFORMANCE.md "Idle mutual-TLS connections"). */
#define KCONN_MAX_SIZE 128u

struct kconn {
    struct kconn *work_next;    /* work list, while on_work */
    struct kserver *srv;
    struct tcp_pcb *pcb;        /* NULL once lwIP has freed it (error callback) */
    struct pbuf *rx;            /* received, not yet read by the layer */
    uint32_t peer_close_until;  /* ended: waiting until then (ms, low 32 bits)
                                   for the client to close first, while peer_close_wait */
    uint8_t close_tries;
    bool on_work : 1;
    bool peer_fin : 1;          /* the peer closed its side */
    bool dead : 1;              /* the pcb is gone (reset, timeout) */
    bool want_read : 1, want_write : 1; /* the layer's interest */
    bool ended : 1;             /* the layer is done with it: only the pcb's close is left */
    bool closing : 1;           /* tcp_close failed; retrying */
    bool peer_close_wait : 1;   /* peer_close_until is set */
    bool freed : 1;             /* freed while on the work list: the list's turn frees it */
    conn c;                     /* the connection layer's part, until ended */
};
_Static_assert(sizeof(struct kconn) <= KCONN_MAX_SIZE,
               "struct kconn outgrew the kernel heap class it is sized for");

/* The TCP transport (context: the kserver). */
extern const conn_transport kconn_transport;

/* lwIP accept callbacks for the plaintext, TLS, WebSocket and WebSocket
 * over TLS listeners (arg: the server). */
err_t kconn_accept(void *arg, struct tcp_pcb *pcb, err_t err);
err_t kconn_accept_tls(void *arg, struct tcp_pcb *pcb, err_t err);
err_t kconn_accept_ws(void *arg, struct tcp_pcb *pcb, err_t err);
err_t kconn_accept_wss(void *arg, struct tcp_pcb *pcb, err_t err);
/* The SYN admission (a net_rx_gate, ctx the server): a new connection's
 * SYN to a listener is dropped unanswered when it would not be served
 * (limits.max_connections, handshake room, the pcb pool), and its flow
 * remembered so its retransmitted SYNs are dropped again cheaply. */
bool kconn_syn_gate(void *ctx, const uint8_t *frame, uint32_t len);
/* Take the first connection off the work list (NULL if empty); it may be
 * one freed while queued, which kconn_service then releases. */
struct kconn *kconn_work_pop(struct kserver *s);
/* Hand what lwIP reported for kc to the layer, or finish its close. May
 * free kc. */
void kconn_service(struct kserver *s, struct kconn *kc, uint64_t now_ms);

#endif
