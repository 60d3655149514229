/*
 * fuzz_ws.c - libFuzzer target for the WebSocket codec (src/conn/wsframe.c)
 * and opening-request parser (src/conn/wsupgrade.c).
 *
 * Input: a mode byte, a split byte, then the bytes. Mode bit 0 clear: the
 * bytes are client frames, decoded three ways (whole into a separate
 * buffer, whole in place, in pieces of the split size); all three must
 * give the same MQTT bytes and the same events, output never exceeds
 * input, and an error carries a close code the RFC allows and a reason.
 * Mode bit 0 set: the bytes are an opening request, parsed with the
 * split byte as the size bound; a complete request ends within the input
 * at a blank line, an acceptable one has a 24-character key, and the
 * answers fit their buffer.
 */
#include "conn/wsframe.h"
#include "conn/wsupgrade.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c) ((c) ? (void)0 : abort())

enum { MAX_EVENTS = 64 };

typedef struct run {
    uint8_t out[4096];
    size_t out_len;
    ws_event ev[MAX_EVENTS];
    uint16_t code[MAX_EVENTS];
    size_t nev;
} run;

/* Decode in[0..n) in pieces of step, output to r (or in place). */
static void decode(const uint8_t *in, size_t n, size_t step, bool in_place, run *r)
{
    static uint8_t copy[4096];
    ws_decoder d;
    size_t off = 0;

    memset(r, 0, sizeof *r);
    memcpy(copy, in, n);
    ws_decoder_init(&d, 700, 6);
    while (off < n) {
        size_t end = n - off < step ? n : off + step;

        while (off < end) {
            size_t got = 0;
            ws_event ev;
            uint8_t *out = in_place ? copy + r->out_len : r->out + r->out_len;
            size_t used = ws_decode(&d, copy + off, end - off, out, &got, &ev);

            FUZZ_ASSERT(used <= end - off && got <= used);
            FUZZ_ASSERT(used > 0 || end == off);
            if (in_place)
                memmove(r->out + r->out_len, out, got);
            r->out_len += got;
            off += used;
            if (ev != WS_EV_NONE && r->nev < MAX_EVENTS) {
                if (ev == WS_EV_ERROR)
                    FUZZ_ASSERT(d.why != NULL && d.done);
                if (ev == WS_EV_ERROR || ev == WS_EV_CLOSE)
                    FUZZ_ASSERT(d.close_code == WS_CLOSE_NO_STATUS ||
                                ws_close_code_valid(d.close_code));
                if (ev == WS_EV_PING)
                    FUZZ_ASSERT(d.ctrl_len <= WS_CONTROL_MAX);
                r->code[r->nev] = d.close_code;
                r->ev[r->nev++] = ev;
            }
        }
    }
}

static void frames(const uint8_t *in, size_t n, size_t step)
{
    static run a, b, c;

    decode(in, n, n, false, &a);
    decode(in, n, n, true, &b);
    decode(in, n, step, false, &c);
    FUZZ_ASSERT(a.out_len <= n);
    FUZZ_ASSERT(a.out_len == b.out_len && a.out_len == c.out_len);
    FUZZ_ASSERT(memcmp(a.out, b.out, a.out_len) == 0 && memcmp(a.out, c.out, a.out_len) == 0);
    FUZZ_ASSERT(a.nev == b.nev && a.nev == c.nev);
    FUZZ_ASSERT(memcmp(a.ev, c.ev, a.nev * sizeof a.ev[0]) == 0);
    FUZZ_ASSERT(memcmp(a.code, c.code, a.nev * sizeof a.code[0]) == 0);
}

static bool fake_sha1(const uint8_t *d, size_t n, uint8_t out[20])
{
    memset(out, 0, 20);
    for (size_t i = 0; i < n; i++)
        out[i % 20] ^= d[i];
    return true;
}

static void request(const uint8_t *in, size_t n, size_t max)
{
    ws_upgrade u;
    char accept[WS_ACCEPT_TEXT + 1], resp[256];
    ws_upgrade_result r = ws_upgrade_parse(in, n, max, &u);

    if (r == WS_UPGRADE_MORE) {
        FUZZ_ASSERT(n < max);
        return;
    }
    if (r == WS_UPGRADE_BAD) {
        FUZZ_ASSERT(u.why != NULL);
        FUZZ_ASSERT(ws_upgrade_refuse(&u, resp, sizeof resp) > 0);
        return;
    }
    FUZZ_ASSERT(u.size >= 4 && u.size <= n && u.size <= max);
    FUZZ_ASSERT(memcmp(in + u.size - 4, "\r\n\r\n", 4) == 0);
    FUZZ_ASSERT(strlen(u.key) == WS_KEY_TEXT);
    FUZZ_ASSERT(ws_accept_value(u.key, fake_sha1, accept));
    FUZZ_ASSERT(strlen(accept) == WS_ACCEPT_TEXT);
    FUZZ_ASSERT(ws_upgrade_accept(accept, resp, sizeof resp) > 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size - 2 > 4096)
        return 0;
    if (data[0] & 1)
        request(data + 2, size - 2, data[1] < 16 ? 4096 : (size_t)data[1] * 16u);
    else
        frames(data + 2, size - 2, data[1] == 0 ? 1 : data[1]);
    return 0;
}
