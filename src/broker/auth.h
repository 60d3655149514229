/*
 * auth.h - MQTT 5.0 enhanced authentication (section 4.12): the table of
 * Authentication Methods the broker supports, where a method plugs in.
 * tern supports none yet, so a CONNECT naming any method is refused with
 * CONNACK 0x8C (Bad authentication method) [MQTT-4.12.0-1] and an AUTH
 * packet is always a protocol error (no method was agreed [MQTT-4.12.0-7]).
 */
#ifndef TERN_BROKER_AUTH_H
#define TERN_BROKER_AUTH_H

#include "broker/broker.h"
#include "mqtt/mqtt.h"

#include <stddef.h>
#include <stdint.h>

/* One method. Each step returns an MQTT 5.0 reason code: 0x00 success
 * (CONNACK goes out), 0x18 continue (the method has written an AUTH), or
 * 0x80 and above (refused: CONNACK or DISCONNECT with that code). */
typedef struct bk_auth_method {
    const char *name; /* the Authentication Method property, exactly */
    uint8_t (*start)(broker *b, broker_conn *c, const mqtt_connect *cp);
    uint8_t (*step)(broker *b, broker_conn *c, const mqtt_reason_packet *auth);
} bk_auth_method;

/* The method named name[0..len), or NULL when tern does not support it. */
const bk_auth_method *bk_auth_find(const uint8_t *name, size_t len);

#endif
