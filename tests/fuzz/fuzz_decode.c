/*
 * fuzz_decode.c - libFuzzer target for the MQTT decoder (src/mqtt/).
 *
 * Input: one control byte (role, protocol level), two bytes choosing the
 * maximum packet size, then a byte stream decoded packet after packet.
 * Properties checked beyond "no crash, no sanitizer report":
 *   - mqtt_frame_size agrees with mqtt_decode on every packet's size;
 *   - every proper prefix of a packet that decodes is MQTT_NEED_MORE
 *     (the decoder promises to wait only for packets it would accept);
 *   - a decoded packet re-encodes (where an encoder exists) to the same
 *     bytes, apart from the normalisations the codec documents, and the
 *     re-encoding decodes to an equal packet;
 *   - the list iterators yield exactly `count` valid entries;
 *   - level 5: a property block walks (mqtt_prop_next) to its exact end
 *     with the identifiers `present` says, mqtt_props_filter keeps exactly
 *     what it should, and the re-encoding carries the same block; acks,
 *     DISCONNECT and AUTH may come back in a shorter form (the encoders
 *     write the shortest the spec allows) that decodes to the same fields;
 *   - every error has a reason code (mqtt_err_reason) of 0x80 or above.
 */
#include "mqtt/mqtt.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c) ((c) ? (void)0 : abort())

static bool bytes_eq(mqtt_bytes a, mqtt_bytes b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

/* The options byte of a SUBSCRIBE entry the decoder accepted. */
static bool options_valid(uint8_t q, bool v5)
{
    if (!v5)
        return q <= 2;
    return (q & 0xc0) == 0 && (q & MQTT_SUBOPT_QOS_MASK) <= 2 &&
           (q & MQTT_SUBOPT_RETAIN_HANDLING_MASK) != MQTT_SUBOPT_RETAIN_HANDLING_MASK;
}

/* Walk a list with its iterator; collect entries when `filters` is given. */
static void check_list(const mqtt_packet *p, bool v5, mqtt_bytes *filters, uint8_t *codes)
{
    size_t pos = 0, n = 0;
    mqtt_bytes f, g, inner;
    uint8_t q;
    switch (p->type) {
    case MQTT_SUBSCRIBE:
        while (mqtt_subscribe_next(&p->u.subscribe, &pos, &f, &q)) {
            FUZZ_ASSERT(n < p->u.subscribe.count);
            FUZZ_ASSERT(mqtt_topic_filter_valid(f.p, f.len) && options_valid(q, v5));
            if (v5) {
                int share = mqtt_share_split(f.p, f.len, &g, &inner);
                FUZZ_ASSERT(share >= 0 && !(share > 0 && (q & MQTT_SUBOPT_NO_LOCAL)));
            }
            filters[n] = f;
            codes[n++] = q;
        }
        FUZZ_ASSERT(n == p->u.subscribe.count && pos == p->u.subscribe.raw.len);
        break;
    case MQTT_UNSUBSCRIBE:
        while (mqtt_unsubscribe_next(&p->u.unsubscribe, &pos, &f)) {
            FUZZ_ASSERT(n < p->u.unsubscribe.count);
            FUZZ_ASSERT(mqtt_topic_filter_valid(f.p, f.len));
            filters[n++] = f;
        }
        FUZZ_ASSERT(n == p->u.unsubscribe.count && pos == p->u.unsubscribe.raw.len);
        break;
    case MQTT_SUBACK:
    case MQTT_UNSUBACK:
        while (mqtt_suback_next(&p->u.suback, &pos, &q)) {
            FUZZ_ASSERT(n < p->u.suback.count);
            FUZZ_ASSERT(v5 || q <= 2 || q == MQTT_SUBACK_FAILURE);
            codes[n++] = q;
        }
        FUZZ_ASSERT(n == p->u.suback.count);
        FUZZ_ASSERT(v5 || p->type == MQTT_SUBACK || n == 0);
        break;
    default:
        break;
    }
}

/* The property block of a decoded packet (an all-zero one when none). */
static const mqtt_props *props_of(const mqtt_packet *p)
{
    static const mqtt_props none;
    switch (p->type) {
    case MQTT_CONNECT: return &p->u.connect.props;
    case MQTT_CONNACK: return &p->u.connack.props;
    case MQTT_PUBLISH: return &p->u.publish.props;
    case MQTT_PUBACK:
    case MQTT_PUBREC:
    case MQTT_PUBREL:
    case MQTT_PUBCOMP: return &p->u.ack.props;
    case MQTT_SUBSCRIBE:
    case MQTT_UNSUBSCRIBE:
    case MQTT_SUBACK:
    case MQTT_UNSUBACK: return &p->u.subscribe.props;
    case MQTT_DISCONNECT:
    case MQTT_AUTH: return &p->u.disconnect.props;
    default: return &none;
    }
}

/* A validated block walks to its end, with exactly the ids in `present`;
 * the filter keeps what is not masked, in order. drop comes from the input. */
static void check_props(const mqtt_props *pr, uint64_t drop)
{
    size_t pos = 0, users = 0;
    uint64_t seen = 0;
    mqtt_prop q;
    while (mqtt_prop_next(&pr->raw, &pos, &q)) {
        FUZZ_ASSERT(q.id < 64);
        seen |= MQTT_PROP_BIT(q.id);
        users += q.id == MQTT_PROP_USER_PROPERTY;
    }
    /* A field is read only under its `present` bit (mqtt.h): a block with
     * no properties leaves the rest as it was. */
    FUZZ_ASSERT(pos == pr->raw.len && seen == pr->present &&
                users == ((pr->present & MQTT_PROP_BIT(MQTT_PROP_USER_PROPERTY)) != 0
                              ? pr->user_property_count
                              : 0));

    uint8_t *out = malloc(pr->raw.len + 1);
    FUZZ_ASSERT(out != NULL);
    size_t n = mqtt_props_filter(&pr->raw, drop, out, pr->raw.len);
    FUZZ_ASSERT(n <= pr->raw.len);
    mqtt_bytes kept = { out, n };
    size_t kpos = 0;
    while (mqtt_prop_next(&kept, &kpos, &q))
        FUZZ_ASSERT(!(drop & MQTT_PROP_BIT(q.id)));
    FUZZ_ASSERT(kpos == n);
    FUZZ_ASSERT((n == pr->raw.len) == ((pr->present & drop) == 0));
    free(out);
}

/* Field-by-field equality of two decodes of the same packet type. */
static void check_equal(const mqtt_packet *a, const mqtt_packet *b, bool level31)
{
    FUZZ_ASSERT(a->type == b->type);
    FUZZ_ASSERT(bytes_eq(props_of(a)->raw, props_of(b)->raw) &&
                props_of(a)->present == props_of(b)->present);
    switch (a->type) {
    case MQTT_CONNECT: {
        const mqtt_connect *x = &a->u.connect, *y = &b->u.connect;
        FUZZ_ASSERT(x->level == y->level && x->clean_session == y->clean_session &&
                    x->will_flag == y->will_flag && x->will_retain == y->will_retain &&
                    x->will_qos == y->will_qos && x->username_flag == y->username_flag &&
                    x->password_flag == y->password_flag && x->keepalive == y->keepalive);
        FUZZ_ASSERT(bytes_eq(x->will_props.raw, y->will_props.raw));
        FUZZ_ASSERT(bytes_eq(x->client_id, y->client_id) &&
                    bytes_eq(x->will_topic, y->will_topic) &&
                    bytes_eq(x->will_payload, y->will_payload) &&
                    bytes_eq(x->username, y->username) && bytes_eq(x->password, y->password));
        break;
    }
    case MQTT_CONNACK:
        FUZZ_ASSERT(a->u.connack.return_code == b->u.connack.return_code);
        /* 3.1 has no Session Present: the encoder clears it. */
        FUZZ_ASSERT(a->u.connack.session_present == b->u.connack.session_present ||
                    (level31 && !b->u.connack.session_present));
        break;
    case MQTT_PUBLISH: {
        const mqtt_publish *x = &a->u.publish, *y = &b->u.publish;
        FUZZ_ASSERT(x->qos == y->qos && x->retain == y->retain &&
                    x->packet_id == y->packet_id);
        /* 3.1 tolerates DUP on QoS 0 inbound; the encoder never sets it. */
        FUZZ_ASSERT(x->dup == y->dup || (x->qos == 0 && !y->dup));
        FUZZ_ASSERT(bytes_eq(x->topic, y->topic) && bytes_eq(x->payload, y->payload));
        break;
    }
    case MQTT_PUBACK:
    case MQTT_PUBREC:
    case MQTT_PUBREL:
    case MQTT_PUBCOMP:
        FUZZ_ASSERT(a->u.ack.packet_id == b->u.ack.packet_id &&
                    a->u.ack.reason == b->u.ack.reason);
        break;
    case MQTT_SUBSCRIBE:
    case MQTT_UNSUBSCRIBE:
    case MQTT_SUBACK:
    case MQTT_UNSUBACK:
        FUZZ_ASSERT(a->u.subscribe.packet_id == b->u.subscribe.packet_id &&
                    a->u.subscribe.count == b->u.subscribe.count &&
                    bytes_eq(a->u.subscribe.raw, b->u.subscribe.raw));
        break;
    case MQTT_DISCONNECT:
    case MQTT_AUTH:
        FUZZ_ASSERT(a->u.disconnect.reason == b->u.disconnect.reason);
        break;
    default:
        break;
    }
}

/* Re-encode a level-5 packet with the level-5 encoders. */
static size_t reencode5(const mqtt_packet *p, const mqtt_bytes *filters, const uint8_t *codes,
                        uint8_t *out, size_t cap)
{
    const mqtt_bytes *pr = &props_of(p)->raw;
    switch (p->type) {
    case MQTT_CONNECT:
        return mqtt_encode_connect(out, cap, &p->u.connect);
    case MQTT_CONNACK:
        return mqtt_encode_connack5(out, cap, p->u.connack.session_present,
                                    p->u.connack.return_code, pr, 1);
    case MQTT_PUBLISH:
        return mqtt_encode_publish5(out, cap, &p->u.publish, pr, 1);
    case MQTT_PUBACK:
    case MQTT_PUBREC:
    case MQTT_PUBREL:
    case MQTT_PUBCOMP:
        return mqtt_encode_ack5(out, cap, p->type, p->u.ack.packet_id, p->u.ack.reason, pr, 1);
    case MQTT_SUBSCRIBE:
        return mqtt_encode_subscribe5(out, cap, p->u.subscribe.packet_id, filters, codes,
                                      p->u.subscribe.count, pr);
    case MQTT_UNSUBSCRIBE:
        return mqtt_encode_unsubscribe5(out, cap, p->u.unsubscribe.packet_id, filters,
                                        p->u.unsubscribe.count, pr);
    case MQTT_SUBACK:
    case MQTT_UNSUBACK:
        return mqtt_encode_suback5(out, cap, p->type, p->u.suback.packet_id, codes,
                                   p->u.suback.count, pr, 1);
    case MQTT_PINGREQ:
    case MQTT_PINGRESP:
        return mqtt_encode_empty(out, cap, p->type);
    case MQTT_DISCONNECT:
    case MQTT_AUTH:
        return mqtt_encode_reason5(out, cap, p->type, p->u.disconnect.reason, pr, 1);
    }
    return 0;
}

/* Re-encode p; returns the size written (0 when no encoder applies). */
static size_t reencode(const mqtt_packet *p, uint8_t level, uint8_t *out, size_t cap)
{
    size_t max = p->u.subscribe.count + 1;
    mqtt_bytes *filters = NULL;
    uint8_t *codes = NULL;
    size_t n = 0;
    bool v5 = level == MQTT_LEVEL_5;
    if (p->type == MQTT_SUBSCRIBE || p->type == MQTT_UNSUBSCRIBE || p->type == MQTT_SUBACK ||
        p->type == MQTT_UNSUBACK) {
        filters = calloc(max, sizeof *filters);
        codes = calloc(max, 1);
        FUZZ_ASSERT(filters && codes);
        check_list(p, v5, filters, codes);
    }
    if (v5) {
        n = reencode5(p, filters, codes, out, cap);
        free(filters);
        free(codes);
        return n;
    }
    switch (p->type) {
    case MQTT_CONNECT:
        n = mqtt_encode_connect(out, cap, &p->u.connect);
        break;
    case MQTT_CONNACK:
        n = mqtt_encode_connack(out, cap, level, p->u.connack.session_present,
                                p->u.connack.return_code);
        break;
    case MQTT_PUBLISH:
        n = mqtt_encode_publish(out, cap, level, &p->u.publish);
        break;
    case MQTT_PUBACK:
    case MQTT_PUBREC:
    case MQTT_PUBREL:
    case MQTT_PUBCOMP:
    case MQTT_UNSUBACK:
        n = mqtt_encode_ack(out, cap, level, p->type, p->u.ack.packet_id);
        break;
    case MQTT_SUBSCRIBE:
        n = mqtt_encode_subscribe(out, cap, level, p->u.subscribe.packet_id, filters, codes,
                                  p->u.subscribe.count);
        break;
    case MQTT_UNSUBSCRIBE:
        n = mqtt_encode_unsubscribe(out, cap, level, p->u.unsubscribe.packet_id, filters,
                                    p->u.unsubscribe.count);
        break;
    case MQTT_SUBACK:
        n = mqtt_encode_suback(out, cap, level, p->u.suback.packet_id, codes,
                               p->u.suback.count);
        break;
    case MQTT_PINGREQ:
    case MQTT_PINGRESP:
    case MQTT_DISCONNECT:
        n = mqtt_encode_empty(out, cap, p->type);
        break;
    case MQTT_AUTH:
        FUZZ_ASSERT(0); /* AUTH is not decoded below level 5 */
        break;
    }
    free(filters);
    free(codes);
    return n;
}

static void check_packet(const uint8_t *buf, const mqtt_packet *p, size_t size, mqtt_role role,
                         uint8_t level, uint32_t max_size)
{
    uint32_t fs = 0;
    FUZZ_ASSERT(mqtt_frame_size(buf, size, max_size, &fs) == MQTT_OK && fs == size);
    FUZZ_ASSERT(p->size == size);

    /* Every proper prefix must ask for more (sampled on large packets). */
    size_t step = size > 256 ? size / 64 : 1;
    for (size_t k = 0; k < size; k += step) {
        mqtt_packet q;
        size_t used = 0;
        FUZZ_ASSERT(mqtt_decode(buf, k, role, level, max_size, &q, &used) == MQTT_NEED_MORE);
    }

    /* CONNECT carries its own level; everything else follows the connection's. */
    uint8_t enc_level = p->type == MQTT_CONNECT ? p->u.connect.level
                        : level == MQTT_LEVEL_31 ? MQTT_LEVEL_31
                        : level == MQTT_LEVEL_5  ? MQTT_LEVEL_5
                                                 : MQTT_LEVEL_311;
    bool level31 = enc_level == MQTT_LEVEL_31;
    if (enc_level == MQTT_LEVEL_5)
        check_props(props_of(p), (uint64_t)buf[size - 1] << 1 | (uint64_t)buf[size / 2] << 33);
    if (p->type == MQTT_CONNECT && p->u.connect.will_flag)
        check_props(&p->u.connect.will_props, MQTT_PROP_BIT(MQTT_PROP_WILL_DELAY));
    uint8_t *out = malloc(size);
    FUZZ_ASSERT(out != NULL);
    size_t n = reencode(p, enc_level, out, size);
    /* Level 5: an ack, DISCONNECT or AUTH written in a longer form than
     * needed (Success spelled out, an empty property block) comes back in
     * the shortest; it must still decode to the same fields below. */
    bool shortened = enc_level == MQTT_LEVEL_5 && p->type != MQTT_CONNECT && n < size &&
                     (p->type == MQTT_DISCONNECT || p->type == MQTT_AUTH ||
                      (p->type >= MQTT_PUBACK && p->type <= MQTT_PUBCOMP));
    FUZZ_ASSERT(n == size || (shortened && n >= 2));
    /* Only byte 0 (3.1's tolerated DUP bits) and CONNACK's Session Present
     * under 3.1 may differ; everything else is one canonical encoding. */
    if (!shortened && memcmp(out + 1, buf + 1, size - 1) != 0)
        FUZZ_ASSERT(level31 && p->type == MQTT_CONNACK);
    if (out[0] != buf[0])
        FUZZ_ASSERT(level31 || (p->type == MQTT_PUBLISH && p->u.publish.qos == 0));

    mqtt_packet again;
    size_t used = 0;
    FUZZ_ASSERT(mqtt_decode(out, n, role, level, max_size, &again, &used) == MQTT_OK);
    FUZZ_ASSERT(used == n);
    check_equal(p, &again, level31);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    static const uint8_t levels[4] = {0, MQTT_LEVEL_31, MQTT_LEVEL_311, MQTT_LEVEL_5};
    mqtt_role role = (data[0] & 1) ? MQTT_FROM_SERVER : MQTT_FROM_CLIENT;
    uint8_t level = levels[(data[0] >> 1) & 3];
    /* Small maxima often, to hit the size checks; 0 (protocol max) too. */
    uint32_t max_size = (uint32_t)data[1] << 8 | data[2];
    if (data[0] & 0x80)
        max_size = max_size ? (uint32_t)data[2] : 0;
    const uint8_t *buf = data + 3;
    size_t len = size - 3;

    while (len > 0) {
        mqtt_packet p;
        size_t used = 0;
        mqtt_err e = mqtt_decode(buf, len, role, level, max_size, &p, &used);
        FUZZ_ASSERT(e < MQTT_ERR__COUNT && mqtt_err_str(e) != NULL);
        FUZZ_ASSERT(e == MQTT_OK || e == MQTT_NEED_MORE || mqtt_err_reason(e) >= 0x80);
        if (e == MQTT_NEED_MORE) {
            uint32_t fs = 0;
            mqtt_err fe = mqtt_frame_size(buf, len, max_size, &fs);
            FUZZ_ASSERT(fe == MQTT_NEED_MORE || (fe == MQTT_OK && fs > len));
            break;
        }
        if (e != MQTT_OK)
            break;
        FUZZ_ASSERT(used >= 2 && used <= len);
        check_packet(buf, &p, used, role, level, max_size);
        buf += used;
        len -= used;
    }
    return 0;
}
