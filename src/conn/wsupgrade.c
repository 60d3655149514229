/*
 * wsupgrade.c - the WebSocket opening handshake (wsupgrade.h): the
 * request is found whole (up to its blank line) within the bound, then
 * read line by line; nothing is copied but the key.
 */
#include "conn/wsupgrade.h"

#include <stdio.h>
#include <string.h>

#include "text/base64.h"

static int lower(int ch)
{
    return ch >= 'A' && ch <= 'Z' ? ch + ('a' - 'A') : ch;
}

/* a[0..n) equals the NUL-terminated b, ignoring case. */
static bool same_ci(const uint8_t *a, size_t n, const char *b)
{
    if (strlen(b) != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (lower(a[i]) != lower((unsigned char)b[i]))
            return false;
    return true;
}

static bool is_ows(uint8_t ch)
{
    return ch == ' ' || ch == '\t';
}

/* Whether the comma-separated list v[0..n) holds token, ignoring case. */
static bool list_has(const uint8_t *v, size_t n, const char *token)
{
    size_t i = 0;

    while (i < n) {
        size_t start, end;

        while (i < n && (is_ows(v[i]) || v[i] == ','))
            i++;
        start = i;
        while (i < n && v[i] != ',')
            i++;
        end = i;
        while (end > start && is_ows(v[end - 1]))
            end--;
        if (end > start && same_ci(v + start, end - start, token))
            return true;
    }
    return false;
}

/* A base64 text of exactly 16 bytes: 22 characters and "==", the last
 * character's unused bits zero. */
static bool key_valid(const uint8_t *v, size_t n)
{
    if (n != WS_KEY_TEXT || v[22] != '=' || v[23] != '=')
        return false;
    for (size_t i = 0; i < 22; i++)
        if (base64_value(v[i]) < 0)
            return false;
    return (base64_value(v[21]) & 0x0F) == 0;
}

static ws_upgrade_result bad(ws_upgrade *u, const char *why)
{
    u->why = why;
    return WS_UPGRADE_BAD;
}

/* The request line: "GET SP target SP HTTP/1.1". */
static ws_upgrade_result request_line(const uint8_t *l, size_t n, ws_upgrade *u)
{
    const uint8_t *sp1 = memchr(l, ' ', n), *sp2;

    if (sp1 == NULL)
        return bad(u, "malformed request line");
    sp2 = memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - l));
    if (sp2 == NULL || sp2 == sp1 + 1)
        return bad(u, "malformed request line");
    if (sp1 - l != 3 || memcmp(l, "GET", 3) != 0)
        return bad(u, "the method must be GET");
    if ((size_t)(l + n - (sp2 + 1)) != 8 || memcmp(sp2 + 1, "HTTP/1.1", 8) != 0)
        return bad(u, "the protocol must be HTTP/1.1");
    for (const uint8_t *p = sp1 + 1; p < sp2; p++)
        if (*p <= ' ' || *p >= 0x7F)
            return bad(u, "malformed request target");
    return WS_UPGRADE_OK;
}

ws_upgrade_result ws_upgrade_parse(const uint8_t *req, size_t len, size_t max, ws_upgrade *u)
{
    size_t end = 0, at;
    bool host = false, upgrade = false, connection = false, version = false, key = false,
         mqtt = false, first = true;
    ws_upgrade_result r;

    memset(u, 0, sizeof *u);
    for (size_t i = 3; i < len && i < max; i++) {
        if (req[i] == '\n' && req[i - 1] == '\r' && req[i - 2] == '\n' && req[i - 3] == '\r') {
            end = i + 1;
            break;
        }
    }
    if (end == 0)
        return len >= max ? bad(u, "request too large") : WS_UPGRADE_MORE;
    u->size = end;
    for (at = 0; at + 2 < end;) {
        const uint8_t *l = req + at, *nl = memchr(l, '\n', end - at), *colon;
        size_t n;

        if (nl == NULL || nl == l || nl[-1] != '\r')
            return bad(u, "lines must end with CRLF");
        n = (size_t)(nl - 1 - l);
        at = (size_t)(nl + 1 - req);
        for (size_t k = 0; k < n; k++)
            if ((l[k] < ' ' && l[k] != '\t') || l[k] == 0x7F)
                return bad(u, "control character in the request");
        if (first) {
            first = false;
            if ((r = request_line(l, n, u)) != WS_UPGRADE_OK)
                return r;
            continue;
        }
        if (n == 0 || is_ows(l[0]))
            return bad(u, "folded or empty header line");
        colon = memchr(l, ':', n);
        if (colon == NULL || colon == l || is_ows(colon[-1]))
            return bad(u, "malformed header line");
        size_t nlen = (size_t)(colon - l), vo = nlen + 1, ve = n;
        for (size_t k = 0; k < nlen; k++)
            if (l[k] <= ' ' || l[k] >= 0x7F)
                return bad(u, "malformed header line");
        while (vo < ve && is_ows(l[vo]))
            vo++;
        while (ve > vo && is_ows(l[ve - 1]))
            ve--;
        const uint8_t *v = l + vo;
        size_t vn = ve - vo;
        if (same_ci(l, nlen, "host")) {
            host = true;
        } else if (same_ci(l, nlen, "upgrade")) {
            upgrade |= list_has(v, vn, "websocket");
        } else if (same_ci(l, nlen, "connection")) {
            connection |= list_has(v, vn, "upgrade");
        } else if (same_ci(l, nlen, "sec-websocket-version")) {
            if (vn != 2 || memcmp(v, "13", 2) != 0) {
                u->bad_version = true;
                return bad(u, "Sec-WebSocket-Version must be 13");
            }
            version = true;
        } else if (same_ci(l, nlen, "sec-websocket-key")) {
            if (key)
                return bad(u, "Sec-WebSocket-Key given twice");
            if (!key_valid(v, vn))
                return bad(u, "Sec-WebSocket-Key must be the base64 of 16 bytes");
            memcpy(u->key, v, WS_KEY_TEXT);
            u->key[WS_KEY_TEXT] = '\0';
            key = true;
        } else if (same_ci(l, nlen, "sec-websocket-protocol")) {
            mqtt |= list_has(v, vn, "mqtt");
        }
    }
    if (!host)
        return bad(u, "no Host header");
    if (!upgrade)
        return bad(u, "Upgrade must list websocket");
    if (!connection)
        return bad(u, "Connection must list Upgrade");
    if (!version) {
        u->bad_version = true;
        return bad(u, "Sec-WebSocket-Version must be 13");
    }
    if (!key)
        return bad(u, "no Sec-WebSocket-Key");
    if (!mqtt)
        return bad(u, "Sec-WebSocket-Protocol must offer mqtt");
    return WS_UPGRADE_OK;
}

bool ws_accept_value(const char key[WS_KEY_TEXT + 1], ws_sha1_fn sha1,
                     char out[WS_ACCEPT_TEXT + 1])
{
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    uint8_t in[WS_KEY_TEXT + sizeof guid - 1], d[21];
    size_t o = 0;

    memcpy(in, key, WS_KEY_TEXT);
    memcpy(in + WS_KEY_TEXT, guid, sizeof guid - 1);
    if (!sha1(in, sizeof in, d))
        return false;
    d[20] = 0;
    for (size_t i = 0; i < 21; i += 3) { /* 20 bytes: 6 full groups and one of 2 */
        uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 |
                     (i + 2 < 20 ? d[i + 2] : 0u);
        out[o++] = base64_alphabet[v >> 18 & 63];
        out[o++] = base64_alphabet[v >> 12 & 63];
        out[o++] = base64_alphabet[v >> 6 & 63];
        out[o++] = i + 2 < 20 ? base64_alphabet[v & 63] : '=';
    }
    out[WS_ACCEPT_TEXT] = '\0';
    return o == WS_ACCEPT_TEXT;
}

size_t ws_upgrade_accept(const char accept[WS_ACCEPT_TEXT + 1], char *out, size_t cap)
{
    int n = snprintf(out, cap,
                     "HTTP/1.1 101 Switching Protocols\r\n"
                     "Upgrade: websocket\r\n"
                     "Connection: Upgrade\r\n"
                     "Sec-WebSocket-Accept: %s\r\n"
                     "Sec-WebSocket-Protocol: mqtt\r\n\r\n",
                     accept);

    return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

size_t ws_upgrade_refuse(const ws_upgrade *u, char *out, size_t cap)
{
    const char *why = u->why != NULL ? u->why : "bad request";
    int n = snprintf(out, cap,
                     "HTTP/1.1 400 Bad Request\r\n"
                     "Content-Type: text/plain\r\n"
                     "Content-Length: %zu\r\n"
                     "Connection: close\r\n"
                     "%s\r\n%s\n",
                     strlen(why) + 1,
                     u->bad_version ? "Sec-WebSocket-Version: 13\r\n" : "", why);

    return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}
