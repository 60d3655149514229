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
/* End c for what it sent or a limit it broke, naming the fault with an
 * MQTT 5.0 reason code (MQTT_RC_*, 0x80 or above: malformed 0x81,
 * protocol error 0x82, receive maximum exceeded 0x93, topic alias invalid
 * 0x94, packet too large 0x95, ...). Counted in stats.protocol_errors and
 * logged (rate-limited) with `why`. A level-5 client is sent DISCONNECT
 * with the reason first [MQTT-4.13.2-1], unless its CONNACK has not gone
 * out yet (none may precede it [MQTT-3.14.0-1]); a level 3/4 client is
 * just closed. The will is published: the client did not end the
 * connection [MQTT-3.1.2-8]. The publish and subscribe paths use it for
 * every violation they find. */
void bk_conn_fail(broker *b, broker_conn *c, uint8_t reason, const char *why);
/* End c for a reason of the server's (session taken over 0x8E, keep alive
 * timeout 0x8D, shutting down 0x8B): a level-5 client is told with
 * DISCONNECT `reason` as bk_conn_fail says, then as bk_conn_end. */
void bk_conn_end_reason(broker *b, broker_conn *c, uint8_t reason, bool fire_will,
                        const char *why, uint64_t now_ms);
/* c's wheel deadline passed (wheel.c calls it): CONNECT or keepalive
 * timeout, or file it again. */
void bk_conn_timeout(broker *b, broker_conn *c, uint64_t now_ms);
/* A CONNECT that failed its password check (CONN_REFUSING) has waited
 * its delay (login.h): send the refusal (CONNACK 4 / 0x86) and end c. */
void bk_conn_refusal_due(broker *b, broker_conn *c);
/* Low-level acknowledgement writer: PUBACK/PUBREC/PUBREL/PUBCOMP/UNSUBACK,
 * PINGRESP, and a held CONNACK (packet_id = session present << 8 | code).
 * False on allocation failure. */
bool bk_send_simple(broker *b, broker_conn *c, mqtt_type type, uint16_t packet_id);
/* Write a SUBACK, or (level 5) an UNSUBACK with its reason codes. False
 * on allocation failure. */
bool bk_send_suback(broker *b, broker_conn *c, mqtt_type type, uint16_t packet_id,
                    const uint8_t *codes, uint32_t ncodes);

#endif
