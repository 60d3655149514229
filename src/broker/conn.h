/*
 * conn.h - the calls about one client connection that other files of the
 * core make: ending it, its timeout (broker.c), and the acknowledgement
 * packets conn.c writes (also sent later by persist.h's held acks).
 */
#ifndef TERN_BROKER_CONN_H
#define TERN_BROKER_CONN_H

#include "broker/broker.h"
#include "broker/conn-t.h"
#include "mqtt/mqtt.h"

#include <stdbool.h>
#include <stdint.h>

/* End a connection: fire the will if asked, detach the session, ask the
 * platform to close. Idempotent. */
void bk_conn_end(broker *b, broker_conn *c, bool fire_will, const char *why, uint64_t now_ms);
/* c's wheel deadline passed (wheel.c calls it): CONNECT or keepalive
 * timeout, or file it again. */
void bk_conn_timeout(broker *b, broker_conn *c, uint64_t now_ms);
/* Low-level acknowledgement writer: PUBACK/PUBREC/PUBREL/PUBCOMP/UNSUBACK,
 * PINGRESP, and a held CONNACK (packet_id = session present << 8 | code).
 * False on allocation failure. */
bool bk_send_simple(broker *b, broker_conn *c, mqtt_type type, uint16_t packet_id);
/* Write a SUBACK, or (level 5) an UNSUBACK with its reason codes. False
 * on allocation failure. */
bool bk_send_suback(broker *b, broker_conn *c, mqtt_type type, uint16_t packet_id,
                    const uint8_t *codes, uint32_t ncodes);

#endif
