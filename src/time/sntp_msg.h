/*
 * sntp_msg.h - SNTP client messages (RFC 4330, RFC 5905 client mode):
 * build a request, validate a reply, compute offset and round-trip delay.
 * Pure and portable; the bytes of a reply come from the network and are
 * untrusted. The kernel's client (platform/kernel/net/sntp.c) does the I/O.
 */
#ifndef TERN_TIME_SNTP_MSG_H
#define TERN_TIME_SNTP_MSG_H

#include <stddef.h>
#include <stdint.h>

#define SNTP_MSG_LEN 48
#define SNTP_PORT 123

/* A reply's fields that matter to a client. Timestamps are NTP format:
 * seconds since 1900 in the high 32 bits, fraction in the low. */
typedef struct sntp_reply {
    unsigned leap, version, stratum;
    uint64_t receive;  /* T2, the server's clock when our request arrived */
    uint64_t transmit; /* T3, the server's clock when it answered */
} sntp_reply;

/* A client-mode (3), version 4 request whose transmit timestamp is
 * `nonce`: the server echoes it as the originate timestamp, so a random
 * nonce makes blind spoofing of replies a 64-bit guess. */
void sntp_request(uint8_t out[SNTP_MSG_LEN], uint64_t nonce);

/*
 * Validate n bytes as the reply to the request carrying `nonce`: at least
 * 48 bytes, mode 4 (server), version 3 or 4, leap indicator not 3 (clock
 * unsynchronised), stratum 1..15 (0 is a kiss-o'-death, 16 unsynchronised),
 * originate timestamp == nonce, non-zero transmit timestamp. Returns NULL
 * and fills *out, or a static reason (out untouched).
 */
const char *sntp_reply_parse(const uint8_t *p, size_t n, uint64_t nonce, sntp_reply *out);

/* Unix time in ns of an NTP timestamp, taking the era closest to the
 * 2036 rollover correctly (RFC 5905 section 6: era 1 starts 2036-02-07):
 * seconds below 2^31 are read as era 1, so this works until 2104. */
int64_t sntp_to_unix_ns(uint64_t ntp);

/* Offset (server clock minus ours) and round-trip delay in ms from T1 and
 * T4 (our clock, unix ns, when the request left and the reply came) and
 * the reply's T2 and T3 (RFC 4330 section 5). */
void sntp_offset(int64_t t1_ns, const sntp_reply *r, int64_t t4_ns, int64_t *offset_ms,
                 int64_t *delay_ms);

#endif
