/*
 * mqtt5_build.h - hand-built MQTT 5.0 packets for the codec's unit tests:
 * a byte buffer to append fields to, and the framing (fixed header) around
 * a body, so a test can write a packet that is wrong in exactly one byte
 * without going through the encoders it is testing.
 */
#ifndef TERN_TEST_MQTT5_BUILD_H
#define TERN_TEST_MQTT5_BUILD_H

#include "mqtt/mqtt.h"

#include <stdlib.h>
#include <string.h>

typedef struct bbuf {
    uint8_t b[8192];
    size_t n;
} bbuf;

static inline void bb_raw(bbuf *x, const void *p, size_t n)
{
    if (n > sizeof x->b - x->n)
        abort(); /* a test's packet outgrew the buffer */
    if (n)
        memcpy(x->b + x->n, p, n);
    x->n += n;
}

static inline void bb_u8(bbuf *x, uint8_t v)
{
    bb_raw(x, &v, 1);
}

static inline void bb_u16(bbuf *x, uint16_t v)
{
    bb_u8(x, (uint8_t)(v >> 8));
    bb_u8(x, (uint8_t)v);
}

static inline void bb_varint(bbuf *x, uint32_t v)
{
    do {
        uint8_t b = (uint8_t)(v & 0x7f);
        v >>= 7;
        bb_u8(x, v ? (uint8_t)(b | 0x80) : b);
    } while (v);
}

/* Two-byte length prefix and the bytes. */
static inline void bb_str(bbuf *x, const char *s)
{
    bb_u16(x, (uint16_t)strlen(s));
    bb_raw(x, s, strlen(s));
}

/* A property block: Property Length then content. */
static inline void bb_block(bbuf *x, const bbuf *content)
{
    bb_varint(x, (uint32_t)content->n);
    bb_raw(x, content->b, content->n);
}

/* The whole packet: first byte, Remaining Length, body. */
static inline void bb_frame(bbuf *out, uint8_t first, const bbuf *body)
{
    out->n = 0;
    bb_u8(out, first);
    bb_varint(out, (uint32_t)body->n);
    bb_raw(out, body->b, body->n);
}

/* Decode a buffer that must hold exactly one packet; a size mismatch is
 * reported as MQTT_ERR__COUNT (a value the decoder never returns). */
static inline mqtt_err bb_decode(const bbuf *x, mqtt_role role, uint8_t level, mqtt_packet *p)
{
    size_t used = 0;
    mqtt_err e = mqtt_decode(x->b, x->n, role, level, 0, p, &used);
    if (e == MQTT_OK && (used != x->n || p->size != x->n))
        return MQTT_ERR__COUNT;
    return e;
}

static inline mqtt_bytes bb_view(const bbuf *x)
{
    return (mqtt_bytes){ x->b, x->n };
}

#endif
