/*
 * encode5.c - the MQTT 5.0 forms of the packets a broker sends (and
 * PUBLISH and the acks, which both sides send): each takes its property
 * block in pieces (mqtt.h) and writes it after a Property Length. Same
 * contract as encode.c: exact size first, 0 when it does not fit, and
 * MQTT_INVARIANT on what the decoder would refuse (a reason code the
 * packet may not carry, a zero packet id).
 *
 * Short forms are written whenever the spec allows them, as the decoder
 * reads them: an ack with Success and no properties is 4 bytes (3.4.2.1),
 * with another reason and no properties 5 (3.4.2.2.1); a DISCONNECT or AUTH
 * with Success and no properties is 2 bytes (3.14.2.1, 3.15.2.1), a
 * DISCONNECT with another reason and no properties 3 (3.14.2.2.1). An AUTH
 * with a reason always carries its Property Length: 3.15 names no
 * one-byte form.
 */
#include "mqtt/mqtt.h"
#include "mqtt/props.h"
#include "mqtt/reason.h"
#include "mqtt/wire.h"

static bool reason_ok(mqtt_type type, uint8_t rc)
{
    return reason_allowed(type, MQTT_FROM_SERVER, rc) || reason_allowed(type, MQTT_FROM_CLIENT, rc);
}

/* Bytes of a property block of `total` bytes with its length; 0 when it
 * cannot be encoded. */
static size_t block_size(size_t total)
{
    return total > MQTT_MAX_REMAINING ? 0 : varint_size(total) + total;
}

size_t mqtt_publish5_size(size_t topic_len, size_t payload_len, uint8_t qos, size_t props_len)
{
    size_t block = block_size(props_len);
    if (topic_len > UINT16_MAX || block == 0 || payload_len > MQTT_MAX_REMAINING)
        return 0;
    size_t fixed = 2 + topic_len + (qos ? 2u : 0u) + block;
    if (payload_len > MQTT_MAX_REMAINING - fixed)
        return 0;
    return packet_size(fixed + payload_len);
}

size_t mqtt_encode_publish5(uint8_t *out, size_t cap, const mqtt_publish *p,
                            const mqtt_bytes *props, size_t nprops)
{
    MQTT_INVARIANT(p->qos <= 2);
    MQTT_INVARIANT(p->qos == 0 || p->packet_id != 0);
    /* an empty topic is the caller's promise that props carry a Topic Alias */
    MQTT_INVARIANT(p->topic.len <= UINT16_MAX);

    size_t total = props_total(props, nprops);
    size_t size = mqtt_publish5_size(p->topic.len, p->payload.len, p->qos, total);
    if (size == 0 || cap < size)
        return 0;
    uint8_t first = (uint8_t)(MQTT_PUBLISH << 4 | p->qos << 1 | (p->retain ? 1 : 0));
    if (p->qos && p->dup)
        first |= 0x8; /* [MQTT-3.3.1-2]: never on QoS 0 */
    size_t rl = 2 + p->topic.len + (p->qos ? 2u : 0u) + block_size(total) + p->payload.len;

    mqtt_writer w = { out, cap, 0 };
    /* Most messages carry no properties: their block is one 0 byte. */
    if (wr_header(&w, first, rl) || wr_prefixed(&w, p->topic.p, p->topic.len) ||
        (p->qos && wr_u16(&w, p->packet_id)) ||
        (total == 0 ? wr_u8(&w, 0) : wr_props(&w, total, props, nprops)) ||
        wr_raw(&w, p->payload.p, p->payload.len))
        return 0;
    MQTT_INVARIANT(w.len == size);
    return size;
}

size_t mqtt_encode_connack5(uint8_t *out, size_t cap, bool session_present, uint8_t reason,
                            const mqtt_bytes *props, size_t nprops)
{
    MQTT_INVARIANT(reason_ok(MQTT_CONNACK, reason));

    size_t total = props_total(props, nprops);
    size_t block = block_size(total);
    if (block == 0 || block > MQTT_MAX_REMAINING - 2)
        return 0;
    size_t size = packet_size(2 + block);
    if (cap < size)
        return 0;
    bool sp = session_present && reason == MQTT_RC_SUCCESS; /* [MQTT-3.2.2-6] */
    mqtt_writer w = { out, cap, 0 };
    if (wr_header(&w, MQTT_CONNACK << 4, 2 + block) || wr_u8(&w, sp ? 1 : 0) ||
        wr_u8(&w, reason) || wr_props(&w, total, props, nprops))
        return 0;
    MQTT_INVARIANT(w.len == size);
    return size;
}

size_t mqtt_encode_ack5(uint8_t *out, size_t cap, mqtt_type type, uint16_t packet_id,
                        uint8_t reason, const mqtt_bytes *props, size_t nprops)
{
    MQTT_INVARIANT(type == MQTT_PUBACK || type == MQTT_PUBREC || type == MQTT_PUBREL ||
                   type == MQTT_PUBCOMP);
    MQTT_INVARIANT(packet_id != 0);
    MQTT_INVARIANT(reason_ok(type, reason));

    size_t total = props_total(props, nprops);
    size_t block = block_size(total);
    if (block == 0 || block > MQTT_MAX_REMAINING - 3)
        return 0;
    size_t rl = total ? 3 + block : reason ? 3u : 2u;
    size_t size = packet_size(rl);
    if (cap < size)
        return 0;
    uint8_t first = (uint8_t)(type << 4 | (type == MQTT_PUBREL ? 0x2 : 0));
    mqtt_writer w = { out, cap, 0 };
    if (wr_header(&w, first, rl) || wr_u16(&w, packet_id) ||
        (rl > 2 && wr_u8(&w, reason)) || (total && wr_props(&w, total, props, nprops)))
        return 0;
    MQTT_INVARIANT(w.len == size);
    return size;
}

size_t mqtt_encode_suback5(uint8_t *out, size_t cap, mqtt_type type, uint16_t packet_id,
                           const uint8_t *codes, size_t count, const mqtt_bytes *props,
                           size_t nprops)
{
    MQTT_INVARIANT(type == MQTT_SUBACK || type == MQTT_UNSUBACK);
    MQTT_INVARIANT(packet_id != 0);
    MQTT_INVARIANT(count >= 1);
    for (size_t i = 0; i < count; i++)
        MQTT_INVARIANT(reason_allowed(type, MQTT_FROM_SERVER, codes[i]));

    size_t total = props_total(props, nprops);
    size_t block = block_size(total);
    if (block == 0 || block > MQTT_MAX_REMAINING - 2 || count > MQTT_MAX_REMAINING - 2 - block)
        return 0;
    size_t rl = 2 + block + count;
    size_t size = packet_size(rl);
    if (cap < size)
        return 0;
    mqtt_writer w = { out, cap, 0 };
    if (wr_header(&w, (uint8_t)(type << 4), rl) || wr_u16(&w, packet_id) ||
        wr_props(&w, total, props, nprops) || wr_raw(&w, codes, count))
        return 0;
    MQTT_INVARIANT(w.len == size);
    return size;
}

size_t mqtt_encode_reason5(uint8_t *out, size_t cap, mqtt_type type, uint8_t reason,
                           const mqtt_bytes *props, size_t nprops)
{
    MQTT_INVARIANT(type == MQTT_DISCONNECT || type == MQTT_AUTH);
    MQTT_INVARIANT(reason_ok(type, reason));

    size_t total = props_total(props, nprops);
    size_t block = block_size(total);
    if (block == 0 || block > MQTT_MAX_REMAINING - 1)
        return 0;
    size_t rl;
    if (total)
        rl = 1 + block;
    else if (reason == MQTT_RC_SUCCESS)
        rl = 0;
    else
        rl = type == MQTT_DISCONNECT ? 1u : 2u;
    size_t size = packet_size(rl);
    if (cap < size)
        return 0;
    mqtt_writer w = { out, cap, 0 };
    if (wr_header(&w, (uint8_t)(type << 4), rl) || (rl >= 1 && wr_u8(&w, reason)) ||
        (rl >= 2 && wr_props(&w, total, props, nprops)))
        return 0;
    MQTT_INVARIANT(w.len == size);
    return size;
}
