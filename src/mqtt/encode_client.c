/*
 * encode_client.c - encoders for the packets only a client sends: CONNECT,
 * SUBSCRIBE, UNSUBSCRIBE. Used by the tests, the load generator and bridges.
 * Same contract as encode.c: exact size first, 0 when it does not fit,
 * MQTT_INVARIANT on anything the decoder would reject as malformed.
 *
 * At level 5 a CONNECT carries its property block (props.raw) after the
 * keep alive and the will's (will_props.raw) before the will topic, and a
 * (UN)SUBSCRIBE its block after the packet id; the level-3/4 SUBSCRIBE and
 * UNSUBSCRIBE encoders write an empty block at level 5.
 */
#include "mqtt/mqtt.h"
#include "mqtt/props.h"
#include "mqtt/wire.h"

/* Bytes of a property block (with its length) holding raw. */
static size_t block_size(const mqtt_bytes *raw)
{
    return varint_size(raw->len) + raw->len;
}

size_t mqtt_encode_connect(uint8_t *out, size_t cap, const mqtt_connect *c)
{
    bool v5 = c->level == MQTT_LEVEL_5;
    MQTT_INVARIANT(c->level == MQTT_LEVEL_31 || c->level == MQTT_LEVEL_311 || v5);
    MQTT_INVARIANT(!c->bridge || !v5); /* 5.0 bridges use No Local instead */
    MQTT_INVARIANT(c->will_qos <= 2);
    MQTT_INVARIANT(c->will_flag || (c->will_qos == 0 && !c->will_retain));
    /* 3.1.1 [MQTT-3.1.2-22]; 5.0 allows a password alone (3.1.2.9) */
    MQTT_INVARIANT(v5 || !c->password_flag || c->username_flag);
    MQTT_INVARIANT(c->client_id.len <= UINT16_MAX && c->will_topic.len <= UINT16_MAX &&
                   c->will_payload.len <= UINT16_MAX && c->username.len <= UINT16_MAX &&
                   c->password.len <= UINT16_MAX);
    /* Blocks bounded so that the sum below stays under MQTT_MAX_REMAINING
     * (a client's CONNECT properties are a few dozen bytes). */
    MQTT_INVARIANT(c->props.raw.len <= UINT16_MAX * 4u && c->will_props.raw.len <= UINT16_MAX * 4u);

    const char *name = c->level == MQTT_LEVEL_31 ? "MQIsdp" : "MQTT";
    size_t name_len = strlen(name);
    uint8_t flags = (uint8_t)((c->clean_session ? 0x02 : 0) | (c->will_flag ? 0x04 : 0) |
                              c->will_qos << 3 | (c->will_retain ? 0x20 : 0) |
                              (c->password_flag ? 0x40 : 0) | (c->username_flag ? 0x80 : 0));

    /* Every field is at most 2 + 65535 bytes and the blocks are bounded
     * above: the sum cannot overflow or exceed MQTT_MAX_REMAINING. */
    size_t rl = 2 + name_len + 1 + 1 + 2 + 2 + c->client_id.len;
    if (v5)
        rl += block_size(&c->props.raw);
    if (c->will_flag)
        rl += 2 + c->will_topic.len + 2 + c->will_payload.len +
              (v5 ? block_size(&c->will_props.raw) : 0);
    if (c->username_flag)
        rl += 2 + c->username.len;
    if (c->password_flag)
        rl += 2 + c->password.len;
    size_t size = packet_size(rl);
    if (cap < size)
        return 0;

    mqtt_writer w = { out, cap, 0 };
    if (wr_header(&w, MQTT_CONNECT << 4, rl) ||
        wr_prefixed(&w, (const uint8_t *)name, name_len) || wr_u8(&w, (uint8_t)(c->level | (c->bridge ? 0x80 : 0))) ||
        wr_u8(&w, flags) || wr_u16(&w, c->keepalive) ||
        (v5 && wr_props(&w, c->props.raw.len, &c->props.raw, 1)) ||
        wr_prefixed(&w, c->client_id.p, c->client_id.len))
        return 0;
    if (c->will_flag && ((v5 && wr_props(&w, c->will_props.raw.len, &c->will_props.raw, 1)) ||
                         wr_prefixed(&w, c->will_topic.p, c->will_topic.len) ||
                         wr_prefixed(&w, c->will_payload.p, c->will_payload.len)))
        return 0;
    if (c->username_flag && wr_prefixed(&w, c->username.p, c->username.len))
        return 0;
    if (c->password_flag && wr_prefixed(&w, c->password.p, c->password.len))
        return 0;
    MQTT_INVARIANT(w.len == size);
    return size;
}

/* SUBSCRIBE (options != NULL) and UNSUBSCRIBE share everything but the
 * options byte after each filter; props != NULL: the level-5 form. */
static size_t encode_filter_list(uint8_t *out, size_t cap, mqtt_type type, uint16_t packet_id,
                                 const mqtt_bytes *filters, const uint8_t *options, size_t count,
                                 const mqtt_bytes *props)
{
    MQTT_INVARIANT(packet_id != 0);
    MQTT_INVARIANT(count >= 1);
    MQTT_INVARIANT(!props || props->len <= MQTT_MAX_REMAINING);

    size_t per_entry = options ? 3u : 2u;
    size_t rl = 2 + (props ? block_size(props) : 0);
    if (rl > MQTT_MAX_REMAINING)
        return 0;
    for (size_t i = 0; i < count; i++) {
        MQTT_INVARIANT(filters[i].len >= 1 && filters[i].len <= UINT16_MAX);
        /* 3.1.1: only the QoS bits; 5.0: reserved bits 6-7 clear, no QoS 3,
         * no Retain Handling 3 */
        MQTT_INVARIANT(!options || (options[i] & MQTT_SUBOPT_QOS_MASK) <= 2);
        MQTT_INVARIANT(!options || (props ? (options[i] & 0xc0) == 0 &&
                                                (options[i] & MQTT_SUBOPT_RETAIN_HANDLING_MASK) !=
                                                    MQTT_SUBOPT_RETAIN_HANDLING_MASK
                                          : options[i] <= 2));
        rl += per_entry + filters[i].len;
        if (rl > MQTT_MAX_REMAINING)
            return 0;
    }
    size_t size = packet_size(rl);
    if (cap < size)
        return 0;

    mqtt_writer w = { out, cap, 0 };
    if (wr_header(&w, (uint8_t)(type << 4 | 0x2), rl) || wr_u16(&w, packet_id) ||
        (props && wr_props(&w, props->len, props, 1)))
        return 0;
    for (size_t i = 0; i < count; i++) {
        if (wr_prefixed(&w, filters[i].p, filters[i].len) || (options && wr_u8(&w, options[i])))
            return 0;
    }
    MQTT_INVARIANT(w.len == size);
    return size;
}

static const mqtt_bytes no_props = { NULL, 0 };

size_t mqtt_encode_subscribe(uint8_t *out, size_t cap, uint8_t level, uint16_t packet_id,
                             const mqtt_bytes *filters, const uint8_t *qos, size_t count)
{
    MQTT_INVARIANT(qos != NULL);
    return encode_filter_list(out, cap, MQTT_SUBSCRIBE, packet_id, filters, qos, count,
                              level == MQTT_LEVEL_5 ? &no_props : NULL);
}

size_t mqtt_encode_unsubscribe(uint8_t *out, size_t cap, uint8_t level, uint16_t packet_id,
                               const mqtt_bytes *filters, size_t count)
{
    return encode_filter_list(out, cap, MQTT_UNSUBSCRIBE, packet_id, filters, NULL, count,
                              level == MQTT_LEVEL_5 ? &no_props : NULL);
}

size_t mqtt_encode_subscribe5(uint8_t *out, size_t cap, uint16_t packet_id,
                              const mqtt_bytes *filters, const uint8_t *options, size_t count,
                              const mqtt_bytes *props)
{
    MQTT_INVARIANT(options != NULL);
    return encode_filter_list(out, cap, MQTT_SUBSCRIBE, packet_id, filters, options, count,
                              props ? props : &no_props);
}

size_t mqtt_encode_unsubscribe5(uint8_t *out, size_t cap, uint16_t packet_id,
                                const mqtt_bytes *filters, size_t count,
                                const mqtt_bytes *props)
{
    return encode_filter_list(out, cap, MQTT_UNSUBSCRIBE, packet_id, filters, NULL, count,
                              props ? props : &no_props);
}
