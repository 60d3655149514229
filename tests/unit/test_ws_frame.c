/*
 * test_ws_frame.c - the WebSocket framing codec (src/conn/wsframe.c):
 * masked frames decode to their payload whatever the split, packets
 * spanning frames and fragmented messages, ping/close events, and every
 * violation closing with its RFC 6455 code (unmasked, text, reserved
 * bits, long or fragmented control frames, bad close codes and reasons,
 * oversized messages, fragment storms, non-minimal lengths), truncated
 * input waiting without output or error.
 */
#include "test.h"

#include "conn/wsframe.h"

#include <stdlib.h>

static const uint8_t key[4] = {0x37, 0xfa, 0x21, 0x3d};

/* A client frame: fin, opcode, masked payload p[0..n) into out. */
static size_t client_frame(uint8_t *out, bool fin, unsigned op, const uint8_t *p, size_t n,
                           bool masked)
{
    size_t h = ws_frame_header(out, op, n);

    if (!fin)
        out[0] &= 0x7F;
    if (masked) {
        out[1] |= 0x80;
        memcpy(out + h, key, 4);
        h += 4;
    }
    for (size_t i = 0; i < n; i++)
        out[h + i] = masked ? (uint8_t)(p[i] ^ key[i & 3]) : p[i];
    return h + n;
}

/* Decode all of in[0..n) in pieces of `step` bytes (into a separate
 * buffer), collecting output; returns the first event other than none. */
static ws_event decode_all(ws_decoder *d, const uint8_t *in, size_t n, size_t step, uint8_t *out,
                           size_t *out_len)
{
    size_t off = 0;

    *out_len = 0;
    while (off < n) {
        size_t piece = n - off < step ? n - off : step, got = 0;
        ws_event ev;
        size_t used = 0;

        while (used < piece) {
            used += ws_decode(d, in + off + used, piece - used, out + *out_len, &got, &ev);
            *out_len += got;
            if (ev != WS_EV_NONE)
                return ev;
            if (d->done)
                break;
        }
        off += piece;
    }
    return WS_EV_NONE;
}

TEST(ws_binary_frames_decode_at_every_split)
{
    uint8_t payload[300], wire[1200], out[1200];
    size_t n = 0, got;

    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(i * 7);
    /* A fragmented message (binary + continuation), a small frame, a
     * 300-byte one (16-bit length), a zero-length frame. */
    n += client_frame(wire + n, false, WS_OP_BINARY, payload, 10, true);
    n += client_frame(wire + n, true, WS_OP_CONT, payload + 10, 20, true);
    n += client_frame(wire + n, true, WS_OP_BINARY, payload + 30, 5, true);
    n += client_frame(wire + n, true, WS_OP_BINARY, payload, 300, true);
    n += client_frame(wire + n, true, WS_OP_BINARY, payload, 0, true);
    for (size_t step = 1; step <= n; step++) {
        ws_decoder d;

        ws_decoder_init(&d, 1000, 16);
        CHECK_EQ(decode_all(&d, wire, n, step, out, &got), WS_EV_NONE);
        CHECK_EQ(got, 335);
        CHECK_MEM(out, payload, 35);
        CHECK_MEM(out + 35, payload, 300);
        CHECK(!d.done && !d.in_frame && !d.in_message);
    }
}

TEST(ws_decodes_in_place)
{
    uint8_t payload[200], wire[400];
    size_t n = 0, got = 0;
    ws_decoder d;
    ws_event ev;

    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(255 - i);
    n += client_frame(wire, true, WS_OP_BINARY, payload, 100, true);
    n += client_frame(wire + n, true, WS_OP_BINARY, payload + 100, 100, true);
    ws_decoder_init(&d, 1000, 16);
    CHECK_EQ(ws_decode(&d, wire, n, wire, &got, &ev), n);
    CHECK_EQ(ev, WS_EV_NONE);
    CHECK_EQ(got, 200);
    CHECK_MEM(wire, payload, 200);
}

TEST(ws_ping_is_an_event_with_its_payload_between_data)
{
    uint8_t wire[64], out[64];
    size_t n = 0, got = 0, used;
    ws_decoder d;
    ws_event ev;

    n += client_frame(wire, false, WS_OP_BINARY, (const uint8_t *)"ab", 2, true);
    n += client_frame(wire + n, true, WS_OP_PING, (const uint8_t *)"hello", 5, true);
    n += client_frame(wire + n, true, WS_OP_CONT, (const uint8_t *)"cd", 2, true);
    ws_decoder_init(&d, 1000, 16);
    used = ws_decode(&d, wire, n, out, &got, &ev);
    CHECK_EQ(ev, WS_EV_PING);
    CHECK_EQ(got, 2);
    CHECK_EQ(d.ctrl_len, 5);
    CHECK_MEM(d.ctrl, "hello", 5);
    used += ws_decode(&d, wire + used, n - used, out + 2, &got, &ev);
    CHECK_EQ(ev, WS_EV_NONE);
    CHECK_EQ(used, n);
    CHECK_MEM(out, "abcd", 4);
}

static ws_event one(const uint8_t *wire, size_t n, ws_decoder *d)
{
    uint8_t out[512];
    size_t got;

    ws_decoder_init(d, 1000, 4);
    return decode_all(d, wire, n, n, out, &got);
}

TEST(ws_close_reports_its_code_and_ends_decoding)
{
    uint8_t wire[64], p[16] = {0x03, 0xE8, 'b', 'y', 'e'};
    size_t n = client_frame(wire, true, WS_OP_CLOSE, p, 5, true), got;
    ws_decoder d;
    ws_event ev;

    CHECK_EQ(one(wire, n, &d), WS_EV_CLOSE);
    CHECK_EQ(d.close_code, 1000);
    CHECK(d.done);
    CHECK_EQ(ws_decode(&d, wire, n, wire, &got, &ev), n); /* swallowed */
    CHECK_EQ(got, 0);
    n = client_frame(wire, true, WS_OP_CLOSE, p, 0, true);
    CHECK_EQ(one(wire, n, &d), WS_EV_CLOSE);
    CHECK_EQ(d.close_code, WS_CLOSE_NO_STATUS);
}

/* A frame that must fail with code. */
static int expect_error(const uint8_t *wire, size_t n, unsigned code)
{
    ws_decoder d;

    if (one(wire, n, &d) != WS_EV_ERROR)
        return -1;
    return d.close_code == code && d.why != NULL ? 0 : (int)d.close_code;
}

TEST(ws_violations_close_with_their_codes)
{
    uint8_t wire[256], big[200] = {0}, p[8];
    size_t n;

    n = client_frame(wire, true, WS_OP_BINARY, (const uint8_t *)"x", 1, false);
    CHECK_EQ(expect_error(wire, 2, WS_CLOSE_PROTOCOL), 0); /* unmasked: refused at once */
    CHECK_EQ(expect_error(wire, n, WS_CLOSE_PROTOCOL), 0);
    n = client_frame(wire, true, WS_OP_TEXT, (const uint8_t *)"x", 1, true);
    CHECK_EQ(expect_error(wire, n, WS_CLOSE_UNSUPPORTED), 0);
    n = client_frame(wire, true, WS_OP_BINARY, (const uint8_t *)"x", 1, true);
    wire[0] |= 0x40; /* RSV1 */
    CHECK_EQ(expect_error(wire, n, WS_CLOSE_PROTOCOL), 0);
    n = client_frame(wire, true, 0x3, (const uint8_t *)"x", 1, true);
    CHECK_EQ(expect_error(wire, n, WS_CLOSE_PROTOCOL), 0);
    n = client_frame(wire, true, WS_OP_CONT, (const uint8_t *)"x", 1, true);
    CHECK_EQ(expect_error(wire, n, WS_CLOSE_PROTOCOL), 0); /* continuation of nothing */
    n = client_frame(wire, false, WS_OP_BINARY, (const uint8_t *)"x", 1, true);
    n += client_frame(wire + n, true, WS_OP_BINARY, (const uint8_t *)"x", 1, true);
    CHECK_EQ(expect_error(wire, n, WS_CLOSE_PROTOCOL), 0); /* new message inside one */
    n = client_frame(wire, false, WS_OP_PING, (const uint8_t *)"x", 1, true);
    CHECK_EQ(expect_error(wire, n, WS_CLOSE_PROTOCOL), 0); /* fragmented control */
    n = client_frame(wire, true, WS_OP_PING, big, 126, true);
    CHECK_EQ(expect_error(wire, n, WS_CLOSE_PROTOCOL), 0); /* control > 125 */
    p[0] = 0x03, p[1] = 0xED; /* 1005 may not be sent */
    n = client_frame(wire, true, WS_OP_CLOSE, p, 2, true);
    CHECK_EQ(expect_error(wire, n, WS_CLOSE_PROTOCOL), 0);
    n = client_frame(wire, true, WS_OP_CLOSE, p, 1, true);
    CHECK_EQ(expect_error(wire, n, WS_CLOSE_PROTOCOL), 0); /* 1-byte close */
    p[0] = 0x03, p[1] = 0xE8, p[2] = 0xC0, p[3] = 0xAF; /* overlong '/' */
    n = client_frame(wire, true, WS_OP_CLOSE, p, 4, true);
    CHECK_EQ(expect_error(wire, n, WS_CLOSE_INVALID_DATA), 0);
    p[2] = 0xED, p[3] = 0xA0, p[4] = 0x80; /* a surrogate */
    n = client_frame(wire, true, WS_OP_CLOSE, p, 5, true);
    CHECK_EQ(expect_error(wire, n, WS_CLOSE_INVALID_DATA), 0);
    /* 1000 bytes allowed per message: 1001 in one frame, or over two. */
    wire[0] = 0x82, wire[1] = 0x80 | 126, wire[2] = 0x03, wire[3] = 0xE9;
    CHECK_EQ(expect_error(wire, 8, WS_CLOSE_TOO_BIG), 0);
    n = client_frame(wire, false, WS_OP_BINARY, big, 200, true);
    wire[n] = 0x00, wire[n + 1] = 0x80 | 126, wire[n + 2] = 0x03, wire[n + 3] = 0x21; /* 801 */
    CHECK_EQ(expect_error(wire, n + 8, WS_CLOSE_TOO_BIG), 0);
    /* Length 5 in the 16-bit form; 2^63 in the 64-bit form. */
    wire[0] = 0x82, wire[1] = 0x80 | 126, wire[2] = 0, wire[3] = 5;
    CHECK_EQ(expect_error(wire, 8, WS_CLOSE_PROTOCOL), 0);
    wire[1] = 0x80 | 127, wire[2] = 0x80;
    memset(wire + 3, 0, 11);
    CHECK_EQ(expect_error(wire, 14, WS_CLOSE_PROTOCOL), 0);
}

TEST(ws_fragment_storm_is_refused)
{
    uint8_t wire[128];
    size_t n = client_frame(wire, false, WS_OP_BINARY, NULL, 0, true);

    for (int i = 0; i < 4; i++)
        n += client_frame(wire + n, false, WS_OP_CONT, NULL, 0, true);
    /* one() allows 4 frames per message: the fifth is refused. */
    CHECK_EQ(expect_error(wire, n, WS_CLOSE_POLICY), 0);
    n = 0;
    for (int i = 0; i < 8; i++) /* whole messages do not add up */
        n += client_frame(wire + n, true, WS_OP_BINARY, NULL, 0, true);
    ws_decoder d;
    CHECK_EQ(one(wire, n, &d), WS_EV_NONE);
}

TEST(ws_truncated_frames_wait_without_output)
{
    uint8_t wire[64], out[64];
    size_t n = client_frame(wire, true, WS_OP_BINARY, (const uint8_t *)"abcdef", 6, true);

    for (size_t cut = 0; cut < n; cut++) {
        ws_decoder d;
        size_t got = 0;
        ws_event ev;

        ws_decoder_init(&d, 1000, 16);
        CHECK_EQ(ws_decode(&d, wire, cut, out, &got, &ev), cut);
        CHECK_EQ(ev, WS_EV_NONE);
        CHECK(!d.done);
        CHECK(got <= (cut > 6 ? cut - 6 : 0));
    }
}

TEST(ws_random_input_never_overruns)
{
    uint8_t in[512], out[512];
    unsigned seed = 12345;

    for (int round = 0; round < 2000; round++) {
        ws_decoder d;
        size_t n = (size_t)(seed % sizeof in), off = 0;

        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            in[i] = (uint8_t)(seed >> 16);
        }
        ws_decoder_init(&d, 300, 8);
        while (off < n) {
            size_t got = 0;
            ws_event ev;
            size_t used = ws_decode(&d, in + off, n - off, out, &got, &ev);

            CHECK(used <= n - off);
            CHECK(got <= used);
            if (used == 0)
                break;
            off += used;
        }
        seed = seed * 1103515245u + 12345u;
    }
}

TEST(ws_server_headers_use_the_shortest_length)
{
    uint8_t h[WS_HEADER_MAX];

    CHECK_EQ(ws_frame_header(h, WS_OP_BINARY, 125), 2);
    CHECK_EQ(h[0], 0x82);
    CHECK_EQ(h[1], 125);
    CHECK_EQ(ws_frame_header(h, WS_OP_BINARY, 126), 4);
    CHECK_EQ(h[1], 126);
    CHECK_EQ(h[3], 126);
    CHECK_EQ(ws_frame_header(h, WS_OP_PONG, 65536), 10);
    CHECK_EQ(h[0], 0x8A);
    CHECK_EQ(h[7], 1);
}

TEST(ws_utf8_validation)
{
    CHECK(ws_utf8_valid((const uint8_t *)"plain", 5));
    CHECK(ws_utf8_valid((const uint8_t *)"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9));
    CHECK(!ws_utf8_valid((const uint8_t *)"\xc3", 1));            /* truncated */
    CHECK(!ws_utf8_valid((const uint8_t *)"\xe0\x80\xaf", 3));    /* overlong */
    CHECK(!ws_utf8_valid((const uint8_t *)"\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
    CHECK(!ws_utf8_valid((const uint8_t *)"\x80", 1));
    CHECK(!ws_utf8_valid((const uint8_t *)"\xff", 1));
}
