/*
 * wsupgrade.h - the WebSocket opening handshake (RFC 6455 section 4),
 * server side: a pure, bounded parser of the client's HTTP/1.1 upgrade
 * request and the writers of the two answers (101 with
 * Sec-WebSocket-Accept, or 400 with a reason). The SHA-1 the accept key
 * needs comes from the caller (wolfCrypt in the daemon and the kernel), so
 * this file links where wolfSSL does not (tests, fuzzers).
 *
 * Accepted: GET, any request target, HTTP/1.1; Host present; Upgrade
 * listing "websocket" and Connection listing "Upgrade" (case-insensitive
 * tokens); Sec-WebSocket-Version 13; Sec-WebSocket-Key once, the base64
 * of 16 bytes; Sec-WebSocket-Protocol offering "mqtt" (MQTT 5.0 / 3.1.1
 * section 6: the client must offer it; "mqttv3.1", MQTT 3.1's old name,
 * is not accepted because tern does not speak MQTT 3.1). Header lines are
 * "name: value" with no folding; other headers are ignored.
 */
#ifndef TERN_CONN_WSUPGRADE_H
#define TERN_CONN_WSUPGRADE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The key's text (24 base64 characters), the accept value's (28). */
#define WS_KEY_TEXT 24u
#define WS_ACCEPT_TEXT 28u

typedef enum ws_upgrade_result {
    WS_UPGRADE_MORE = 0, /* the request is not complete yet */
    WS_UPGRADE_OK,       /* complete and acceptable */
    WS_UPGRADE_BAD,      /* refused: answer 400 with why */
} ws_upgrade_result;

typedef struct ws_upgrade {
    size_t size;               /* bytes of the request (up to its blank line) */
    char key[WS_KEY_TEXT + 1]; /* Sec-WebSocket-Key, NUL-terminated */
    const char *why;           /* WS_UPGRADE_BAD: the reason, for the 400 and the log */
    bool bad_version;          /* ... because of the version: the 400 names 13 */
} ws_upgrade;

/* Parse req[0..len); a request longer than max without its end is
 * refused. */
ws_upgrade_result ws_upgrade_parse(const uint8_t *req, size_t len, size_t max, ws_upgrade *out);

/* SHA-1 of data[0..n) into out; false on failure. */
typedef bool (*ws_sha1_fn)(const uint8_t *data, size_t n, uint8_t out[20]);

/* Sec-WebSocket-Accept for key: base64(SHA-1(key + the RFC's GUID)). */
bool ws_accept_value(const char key[WS_KEY_TEXT + 1], ws_sha1_fn sha1,
                     char out[WS_ACCEPT_TEXT + 1]);

/* The 101 answer (accept from ws_accept_value) or the 400 answer into
 * out[0..cap); returns its length, 0 when cap is too small. */
size_t ws_upgrade_accept(const char accept[WS_ACCEPT_TEXT + 1], char *out, size_t cap);
size_t ws_upgrade_refuse(const ws_upgrade *u, char *out, size_t cap);

#endif
