/*
 * deliver_internal.h - what the outbound path's files share: routing
 * (deliver.c) and moving a session's queue onto the wire (pump.c) both
 * encode PUBLISH packets with bk_send_publish and ask whether a
 * connection is live and its QoS 1/2 window full. Internal to src/broker/.
 */
#ifndef TERN_BROKER_DELIVER_INTERNAL_H
#define TERN_BROKER_DELIVER_INTERNAL_H

#include "broker/broker-t.h"
#include "broker/conn-t.h"
#include "broker/publish5.h"
#include "broker/session-t.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A PUBLISH with topic and payload only: any 3.1.1 one, and at level 5
 * one without any property (deliver.c). */
bk_send5 bk_send_publish(broker *b, broker_conn *c, const uint8_t *topic, size_t tlen,
                         const uint8_t *payload, size_t plen, uint8_t qos, bool retain,
                         bool dup, uint16_t packet_id);

static inline bool conn_live(const broker_conn *c)
{
    return c && c->state == CONN_ACTIVE;
}

/* QoS 1/2 PUBLISHes that may await acknowledgement on c: limits.max_inflight,
 * and for a 5.0 client no more than its Receive Maximum [MQTT-3.3.4-9]. A
 * PUBREC with an error code frees a slot as a PUBACK or PUBCOMP does
 * (conn.c completes the entry). */
static inline uint32_t window(const broker *b, const broker_conn *c)
{
    uint32_t w = b->lim.max_inflight;
    if (c->level == MQTT_LEVEL_5 && c->client_receive_max < w)
        w = c->client_receive_max;
    return w;
}

/* No new QoS 1/2 PUBLISH for s now: its window (above) is full, or the
 * payload its sent entries hold reached limits.max_queued_bytes. The byte
 * bound keeps what one session holds in flight to about its queue's bound
 * whatever max_inflight is (one message always fits: the count is then 0). */
static inline bool window_full(const broker *b, const session *s, const broker_conn *c)
{
    return s->inflight >= window(b, c) || s->inflight_bytes >= b->lim.max_queued_bytes;
}

#endif
