/*
 * decode.c - mqtt_decode(): the fixed header, then one validating parser per
 * packet type. A packet that decodes to MQTT_OK is well-formed in every field
 * the codec can judge; what is left to the broker is policy (first packet must
 * be CONNECT, client-id rules such as 3.1's 1..23 characters or an empty id
 * with clean session 0, authorisation).
 *
 * Choices the spec leaves open, made here:
 * - Remaining Length must be minimally encoded (0x80 0x00 is rejected with
 *   MQTT_ERR_LENGTH_ENCODING). 3.1.1 only defines the encoding; no client
 *   produces padded lengths, and refusing them keeps one byte sequence per
 *   packet, which the fuzzers and the round-trip tests rely on.
 * - Errors are reported as early as the bytes allow: a bad first byte fails
 *   with one byte in the buffer, and packets with a fixed Remaining Length
 *   (CONNACK, the acks, PINGREQ/PINGRESP/DISCONNECT) are judged on their header
 *   alone, so a peer cannot make us wait for a body we would reject anyway.
 * - Level 3 (MQTT 3.1) tolerates two things 3.1.1 forbids, because 3.1 clients
 *   do them: DUP set on a QoS 0 PUBLISH, and DUP set on PUBREL, SUBSCRIBE and
 *   UNSUBSCRIBE retries (3.1 gave those packets a real QoS 1 header).
 * - A SUBSCRIBE options byte with any of its upper six bits set is
 *   MQTT_ERR_BAD_FLAGS (they are reserved bits, [MQTT-3.8.3-4]); QoS 3 in the
 *   low two bits is MQTT_ERR_BAD_QOS.
 * - A SUBACK must carry at least one return code (it answers a SUBSCRIBE,
 *   which has at least one filter): MQTT_ERR_NO_TOPICS otherwise.
 * - A CONNACK with a non-zero return code and Session Present set is
 *   MQTT_ERR_BAD_CONNACK ([MQTT-3.2.2-4]).
 * - Level 5 (MQTT 5.0): every packet but PINGREQ/PINGRESP has a variable
 *   length (property blocks, short forms of the acks, DISCONNECT and AUTH),
 *   so only those two keep the early judgement on the header. A reason code
 *   not allowed in the packet, or not from that side (reason.c), is
 *   MQTT_ERR_BAD_REASON_CODE. DISCONNECT may stop after its reason code
 *   (3.14.2.2.1: "If the Remaining Length is less than 2, a value of 0 is
 *   used"); AUTH names no such form (3.15.2.1 allows only leaving out both
 *   reason and properties), so a one-byte AUTH is MQTT_ERR_TRUNCATED.
 * - Shared subscription filters at level 5: "$share/NAME/FILTER" with a
 *   NAME that is empty or holds '/', '+' or '#', or no FILTER, is
 *   MQTT_ERR_BAD_TOPIC_FILTER in SUBSCRIBE and UNSUBSCRIBE ([MQTT-4.8.2-1],
 *   [MQTT-4.8.2-2]); No Local on one is MQTT_ERR_BAD_SUB_OPTIONS
 *   ([MQTT-3.8.3-4]). At levels 3/4 such a filter is an ordinary valid
 *   filter to the codec; the broker decides (mqtt_share_split()).
 * - Level 5 PUBLISH: an empty topic without a Topic Alias is
 *   MQTT_ERR_BAD_TOPIC_NAME (a Protocol Error, 3.3.2.3.4); whether the
 *   alias is known is the broker's business. A Payload Format Indicator of 1
 *   with a payload that is not UTF-8 is not checked here (the receiver
 *   "MAY" check, 3.3.2.3.2): that is the broker's choice too.
 * - AUTH must carry an Authentication Method (3.15.2.2.2), but its short
 *   form has no properties at all; the broker, which knows whether an
 *   exchange is running, judges that.
 * At levels 3/4 every mqtt_props in *out is zero and acks carry reason 0,
 * but for PUBLISH and the publish acks, whose block without properties
 * (at any level) has only `present` and `raw` set (mqtt.h).
 * On any error *out is left in an unspecified state.
 */
#include "mqtt/mqtt.h"
#include "mqtt/props.h"
#include "mqtt/reason.h"
#include "mqtt/wire.h"

#define TYPE_BIT(t) (1u << (t))

static const uint16_t client_types =
    TYPE_BIT(MQTT_CONNECT) | TYPE_BIT(MQTT_PUBLISH) | TYPE_BIT(MQTT_PUBACK) |
    TYPE_BIT(MQTT_PUBREC) | TYPE_BIT(MQTT_PUBREL) | TYPE_BIT(MQTT_PUBCOMP) |
    TYPE_BIT(MQTT_SUBSCRIBE) | TYPE_BIT(MQTT_UNSUBSCRIBE) | TYPE_BIT(MQTT_PINGREQ) |
    TYPE_BIT(MQTT_DISCONNECT);

static const uint16_t server_types =
    TYPE_BIT(MQTT_CONNACK) | TYPE_BIT(MQTT_PUBLISH) | TYPE_BIT(MQTT_PUBACK) |
    TYPE_BIT(MQTT_PUBREC) | TYPE_BIT(MQTT_PUBREL) | TYPE_BIT(MQTT_PUBCOMP) |
    TYPE_BIT(MQTT_SUBACK) | TYPE_BIT(MQTT_UNSUBACK) | TYPE_BIT(MQTT_PINGRESP);

/* What 5.0 adds: AUTH both ways, and DISCONNECT from the server. */
static const uint16_t client_types5 = client_types | TYPE_BIT(MQTT_AUTH);
static const uint16_t server_types5 = server_types | TYPE_BIT(MQTT_DISCONNECT) | TYPE_BIT(MQTT_AUTH);

/* Level the rules of a non-CONNECT packet follow: 0 (no CONNECT seen yet)
 * behaves as 3.1.1. Returns 0 for a level the decoder cannot handle. */
static uint8_t effective_level(uint8_t level)
{
    if (level == 0 || level == MQTT_LEVEL_311)
        return MQTT_LEVEL_311;
    return level == MQTT_LEVEL_31 || level == MQTT_LEVEL_5 ? level : 0;
}

static mqtt_err check_first_byte(uint8_t b, mqtt_role role, uint8_t level)
{
    unsigned type = b >> 4;
    uint8_t flags = b & 0x0f;
    bool v5 = effective_level(level) == MQTT_LEVEL_5;
    uint16_t allowed = role == MQTT_FROM_CLIENT ? (v5 ? client_types5 : client_types)
                                                : (v5 ? server_types5 : server_types);

    if (!(allowed & TYPE_BIT(type)))
        return MQTT_ERR_BAD_TYPE; /* also 0, and 15 below level 5: in no set */
    if (type != MQTT_CONNECT && effective_level(level) == 0)
        return MQTT_ERR_BAD_PROTOCOL_LEVEL;

    switch (type) {
    case MQTT_PUBLISH: {
        unsigned qos = (flags >> 1) & 3u;
        if (qos == 3)
            return MQTT_ERR_BAD_QOS;
        if ((flags & 0x8) && qos == 0 && effective_level(level) != MQTT_LEVEL_31)
            return MQTT_ERR_BAD_FLAGS; /* [MQTT-3.3.1-2] */
        return MQTT_OK;
    }
    case MQTT_PUBREL:
    case MQTT_SUBSCRIBE:
    case MQTT_UNSUBSCRIBE:
        if (flags == 0x2 || (flags == 0xa && effective_level(level) == MQTT_LEVEL_31))
            return MQTT_OK;
        return MQTT_ERR_BAD_FLAGS;
    default:
        return flags == 0 ? MQTT_OK : MQTT_ERR_BAD_FLAGS;
    }
}

/* Remaining Length a packet type must have, or -1 when it varies. */
static long fixed_remaining(unsigned type, uint8_t level)
{
    if (type == MQTT_PINGREQ || type == MQTT_PINGRESP)
        return 0;
    if (effective_level(level) == MQTT_LEVEL_5)
        return -1;
    switch (type) {
    case MQTT_CONNACK:
    case MQTT_PUBACK:
    case MQTT_PUBREC:
    case MQTT_PUBREL:
    case MQTT_PUBCOMP:
    case MQTT_UNSUBACK:
        return 2;
    case MQTT_DISCONNECT:
        return 0;
    default:
        return -1;
    }
}

/* Distinguish "not UTF-8" from "UTF-8 but not a topic" only on the error
 * path, so the hot path is a single validating pass. */
static mqtt_err check_topic_name(mqtt_bytes t)
{
    if (mqtt_topic_name_valid(t.p, t.len))
        return MQTT_OK;
    return mqtt_utf8_valid(t.p, t.len) ? MQTT_ERR_BAD_TOPIC_NAME : MQTT_ERR_BAD_UTF8;
}

static mqtt_err check_topic_filter(mqtt_bytes f)
{
    if (mqtt_topic_filter_valid(f.p, f.len))
        return MQTT_OK;
    return mqtt_utf8_valid(f.p, f.len) ? MQTT_ERR_BAD_TOPIC_FILTER : MQTT_ERR_BAD_UTF8;
}

static mqtt_err check_utf8(mqtt_bytes s)
{
    return mqtt_utf8_valid(s.p, s.len) ? MQTT_OK : MQTT_ERR_BAD_UTF8;
}

static mqtt_err rd_packet_id(mqtt_reader *r, uint16_t *id)
{
    MQTT_TRY(rd_u16(r, id));
    return *id ? MQTT_OK : MQTT_ERR_ZERO_PACKET_ID;
}

static mqtt_err decode_connect(mqtt_reader *r, mqtt_connect *c)
{
    mqtt_bytes name;
    uint8_t level, fl;

    *c = (mqtt_connect){ 0 };
    MQTT_TRY(rd_prefixed(r, &name));
    bool is_mqtt = name.len == 4 && memcmp(name.p, "MQTT", 4) == 0;
    bool is_mqisdp = name.len == 6 && memcmp(name.p, "MQIsdp", 6) == 0;
    if (!is_mqtt && !is_mqisdp)
        return MQTT_ERR_BAD_PROTOCOL_NAME;
    MQTT_TRY(rd_u8(r, &level));
    /* 0x80 on a 3.1/3.1.1 level: a bridge (Mosquitto's try_private, ADR-060). */
    if ((level == (MQTT_LEVEL_311 | 0x80) && is_mqtt) ||
        (level == (MQTT_LEVEL_31 | 0x80) && is_mqisdp)) {
        level &= 0x7f;
        c->bridge = true;
    }
    /* Checked before anything else after the name: a level we do not speak
     * would misparse, and the broker must still be able to answer CONNACK
     * 0x01 (0x84 at 5.0). */
    bool known = is_mqtt ? level == MQTT_LEVEL_311 || level == MQTT_LEVEL_5
                         : level == MQTT_LEVEL_31;
    if (!known)
        return MQTT_ERR_BAD_PROTOCOL_LEVEL;
    c->level = level;
    bool v5 = level == MQTT_LEVEL_5;

    MQTT_TRY(rd_u8(r, &fl));
    if (fl & 0x01)
        return MQTT_ERR_BAD_CONNECT_FLAGS; /* [MQTT-3.1.2-3] */
    c->clean_session = fl & 0x02;
    c->will_flag = fl & 0x04;
    c->will_qos = (fl >> 3) & 3u;
    c->will_retain = fl & 0x20;
    c->password_flag = fl & 0x40;
    c->username_flag = fl & 0x80;
    if (c->will_qos == 3)
        return MQTT_ERR_BAD_QOS;
    if (!c->will_flag && (c->will_qos || c->will_retain))
        return MQTT_ERR_BAD_CONNECT_FLAGS; /* [MQTT-3.1.2-13], [MQTT-3.1.2-15] (5.0: -11, -13) */
    /* 3.1.1 [MQTT-3.1.2-22]; 5.0 allows a password without a user name. */
    if (!v5 && c->password_flag && !c->username_flag)
        return MQTT_ERR_BAD_CONNECT_FLAGS;
    MQTT_TRY(rd_u16(r, &c->keepalive));
    if (v5)
        MQTT_TRY(prop_read_block(r, PCTX_CONNECT, MQTT_FROM_CLIENT, &c->props));

    MQTT_TRY(rd_prefixed(r, &c->client_id));
    MQTT_TRY(check_utf8(c->client_id));
    if (c->will_flag) {
        if (v5)
            MQTT_TRY(prop_read_block(r, PCTX_WILL, MQTT_FROM_CLIENT, &c->will_props));
        MQTT_TRY(rd_prefixed(r, &c->will_topic));
        MQTT_TRY(check_topic_name(c->will_topic));
        MQTT_TRY(rd_prefixed(r, &c->will_payload));
    }
    if (c->username_flag) {
        MQTT_TRY(rd_prefixed(r, &c->username));
        MQTT_TRY(check_utf8(c->username));
    }
    if (c->password_flag)
        MQTT_TRY(rd_prefixed(r, &c->password));
    return rd_left(r) ? MQTT_ERR_TRAILING_BYTES : MQTT_OK;
}

static mqtt_err decode_connack(mqtt_reader *r, uint8_t level, mqtt_connack *ca)
{
    uint8_t fl, rc;

    ca->props = (mqtt_props){ 0 };
    MQTT_TRY(rd_u8(r, &fl));
    MQTT_TRY(rd_u8(r, &rc));
    if (effective_level(level) == MQTT_LEVEL_5) {
        if (fl & 0xfe)
            return MQTT_ERR_BAD_CONNACK; /* [MQTT-3.2.2-1] */
        if (!reason_allowed(MQTT_CONNACK, MQTT_FROM_SERVER, rc))
            return MQTT_ERR_BAD_REASON_CODE;
        if ((fl & 1) && rc != 0)
            return MQTT_ERR_BAD_CONNACK; /* [MQTT-3.2.2-6] */
        MQTT_TRY(prop_read_block(r, PCTX_CONNACK, MQTT_FROM_SERVER, &ca->props));
        if (rd_left(r))
            return MQTT_ERR_TRAILING_BYTES;
    } else if ((fl & 0xfe) || rc > MQTT_CONNACK_NOT_AUTHORIZED || ((fl & 1) && rc != 0)) {
        return MQTT_ERR_BAD_CONNACK;
    }
    ca->session_present = fl & 1;
    ca->return_code = rc;
    return MQTT_OK;
}

static mqtt_err decode_publish(mqtt_reader *r, uint8_t flags, mqtt_role role, uint8_t level,
                               mqtt_publish *p)
{
    p->qos = (flags >> 1) & 3u;
    p->dup = flags & 0x8;
    p->retain = flags & 0x1;
    MQTT_TRY(rd_prefixed(r, &p->topic));
    p->packet_id = 0;
    if (effective_level(level) != MQTT_LEVEL_5) {
        MQTT_TRY(check_topic_name(p->topic));
        if (p->qos)
            MQTT_TRY(rd_packet_id(r, &p->packet_id));
        /* Only what says "no properties": zeroing the whole block cost
         * the 3.1.1 hot path ~50 instructions a message (mqtt.h). */
        p->props.present = 0;
        p->props.raw = (mqtt_bytes){ 0 };
        p->payload = rd_rest(r);
        return MQTT_OK;
    }
    /* 5.0: an empty topic is allowed when a Topic Alias stands for it
     * (3.3.2.3.4); it is checked after the properties say so. */
    if (p->topic.len)
        MQTT_TRY(check_topic_name(p->topic));
    if (p->qos)
        MQTT_TRY(rd_packet_id(r, &p->packet_id));
    if (rd_left(r) && r->p[r->pos] == 0) {
        /* No properties (most messages): as at 3.1.1, only `present` and
         * `raw` say so, the rest of the block is not cleared (mqtt.h). */
        r->pos++;
        if (!p->topic.len)
            return MQTT_ERR_BAD_TOPIC_NAME; /* no Topic Alias either (3.3.2.3.4) */
        p->props.present = 0;
        p->props.raw = (mqtt_bytes){ r->p + r->pos, 0 };
        p->payload = rd_rest(r);
        return MQTT_OK;
    }
    MQTT_TRY(prop_read_block(r, PCTX_PUBLISH, role, &p->props));
    if (!p->topic.len && !(p->props.present & MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS)))
        return MQTT_ERR_BAD_TOPIC_NAME; /* "a Protocol Error if the Topic Name is zero
                                           length and there is no Topic Alias" */
    p->payload = rd_rest(r);
    return MQTT_OK;
}

/* PUBACK, PUBREC, PUBREL, PUBCOMP; at level 5 the reason code and the
 * properties may each be left out (3.4.2.1: Remaining Length 2 means
 * Success, 3.4.2.2: below 4 means no properties). */
static mqtt_err decode_ack(mqtt_reader *r, mqtt_type type, mqtt_role role, uint8_t level,
                           mqtt_ack *a)
{
    a->reason = MQTT_RC_SUCCESS;
    MQTT_TRY(rd_packet_id(r, &a->packet_id)); /* level 3/4: length checked earlier */
    if (effective_level(level) != MQTT_LEVEL_5) {
        /* As a 3.1.1 PUBLISH: "no properties" without zeroing the block. */
        a->props.present = 0;
        a->props.raw = (mqtt_bytes){ 0 };
        return MQTT_OK;
    }
    /* Without properties (Remaining Length 2 or 3, or an empty block):
     * only `present` and `raw` set, as at 3.1.1 (mqtt.h). */
    a->props.present = 0;
    a->props.raw = (mqtt_bytes){ 0 };
    if (rd_left(r) == 0)
        return MQTT_OK;
    MQTT_TRY(rd_u8(r, &a->reason));
    if (!reason_allowed(type, role, a->reason))
        return MQTT_ERR_BAD_REASON_CODE;
    if (rd_left(r) == 0)
        return MQTT_OK;
    if (rd_left(r) == 1 && r->p[r->pos] == 0) {
        r->pos++;
        return MQTT_OK;
    }
    MQTT_TRY(prop_read_block(r, PCTX_PUBACK, role, &a->props));
    return rd_left(r) ? MQTT_ERR_TRAILING_BYTES : MQTT_OK;
}

/* DISCONNECT and AUTH: at level 5 nothing means reason 0 without
 * properties, one byte a reason without properties (3.14.2.1, 3.14.2.2.1). */
static mqtt_err decode_reason_packet(mqtt_reader *r, mqtt_type type, mqtt_role role,
                                     mqtt_reason_packet *d)
{
    d->reason = MQTT_RC_SUCCESS;
    d->props = (mqtt_props){ 0 };
    if (rd_left(r) == 0) {
        /* AUTH without a body is Success, which only a server may send */
        return type == MQTT_AUTH && !reason_allowed(type, role, 0) ? MQTT_ERR_BAD_REASON_CODE
                                                                    : MQTT_OK;
    }
    MQTT_TRY(rd_u8(r, &d->reason));
    if (!reason_allowed(type, role, d->reason))
        return MQTT_ERR_BAD_REASON_CODE;
    if (rd_left(r) == 0) /* AUTH has no one-byte form: its Property Length is due */
        return type == MQTT_AUTH ? MQTT_ERR_TRUNCATED : MQTT_OK;
    MQTT_TRY(prop_read_block(r, type == MQTT_AUTH ? PCTX_AUTH : PCTX_DISCONNECT, role, &d->props));
    return rd_left(r) ? MQTT_ERR_TRAILING_BYTES : MQTT_OK;
}

/* The checks a level-5 filter gets beyond topic-filter syntax: shared
 * subscription syntax, and (SUBSCRIBE) the options byte. */
static mqtt_err check_filter5(mqtt_bytes f, const uint8_t *opt)
{
    mqtt_bytes group, inner;
    int share = mqtt_share_split(f.p, f.len, &group, &inner);
    if (share < 0)
        return MQTT_ERR_BAD_TOPIC_FILTER; /* [MQTT-4.8.2-1], [MQTT-4.8.2-2] */
    if (!opt)
        return MQTT_OK;
    if (*opt & 0xc0)
        return MQTT_ERR_BAD_FLAGS; /* reserved bits 6-7, [MQTT-3.8.3-5] */
    if ((*opt & MQTT_SUBOPT_QOS_MASK) == 3)
        return MQTT_ERR_BAD_QOS; /* QoS 3 is Malformed (3.8.3.1) */
    if ((*opt & MQTT_SUBOPT_RETAIN_HANDLING_MASK) == MQTT_SUBOPT_RETAIN_HANDLING_MASK)
        return MQTT_ERR_BAD_SUB_OPTIONS; /* Retain Handling 3: a Protocol Error (3.8.3.1) */
    if (share > 0 && (*opt & MQTT_SUBOPT_NO_LOCAL))
        return MQTT_ERR_BAD_SUB_OPTIONS; /* [MQTT-3.8.3-4] */
    return MQTT_OK;
}

/* SUBSCRIBE (with_options) and UNSUBSCRIBE: packet id, (5.0) properties,
 * then >= 1 filters. */
static mqtt_err decode_filter_list(mqtt_reader *r, bool with_options, uint8_t level,
                                   mqtt_list *l)
{
    bool v5 = effective_level(level) == MQTT_LEVEL_5;

    l->props = (mqtt_props){ 0 };
    MQTT_TRY(rd_packet_id(r, &l->packet_id));
    if (v5)
        MQTT_TRY(prop_read_block(r, with_options ? PCTX_SUBSCRIBE : PCTX_UNSUBSCRIBE,
                                 MQTT_FROM_CLIENT, &l->props));
    if (rd_left(r) == 0)
        return MQTT_ERR_NO_TOPICS; /* [MQTT-3.8.3-3], [MQTT-3.10.3-2] */
    l->raw = (mqtt_bytes){ r->p + r->pos, rd_left(r) };
    l->count = 0;
    while (rd_left(r)) {
        mqtt_bytes f;
        uint8_t opt = 0;
        MQTT_TRY(rd_prefixed(r, &f));
        MQTT_TRY(check_topic_filter(f));
        if (with_options) {
            MQTT_TRY(rd_u8(r, &opt));
            if (!v5 && (opt & 0xfc))
                return MQTT_ERR_BAD_FLAGS;
            if (!v5 && opt == 3)
                return MQTT_ERR_BAD_QOS;
        }
        if (v5)
            MQTT_TRY(check_filter5(f, with_options ? &opt : NULL));
        l->count++;
    }
    return MQTT_OK;
}

/* SUBACK, and UNSUBACK at level 5: packet id, (5.0) properties, >= 1
 * codes. A level-3/4 UNSUBACK is only a packet id (length checked
 * earlier). */
static mqtt_err decode_code_list(mqtt_reader *r, mqtt_type type, uint8_t level, mqtt_list *l)
{
    bool v5 = effective_level(level) == MQTT_LEVEL_5;

    l->props = (mqtt_props){ 0 };
    l->raw = (mqtt_bytes){ 0 };
    l->count = 0;
    MQTT_TRY(rd_packet_id(r, &l->packet_id));
    if (type == MQTT_UNSUBACK && !v5)
        return MQTT_OK;
    if (v5)
        MQTT_TRY(prop_read_block(r, type == MQTT_SUBACK ? PCTX_SUBACK : PCTX_UNSUBACK,
                                 MQTT_FROM_SERVER, &l->props));
    l->raw = rd_rest(r);
    if (l->raw.len == 0)
        return MQTT_ERR_NO_TOPICS;
    for (size_t i = 0; i < l->raw.len; i++) {
        uint8_t c = l->raw.p[i];
        if (v5 && !reason_allowed(type, MQTT_FROM_SERVER, c))
            return MQTT_ERR_BAD_REASON_CODE;
        if (!v5 && c > 2 && c != MQTT_SUBACK_FAILURE)
            return MQTT_ERR_BAD_SUBACK_CODE;
    }
    l->count = (uint32_t)l->raw.len;
    return MQTT_OK;
}

static mqtt_err decode_body(mqtt_reader *r, mqtt_role role, uint8_t level, mqtt_packet *out)
{
    switch (out->type) {
    case MQTT_PUBLISH:
        return decode_publish(r, out->flags, role, level, &out->u.publish);
    case MQTT_PUBACK:
    case MQTT_PUBREC:
    case MQTT_PUBREL:
    case MQTT_PUBCOMP:
        return decode_ack(r, out->type, role, level, &out->u.ack);
    case MQTT_CONNECT:
        return decode_connect(r, &out->u.connect);
    case MQTT_CONNACK:
        return decode_connack(r, level, &out->u.connack);
    case MQTT_SUBSCRIBE:
        return decode_filter_list(r, true, level, &out->u.subscribe);
    case MQTT_UNSUBSCRIBE:
        return decode_filter_list(r, false, level, &out->u.unsubscribe);
    case MQTT_SUBACK:
    case MQTT_UNSUBACK:
        return decode_code_list(r, out->type, level, &out->u.suback);
    case MQTT_PINGREQ:
    case MQTT_PINGRESP:
        return MQTT_OK;
    case MQTT_DISCONNECT:
    case MQTT_AUTH:
        return decode_reason_packet(r, out->type, role, &out->u.disconnect);
    }
    return MQTT_ERR_BAD_TYPE; /* unreachable: the first byte was checked */
}

mqtt_err mqtt_decode(const uint8_t *buf, size_t len, mqtt_role role, uint8_t level,
                     uint32_t max_size, mqtt_packet *out, size_t *consumed)
{
    if (len == 0)
        return MQTT_NEED_MORE;
    MQTT_TRY(check_first_byte(buf[0], role, level));

    uint32_t rl;
    size_t hdr;
    MQTT_TRY(rd_fixed_header(buf, len, &hdr, &rl));

    uint32_t size = (uint32_t)hdr + rl; /* <= 5 + MQTT_MAX_REMAINING: no wrap */
    if (max_size && size > max_size)
        return MQTT_ERR_TOO_LARGE;
    unsigned type = buf[0] >> 4;
    long fixed = fixed_remaining(type, level);
    if (fixed >= 0 && rl != (unsigned long)fixed)
        return rl < (unsigned long)fixed ? MQTT_ERR_TRUNCATED : MQTT_ERR_TRAILING_BYTES;
    if (len - hdr < rl)
        return MQTT_NEED_MORE;

    out->type = (mqtt_type)type;
    out->flags = buf[0] & 0x0f;
    out->size = size;
    mqtt_reader r = { buf + hdr, rl, 0 };
    MQTT_TRY(decode_body(&r, role, level, out));
    *consumed = size;
    return MQTT_OK;
}
