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
    uint16_t port, tls_port;
    struct kconn_list work;              /* connections lwIP reported something for */
    uint32_t nconns;                     /* struct kconn alive, closing included */
    uint64_t accepted, refused, aborted;
    uint32_t max_conns;                  /* limits.max_connections */
    uint64_t syns_dropped;               /* SYN admission (kconn_syn_gate) */
    syn_table refused_flows;             /* flows whose SYN was dropped, lately */
    broker_log_level log_level;          /* log lines above it are dropped */
    struct kstore *store;                /* the durable store's thread, or NULL */
};

struct kconn {
    struct kconn *work_next, *work_prev;
    struct kserver *srv;
    struct tcp_pcb *pcb;        /* NULL once lwIP has freed it (error callback) */
    struct pbuf *rx;            /* received, not yet read by the layer */
    uint64_t peer_close_until;  /* ended: waiting for the client to close first */
    uint8_t on_work;
    uint8_t peer_fin;           /* the peer closed its side */
    uint8_t dead;               /* the pcb is gone (reset, timeout) */
    uint8_t want_read, want_write; /* the layer's interest */
    uint8_t ended;              /* the layer is done with it: only the pcb's close is left */
    uint8_t closing;            /* tcp_close failed; retrying */
    uint8_t close_tries;
    conn c;                     /* the connection layer's part, until ended */
};

/* The TCP transport (context: the kserver). */
extern const conn_transport kconn_transport;

/* lwIP accept callbacks for the plaintext and TLS listeners (arg: the
 * server). */
err_t kconn_accept(void *arg, struct tcp_pcb *pcb, err_t err);
/* The SYN admission (a net_rx_gate, ctx the server): a new connection's
 * SYN to a listener is dropped unanswered when it would not be served
 * (limits.max_connections, handshake room, the pcb pool), and its flow
 * remembered so its retransmitted SYNs are dropped again cheaply. */
bool kconn_syn_gate(void *ctx, const uint8_t *frame, uint32_t len);
err_t kconn_accept_tls(void *arg, struct tcp_pcb *pcb, err_t err);
/* Take the first connection off the work list (NULL if empty). */
struct kconn *kconn_work_pop(struct kserver *s);
/* Hand what lwIP reported for kc to the layer, or finish its close. May
 * free kc. */
void kconn_service(struct kserver *s, struct kconn *kc, uint64_t now_ms);

#endif
