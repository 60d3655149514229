/*
 * encode.c - encoders for the packets a broker sends (and PUBLISH and the
 * acks, which both sides send). Each computes the exact size first, returns
 * 0 without writing when it does not fit in cap (or cannot be encoded at
 * all: Remaining Length above MQTT_MAX_REMAINING), then writes the packet
 * through the bounds-checked writer.
 *
 * Preconditions that would otherwise put a malformed packet on the wire are
 * MQTT_INVARIANT checks. Two inputs are normalised instead, because callers
 * naturally pass them and the fix is unambiguous:
 * - PUBLISH at QoS 0 never carries DUP or a packet id ([MQTT-3.3.1-2]), so a
 *   message downgraded to QoS 0 can be passed on unchanged;
 * - CONNACK carries Session Present only for level 4 with return code 0
 *   ([MQTT-3.2.2-4]; 3.1 has no such flag).
 * At level 5 these encoders write the 5.0 form with an empty property block
 * (encode5.c does the work, but for PUBLISH, written here): a PUBLISH,
 * CONNACK or SUBACK gains its
 * Property Length byte, a CONNACK's 3.1.1 return code becomes the 5.0 reason
 * code of the same meaning, and the publish acks keep their 4-byte form,
 * which 5.0 reads as Success (3.4.2.1). A 5.0 UNSUBACK needs a reason code
 * per filter, so mqtt_encode_ack() refuses it at level 5 (an invariant):
 * use mqtt_encode_suback5().
 */
#include "mqtt/mqtt.h"
#include "mqtt/wire.h"

size_t mqtt_publish_size(uint8_t level, size_t topic_len, size_t payload_len, uint8_t qos)
{
    /* 5.0 without properties: the same packet plus its empty property
     * block, one 0 byte (no call into encode5.c's general sizing). */
    size_t block = level == MQTT_LEVEL_5 ? 1u : 0u;
    if (topic_len > UINT16_MAX || payload_len > MQTT_MAX_REMAINING)
        return 0;
    return packet_size(2 + topic_len + (qos ? 2u : 0u) + block + payload_len);
}

size_t mqtt_encode_publish(uint8_t *out, size_t cap, uint8_t level, const mqtt_publish *p)
{
    MQTT_INVARIANT(p->qos <= 2);
    MQTT_INVARIANT(p->qos == 0 || p->packet_id != 0);
    MQTT_INVARIANT(p->topic.len >= 1 && p->topic.len <= UINT16_MAX);

    /* At level 5 the packet differs only by its empty property block, one
     * 0 byte after the packet id: written here rather than through
     * encode5.c's pieces, which a delivery without properties (the common
     * case) does not need. */
    bool v5 = level == MQTT_LEVEL_5;
    size_t size = mqtt_publish_size(level, p->topic.len, p->payload.len, p->qos);
    if (size == 0 || cap < size)
        return 0;
    uint8_t first = (uint8_t)(MQTT_PUBLISH << 4 | p->qos << 1 | (p->retain ? 1 : 0));
    if (p->qos && p->dup)
        first |= 0x8; /* [MQTT-3.3.1-2]: never on QoS 0 */
    size_t rl = 2 + p->topic.len + (p->qos ? 2u : 0u) + (v5 ? 1u : 0u) + p->payload.len;

    mqtt_writer w = { out, cap, 0 };
    if (wr_header(&w, first, rl) || wr_prefixed(&w, p->topic.p, p->topic.len) ||
        (p->qos && wr_u16(&w, p->packet_id)) || (v5 && wr_u8(&w, 0)) ||
        wr_raw(&w, p->payload.p, p->payload.len))
        return 0;
    MQTT_INVARIANT(w.len == size);
    return size;
}

size_t mqtt_encode_connack(uint8_t *out, size_t cap, uint8_t level, bool session_present,
                           uint8_t return_code)
{
    MQTT_INVARIANT(return_code <= MQTT_CONNACK_NOT_AUTHORIZED);
    if (level == MQTT_LEVEL_5) {
        /* the 5.0 reason code that says what each 3.1.1 return code says */
        static const uint8_t v5[] = {
            [MQTT_CONNACK_ACCEPTED] = MQTT_RC_SUCCESS,
            [MQTT_CONNACK_BAD_PROTOCOL] = MQTT_RC_UNSUPPORTED_PROTOCOL_VERSION,
            [MQTT_CONNACK_ID_REJECTED] = MQTT_RC_CLIENT_ID_NOT_VALID,
            [MQTT_CONNACK_UNAVAILABLE] = MQTT_RC_SERVER_UNAVAILABLE,
            [MQTT_CONNACK_BAD_CREDENTIALS] = MQTT_RC_BAD_USERNAME_OR_PASSWORD,
            [MQTT_CONNACK_NOT_AUTHORIZED] = MQTT_RC_NOT_AUTHORIZED,
        };
        return mqtt_encode_connack5(out, cap, session_present, v5[return_code], NULL, 0);
    }

    bool sp = session_present && return_code == 0 && level != MQTT_LEVEL_31;
    mqtt_writer w = { out, cap, 0 };
    if (cap < 4 || wr_header(&w, MQTT_CONNACK << 4, 2) || wr_u8(&w, sp ? 1 : 0) ||
        wr_u8(&w, return_code))
        return 0;
    return w.len;
}

size_t mqtt_encode_ack(uint8_t *out, size_t cap, uint8_t level, mqtt_type type, uint16_t packet_id)
{
    MQTT_INVARIANT(type == MQTT_PUBACK || type == MQTT_PUBREC || type == MQTT_PUBREL ||
                   type == MQTT_PUBCOMP || (type == MQTT_UNSUBACK && level != MQTT_LEVEL_5));
    MQTT_INVARIANT(packet_id != 0);

    uint8_t first = (uint8_t)(type << 4 | (type == MQTT_PUBREL ? 0x2 : 0));
    mqtt_writer w = { out, cap, 0 };
    if (cap < 4 || wr_header(&w, first, 2) || wr_u16(&w, packet_id))
        return 0;
    return w.len;
}

size_t mqtt_suback_size(uint8_t level, size_t count)
{
    size_t props = level == MQTT_LEVEL_5 ? 1u : 0u; /* an empty property block */
    if (count > MQTT_MAX_REMAINING - 2 - props)
        return 0;
    return packet_size(2 + props + count); /* packet id, then one code per filter */
}

size_t mqtt_encode_suback(uint8_t *out, size_t cap, uint8_t level, uint16_t packet_id,
                          const uint8_t *codes, size_t count)
{
    MQTT_INVARIANT(packet_id != 0);
    MQTT_INVARIANT(count >= 1);
    for (size_t i = 0; i < count; i++)
        MQTT_INVARIANT(codes[i] <= 2 || codes[i] == MQTT_SUBACK_FAILURE);
    if (level == MQTT_LEVEL_5)
        return mqtt_encode_suback5(out, cap, MQTT_SUBACK, packet_id, codes, count, NULL, 0);

    size_t size = mqtt_suback_size(level, count);
    mqtt_writer w = { out, cap, 0 };
    if (size == 0 || cap < size || wr_header(&w, MQTT_SUBACK << 4, 2 + count) ||
        wr_u16(&w, packet_id) || wr_raw(&w, codes, count))
        return 0;
    return w.len;
}

size_t mqtt_encode_empty(uint8_t *out, size_t cap, mqtt_type type)
{
    MQTT_INVARIANT(type == MQTT_PINGREQ || type == MQTT_PINGRESP || type == MQTT_DISCONNECT);

    mqtt_writer w = { out, cap, 0 };
    if (cap < 2 || wr_header(&w, (uint8_t)(type << 4), 0))
        return 0;
    return w.len;
}
