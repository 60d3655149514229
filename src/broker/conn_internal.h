/*
 * conn_internal.h - what a connection's files share: the CONNECT handler
 * and its CONNACK (connect.c), called from the packet dispatch and the
 * input framing (conn.c), and the name a connection goes by in the log.
 * Internal to src/broker/.
 */
#ifndef TERN_BROKER_CONN_INTERNAL_H
#define TERN_BROKER_CONN_INTERNAL_H

#include "broker/broker-t.h"
#include "broker/conn-t.h"
#include "broker/session-t.h"
#include "mqtt/mqtt.h"

#include <stdbool.h>
#include <stdint.h>

static inline const char *conn_name(const broker_conn *c)
{
    if (c->sess)
        return c->sess->id;
    return c->peer ? c->peer : "?";
}
/* CONNACK: at level 5 with the reason code and properties (why, when
 * given, becomes a refusal's Reason String); at levels 3/4 the return code
 * (code is then a 3.1.1 return code). */
bool bk_send_connack(broker *b, broker_conn *c, bool present, uint8_t code, const char *why);
/* A decoded CONNECT on c (connect.c). */
void bk_handle_connect(broker *b, broker_conn *c, const mqtt_connect *cp);

#endif
