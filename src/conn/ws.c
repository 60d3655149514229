/*
 * ws.c - the WebSocket layer of the connection layer (ws.h): the opening
 * request, frames in (wsframe.c decodes them in place, in the server's
 * read buffer, so MQTT bytes reach the core without a copy) and frames
 * out (a header before each contiguous piece of the core's output, up to
 * CONN_WS_FRAME_OUT_MAX; server frames are not masked, so the payload
 * goes out from the core's buffer as it is).
 *
 * Output order: a data frame once started is finished before anything
 * else (its header promised the bytes); then queued control output (the
 * 101/400 answer, a pong, a close); then a new data frame. After a close
 * is queued no data follows, and the connection ends once the close is
 * out (conni_after_flush). When the core closes an upgraded connection
 * (DISCONNECT, a protocol error) a close frame (1000) goes out first.
 */
#include "conn/internal.h"
#include "conn/ws.h"
#include "conn/wsframe.h"
#include "conn/wsupgrade.h"

#include <string.h>

typedef enum ws_region {
    WS_OUT_NONE = 0,
    WS_OUT_HDR,   /* the current data frame's header */
    WS_OUT_DATA,  /* the current data frame's payload: the core's output */
    WS_OUT_CTRL,  /* queued control output */
} ws_region;

struct conn_ws {
    ws_decoder dec;
    uint8_t *req;        /* the opening request so far; NULL once answered */
    uint32_t req_len;
    uint32_t frame_left; /* core bytes the current data frame still carries */
    uint16_t ctrl_len, ctrl_off;
    uint8_t hdr_len, hdr_off;
    uint8_t region;      /* ws_region the last peek returned */
    uint8_t closing;     /* a close (or a 400) is queued: no more input or data */
    uint8_t hdr[WS_HEADER_MAX];
    uint8_t ctrl[CONN_WS_CTRL_OUT];
    conn_drain drain;    /* conn.side holds this block, not a drain block */
};

bool conn_open_ws(conn_server *s, conn *c, bool tls, uint64_t now)
{
    char peer[CONN_PEER_TEXT];
    conn_ws *ws;

    conni_peer(s, c, peer);
    if (s->ws_sha1 == NULL) {
        conni_log(s, BROKER_LOG_WARN, "refused %s: no SHA-1 for WebSocket in this build", peer);
        return false;
    }
    ws = conni_alloc(s, sizeof *ws);
    if (ws != NULL)
        ws->req = conni_alloc(s, CONN_WS_REQUEST_MAX);
    if (ws == NULL || ws->req == NULL) {
        conni_free(s, ws);
        s->stats.refused++;
        conni_log(s, BROKER_LOG_WARN, "refused %s: out of memory for WebSocket", peer);
        return false;
    }
    {
        uint8_t *req = ws->req;

        memset(ws, 0, sizeof *ws);
        ws->req = req;
    }
    ws_decoder_init(&ws->dec, s->ws_max_message, CONN_WS_MAX_FRAGMENTS);
    c->side.ws = ws;
    c->is_ws = true;
    if (!conn_open(s, c, tls, now)) {
        conni_ws_free(s, c);
        return false;
    }
    return true;
}

void conni_ws_free(conn_server *s, conn *c)
{
    conn_ws *ws = conni_ws(c);

    if (ws == NULL)
        return;
    conni_free(s, ws->req);
    conni_free(s, ws);
    c->side.ws = NULL;
    c->is_ws = c->ws_draining = false;
}

conn_drain *conni_ws_drain(conn *c)
{
    return &c->side.ws->drain;
}

bool conni_ws_closing(const conn *c)
{
    const conn_ws *ws = conni_ws(c);

    return ws != NULL && ws->closing;
}

size_t conni_ws_pending(const conn *c, size_t core)
{
    const conn_ws *ws = conni_ws(c);
    size_t own = (size_t)(ws->hdr_len - ws->hdr_off) + (size_t)(ws->ctrl_len - ws->ctrl_off);

    /* After a close only the frame in progress and the close leave. */
    return own + (ws->closing ? ws->frame_left : core);
}

size_t conni_ws_request_held(const conn *c)
{
    const conn_ws *ws = conni_ws(c);

    return ws != NULL && ws->req != NULL ? ws->req_len : 0;
}

/* Queue a control frame (opcode, payload p[0..n), n <= 125). A pong is
 * dropped while other control output waits (RFC 6455 5.5.3: answering the
 * latest ping only is allowed; the peer keeps pinging if it cares). */
static void queue_control(conn_ws *ws, unsigned opcode, const uint8_t *p, size_t n)
{
    if (ws->ctrl_off == ws->ctrl_len)
        ws->ctrl_off = ws->ctrl_len = 0;
    if (opcode == WS_OP_PONG && ws->ctrl_len > 0)
        return;
    if (ws->ctrl_len + WS_HEADER_MAX + n > sizeof ws->ctrl)
        return; /* cannot happen: a pong and a close fit (CONN_WS_CTRL_OUT) */
    ws->ctrl_len = (uint16_t)(ws->ctrl_len + ws_frame_header(ws->ctrl + ws->ctrl_len, opcode, n));
    memcpy(ws->ctrl + ws->ctrl_len, p, n);
    ws->ctrl_len = (uint16_t)(ws->ctrl_len + n);
}

/* Queue our close with code and reason (truncated to fit 125 bytes). */
static void queue_close(conn_ws *ws, unsigned code, const char *reason)
{
    uint8_t p[WS_CONTROL_MAX];
    size_t n = reason != NULL ? strlen(reason) : 0;

    if (n > WS_CONTROL_MAX - 2)
        n = WS_CONTROL_MAX - 2;
    p[0] = (uint8_t)(code >> 8);
    p[1] = (uint8_t)code;
    if (n > 0)
        memcpy(p + 2, reason, n);
    queue_control(ws, WS_OP_CLOSE, p, n + 2);
    ws->closing = 1;
}

bool conni_ws_goodbye(conn *c)
{
    conn_ws *ws = conni_ws(c);

    if (ws == NULL || ws->closing || ws->req != NULL)
        return false;
    queue_close(ws, WS_CLOSE_NORMAL, NULL);
    return true;
}

/* Answer the opening request in ws->req: 101, or 400 and close. Bytes of
 * data[0..len) after the request are frames: *rest says where they start
 * (len when none). */
static void opening(conn_server *s, conn *c, const uint8_t *data, size_t len, size_t *rest)
{
    conn_ws *ws = conni_ws(c);
    size_t before = ws->req_len, take = CONN_WS_REQUEST_MAX - before;
    char peer[CONN_PEER_TEXT], accept[WS_ACCEPT_TEXT + 1];
    ws_upgrade u;
    ws_upgrade_result r;
    size_t n = 0;

    if (take > len)
        take = len;
    memcpy(ws->req + before, data, take);
    ws->req_len += (uint32_t)take;
    *rest = len;
    r = ws_upgrade_parse(ws->req, ws->req_len, CONN_WS_REQUEST_MAX, &u);
    if (r == WS_UPGRADE_MORE)
        return;
    if (r == WS_UPGRADE_OK && !ws_accept_value(u.key, s->ws_sha1, accept)) {
        r = WS_UPGRADE_BAD;
        u.why = "cannot compute Sec-WebSocket-Accept";
    }
    conni_peer(s, c, peer);
    if (r == WS_UPGRADE_OK) {
        n = ws_upgrade_accept(accept, (char *)ws->ctrl, sizeof ws->ctrl);
        *rest = u.size - before; /* u.size > before: the end came with this data */
        conni_log(s, BROKER_LOG_DEBUG, "WebSocket client %s: upgraded (mqtt)", peer);
    } else {
        n = ws_upgrade_refuse(&u, (char *)ws->ctrl, sizeof ws->ctrl);
        s->stats.ws_refused++;
        ws->closing = 1;
        ws->dec.done = 1;
        conni_log(s, BROKER_LOG_DEBUG, "WebSocket client %s: bad opening request: %s; closing",
                  peer, u.why);
    }
    ws->ctrl_len = (uint16_t)n;
    ws->ctrl_off = 0;
    conni_free(s, ws->req);
    ws->req = NULL;
    ws->req_len = 0;
}

bool conni_ws_input(conn_server *s, conn *c, uint8_t *data, size_t len, size_t *mqtt,
                    bool *flush)
{
    conn_ws *ws = conni_ws(c);
    size_t off = 0, o = 0;
    char peer[CONN_PEER_TEXT];

    *mqtt = 0;
    *flush = false;
    if (ws->req != NULL) {
        opening(s, c, data, len, &off);
        *flush = ws->ctrl_len > 0;
    }
    while (off < len && !ws->dec.done) {
        size_t got = 0;
        ws_event ev;

        off += ws_decode(&ws->dec, data + off, len - off, data + o, &got, &ev);
        o += got;
        switch (ev) {
        case WS_EV_PING:
            queue_control(ws, WS_OP_PONG, ws->dec.ctrl, ws->dec.ctrl_len);
            *flush = true;
            break;
        case WS_EV_CLOSE: {
            uint8_t p[2] = {(uint8_t)(WS_CLOSE_NORMAL >> 8), (uint8_t)WS_CLOSE_NORMAL};

            if (ws->dec.close_code != WS_CLOSE_NO_STATUS) { /* echo the peer's code */
                p[0] = (uint8_t)(ws->dec.close_code >> 8);
                p[1] = (uint8_t)ws->dec.close_code;
            }
            queue_control(ws, WS_OP_CLOSE, p, sizeof p);
            ws->closing = 1;
            *flush = true;
            break;
        }
        case WS_EV_ERROR:
            s->stats.ws_errors++;
            conni_peer(s, c, peer);
            conni_log(s, BROKER_LOG_DEBUG, "WebSocket client %s: %s; closing (%u)", peer,
                      ws->dec.why, (unsigned)ws->dec.close_code);
            queue_close(ws, ws->dec.close_code, ws->dec.why);
            *flush = true;
            break;
        default:
            break;
        }
    }
    *mqtt = o;
    return true;
}

/* The output source (conni_source) of a WebSocket connection. */
static const uint8_t *ws_peek(conn_server *s, conn *c, size_t *len)
{
    conn_ws *ws = conni_ws(c);
    const uint8_t *core;
    size_t n = 0;

    (void)s;
    ws->region = WS_OUT_NONE;
    *len = 0;
    if (ws->hdr_off < ws->hdr_len) {
        ws->region = WS_OUT_HDR;
        *len = (size_t)(ws->hdr_len - ws->hdr_off);
        return ws->hdr + ws->hdr_off;
    }
    if (ws->frame_left > 0) {
        core = broker_out_peek(c->bc, &n);
        ws->region = WS_OUT_DATA;
        *len = n < ws->frame_left ? n : ws->frame_left;
        return core;
    }
    if (ws->ctrl_off < ws->ctrl_len) {
        ws->region = WS_OUT_CTRL;
        *len = (size_t)(ws->ctrl_len - ws->ctrl_off);
        return ws->ctrl + ws->ctrl_off;
    }
    if (ws->closing || ws->req != NULL || c->bc == NULL)
        return NULL; /* no data after a close, nor before the 101 */
    core = broker_out_peek(c->bc, &n);
    if (n == 0)
        return NULL;
    if (n > CONN_WS_FRAME_OUT_MAX)
        n = CONN_WS_FRAME_OUT_MAX;
    ws->frame_left = (uint32_t)n;
    ws->hdr_len = (uint8_t)ws_frame_header(ws->hdr, WS_OP_BINARY, n);
    ws->hdr_off = 0;
    ws->region = WS_OUT_HDR;
    *len = ws->hdr_len;
    return ws->hdr;
}

static void ws_consume(conn_server *s, conn *c, size_t n)
{
    conn_ws *ws = conni_ws(c);

    switch (ws->region) {
    case WS_OUT_HDR:
        ws->hdr_off = (uint8_t)(ws->hdr_off + n);
        if (ws->hdr_off == ws->hdr_len)
            ws->hdr_off = ws->hdr_len = 0;
        break;
    case WS_OUT_DATA:
        ws->frame_left -= (uint32_t)n;
        broker_out_consume(s->b, c->bc, n); /* the core refills from the session's queue */
        break;
    case WS_OUT_CTRL:
        ws->ctrl_off = (uint16_t)(ws->ctrl_off + n);
        if (ws->ctrl_off == ws->ctrl_len)
            ws->ctrl_off = ws->ctrl_len = 0;
        break;
    default:
        break;
    }
}

const conni_source conni_ws_output = {ws_peek, ws_consume};
