/*
 * conn_world.h - a broker core and a connection layer over the fake
 * transport, and MQTT packets put on a link, for the connection layer's
 * unit tests (test_conn.c, test_conn_tls.c).
 */
#ifndef TERN_TEST_CONN_WORLD_H
#define TERN_TEST_CONN_WORLD_H

#include "fake_transport.h"
#include "mqtt/mqtt.h"

typedef struct cworld {
    broker *b;
    conn_server *cs;
    uint64_t now;
} cworld;

/* A broker (anonymous clients allowed, $SYS off) and a layer over it;
 * tls_ops/tls may be NULL (plaintext only). False when out of memory. */
bool cw_init(cworld *w, const broker_limits *lim, const conn_tls_ops *tls_ops,
             tern_tls_server *tls);
/* The same with limits on TLS handshakes running (in all, per address)
 * and the log lines the layer wrote counted in *log_lines. */
bool cw_init_limited(cworld *w, const conn_tls_ops *tls_ops, tern_tls_server *tls,
                     uint32_t max_handshakes, uint32_t per_address, int *log_lines);
/* The same with the core's limits (lim->sys_interval_s set: $SYS on) and
 * the layer's settings from extra: io, tls_ops, tls, the handshake limits,
 * max_input_bytes, clock_us, log and log_ctx (zero: as cw_init). */
bool cw_init_config(cworld *w, const broker_limits *lim, const conn_server_config *extra);
/* The same over another transport table (a variant of fake_transport). */
bool cw_init_io(cworld *w, const conn_transport *io);
/* The same with an input budget (limits.max_input_bytes). */
bool cw_init_input_budget(cworld *w, uint64_t max_input_bytes);
/* Drop the links still open, free them, the layer and the broker. */
void cw_free(cworld *w, fake_link **links, int n);
/* One turn: every open link with bytes (or their end) is readable. */
void cw_turn(cworld *w, fake_link **links, int n);
fake_link *cw_link(void);

/* Packets from a client, appended to the link's upstream bytes. */
size_t cw_put_connect(fake_link *l, const char *id, const char *will);
void cw_put_subscribe(fake_link *l, const char *filter);
void cw_put_publish_qos(fake_link *l, const char *topic, size_t len, uint8_t fillc, uint8_t qos,
                        uint16_t id);
void cw_put_publish(fake_link *l, const char *topic, size_t len, uint8_t fillc);
/* The start of a QoS 0 PUBLISH to "big" declaring `declared` bytes after
 * its fixed header, and `sent` bytes of it. */
void cw_put_partial_publish(fake_link *l, uint32_t declared, size_t sent);
/* Packets of one type in a byte stream from the broker (with the payload
 * bytes of PUBLISHes added to *payload_bytes when not NULL). */
int cw_count(const uint8_t *p, size_t len, mqtt_type type, size_t *payload_bytes);

#endif
