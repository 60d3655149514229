/*
 * wsframe.h - the WebSocket framing codec (RFC 6455 section 5), server
 * side, as a pure function over bytes: client frames in, MQTT bytes and
 * control events out; server frame headers out. No I/O, no allocation,
 * so it is unit-tested and fuzzed on its own (tests/unit/test_ws_frame.c,
 * tests/fuzz/fuzz_ws.c). src/conn/ws.c runs it for WebSocket connections.
 *
 * What it enforces (each violation is an error event carrying the close
 * code to send): client frames masked (1002), reserved bits clear (1002),
 * known opcodes (1002), text frames refused (1003: MQTT is binary),
 * control frames at most 125 bytes and not fragmented (1002), lengths in
 * their shortest encoding and below 2^63 (1002), continuation frames only
 * inside a fragmented message and no new message inside one (1002), a
 * message's bytes bounded (1009) and its frames bounded (1008: a storm of
 * tiny fragments), close codes valid (1002) and close reasons UTF-8
 * (1007).
 */
#ifndef TERN_CONN_WSFRAME_H
#define TERN_CONN_WSFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Opcodes. */
enum {
    WS_OP_CONT = 0x0,
    WS_OP_TEXT = 0x1,
    WS_OP_BINARY = 0x2,
    WS_OP_CLOSE = 0x8,
    WS_OP_PING = 0x9,
    WS_OP_PONG = 0xA,
};

/* Close codes (RFC 6455 7.4.1). */
enum {
    WS_CLOSE_NORMAL = 1000,
    WS_CLOSE_PROTOCOL = 1002,
    WS_CLOSE_UNSUPPORTED = 1003,
    WS_CLOSE_NO_STATUS = 1005, /* never sent: the peer's close had no code */
    WS_CLOSE_INVALID_DATA = 1007,
    WS_CLOSE_POLICY = 1008,
    WS_CLOSE_TOO_BIG = 1009,
};

/* A control frame's payload bound, and a server frame header's size. */
#define WS_CONTROL_MAX 125u
#define WS_HEADER_MAX 10u

typedef enum ws_event {
    WS_EV_NONE = 0, /* the input ran out (or the decoder is finished) */
    WS_EV_PING,     /* a ping: its payload is ctrl[0..ctrl_len) */
    WS_EV_PONG,     /* a pong (nothing to do) */
    WS_EV_CLOSE,    /* the peer's close: close_code (WS_CLOSE_NO_STATUS: none),
                       its reason in ctrl[2..ctrl_len) */
    WS_EV_ERROR,    /* a violation: close_code to send, why says which */
} ws_event;

typedef struct ws_decoder {
    uint64_t max_message;   /* bytes of one data message, all fragments */
    uint64_t left;          /* payload bytes of the current frame still to come */
    uint64_t message;       /* bytes of the current data message so far */
    const char *why;        /* after WS_EV_ERROR: the violation, for logs and the close reason */
    uint32_t max_fragments; /* frames of one data message */
    uint32_t fragments;     /* frames of the current data message so far */
    uint16_t close_code;    /* after WS_EV_CLOSE or WS_EV_ERROR */
    uint8_t mask[4];
    uint8_t mask_pos;       /* index of the next payload byte's mask byte */
    uint8_t hdr[14];        /* the current frame's header while it arrives */
    uint8_t hdr_len;
    uint8_t in_frame;       /* header complete, payload arriving */
    uint8_t opcode;         /* of the current frame */
    uint8_t fin;            /* of the current frame */
    uint8_t in_message;     /* a fragmented data message waits for continuations */
    uint8_t done;           /* after a close or an error: nothing more is decoded */
    uint8_t ctrl_len;
    uint8_t ctrl[WS_CONTROL_MAX];
} ws_decoder;

void ws_decoder_init(ws_decoder *d, uint64_t max_message, uint32_t max_fragments);

/*
 * Decode in[0..n): data payload (unmasked) is written to out, *out_len
 * set to its length; stops after the first event (a complete control
 * frame or an error) or at the end of in. Returns the bytes of in
 * consumed. out may be in itself (the payload only moves towards the
 * front: headers are dropped), or any buffer of n bytes. Once finished
 * (a close or an error) it consumes everything and returns WS_EV_NONE.
 */
size_t ws_decode(ws_decoder *d, const uint8_t *in, size_t n, uint8_t *out, size_t *out_len,
                 ws_event *ev);

/* A final, unmasked server frame's header for len payload bytes into
 * out; returns its size (2, 4 or 10). */
size_t ws_frame_header(uint8_t out[WS_HEADER_MAX], unsigned opcode, uint64_t len);

/* Whether s[0..n) is well-formed UTF-8 (no overlongs, no surrogates,
 * nothing above U+10FFFF). */
bool ws_utf8_valid(const uint8_t *s, size_t n);

/* A close code a peer may send (RFC 6455 7.4.1-7.4.2). */
bool ws_close_code_valid(unsigned code);

#endif
