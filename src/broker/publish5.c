/*
 * publish5.c - the PUBLISH packets the broker writes to an MQTT 5.0
 * client. Its property block is two pieces written one after the other:
 * this delivery's own properties (Topic Alias, the Message Expiry Interval
 * left, Subscription Identifiers), then the message's forwarded ones,
 * unaltered and in the publisher's order (Payload Format Indicator,
 * Content Type, Response Topic, Correlation Data, User Properties:
 * [MQTT-3.3.2-4], [MQTT-3.3.2-15..18], [MQTT-3.3.2-20]). A 3.1.1 client is
 * sent none of them (deliver.c never calls here for one).
 */
#include "broker/alias.h"
#include "broker/base.h"
#include "broker/broker-t.h"
#include "broker/deliver.h"
#include "broker/mem.h"
#include "broker/publish5.h"
#include "mqtt/mqtt.h"

#include <string.h>

/* This delivery's own properties fit on the stack unless it carries many
 * Subscription Identifiers (5 bytes each at most). */
#define OWN_PROPS_STACK 64u

uint32_t bk_expiry_left_s(uint64_t expiry_ms, uint64_t now_ms)
{
    if (expiry_ms <= now_ms)
        return 0;
    uint64_t s = (expiry_ms - now_ms + 999u) / 1000u;
    return s > UINT32_MAX ? UINT32_MAX : (uint32_t)s;
}

void bk_publish5_too_large(broker *b, const broker_conn *c, const bk_pubview *v, size_t size)
{
    /* [MQTT-3.1.2-24]: never sent. [MQTT-3.1.2-25]: discarded, and the
     * delivery carries on as if it had been sent (the caller's part). */
    b->stats.msgs_over_client_max++;
    bk_log_limited(b, BK_LOGK_OVER_CLIENT_MAX, BROKER_LOG_INFO,
                   "client %s: message on '%.*s' not sent: %zu bytes, above the %u its "
                   "Maximum Packet Size allows",
                   c->sess ? c->sess->id : "?", (int)(v->tlen > 200 ? 200 : v->tlen),
                   (const char *)v->topic, size, c->client_max_packet);
}

/* Bytes of the Subscription Identifier properties. */
static size_t ids_size(uint32_t sub_id, const uint32_t *more)
{
    size_t n = sub_id ? 1 + mqtt_varint_size(sub_id) : 0;
    if (more)
        for (uint32_t i = 1; i <= more[0]; i++)
            n += 1 + mqtt_varint_size(more[i]);
    return n;
}

/* Write this delivery's own properties to out[0..cap); cap is their exact
 * size, computed before. */
static void own_props(uint8_t *out, size_t cap, uint16_t alias, bool expires, uint32_t left,
                      uint32_t sub_id, const uint32_t *more)
{
    size_t n = 0;
    if (alias)
        n += mqtt_prop_u16(out + n, cap - n, MQTT_PROP_TOPIC_ALIAS, alias);
    if (expires)
        n += mqtt_prop_u32(out + n, cap - n, MQTT_PROP_MESSAGE_EXPIRY, left);
    if (sub_id)
        n += mqtt_prop_varint(out + n, cap - n, MQTT_PROP_SUBSCRIPTION_ID, sub_id);
    if (more)
        for (uint32_t i = 1; i <= more[0]; i++)
            n += mqtt_prop_varint(out + n, cap - n, MQTT_PROP_SUBSCRIPTION_ID, more[i]);
    ALWAYS(n == cap);
}

/* Write the PUBLISH into c's output: n bytes, the property block made of
 * pieces[0..np). */
static inline __attribute__((always_inline)) bk_send5
put(broker *b, broker_conn *c, const bk_pubview *v, uint8_t qos, bool retain, bool dup,
    uint16_t packet_id, size_t tlen, size_t n, const mqtt_bytes *pieces, size_t np)
{
    uint8_t *p = bk_out_reserve(b, c, n);
    if (!p)
        return BK_SEND5_NOMEM;
    /* The encoder takes the properties as pieces. */
    mqtt_publish pub;
    bk_publish_fill(&pub, v->topic, tlen, v->payload, v->plen, qos, retain, dup, packet_id);
    size_t w = mqtt_encode_publish5(p, n, &pub, pieces, np);
    ALWAYS(w == n);
    bk_out_commit(b, c, n);
    b->stats.msgs_sent++;
    return BK_SEND5_OK;
}

/* A delivery with properties of its own (alias, expiry, identifiers):
 * out of line, so its stack buffer costs the common case nothing. */
__attribute__((noinline)) static bk_send5 write_own(broker *b, broker_conn *c,
                                                    const bk_pubview *v, uint8_t qos,
                                                    bool retain, bool dup, uint16_t packet_id,
                                                    uint32_t sub_id, const uint32_t *sub_ids_more,
                                                    size_t *written);

bk_send5 bk_publish5_write(broker *b, broker_conn *c, const bk_pubview *v, uint8_t qos,
                           bool retain, bool dup, uint16_t packet_id, uint32_t sub_id,
                           const uint32_t *sub_ids_more, size_t *written)
{
    /* A delivery without any property (bk_publish5_bare) seldom comes
     * here: deliver.c writes it with the 3.1.1 encoder at level 5 (which
     * LTO inlines there only while it has that one caller). */
    if (v->expiry_ms || sub_id || sub_ids_more || (!dup && c->client_topic_alias_max))
        return write_own(b, c, v, qos, retain, dup, packet_id, sub_id, sub_ids_more, written);
    /* The common case: no property of this delivery's own (no alias
     * possible, no expiry, no identifier), only the forwarded ones. */
    size_t n = mqtt_publish5_size(v->tlen, v->plen, qos, v->props_len);
    if (n == 0 || n > c->client_max_packet) {
        bk_publish5_too_large(b, c, v, n ? n : SIZE_MAX);
        return BK_SEND5_TOO_LARGE;
    }
    mqtt_bytes fwd = {v->props, v->props_len};
    bk_send5 r =
        put(b, c, v, qos, retain, dup, packet_id, v->tlen, n, &fwd, v->props_len ? 1u : 0u);
    if (r == BK_SEND5_OK && written)
        *written = n;
    return r;
}

static bk_send5 write_own(broker *b, broker_conn *c, const bk_pubview *v, uint8_t qos,
                          bool retain, bool dup, uint16_t packet_id, uint32_t sub_id,
                          const uint32_t *sub_ids_more, size_t *written)
{
    bool expires = v->expiry_ms != 0;
    /* Everything but the alias: its size decides whether the message may
     * go to this client at all. */
    size_t base = (expires ? 5u : 0u) + ids_size(sub_id, sub_ids_more) + v->props_len;
    size_t full = mqtt_publish5_size(v->tlen, v->plen, qos, base);
    if (full == 0 || full > c->client_max_packet) {
        bk_publish5_too_large(b, c, v, full ? full : SIZE_MAX);
        return BK_SEND5_TOO_LARGE;
    }
    uint16_t alias = 0;
    bool known = false;
    if (!dup && c->client_topic_alias_max)
        alias = bk_alias_out_pick(c, v->topic, v->tlen, &known);
    size_t tlen = known ? 0 : v->tlen;
    size_t own = base - v->props_len + (alias ? 3u : 0u);
    /* Without an alias the packet is the one sized above. */
    size_t n = alias ? mqtt_publish5_size(tlen, v->plen, qos, own + v->props_len) : full;
    if (alias && (n == 0 || n > c->client_max_packet)) {
        /* The alias's 3 bytes (with a topic too short to gain them back,
         * or beside the topic that sets it) would not fit: in full. */
        alias = 0;
        known = false;
        tlen = v->tlen;
        own -= 3u;
        n = full;
    }
    ALWAYS(n != 0);

    uint8_t stack[OWN_PROPS_STACK];
    uint8_t *ownbuf = own <= sizeof stack ? stack : bk_mem_alloc(b, own);
    if (!ownbuf)
        return BK_SEND5_NOMEM;
    own_props(ownbuf, own, alias, expires,
              expires ? bk_expiry_left_s(v->expiry_ms, b->now_ms) : 0, sub_id, sub_ids_more);
    mqtt_bytes pieces[2];
    size_t np = 0;
    if (own)
        pieces[np++] = (mqtt_bytes){ownbuf, own};
    if (v->props_len)
        pieces[np++] = (mqtt_bytes){v->props, v->props_len};

    bk_send5 r = put(b, c, v, qos, retain, dup, packet_id, tlen, n, pieces, np);
    if (r == BK_SEND5_OK) {
        if (alias && !known)
            bk_alias_out_set(b, c, v->topic, v->tlen);
        if (written)
            *written = n;
    }
    if (ownbuf != stack)
        bk_mem_free(b, ownbuf);
    return r;
}
