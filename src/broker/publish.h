/*
 * publish.h - a client's PUBLISH and the acknowledgements of the QoS
 * flows, both directions (publish.c): the packets conn.c hands over once
 * a connection is active.
 */
#ifndef TERN_BROKER_PUBLISH_H
#define TERN_BROKER_PUBLISH_H

#include "broker/broker.h"
#include "broker/conn-t.h"
#include "broker/conn.h"
#include "mqtt/mqtt.h"

#include <stdbool.h>
#include <stdint.h>

/* A PUBLISH from c: route it and acknowledge it as its QoS says. c may be
 * CLOSING afterwards. */
void bk_handle_publish(broker *b, broker_conn *c, const mqtt_publish *p);
/* PUBACK, PUBREC or PUBCOMP from c, for a message the broker sent it. */
void bk_handle_ack(broker *b, broker_conn *c, mqtt_type type, const mqtt_ack *a);
/* PUBREL from c, for a QoS 2 message it sent: answered with PUBCOMP. */
void bk_handle_pubrel(broker *b, broker_conn *c, const mqtt_ack *a);
/* Write a PUBACK, PUBREC, PUBREL or PUBCOMP (or anything bk_send_simple
 * writes) with an MQTT 5.0 reason code: a level-5 client gets the code
 * (and, when it allows problem information, a Reason String), a level 3/4
 * client the short form. Also gives a level-5 client's send quota back
 * (Receive Maximum) when the packet ends one of its QoS 1/2 flows. False
 * on allocation failure. Inline: every acknowledgement of a 3.1.1 client
 * goes through it. */
bool bk_send_ack5(broker *b, broker_conn *c, mqtt_type type, uint16_t packet_id, uint8_t reason);
static inline bool bk_send_ack(broker *b, broker_conn *c, mqtt_type type, uint16_t packet_id,
                               uint8_t reason)
{
    if (c->level != MQTT_LEVEL_5)
        return bk_send_simple(b, c, type, packet_id);
    return bk_send_ack5(b, c, type, packet_id, reason);
}

#endif
