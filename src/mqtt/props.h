/*
 * props.h - internal to src/mqtt/: the MQTT 5.0 property table and the
 * validating reader of a property block, shared by the decoder (decode.c)
 * and the walkers and writers (props.c, props_write.c).
 *
 * Each property's data type and the packets it may appear in are one table
 * (props.c, spec section 2.2.2.2); everything else asks it.
 */
#ifndef TERN_MQTT_PROPS_H
#define TERN_MQTT_PROPS_H

#include "mqtt/mqtt.h"
#include "mqtt/wire.h"

/* The places a property block appears. The four publish acks share one. */
typedef enum prop_ctx {
    PCTX_CONNECT,
    PCTX_CONNACK,
    PCTX_PUBLISH,
    PCTX_WILL,
    PCTX_PUBACK, /* PUBACK, PUBREC, PUBREL, PUBCOMP */
    PCTX_SUBSCRIBE,
    PCTX_SUBACK,
    PCTX_UNSUBSCRIBE,
    PCTX_UNSUBACK,
    PCTX_DISCONNECT,
    PCTX_AUTH,
} prop_ctx;

/* A property's data type (section 1.5); PT_NONE: not a property id. */
typedef enum prop_type {
    PT_NONE,
    PT_BYTE,
    PT_U16,
    PT_U32,
    PT_VARINT,
    PT_STRING,
    PT_BINARY,
    PT_PAIR,
} prop_type;

/* The type of property id, PT_NONE for an unknown id. */
prop_type prop_type_of(uint8_t id);

/*
 * Read a property block (Variable Byte Integer length, then the
 * properties) at r's position and validate it for ctx: known ids of the
 * right type for ctx, at most once where the spec says so, values in
 * range. role is the sender's (a client's PUBLISH may not carry a
 * Subscription Identifier). Fills *out (zeroed first).
 */
mqtt_err prop_read_block(mqtt_reader *r, prop_ctx ctx, mqtt_role role, mqtt_props *out);

/* Set *p to no properties, all zero. A copy of a zero constant: gcc
 * writes `= (mqtt_props){ 0 }` as `rep stos` of 52 words, which costs a
 * 5.0 PUBLISH or PUBACK twice what 13 vector stores do. */
static inline void props_clear(mqtt_props *p)
{
    static const mqtt_props none;
    *p = none;
}

/*
 * A Variable Byte Integer at r's position: 1..4 bytes, minimal form only
 * ([MQTT-1.5.5-1]): MQTT_ERR_LENGTH_ENCODING otherwise, MQTT_ERR_TRUNCATED
 * when it runs past the end.
 */
mqtt_err rd_varint(mqtt_reader *r, uint32_t *out);

/* Total size of nprops pieces of a property block (their sum). */
size_t props_total(const mqtt_bytes *props, size_t nprops);
/* Write the Property Length (total) then the pieces. */
mqtt_err wr_props(mqtt_writer *w, size_t total, const mqtt_bytes *props, size_t nprops);

#endif
