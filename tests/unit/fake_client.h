/*
 * fake_client.h - drives the broker core in unit tests the way a platform
 * does: in-memory clients on the connection layer (src/conn) over the
 * fake transport, turns of the layer moving their bytes, and the broker's
 * output decoded back with the codec's client-side decoder.
 */
#ifndef TERN_TEST_FAKE_CLIENT_H
#define TERN_TEST_FAKE_CLIENT_H

#include "broker/broker.h"
#include "conn/conn.h"
#include "fake_transport.h"
#include "mqtt/mqtt.h"

#include <stdbool.h>

typedef struct fclient {
    fake_link link;       /* its transport; bytes not read yet wait in link.up */
    broker_conn *conn;    /* the core's side; NULL once closed */
    fake_bytes inbox;     /* every byte the broker sent */
    size_t rx_pos;        /* how far fc_next has decoded it */
    bool closed;          /* the connection was closed */
    bool reading;         /* false: the transport takes nothing (slow reader) */
    uint8_t level;
} fclient;

typedef struct fworld {
    broker *b;
    conn_server *cs;      /* the connection layer over b */
    broker *cs_b;         /* the broker cs was made for (tests may replace b) */
    uint64_t now;
    fclient *clients[64];
    int nclients;
    broker_limits lim;
    bool lim_set;
    bool durable;
    /* A durable broker holds the CONNACK of a CONNECT that changed durable
     * state until a commit; fw_connect_as() then calls this to commit what
     * is pending (the test's store). NULL: batches are reported committed
     * without being stored. */
    void (*commit)(struct fworld *w);
    void *commit_ctx;
    /* Optional: sees every line the broker core logs (set after fw_init). */
    void (*log_hook)(void *ctx, broker_log_level level, const char *msg);
    void *log_hook_ctx;
} fworld;

/* Create a broker with the given limits (NULL = defaults), $SYS off unless
 * limits say otherwise. */
void fw_init(fworld *w, const broker_limits *lim);
void fw_free(fworld *w);
/* The same with a hook that sees every line the core logs, from
 * broker_create on (see fworld.log_hook). */
void fw_init_logged(fworld *w, const broker_limits *lim,
                    void (*hook)(void *ctx, broker_log_level level, const char *msg), void *ctx);
/* The same with broker_config.durable: the test drives the store. */
void fw_init_durable(fworld *w, const broker_limits *lim);
/* A durable world (default limits) whose every commit goes into the model
 * store m (tests/unit/model_store.h), also the ones fw_connect_as makes
 * to get a held CONNACK: for the tests of what reaches the store. */
struct mstore;
void fw_init_model_store(fworld *w, struct mstore *m);
/* Simulate a crash and restart: a fresh durable broker, clients closed. The
 * caller then restores it from its model store. */
void fw_restart(fworld *w);
fclient *fw_open(fworld *w);
/* A connection with a (TLS) identity, possibly an operator. */
fclient *fw_open_as(fworld *w, const char *identity, bool is_operator);
/* Send raw bytes; then run turns until nothing moves. Bytes the broker
 * does not take (paused input) wait and are read, in order, once it takes
 * input again. */
void fw_send(fworld *w, fclient *c, const uint8_t *p, size_t n);
/* Run the layer's turns until nothing moves: input read, output written
 * (to clients that read), connections closed. */
void fw_drain(fworld *w);
/* The client's transport became writable again (after a slow read). */
void fw_flush(fworld *w, fclient *c);
/* Abrupt transport loss. */
void fw_drop(fworld *w, fclient *c);
void fw_advance(fworld *w, uint64_t ms);

/* Client packets. */
void fc_connect(fworld *w, fclient *c, const char *id, bool clean, uint16_t keepalive);
void fc_connect_will(fworld *w, fclient *c, const char *id, bool clean, uint16_t keepalive,
                     const char *will_topic, const char *will_msg, uint8_t will_qos,
                     bool will_retain);
void fc_subscribe(fworld *w, fclient *c, uint16_t id, const char *filter, uint8_t qos);
void fc_unsubscribe(fworld *w, fclient *c, uint16_t id, const char *filter);
void fc_publish(fworld *w, fclient *c, const char *topic, const char *payload, uint8_t qos,
                bool retain, uint16_t id);
void fc_ack(fworld *w, fclient *c, mqtt_type type, uint16_t id);
void fc_disconnect(fworld *w, fclient *c);

/*
 * MQTT 5.0. A property block for a packet, built with the fp_*() appenders
 * (each aborts when the block is full: a bug in the test). Pass fp.buf,
 * fp.len to the *5 helpers; an empty block is { .len = 0 }.
 */
typedef struct fprops {
    uint8_t buf[2048];
    size_t len;
} fprops;
void fp_u8(fprops *fp, uint8_t id, uint8_t v);
void fp_u16(fprops *fp, uint8_t id, uint16_t v);
void fp_u32(fprops *fp, uint8_t id, uint32_t v);
void fp_varint(fprops *fp, uint8_t id, uint32_t v);
void fp_str(fprops *fp, uint8_t id, const char *s);   /* string or binary */
void fp_user(fprops *fp, const char *key, const char *value);

/* Send any CONNECT (its level, properties and will properties included);
 * the client's level becomes cp->level. */
void fc_send_connect(fworld *w, fclient *c, const mqtt_connect *cp);
/* CONNECT at level 5 with a property block (props may be NULL). */
void fc_connect5(fworld *w, fclient *c, const char *id, bool clean, uint16_t keepalive,
                 const fprops *props);
/* The same with a will and its property block (may be NULL). */
void fc_connect5_will(fworld *w, fclient *c, const char *id, bool clean, uint16_t keepalive,
                      const fprops *props, const char *will_topic, const char *will_msg,
                      uint8_t will_qos, bool will_retain, const fprops *will_props);
/* PUBLISH at level 5; topic may be "" when props carry a Topic Alias. */
void fc_publish5(fworld *w, fclient *c, const char *topic, const char *payload, uint8_t qos,
                 bool retain, uint16_t id, const fprops *props);
/* SUBSCRIBE at level 5 with a whole options byte (MQTT_SUBOPT_*). */
void fc_subscribe5(fworld *w, fclient *c, uint16_t id, const char *filter, uint8_t options,
                   const fprops *props);
void fc_unsubscribe5(fworld *w, fclient *c, uint16_t id, const char *filter,
                     const fprops *props);
/* PUBACK/PUBREC/PUBREL/PUBCOMP with a reason code (and properties). */
void fc_ack5(fworld *w, fclient *c, mqtt_type type, uint16_t id, uint8_t reason,
             const fprops *props);
/* DISCONNECT or AUTH with a reason code (and properties). */
void fc_reason5(fworld *w, fclient *c, mqtt_type type, uint8_t reason, const fprops *props);

/* The reason code of a decoded packet: CONNACK's return/reason code, an
 * ack's, DISCONNECT's or AUTH's, the first code of a SUBACK or level-5
 * UNSUBACK; -1 for packets without one. */
int fc_reason_of(const mqtt_packet *p);
/* The properties of a decoded packet (all zero for those without). */
const mqtt_props *fc_props_of(const mqtt_packet *p);
/* The n-th (from 0) property with this id in a decoded block. */
bool fc_prop_find(const mqtt_props *props, uint8_t id, unsigned n, mqtt_prop *out);
/* The value of the first user property named key, or false. */
bool fc_user_prop(const mqtt_props *props, const char *key, mqtt_bytes *value);
/* A view equals a C string. */
bool fc_bytes_is(mqtt_bytes b, const char *s);

/* Open a connection and CONNECT with keepalive 0, skipping the CONNACK
 * (committing first if the broker holds it, see fworld.commit). */
fclient *fw_connect_as(fworld *w, const char *id, bool clean);
/* The next packet exists and has type t (it is left in *p). */
bool fc_next_is(fclient *c, mqtt_type t, mqtt_packet *p);
/* A decoded PUBLISH carries exactly this payload. */
bool fc_payload_is(const mqtt_packet *p, const char *s);

/* Next packet the client received, false when none. Views stay valid until
 * the next fw_* call. */
bool fc_next(fclient *c, mqtt_packet *p);
/* Skip everything received so far. */
void fc_clear(fclient *c);
/* Count PUBLISH packets pending in the receive buffer (consumes them). */
int fc_count_publish(fclient *c);

#endif
