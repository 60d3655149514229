/*
 * publish5.h - the PUBLISH packets the broker writes to an MQTT 5.0 client
 * (publish5.c): the message's forwarded properties, and each delivery's
 * own (Topic Alias, the Message Expiry Interval left, Subscription
 * Identifiers), within the client's Maximum Packet Size.
 */
#ifndef TERN_BROKER_PUBLISH5_H
#define TERN_BROKER_PUBLISH5_H

#include "broker/broker.h"
#include "broker/conn-t.h"
#include "broker/msg.h"
#include "mqtt/mqtt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The mqtt_publish an encoder takes, filled field by field: an
 * initializer would zero the 208-byte property block too, which the
 * encoders never read (mqtt.h) - a third of a 3.1.1 PUBLISH's encoding
 * cost. */
static inline void bk_publish_fill(mqtt_publish *pub, const uint8_t *topic, size_t tlen,
                                   const uint8_t *payload, size_t plen, uint8_t qos,
                                   bool retain, bool dup, uint16_t packet_id)
{
    pub->qos = qos;
    pub->dup = dup;
    pub->retain = retain;
    pub->packet_id = packet_id;
    pub->topic = (mqtt_bytes){topic, tlen};
    pub->payload = (mqtt_bytes){payload, plen};
}

/* What bk_publish5_write did. */
typedef enum bk_send5 {
    BK_SEND5_OK,        /* written to c's output */
    BK_SEND5_NOMEM,     /* nothing written: out of memory (try again later) */
    BK_SEND5_TOO_LARGE, /* nothing written, never will be: above the client's Maximum
                           Packet Size (counted and logged here) */
} bk_send5;

/*
 * Whether a PUBLISH of v to level-5 client c carries no property at all:
 * none forwarded, no expiry, no Subscription Identifier, and no Topic
 * Alias possible (the client allows none, or this is a retransmission).
 * Such a packet is the 3.1.1 one plus an empty property block, which
 * mqtt_encode_publish writes at level 5 (deliver.c takes that path).
 */
static inline bool bk_publish5_bare(const broker_conn *c, const bk_pubview *v, bool dup,
                                    uint32_t sub_id, const uint32_t *sub_ids_more)
{
    return v->props_len == 0 && v->expiry_ms == 0 && sub_id == 0 && !sub_ids_more &&
           (dup || c->client_topic_alias_max == 0);
}

/*
 * Write one PUBLISH of v to level-5 client c. sub_id (0 = none) and
 * sub_ids_more ([count, id...], NULL = none) are the Subscription
 * Identifiers it carries [MQTT-3.3.4-3]. A first transmission may go
 * under a Topic Alias (alias.c's policy); a retransmission (dup) never
 * does. A packet above the client's Maximum Packet Size is judged without
 * an alias, so its retransmission is never larger than what was allowed.
 * *written (may be NULL) gets the packet's size on BK_SEND5_OK.
 */
bk_send5 bk_publish5_write(broker *b, broker_conn *c, const bk_pubview *v, uint8_t qos,
                           bool retain, bool dup, uint16_t packet_id, uint32_t sub_id,
                           const uint32_t *sub_ids_more, size_t *written);

/* A packet of `size` bytes for v is above c's Maximum Packet Size: count
 * it and say so (for copies of a packet encoded once for several clients). */
void bk_publish5_too_large(broker *b, const broker_conn *c, const bk_pubview *v, size_t size);

/* The Message Expiry Interval left at now_ms, in whole seconds rounded up
 * [MQTT-3.3.2-6]; 0 once it has passed. expiry_ms must not be 0. */
uint32_t bk_expiry_left_s(uint64_t expiry_ms, uint64_t now_ms);

#endif
