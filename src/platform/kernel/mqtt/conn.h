/*
 * conn.h - MQTT connections on lwIP raw TCP (conn.c, plus tlsconn.c for
 * mutual TLS), as seen by serve.c.
 *
 * lwIP callbacks only record what happened (data queued, peer closed,
 * pcb gone, send room) and put the connection on the server's work list;
 * the TLS adapter and the core are fed and their output written from the
 * main loop (serve.c), never from inside lwIP, so no callback ever has to
 * abort a pcb or re-enter the core.
 */
#ifndef TERN_MQTT_CONN_H
#define TERN_MQTT_CONN_H

#include "broker/broker.h"
#include "tls/tls.h"

#include "lwip/err.h"

#include <stdint.h>

struct tcp_pcb;
struct kconn;

/* Decrypted input handed to the core per call: one TLS record's worth. */
enum { KCONN_PLAIN_BUF = 16 * 1024 + 256 };

struct kconn_list {
    struct kconn *head, *tail;
    uint32_t len;
};

struct mqtt_server {
    broker *b;
    struct tcp_pcb *listener;            /* plaintext, or NULL */
    struct tcp_pcb *tls_listener;        /* mutual TLS, or NULL */
    tern_tls_server *tls;                /* server context (reference held) */
    uint16_t port, tls_port;
    uint32_t handshake_timeout_ms;
    uint32_t handshake_steps;            /* left in this turn (HANDSHAKE_STEPS_PER_TURN) */
    struct kconn_list work;              /* connections with something to do */
    struct kconn_list handshakes;        /* TLS handshakes running, oldest first */
    uint32_t nconns;                     /* struct kconn alive, closing included */
    uint64_t accepted, refused, aborted;
    uint64_t tls_ok, tls_failed, tls_timeouts;
    broker_log_level log_level;          /* log lines above it are dropped */
    uint8_t plain[KCONN_PLAIN_BUF];      /* decryption scratch, shared: one thread */
};

/* A log line through the broker's level filter (serve.c). */
void mqtt_log(struct mqtt_server *s, broker_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* lwIP accept callbacks for the plaintext and TLS listeners (arg: the
 * server). */
err_t kconn_accept(void *arg, struct tcp_pcb *pcb, err_t err);
err_t kconn_accept_tls(void *arg, struct tcp_pcb *pcb, err_t err);
/* Take the first connection off the work list (NULL if empty). */
struct kconn *kconn_work_pop(struct mqtt_server *s);
/* Do what the connection is waiting for: feed input, flush output,
 * finish a close. May free kc. */
void kconn_service(struct mqtt_server *s, struct kconn *kc, uint64_t now_ms);
/* Write what the core has for kc (a connection the core marked dirty).
 * May free kc. */
void kconn_flush(struct mqtt_server *s, struct kconn *kc, uint64_t now_ms);
/* Close TLS connections whose handshake deadline has passed. */
void kconn_expire_handshakes(struct mqtt_server *s, uint64_t now_ms);

#endif
