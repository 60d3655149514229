/*
 * props.c - MQTT 5.0 properties on the way in: the property table (type and
 * allowed packets of each identifier, section 2.2.2.2), the validating
 * reader of a block used by the decoder, and the walkers over a block
 * already validated (mqtt_prop_next, mqtt_props_filter).
 *
 * Errors, and the reason codes mqtt_err_reason() gives them:
 * - an unknown identifier, or one not allowed in the packet, or a value that
 *   runs past the block: MQTT_ERR_BAD_PROPERTY, Malformed Packet (2.2.2.2:
 *   "A Control Packet which contains an Identifier which is not valid for its
 *   packet type, or contains a value not of the specified data type, is a
 *   Malformed Packet"). A client's PUBLISH with a Subscription Identifier
 *   ([MQTT-3.3.4-6]) is judged the same way: that identifier is not valid in
 *   the packets a client sends.
 * - a string that is not UTF-8: MQTT_ERR_BAD_UTF8 (Malformed, [MQTT-1.5.4-1]);
 * - a second copy of a property allowed once: MQTT_ERR_DUP_PROPERTY (the spec
 *   calls each a Protocol Error);
 * - a value the spec forbids (a byte other than 0/1, Receive Maximum 0,
 *   Maximum Packet Size 0, Subscription Identifier 0, a Response Topic that
 *   is not a topic name [MQTT-3.3.2-13/14], Authentication Data without an
 *   Authentication Method): MQTT_ERR_BAD_PROPERTY_VALUE (Protocol Error);
 * - Topic Alias 0 ([MQTT-3.3.2-8]): MQTT_ERR_BAD_TOPIC_ALIAS (0x94).
 */
#include "mqtt/props.h"

#define CTX(c) (1u << (c))
#define ACKS (CTX(PCTX_PUBACK))
#define MSG (CTX(PCTX_PUBLISH) | CTX(PCTX_WILL))

typedef struct prop_info {
    uint8_t type;  /* prop_type */
    uint16_t ctx;  /* CTX() bits of the places it may appear */
} prop_info;

/* Indexed by identifier; ids not listed are PT_NONE (unknown). */
static const prop_info prop_table[0x2B] = {
    [MQTT_PROP_PAYLOAD_FORMAT] = { PT_BYTE, MSG },
    [MQTT_PROP_MESSAGE_EXPIRY] = { PT_U32, MSG },
    [MQTT_PROP_CONTENT_TYPE] = { PT_STRING, MSG },
    [MQTT_PROP_RESPONSE_TOPIC] = { PT_STRING, MSG },
    [MQTT_PROP_CORRELATION_DATA] = { PT_BINARY, MSG },
    [MQTT_PROP_SUBSCRIPTION_ID] = { PT_VARINT, CTX(PCTX_PUBLISH) | CTX(PCTX_SUBSCRIBE) },
    [MQTT_PROP_SESSION_EXPIRY] = { PT_U32, CTX(PCTX_CONNECT) | CTX(PCTX_CONNACK) |
                                               CTX(PCTX_DISCONNECT) },
    [MQTT_PROP_ASSIGNED_CLIENT_ID] = { PT_STRING, CTX(PCTX_CONNACK) },
    [MQTT_PROP_SERVER_KEEP_ALIVE] = { PT_U16, CTX(PCTX_CONNACK) },
    [MQTT_PROP_AUTH_METHOD] = { PT_STRING,
                                CTX(PCTX_CONNECT) | CTX(PCTX_CONNACK) | CTX(PCTX_AUTH) },
    [MQTT_PROP_AUTH_DATA] = { PT_BINARY, CTX(PCTX_CONNECT) | CTX(PCTX_CONNACK) | CTX(PCTX_AUTH) },
    [MQTT_PROP_REQUEST_PROBLEM_INFO] = { PT_BYTE, CTX(PCTX_CONNECT) },
    [MQTT_PROP_WILL_DELAY] = { PT_U32, CTX(PCTX_WILL) },
    [MQTT_PROP_REQUEST_RESPONSE_INFO] = { PT_BYTE, CTX(PCTX_CONNECT) },
    [MQTT_PROP_RESPONSE_INFO] = { PT_STRING, CTX(PCTX_CONNACK) },
    [MQTT_PROP_SERVER_REFERENCE] = { PT_STRING, CTX(PCTX_CONNACK) | CTX(PCTX_DISCONNECT) },
    [MQTT_PROP_REASON_STRING] = { PT_STRING, CTX(PCTX_CONNACK) | ACKS | CTX(PCTX_SUBACK) |
                                                 CTX(PCTX_UNSUBACK) | CTX(PCTX_DISCONNECT) |
                                                 CTX(PCTX_AUTH) },
    [MQTT_PROP_RECEIVE_MAXIMUM] = { PT_U16, CTX(PCTX_CONNECT) | CTX(PCTX_CONNACK) },
    [MQTT_PROP_TOPIC_ALIAS_MAXIMUM] = { PT_U16, CTX(PCTX_CONNECT) | CTX(PCTX_CONNACK) },
    [MQTT_PROP_TOPIC_ALIAS] = { PT_U16, CTX(PCTX_PUBLISH) },
    [MQTT_PROP_MAXIMUM_QOS] = { PT_BYTE, CTX(PCTX_CONNACK) },
    [MQTT_PROP_RETAIN_AVAILABLE] = { PT_BYTE, CTX(PCTX_CONNACK) },
    [MQTT_PROP_USER_PROPERTY] = { PT_PAIR, 0x7ff }, /* every place */
    [MQTT_PROP_MAXIMUM_PACKET_SIZE] = { PT_U32, CTX(PCTX_CONNECT) | CTX(PCTX_CONNACK) },
    [MQTT_PROP_WILDCARD_SUB_AVAILABLE] = { PT_BYTE, CTX(PCTX_CONNACK) },
    [MQTT_PROP_SUB_ID_AVAILABLE] = { PT_BYTE, CTX(PCTX_CONNACK) },
    [MQTT_PROP_SHARED_SUB_AVAILABLE] = { PT_BYTE, CTX(PCTX_CONNACK) },
};

prop_type prop_type_of(uint8_t id)
{
    return id < sizeof prop_table / sizeof prop_table[0] ? (prop_type)prop_table[id].type
                                                          : PT_NONE;
}

mqtt_err rd_varint(mqtt_reader *r, uint32_t *out)
{
    uint32_t v = 0;
    for (unsigned i = 0; i < 4; i++) {
        uint8_t b;
        MQTT_TRY(rd_u8(r, &b));
        v |= (uint32_t)(b & 0x7fu) << (7 * i);
        if (!(b & 0x80)) {
            if (b == 0 && i > 0)
                return MQTT_ERR_LENGTH_ENCODING; /* non-minimal, [MQTT-1.5.5-1] */
            *out = v;
            return MQTT_OK;
        }
    }
    return MQTT_ERR_LENGTH_ENCODING; /* a fifth byte */
}

/* One property's value at r's position, by type; no rules yet. Running out
 * of the block is a value "not of the specified data type". */
static mqtt_err read_value(mqtt_reader *r, prop_type t, mqtt_prop *p)
{
    mqtt_err e = MQTT_OK;
    uint8_t b = 0;
    uint16_t h = 0;

    p->value = 0;
    p->data = (mqtt_bytes){ 0 };
    p->data2 = (mqtt_bytes){ 0 };
    switch (t) {
    case PT_BYTE:
        e = rd_u8(r, &b);
        p->value = b;
        break;
    case PT_U16:
        e = rd_u16(r, &h);
        p->value = h;
        break;
    case PT_U32:
        if (rd_left(r) < 4)
            return MQTT_ERR_BAD_PROPERTY;
        p->value = (uint32_t)r->p[r->pos] << 24 | (uint32_t)r->p[r->pos + 1] << 16 |
                   (uint32_t)r->p[r->pos + 2] << 8 | r->p[r->pos + 3];
        r->pos += 4;
        break;
    case PT_VARINT:
        e = rd_varint(r, &p->value);
        if (e == MQTT_ERR_LENGTH_ENCODING)
            return e;
        break;
    case PT_STRING:
    case PT_BINARY:
        e = rd_prefixed(r, &p->data);
        break;
    case PT_PAIR:
        e = rd_prefixed(r, &p->data);
        if (e == MQTT_OK)
            e = rd_prefixed(r, &p->data2);
        break;
    case PT_NONE:
        return MQTT_ERR_BAD_PROPERTY;
    }
    return e == MQTT_OK ? MQTT_OK : MQTT_ERR_BAD_PROPERTY;
}

static mqtt_err check_utf8(mqtt_bytes s)
{
    return mqtt_utf8_valid(s.p, s.len) ? MQTT_OK : MQTT_ERR_BAD_UTF8;
}

/* The value rules, and the copy into *out of the single-valued ones. */
static mqtt_err take(const mqtt_prop *p, prop_type t, mqtt_props *out)
{
    if (t == PT_BYTE && p->value > 1)
        return MQTT_ERR_BAD_PROPERTY_VALUE; /* every byte property is 0 or 1 */
    if (t == PT_STRING)
        MQTT_TRY(check_utf8(p->data));
    switch (p->id) {
    case MQTT_PROP_PAYLOAD_FORMAT: out->payload_format = (uint8_t)p->value; break;
    case MQTT_PROP_MESSAGE_EXPIRY: out->message_expiry = p->value; break;
    case MQTT_PROP_CONTENT_TYPE: out->content_type = p->data; break;
    case MQTT_PROP_RESPONSE_TOPIC:
        /* [MQTT-3.3.2-13] a UTF-8 string, [MQTT-3.3.2-14] no wildcards */
        if (!mqtt_topic_name_valid(p->data.p, p->data.len))
            return MQTT_ERR_BAD_PROPERTY_VALUE;
        out->response_topic = p->data;
        break;
    case MQTT_PROP_CORRELATION_DATA: out->correlation_data = p->data; break;
    case MQTT_PROP_SUBSCRIPTION_ID:
        /* 1..268435455 (3.8.2.1.2: "a Protocol Error if it has a value of 0") */
        if (p->value == 0)
            return MQTT_ERR_BAD_PROPERTY_VALUE;
        if (!(out->present & MQTT_PROP_BIT(MQTT_PROP_SUBSCRIPTION_ID)))
            out->subscription_id = p->value;
        break;
    case MQTT_PROP_SESSION_EXPIRY: out->session_expiry = p->value; break;
    case MQTT_PROP_ASSIGNED_CLIENT_ID: out->assigned_client_id = p->data; break;
    case MQTT_PROP_SERVER_KEEP_ALIVE: out->server_keep_alive = (uint16_t)p->value; break;
    case MQTT_PROP_AUTH_METHOD: out->auth_method = p->data; break;
    case MQTT_PROP_AUTH_DATA: out->auth_data = p->data; break;
    case MQTT_PROP_REQUEST_PROBLEM_INFO: out->request_problem_info = (uint8_t)p->value; break;
    case MQTT_PROP_WILL_DELAY: out->will_delay = p->value; break;
    case MQTT_PROP_REQUEST_RESPONSE_INFO: out->request_response_info = (uint8_t)p->value; break;
    case MQTT_PROP_RESPONSE_INFO: out->response_info = p->data; break;
    case MQTT_PROP_SERVER_REFERENCE: out->server_reference = p->data; break;
    case MQTT_PROP_REASON_STRING: out->reason_string = p->data; break;
    case MQTT_PROP_RECEIVE_MAXIMUM:
        if (p->value == 0) /* 3.1.2.11.3 / 3.2.2.3.3: 0 is a Protocol Error */
            return MQTT_ERR_BAD_PROPERTY_VALUE;
        out->receive_maximum = (uint16_t)p->value;
        break;
    case MQTT_PROP_TOPIC_ALIAS_MAXIMUM: out->topic_alias_maximum = (uint16_t)p->value; break;
    case MQTT_PROP_TOPIC_ALIAS:
        if (p->value == 0) /* [MQTT-3.3.2-8] */
            return MQTT_ERR_BAD_TOPIC_ALIAS;
        out->topic_alias = (uint16_t)p->value;
        break;
    case MQTT_PROP_MAXIMUM_QOS: out->maximum_qos = (uint8_t)p->value; break;
    case MQTT_PROP_RETAIN_AVAILABLE: out->retain_available = (uint8_t)p->value; break;
    case MQTT_PROP_USER_PROPERTY:
        MQTT_TRY(check_utf8(p->data)); /* [MQTT-1.5.7-1]: both strings */
        MQTT_TRY(check_utf8(p->data2));
        out->user_property_count++;
        break;
    case MQTT_PROP_MAXIMUM_PACKET_SIZE:
        if (p->value == 0) /* 3.1.2.11.4 / 3.2.2.3.6: 0 is a Protocol Error */
            return MQTT_ERR_BAD_PROPERTY_VALUE;
        out->maximum_packet_size = p->value;
        break;
    case MQTT_PROP_WILDCARD_SUB_AVAILABLE: out->wildcard_sub_available = (uint8_t)p->value; break;
    case MQTT_PROP_SUB_ID_AVAILABLE: out->sub_id_available = (uint8_t)p->value; break;
    case MQTT_PROP_SHARED_SUB_AVAILABLE: out->shared_sub_available = (uint8_t)p->value; break;
    default: return MQTT_ERR_BAD_PROPERTY; /* unreachable: the table knows only these */
    }
    return MQTT_OK;
}

/* May id appear more than once here? User Property always; Subscription
 * Identifier in a server's PUBLISH (one per matching subscription,
 * 3.3.4); nothing else. */
static bool repeatable(uint8_t id, prop_ctx ctx)
{
    return id == MQTT_PROP_USER_PROPERTY ||
           (id == MQTT_PROP_SUBSCRIPTION_ID && ctx == PCTX_PUBLISH);
}

mqtt_err prop_read_block(mqtt_reader *r, prop_ctx ctx, mqtt_role role, mqtt_props *out)
{
    uint32_t len;

    props_clear(out);
    if (rd_left(r) && r->p[r->pos] == 0) {
        /* The usual block: none, its length a single 0 byte. */
        r->pos++;
        out->raw = (mqtt_bytes){ r->p + r->pos, 0 };
        return MQTT_OK;
    }
    MQTT_TRY(rd_varint(r, &len));
    if (len > rd_left(r))
        return MQTT_ERR_TRUNCATED;
    out->raw = (mqtt_bytes){ r->p + r->pos, len };
    if (len == 0)
        return MQTT_OK;

    mqtt_reader b = { out->raw.p, len, 0 };
    r->pos += len;
    while (rd_left(&b)) {
        mqtt_prop p;
        uint8_t id = b.p[b.pos++];
        prop_type t = prop_type_of(id);
        if (t == PT_NONE || !(prop_table[id].ctx & CTX(ctx)))
            return MQTT_ERR_BAD_PROPERTY;
        if (id == MQTT_PROP_SUBSCRIPTION_ID && ctx == PCTX_PUBLISH && role == MQTT_FROM_CLIENT)
            return MQTT_ERR_BAD_PROPERTY; /* [MQTT-3.3.4-6] */
        p.id = id;
        MQTT_TRY(read_value(&b, t, &p));
        if ((out->present & MQTT_PROP_BIT(id)) && !repeatable(id, ctx))
            return MQTT_ERR_DUP_PROPERTY;
        MQTT_TRY(take(&p, t, out));
        out->present |= MQTT_PROP_BIT(id);
    }
    /* "It is a Protocol Error to include Authentication Data if there is no
     * Authentication Method" (3.1.2.11.10, 3.2.2.3.18, 3.15.2.2.3). */
    if ((out->present & MQTT_PROP_BIT(MQTT_PROP_AUTH_DATA)) &&
        !(out->present & MQTT_PROP_BIT(MQTT_PROP_AUTH_METHOD)))
        return MQTT_ERR_BAD_PROPERTY_VALUE;
    return MQTT_OK;
}

bool mqtt_prop_next(const mqtt_bytes *raw, size_t *pos, mqtt_prop *out)
{
    mqtt_reader r = { raw->p, raw->len, *pos };

    if (*pos >= raw->len)
        return false;
    out->id = r.p[r.pos++];
    if (read_value(&r, prop_type_of(out->id), out) != MQTT_OK)
        return false; /* not a valid block: end the walk rather than overrun */
    *pos = r.pos;
    return true;
}

size_t mqtt_props_filter(const mqtt_bytes *raw, uint64_t drop_mask, uint8_t *out, size_t cap)
{
    size_t pos = 0, n = 0;
    mqtt_prop p;

    for (size_t start = 0; mqtt_prop_next(raw, &pos, &p); start = pos) {
        if (drop_mask & MQTT_PROP_BIT(p.id))
            continue;
        size_t len = pos - start;
        if (cap - n < len)
            return SIZE_MAX;
        memcpy(out + n, raw->p + start, len);
        n += len;
    }
    return n;
}
