/*
 * sntp_msg.c - SNTP request building, reply validation and the offset
 * arithmetic of sntp_msg.h. Big-endian fields read byte by byte: no
 * alignment or host-order assumptions about untrusted bytes.
 */
#include "time/sntp_msg.h"

#include <string.h>

/* Seconds from 1900-01-01 (NTP era 0) to 1970-01-01. */
#define NTP_UNIX_DELTA 2208988800LL

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
}

void sntp_request(uint8_t out[SNTP_MSG_LEN], uint64_t nonce)
{
    memset(out, 0, SNTP_MSG_LEN);
    out[0] = (0u << 6) | (4u << 3) | 3u; /* LI 0, VN 4, mode 3 (client) */
    put64(out + 40, nonce);
}

const char *sntp_reply_parse(const uint8_t *p, size_t n, uint64_t nonce, sntp_reply *out)
{
    if (n < SNTP_MSG_LEN)
        return "reply shorter than 48 bytes";
    unsigned leap = p[0] >> 6, version = (p[0] >> 3) & 7u, mode = p[0] & 7u;
    if (mode != 4)
        return "not a server reply (mode is not 4)";
    if (version < 3 || version > 4)
        return "unsupported NTP version";
    if (leap == 3)
        return "server clock unsynchronised (leap indicator 3)";
    if (p[1] == 0)
        return "kiss-o'-death (stratum 0)";
    if (p[1] > 15)
        return "server unsynchronised (stratum above 15)";
    if (get64(p + 24) != nonce)
        return "originate timestamp does not echo our request (spoofed or stale)";
    uint64_t xmt = get64(p + 40);
    if (xmt == 0)
        return "zero transmit timestamp";
    *out = (sntp_reply){.leap = leap, .version = version, .stratum = p[1],
                        .receive = get64(p + 32), .transmit = xmt};
    return NULL;
}

int64_t sntp_to_unix_ns(uint64_t ntp)
{
    int64_t sec = (int64_t)(ntp >> 32);
    if (sec < (1LL << 31))
        sec += 1LL << 32; /* era 1 */
    uint64_t frac_ns = ((ntp & 0xffffffffu) * 1000000000u) >> 32;
    return (sec - NTP_UNIX_DELTA) * 1000000000LL + (int64_t)frac_ns;
}

void sntp_offset(int64_t t1_ns, const sntp_reply *r, int64_t t4_ns, int64_t *offset_ms,
                 int64_t *delay_ms)
{
    int64_t t2 = sntp_to_unix_ns(r->receive), t3 = sntp_to_unix_ns(r->transmit);
    /* Halved before adding: each difference fits in 63 bits, their sum
     * might not. */
    int64_t off = (t2 - t1_ns) / 2 + (t3 - t4_ns) / 2;
    int64_t delay = (t4_ns - t1_ns) - (t3 - t2);
    *offset_ms = off / 1000000;
    *delay_ms = delay / 1000000;
}
