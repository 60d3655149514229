/*
 * wsframe.c - the WebSocket framing codec (wsframe.h): a byte-at-a-time
 * header state, payload unmasked straight to the output, control frames
 * collected whole (they are at most 125 bytes).
 */
#include "conn/wsframe.h"

#include <string.h>

void ws_decoder_init(ws_decoder *d, uint64_t max_message, uint32_t max_fragments)
{
    memset(d, 0, sizeof *d);
    d->max_message = max_message;
    d->max_fragments = max_fragments;
}

bool ws_utf8_valid(const uint8_t *s, size_t n)
{
    size_t i = 0;

    while (i < n) {
        uint8_t b = s[i];
        size_t need;
        uint32_t cp, min;

        if (b < 0x80) {
            i++;
            continue;
        }
        if (b >= 0xC2 && b <= 0xDF) {
            need = 1;
            cp = b & 0x1Fu;
            min = 0x80;
        } else if (b >= 0xE0 && b <= 0xEF) {
            need = 2;
            cp = b & 0x0Fu;
            min = 0x800;
        } else if (b >= 0xF0 && b <= 0xF4) {
            need = 3;
            cp = b & 0x07u;
            min = 0x10000;
        } else {
            return false; /* a continuation byte first, C0/C1, or F5..FF */
        }
        if (n - i <= need)
            return false;
        for (size_t k = 1; k <= need; k++) {
            if ((s[i + k] & 0xC0u) != 0x80u)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3Fu);
        }
        if (cp < min || cp > 0x10FFFFu || (cp >= 0xD800u && cp <= 0xDFFFu))
            return false;
        i += need + 1;
    }
    return true;
}

bool ws_close_code_valid(unsigned code)
{
    if (code >= 3000 && code <= 4999)
        return true; /* libraries' and applications' own */
    return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1011);
}

size_t ws_frame_header(uint8_t out[WS_HEADER_MAX], unsigned opcode, uint64_t len)
{
    out[0] = (uint8_t)(0x80u | (opcode & 0x0Fu));
    if (len < 126) {
        out[1] = (uint8_t)len;
        return 2;
    }
    if (len <= 0xFFFFu) {
        out[1] = 126;
        out[2] = (uint8_t)(len >> 8);
        out[3] = (uint8_t)len;
        return 4;
    }
    out[1] = 127;
    for (unsigned i = 0; i < 8; i++)
        out[2 + i] = (uint8_t)(len >> (56 - 8 * i));
    return 10;
}

static ws_event fail(ws_decoder *d, uint16_t code, const char *why)
{
    d->done = 1;
    d->close_code = code;
    d->why = why;
    return WS_EV_ERROR;
}

static bool is_control(unsigned op)
{
    return (op & 0x8u) != 0;
}

/* The first two header bytes are in: what can be checked already is, so
 * an unmasked or unknown frame is refused before its length arrives.
 * Returns WS_EV_NONE when acceptable. */
static ws_event check_start(ws_decoder *d)
{
    unsigned op = d->hdr[0] & 0x0Fu, len7 = d->hdr[1] & 0x7Fu;

    if ((d->hdr[0] & 0x70u) != 0)
        return fail(d, WS_CLOSE_PROTOCOL, "reserved bits set (no extension was agreed)");
    if ((d->hdr[1] & 0x80u) == 0)
        return fail(d, WS_CLOSE_PROTOCOL, "client frame not masked");
    switch (op) {
    case WS_OP_CONT:
        if (!d->in_message)
            return fail(d, WS_CLOSE_PROTOCOL, "continuation frame outside a message");
        break;
    case WS_OP_BINARY:
        if (d->in_message)
            return fail(d, WS_CLOSE_PROTOCOL, "new message inside a fragmented one");
        break;
    case WS_OP_TEXT:
        return fail(d, WS_CLOSE_UNSUPPORTED, "text frame (MQTT is carried in binary frames)");
    case WS_OP_CLOSE:
    case WS_OP_PING:
    case WS_OP_PONG:
        if ((d->hdr[0] & 0x80u) == 0)
            return fail(d, WS_CLOSE_PROTOCOL, "fragmented control frame");
        if (len7 > WS_CONTROL_MAX)
            return fail(d, WS_CLOSE_PROTOCOL, "control frame longer than 125 bytes");
        break;
    default:
        return fail(d, WS_CLOSE_PROTOCOL, "unknown opcode");
    }
    return WS_EV_NONE;
}

/* Bytes the header has in all, from its first two. */
static size_t header_size(const ws_decoder *d)
{
    unsigned len7 = d->hdr[1] & 0x7Fu;

    return 2u + (len7 == 126 ? 2u : len7 == 127 ? 8u : 0u) + 4u;
}

/* The header is complete: its length and mask, the message bounds. */
static ws_event start_frame(ws_decoder *d)
{
    unsigned len7 = d->hdr[1] & 0x7Fu;
    uint64_t len = len7;
    size_t at = 2;

    if (len7 == 126) {
        len = (uint64_t)d->hdr[2] << 8 | d->hdr[3];
        at = 4;
        if (len < 126)
            return fail(d, WS_CLOSE_PROTOCOL, "length not in its shortest form");
    } else if (len7 == 127) {
        len = 0;
        for (unsigned i = 0; i < 8; i++)
            len = len << 8 | d->hdr[2 + i];
        at = 10;
        if (len >> 63)
            return fail(d, WS_CLOSE_PROTOCOL, "length above 2^63");
        if (len <= 0xFFFFu)
            return fail(d, WS_CLOSE_PROTOCOL, "length not in its shortest form");
    }
    memcpy(d->mask, d->hdr + at, 4);
    d->mask_pos = 0;
    d->opcode = d->hdr[0] & 0x0Fu;
    d->fin = (d->hdr[0] & 0x80u) != 0;
    d->left = len;
    d->hdr_len = 0;
    d->in_frame = 1;
    d->ctrl_len = 0;
    if (is_control(d->opcode))
        return WS_EV_NONE;
    if (d->fragments >= d->max_fragments)
        return fail(d, WS_CLOSE_POLICY, "too many fragments in one message");
    if (len > d->max_message - d->message)
        return fail(d, WS_CLOSE_TOO_BIG, "message larger than limits.max_packet_size allows");
    d->fragments++;
    d->message += len;
    d->in_message = !d->fin;
    return WS_EV_NONE;
}

/* A control frame is complete. */
static ws_event end_control(ws_decoder *d)
{
    switch (d->opcode) {
    case WS_OP_PING:
        return WS_EV_PING;
    case WS_OP_PONG:
        return WS_EV_PONG;
    default: /* close */
        d->done = 1;
        if (d->ctrl_len == 0) {
            d->close_code = WS_CLOSE_NO_STATUS;
            return WS_EV_CLOSE;
        }
        if (d->ctrl_len == 1)
            return fail(d, WS_CLOSE_PROTOCOL, "close frame with a 1-byte payload");
        d->close_code = (uint16_t)(d->ctrl[0] << 8 | d->ctrl[1]);
        if (!ws_close_code_valid(d->close_code))
            return fail(d, WS_CLOSE_PROTOCOL, "invalid close code");
        if (!ws_utf8_valid(d->ctrl + 2, d->ctrl_len - 2u))
            return fail(d, WS_CLOSE_INVALID_DATA, "close reason is not UTF-8");
        return WS_EV_CLOSE;
    }
}

/* The current frame's payload is all in. */
static ws_event end_frame(ws_decoder *d)
{
    d->in_frame = 0;
    if (is_control(d->opcode))
        return end_control(d);
    if (d->fin) {
        d->message = 0;
        d->fragments = 0;
    }
    return WS_EV_NONE;
}

size_t ws_decode(ws_decoder *d, const uint8_t *in, size_t n, uint8_t *out, size_t *out_len,
                 ws_event *ev)
{
    size_t i = 0, o = 0;

    *ev = WS_EV_NONE;
    if (d->done) {
        *out_len = 0;
        return n;
    }
    while (i < n) {
        if (!d->in_frame) {
            d->hdr[d->hdr_len++] = in[i++];
            if (d->hdr_len == 2 && (*ev = check_start(d)) != WS_EV_NONE)
                break;
            if (d->hdr_len < 2 || d->hdr_len < header_size(d))
                continue;
            if ((*ev = start_frame(d)) != WS_EV_NONE)
                break;
        } else {
            size_t take = n - i;

            if (take > d->left)
                take = (size_t)d->left;
            if (is_control(d->opcode)) {
                for (size_t k = 0; k < take; k++)
                    d->ctrl[d->ctrl_len++] = in[i + k] ^ d->mask[d->mask_pos++ & 3u];
            } else {
                for (size_t k = 0; k < take; k++) /* o <= i: safe when out == in */
                    out[o + k] = in[i + k] ^ d->mask[d->mask_pos++ & 3u];
                o += take;
            }
            i += take;
            d->left -= take;
        }
        if (d->in_frame && d->left == 0 && (*ev = end_frame(d)) != WS_EV_NONE)
            break;
    }
    *out_len = o;
    if (d->done && *ev == WS_EV_NONE)
        return n;
    return i;
}
