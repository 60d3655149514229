/*
 * props_write.c - MQTT 5.0 properties on the way out: one writer per data
 * type (the caller concatenates their output into a block), and the
 * helpers the level-5 encoders use to put a block given in pieces after
 * its Property Length.
 *
 * Each writer asserts that id has the writer's type in the property
 * table: writing a u16 where the peer reads a u32 would put a malformed
 * packet on the wire.
 */
#include "mqtt/props.h"

size_t mqtt_varint_size(uint32_t v)
{
    return varint_size(v);
}

/* Runs a writer over out[0..cap) and returns its length, or 0 when it did
 * not fit. */
static size_t done(const mqtt_writer *w, mqtt_err e)
{
    return e == MQTT_OK ? w->len : 0;
}

size_t mqtt_prop_u8(uint8_t *out, size_t cap, uint8_t id, uint8_t v)
{
    MQTT_INVARIANT(prop_type_of(id) == PT_BYTE);
    mqtt_writer w = { out, cap, 0 };
    mqtt_err e = wr_u8(&w, id);
    if (e == MQTT_OK)
        e = wr_u8(&w, v);
    return done(&w, e);
}

size_t mqtt_prop_u16(uint8_t *out, size_t cap, uint8_t id, uint16_t v)
{
    MQTT_INVARIANT(prop_type_of(id) == PT_U16);
    mqtt_writer w = { out, cap, 0 };
    mqtt_err e = wr_u8(&w, id);
    if (e == MQTT_OK)
        e = wr_u16(&w, v);
    return done(&w, e);
}

size_t mqtt_prop_u32(uint8_t *out, size_t cap, uint8_t id, uint32_t v)
{
    MQTT_INVARIANT(prop_type_of(id) == PT_U32);
    mqtt_writer w = { out, cap, 0 };
    mqtt_err e = wr_u8(&w, id);
    if (e == MQTT_OK)
        e = wr_u16(&w, (uint16_t)(v >> 16));
    if (e == MQTT_OK)
        e = wr_u16(&w, (uint16_t)v);
    return done(&w, e);
}

size_t mqtt_prop_varint(uint8_t *out, size_t cap, uint8_t id, uint32_t v)
{
    MQTT_INVARIANT(prop_type_of(id) == PT_VARINT);
    MQTT_INVARIANT(v <= MQTT_MAX_SUBSCRIPTION_ID);
    mqtt_writer w = { out, cap, 0 };
    mqtt_err e = wr_u8(&w, id);
    if (e == MQTT_OK)
        e = wr_varint(&w, v);
    return done(&w, e);
}

size_t mqtt_prop_bytes(uint8_t *out, size_t cap, uint8_t id, const uint8_t *p, size_t len)
{
    prop_type t = prop_type_of(id);
    MQTT_INVARIANT(t == PT_STRING || t == PT_BINARY);
    MQTT_INVARIANT(len <= UINT16_MAX);
    mqtt_writer w = { out, cap, 0 };
    mqtt_err e = wr_u8(&w, id);
    if (e == MQTT_OK)
        e = wr_prefixed(&w, p, len);
    return done(&w, e);
}

size_t mqtt_prop_pair(uint8_t *out, size_t cap, uint8_t id, const uint8_t *k, size_t klen,
                      const uint8_t *v, size_t vlen)
{
    MQTT_INVARIANT(prop_type_of(id) == PT_PAIR);
    MQTT_INVARIANT(klen <= UINT16_MAX && vlen <= UINT16_MAX);
    mqtt_writer w = { out, cap, 0 };
    mqtt_err e = wr_u8(&w, id);
    if (e == MQTT_OK)
        e = wr_prefixed(&w, k, klen);
    if (e == MQTT_OK)
        e = wr_prefixed(&w, v, vlen);
    return done(&w, e);
}

size_t props_total(const mqtt_bytes *props, size_t nprops)
{
    size_t total = 0;
    for (size_t i = 0; i < nprops; i++) {
        if (props[i].len > MQTT_MAX_REMAINING - total)
            return SIZE_MAX; /* cannot be encoded: the caller's size check fails */
        total += props[i].len;
    }
    return total;
}

mqtt_err wr_props(mqtt_writer *w, size_t total, const mqtt_bytes *props, size_t nprops)
{
    MQTT_TRY(wr_varint(w, total));
    for (size_t i = 0; i < nprops; i++)
        MQTT_TRY(wr_raw(w, props[i].p, props[i].len));
    return MQTT_OK;
}
