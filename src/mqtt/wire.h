/*
 * wire.h - internal to src/mqtt/: bounds-checked reader and writer for the
 * MQTT wire format, the Remaining Length variable integer, and the invariant
 * check used by the encoders.
 *
 * Everything here is static inline so the hot paths (PUBLISH decode/encode)
 * compile to straight-line loads and stores with one bounds compare per
 * field, not one function call per byte. A reader or writer never touches a
 * byte outside [p, p+len) / [p, p+cap); running out is reported through
 * mqtt_err, never by overrunning.
 */
#ifndef TERN_MQTT_WIRE_H
#define TERN_MQTT_WIRE_H

#include "mqtt/mqtt.h"

#include <stdlib.h>
#include <string.h>

/* Encoder preconditions. Unlike assert() this stays on with NDEBUG: a broken
 * invariant means the broker would put a malformed packet on the wire, and
 * stopping is safer than that. */
#define MQTT_INVARIANT(cond)                                                   \
    do {                                                                       \
        if (__builtin_expect(!(cond), 0))                                      \
            abort();                                                           \
    } while (0)

/* Propagate the first error of a reader step. */
#define MQTT_TRY(expr)                                                         \
    do {                                                                       \
        mqtt_err mqtt_try_err_ = (expr);                                       \
        if (mqtt_try_err_ != MQTT_OK)                                          \
            return mqtt_try_err_;                                              \
    } while (0)

typedef struct mqtt_reader {
    const uint8_t *p;
    size_t len;
    size_t pos;
} mqtt_reader;

typedef struct mqtt_writer {
    uint8_t *p;
    size_t cap;
    size_t len;
} mqtt_writer;

static inline size_t rd_left(const mqtt_reader *r)
{
    return r->len - r->pos;
}

static inline mqtt_err rd_u8(mqtt_reader *r, uint8_t *out)
{
    if (rd_left(r) < 1)
        return MQTT_ERR_TRUNCATED;
    *out = r->p[r->pos++];
    return MQTT_OK;
}

static inline mqtt_err rd_u16(mqtt_reader *r, uint16_t *out)
{
    if (rd_left(r) < 2)
        return MQTT_ERR_TRUNCATED;
    *out = (uint16_t)((unsigned)r->p[r->pos] << 8 | r->p[r->pos + 1]);
    r->pos += 2;
    return MQTT_OK;
}

/* A two-byte big-endian length followed by that many bytes; the view points
 * into the reader's buffer. */
static inline mqtt_err rd_prefixed(mqtt_reader *r, mqtt_bytes *out)
{
    uint16_t n;
    MQTT_TRY(rd_u16(r, &n));
    if (rd_left(r) < n)
        return MQTT_ERR_TRUNCATED;
    out->p = r->p + r->pos;
    out->len = n;
    r->pos += n;
    return MQTT_OK;
}

/* Everything not yet read (a PUBLISH payload, the entry list of a SUBSCRIBE). */
static inline mqtt_bytes rd_rest(mqtt_reader *r)
{
    mqtt_bytes b = { r->p + r->pos, rd_left(r) };
    r->pos = r->len;
    return b;
}

static inline mqtt_err wr_u8(mqtt_writer *w, uint8_t v)
{
    if (w->cap - w->len < 1)
        return MQTT_ERR_BUFFER_FULL;
    w->p[w->len++] = v;
    return MQTT_OK;
}

static inline mqtt_err wr_u16(mqtt_writer *w, uint16_t v)
{
    if (w->cap - w->len < 2)
        return MQTT_ERR_BUFFER_FULL;
    w->p[w->len] = (uint8_t)(v >> 8);
    w->p[w->len + 1] = (uint8_t)v;
    w->len += 2;
    return MQTT_OK;
}

static inline mqtt_err wr_raw(mqtt_writer *w, const uint8_t *src, size_t n)
{
    if (w->cap - w->len < n)
        return MQTT_ERR_BUFFER_FULL;
    if (n)
        memcpy(w->p + w->len, src, n);
    w->len += n;
    return MQTT_OK;
}

/* Callers check the 65535 limit first (an invariant of every encoder). */
static inline mqtt_err wr_prefixed(mqtt_writer *w, const uint8_t *src, size_t n)
{
    MQTT_INVARIANT(n <= UINT16_MAX);
    if (w->cap - w->len < 2 + n)
        return MQTT_ERR_BUFFER_FULL;
    (void)wr_u16(w, (uint16_t)n);
    return wr_raw(w, src, n);
}

/* Bytes the Remaining Length takes for value v (v <= MQTT_MAX_REMAINING). */
static inline size_t varint_size(size_t v)
{
    return v < 128u ? 1u : v < 16384u ? 2u : v < 2097152u ? 3u : 4u;
}

static inline mqtt_err wr_varint(mqtt_writer *w, size_t v)
{
    MQTT_INVARIANT(v <= MQTT_MAX_REMAINING);
    if (w->cap - w->len < varint_size(v))
        return MQTT_ERR_BUFFER_FULL;
    do {
        uint8_t b = (uint8_t)(v & 0x7fu);
        v >>= 7;
        w->p[w->len++] = v ? (uint8_t)(b | 0x80u) : b;
    } while (v);
    return MQTT_OK;
}

/*
 * Parse the Remaining Length after the first byte of buf[0..len): 1..4 bytes,
 * 7 bits each, least significant first, shortest form only. On MQTT_OK sets
 * *hdr (fixed header size) and *rl. MQTT_NEED_MORE while incomplete.
 */
static inline mqtt_err rd_fixed_header(const uint8_t *buf, size_t len, size_t *hdr,
                                       uint32_t *rl)
{
    uint32_t v = 0;
    size_t n = 1;
    for (unsigned shift = 0;; shift += 7) {
        if (n == len)
            return MQTT_NEED_MORE;
        uint8_t b = buf[n++];
        v |= (uint32_t)(b & 0x7fu) << shift;
        if (!(b & 0x80)) {
            if (b == 0 && n > 2)
                return MQTT_ERR_LENGTH_ENCODING; /* non-minimal */
            break;
        }
        if (n == MQTT_MAX_FIXED_HEADER)
            return MQTT_ERR_LENGTH_ENCODING; /* a fifth length byte */
    }
    *hdr = n;
    *rl = v;
    return MQTT_OK;
}

/* Whole packet size for a Remaining Length, or 0 when rl is not encodable. */
static inline size_t packet_size(size_t rl)
{
    return rl > MQTT_MAX_REMAINING ? 0 : 1 + varint_size(rl) + rl;
}

/* Fixed header of a packet with the given first byte and Remaining Length. */
static inline mqtt_err wr_header(mqtt_writer *w, uint8_t first, size_t rl)
{
    MQTT_TRY(wr_u8(w, first));
    return wr_varint(w, rl);
}

#endif
