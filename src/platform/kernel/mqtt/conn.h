/*
 * conn.h - MQTT connections on lwIP raw TCP (conn.c), as seen by serve.c.
 *
 * lwIP callbacks only record what happened (data queued, peer closed,
 * pcb gone, send room) and put the connection on the server's work list;
 * the core is fed and its output written from the main loop (serve.c),
 * never from inside lwIP, so no callback ever has to abort a pcb or
 * re-enter the core.
 */
#ifndef TERN_MQTT_CONN_H
#define TERN_MQTT_CONN_H

#include "broker/broker.h"

#include "lwip/err.h"

#include <stdint.h>

struct tcp_pcb;
struct kconn;

struct mqtt_server {
    broker *b;
    struct tcp_pcb *listener;
    uint16_t port;
    struct kconn *work_head, *work_tail; /* connections with something to do */
    uint32_t work_len;
    uint32_t nconns;                     /* struct kconn alive, closing included */
    uint64_t accepted, refused, aborted;
    broker_log_level log_level;          /* core log lines above it are dropped */
};

/* lwIP accept callback for the listener (arg: the server). */
err_t kconn_accept(void *arg, struct tcp_pcb *pcb, err_t err);
/* Take the first connection off the work list (NULL if empty). */
struct kconn *kconn_work_pop(struct mqtt_server *s);
/* Do what the connection is waiting for: feed input, flush output,
 * finish a close. May free kc. */
void kconn_service(struct mqtt_server *s, struct kconn *kc, uint64_t now_ms);
/* Write what the core has for kc (a connection the core marked dirty).
 * May free kc. */
void kconn_flush(struct mqtt_server *s, struct kconn *kc, uint64_t now_ms);

#endif
