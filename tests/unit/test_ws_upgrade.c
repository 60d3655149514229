/*
 * test_ws_upgrade.c - the WebSocket opening request parser and answers
 * (src/conn/wsupgrade.c): RFC 6455's sample key gives its sample accept
 * value, an acceptable request is found complete only at its blank line
 * (every truncation asks for more), and each missing or wrong header is
 * refused with its reason.
 */
#include "test.h"

#include "conn/wsupgrade.h"

#include <stdbool.h>

/* SHA-1 without wolfSSL (unit-core): RFC 3174's algorithm, small. */
static uint32_t rol(uint32_t v, unsigned n)
{
    return v << n | v >> (32 - n);
}

static bool sha1(const uint8_t *data, size_t n, uint8_t out[20])
{
    uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
    uint8_t block[64];
    size_t total = n + 9, blocks = (total + 63) / 64;

    for (size_t b = 0; b < blocks; b++) {
        uint32_t w[80], a, bb, c, d, e;

        for (size_t i = 0; i < 64; i++) {
            size_t at = b * 64 + i;
            uint64_t bits = (uint64_t)n * 8;

            if (at < n)
                block[i] = data[at];
            else if (at == n)
                block[i] = 0x80;
            else if (at >= blocks * 64 - 8)
                block[i] = (uint8_t)(bits >> (8 * (blocks * 64 - 1 - at)));
            else
                block[i] = 0;
        }
        for (int i = 0; i < 16; i++)
            w[i] = (uint32_t)block[4 * i] << 24 | (uint32_t)block[4 * i + 1] << 16 |
                   (uint32_t)block[4 * i + 2] << 8 | block[4 * i + 3];
        for (int i = 16; i < 80; i++)
            w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
        a = h[0], bb = h[1], c = h[2], d = h[3], e = h[4];
        for (int i = 0; i < 80; i++) {
            uint32_t f, k, t;

            if (i < 20)
                f = (bb & c) | (~bb & d), k = 0x5A827999;
            else if (i < 40)
                f = bb ^ c ^ d, k = 0x6ED9EBA1;
            else if (i < 60)
                f = (bb & c) | (bb & d) | (c & d), k = 0x8F1BBCDC;
            else
                f = bb ^ c ^ d, k = 0xCA62C1D6;
            t = rol(a, 5) + f + e + k + w[i];
            e = d, d = c, c = rol(bb, 30), bb = a, a = t;
        }
        h[0] += a, h[1] += bb, h[2] += c, h[3] += d, h[4] += e;
    }
    for (int i = 0; i < 20; i++)
        out[i] = (uint8_t)(h[i / 4] >> (24 - 8 * (i % 4)));
    return true;
}

static const char good[] = "GET /mqtt HTTP/1.1\r\n"
                           "Host: server.example.com\r\n"
                           "Upgrade: websocket\r\n"
                           "Connection: keep-alive, Upgrade\r\n"
                           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                           "Origin: http://example.com\r\n"
                           "Sec-WebSocket-Protocol: chat, mqtt\r\n"
                           "Sec-WebSocket-Version: 13\r\n"
                           "\r\n";

TEST(ws_upgrade_accepts_the_rfc_sample)
{
    ws_upgrade u;
    char accept[WS_ACCEPT_TEXT + 1], resp[256];

    CHECK_EQ(ws_upgrade_parse((const uint8_t *)good, sizeof good - 1, 4096, &u), WS_UPGRADE_OK);
    CHECK_EQ(u.size, sizeof good - 1);
    CHECK(strcmp(u.key, "dGhlIHNhbXBsZSBub25jZQ==") == 0);
    CHECK(ws_accept_value(u.key, sha1, accept));
    CHECK(strcmp(accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=") == 0); /* RFC 6455 1.3 */
    CHECK(ws_upgrade_accept(accept, resp, sizeof resp) > 0);
    CHECK(strstr(resp, "HTTP/1.1 101 ") == resp);
    CHECK(strstr(resp, "Sec-WebSocket-Protocol: mqtt\r\n") != NULL);
}

TEST(ws_upgrade_waits_for_the_blank_line)
{
    for (size_t cut = 0; cut < sizeof good - 1; cut++) {
        ws_upgrade u;

        CHECK_EQ(ws_upgrade_parse((const uint8_t *)good, cut, 4096, &u), WS_UPGRADE_MORE);
    }
}

TEST(ws_upgrade_bounds_the_request)
{
    ws_upgrade u;
    char resp[256];

    CHECK_EQ(ws_upgrade_parse((const uint8_t *)good, 100, 100, &u), WS_UPGRADE_BAD);
    CHECK(strcmp(u.why, "request too large") == 0);
    CHECK(ws_upgrade_refuse(&u, resp, sizeof resp) > 0);
    CHECK(strstr(resp, "HTTP/1.1 400 ") == resp);
    CHECK(strstr(resp, "request too large") != NULL);
}

/* good with `from` replaced by `to`: refused, why containing `reason`. */
static int refused(const char *from, const char *to, const char *reason)
{
    char req[1024];
    const char *at = strstr(good, from);
    ws_upgrade u;
    int n;

    if (at == NULL)
        return -1;
    n = snprintf(req, sizeof req, "%.*s%s%s", (int)(at - good), good, to, at + strlen(from));
    if (ws_upgrade_parse((const uint8_t *)req, (size_t)n, 4096, &u) != WS_UPGRADE_BAD)
        return -2;
    return strstr(u.why, reason) != NULL ? 0 : -3;
}

TEST(ws_upgrade_refuses_bad_requests_with_reasons)
{
    CHECK_EQ(refused("GET", "POST", "GET"), 0);
    CHECK_EQ(refused("HTTP/1.1\r\nHost", "HTTP/1.0\r\nHost", "HTTP/1.1"), 0);
    CHECK_EQ(refused("Host: server.example.com\r\n", "", "Host"), 0);
    CHECK_EQ(refused("Upgrade: websocket", "Upgrade: h2c", "Upgrade"), 0);
    CHECK_EQ(refused("keep-alive, Upgrade", "keep-alive", "Connection"), 0);
    CHECK_EQ(refused("Version: 13", "Version: 8", "13"), 0);
    CHECK_EQ(refused("Sec-WebSocket-Version: 13\r\n", "", "13"), 0);
    CHECK_EQ(refused("dGhlIHNhbXBsZSBub25jZQ==", "dGhlIHNhbXBsZSBub25jZQ", "base64"), 0);
    CHECK_EQ(refused("dGhlIHNhbXBsZSBub25jZQ==", "dGhlIHNhbXBsZSBub25jZR==", "base64"), 0);
    CHECK_EQ(refused("dGhlIHNhbXBsZSBub25jZQ==", "dGhlIHNhbXBsZSBub25j!Q==", "base64"), 0);
    CHECK_EQ(refused("Origin", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nOrigin", "twice"),
             0);
    CHECK_EQ(refused("chat, mqtt", "chat, mqttv3.1", "mqtt"), 0);
    CHECK_EQ(refused("Sec-WebSocket-Protocol: chat, mqtt\r\n", "", "mqtt"), 0);
    CHECK_EQ(refused("Origin: ", " Origin: ", "folded"), 0);
    CHECK_EQ(refused("Origin: ", "Origin ", "malformed"), 0);
    CHECK_EQ(refused("Host: server", "Host: ser\x01ver", "control"), 0);
    CHECK_EQ(refused("/mqtt HTTP", "/mqtt  HTTP", "HTTP/1.1"), 0);
    CHECK_EQ(refused("/mqtt", "/mq\x7ftt", "control"), 0);
}

TEST(ws_upgrade_version_refusal_names_13)
{
    const char req[] = "GET / HTTP/1.1\r\nHost: x\r\nSec-WebSocket-Version: 8\r\n\r\n";
    ws_upgrade u;
    char resp[256];

    CHECK_EQ(ws_upgrade_parse((const uint8_t *)req, sizeof req - 1, 4096, &u), WS_UPGRADE_BAD);
    CHECK(ws_upgrade_refuse(&u, resp, sizeof resp) > 0);
    CHECK(strstr(resp, "Sec-WebSocket-Version: 13\r\n") != NULL);
}
