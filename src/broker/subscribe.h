/*
 * subscribe.h - SUBSCRIBE and UNSUBSCRIBE (subscribe.c): each filter
 * checked against the topic limits, the ACL and the session's subscription
 * limit; a packet with more filters than the work budget worked through in
 * slices over several broker_input calls (conn.c keeps its bytes).
 */
#ifndef TERN_BROKER_SUBSCRIBE_H
#define TERN_BROKER_SUBSCRIBE_H

#include "broker/broker.h"
#include "broker/conn-t.h"
#include "mqtt/mqtt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The limit a topic name or filter is beyond ("max_topic_length" or
 * "max_topic_levels"), or NULL when it is within both. */
const char *bk_topic_over_limits(const broker *b, const uint8_t *t, size_t len);

/* Handle a decoded SUBSCRIBE or UNSUBSCRIBE of an active connection, the
 * packet starting at base (its list points into it), spending *budget: one
 * unit per filter handled, per filter searched for retained messages and
 * per retained message sent. True when the packet is finished. False when
 * it continues: c->job holds where it stopped, and the caller keeps the
 * packet's bytes, unchanged, for bk_list_resume(). The connection may be
 * CLOSING after either. */
bool bk_list_start(broker *b, broker_conn *c, const mqtt_packet *pkt, const uint8_t *base,
                   uint32_t *budget);
/* Continue c->job on its packet at base (size bk_list_size()). */
bool bk_list_resume(broker *b, broker_conn *c, const uint8_t *base, uint32_t *budget);
/* Bytes of the packet c->job works on. */
uint32_t bk_list_size(const struct list_job *j);
/* Forget c->job (the connection ends). */
void bk_list_drop(broker *b, broker_conn *c);

#endif
