/*
 * alias.h - MQTT 5.0 Topic Aliases of one connection (alias.c), in both
 * directions: the client's aliases towards the broker, and the ones the
 * broker gives topics it sends the client (its policy is in alias.c).
 */
#ifndef TERN_BROKER_ALIAS_H
#define TERN_BROKER_ALIAS_H

#include "broker/broker.h"
#include "broker/conn-t.h"
#include "mqtt/mqtt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Aliases the broker gives at most to one connection's topics, whatever
 * larger Topic Alias Maximum the client allows: each holds a copy of a
 * topic, so this bounds what the table costs per connection. */
#define BK_ALIAS_OUT_MAX 16u

/* The Topic Alias Maximum the broker announces in CONNACK and accepts
 * (limits.max_topic_alias; UINT32_MAX = none, so 0). */
uint16_t bk_alias_in_max(const broker *b);

/*
 * The topic of a level-5 PUBLISH from c carrying Topic Alias `alias`
 * (1..65535): an empty *topic is replaced by the alias's topic; a
 * non-empty one (already within the topic limits) becomes the alias's
 * topic [MQTT-3.3.2-12]. Returns 0, or the DISCONNECT reason code: 0x94
 * for an alias above bk_alias_in_max, 0x82 for an empty topic with an
 * alias not set on this connection (3.3.2.3.4), 0x80 when memory ran out.
 */
uint8_t bk_alias_in_resolve(broker *b, broker_conn *c, uint16_t alias, mqtt_bytes *topic);

/*
 * Outbound: the alias topic goes under on c, 0 for none. *known says the
 * client already has it (send an empty topic); otherwise the packet sets
 * it (send topic and alias), and bk_alias_out_set() records that once the
 * packet is written.
 */
uint16_t bk_alias_out_pick(const broker_conn *c, const uint8_t *topic, size_t len, bool *known);
/* Record that the packet giving topic the alias bk_alias_out_pick()
 * returned (the next free one) was written. Only after it is written: an
 * alias the client never saw set must never be sent bare. When memory
 * runs out nothing is recorded, which is harmless: the topic goes out in
 * full again, and the client's unused mapping is overwritten if its
 * number is given to another topic. */
void bk_alias_out_set(broker *b, broker_conn *c, const uint8_t *topic, size_t len);

/* Forget c's aliases (its connection ended). */
void bk_alias_free(broker *b, broker_conn *c);

#endif
