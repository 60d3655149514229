/*
 * test_sntp_msg.c - SNTP messages (time/sntp_msg.c): the request's bytes,
 * a valid reply's fields, each refusal (mode, version, leap 3, stratum 0
 * and 16, originate not echoing our nonce, zero transmit time, short
 * reply), every truncation read within bounds (ASan), the NTP-to-Unix
 * conversion across the 2036 era change, and offset/delay arithmetic.
 */
#include "test.h"

#include "time/sntp_msg.h"

#include <stdlib.h>

static const uint64_t NONCE = 0x0123456789abcdefULL;
/* 2026-12-02T04:00:00Z as NTP seconds (unix 1796184000 + 2208988800). */
static const uint64_t NTP_2026 = 1796184000ULL + 2208988800ULL;

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
}

static void reply(uint8_t m[SNTP_MSG_LEN], uint64_t rx, uint64_t tx)
{
    memset(m, 0, SNTP_MSG_LEN);
    m[0] = (0 << 6) | (4 << 3) | 4; /* LI 0, VN 4, mode 4 */
    m[1] = 2;                       /* stratum */
    put64(m + 24, NONCE);
    put64(m + 32, rx);
    put64(m + 40, tx);
}

TEST(sntp_request_is_client_mode_v4_with_the_nonce_as_transmit_time)
{
    uint8_t m[SNTP_MSG_LEN];

    memset(m, 0xaa, sizeof m);
    sntp_request(m, NONCE);
    CHECK_EQ(m[0], 0x23); /* LI 0, VN 4, mode 3 */
    for (int i = 1; i < 40; i++)
        CHECK_EQ(m[i], 0);
    static const uint8_t want[8] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};
    CHECK_MEM(m + 40, want, 8);
}

TEST(sntp_reply_valid_gives_its_fields)
{
    uint8_t m[SNTP_MSG_LEN];
    sntp_reply r;

    reply(m, NTP_2026 << 32, (NTP_2026 << 32) | 0x80000000u);
    CHECK(sntp_reply_parse(m, sizeof m, NONCE, &r) == NULL);
    CHECK_EQ(r.stratum, 2);
    CHECK_EQ(r.version, 4);
    CHECK_EQ(r.leap, 0);
    CHECK(r.receive == NTP_2026 << 32);
    /* Version 3 servers and leap warnings 1/2 are fine. */
    m[0] = (1 << 6) | (3 << 3) | 4;
    CHECK(sntp_reply_parse(m, sizeof m, NONCE, &r) == NULL);
}

TEST(sntp_reply_refusals_say_why)
{
    static const struct {
        int byte;
        uint8_t value;
        const char *why;
    } bad[] = {
        {0, (4 << 3) | 3, "mode is not 4"},   /* our own request reflected */
        {0, (4 << 3) | 5, "mode is not 4"},   /* broadcast */
        {0, (2 << 3) | 4, "version"},
        {0, (5 << 3) | 4, "version"},
        {0, (3 << 6) | (4 << 3) | 4, "leap indicator 3"},
        {1, 0, "kiss-o'-death"},
        {1, 16, "stratum above 15"},
        {1, 255, "stratum above 15"},
        {31, 0xee, "originate timestamp"}, /* one bit of the echo wrong */
    };

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint8_t m[SNTP_MSG_LEN];
        sntp_reply r = {.stratum = 99};

        reply(m, NTP_2026 << 32, NTP_2026 << 32);
        m[bad[i].byte] = bad[i].value;
        const char *why = sntp_reply_parse(m, sizeof m, NONCE, &r);
        CHECK(why != NULL);
        CHECK(strstr(why, bad[i].why) != NULL);
        CHECK_EQ(r.stratum, 99); /* untouched */
    }
    uint8_t m[SNTP_MSG_LEN];
    sntp_reply r;
    reply(m, NTP_2026 << 32, 0);
    const char *why = sntp_reply_parse(m, sizeof m, NONCE, &r);
    CHECK(why != NULL && strstr(why, "zero transmit") != NULL);
}

TEST(sntp_reply_every_truncation_is_refused_within_bounds)
{
    uint8_t full[SNTP_MSG_LEN];
    sntp_reply r;

    reply(full, NTP_2026 << 32, NTP_2026 << 32);
    for (size_t n = 0; n < SNTP_MSG_LEN; n++) {
        /* An exact-size heap copy so ASan sees any read past n. */
        uint8_t *p = malloc(n ? n : 1);
        memcpy(p, full, n);
        const char *why = sntp_reply_parse(p, n, NONCE, &r);
        free(p);
        CHECK(why != NULL);
        CHECK(strstr(why, "shorter than 48") != NULL);
    }
}

TEST(sntp_to_unix_handles_both_eras)
{
    CHECK_EQ(sntp_to_unix_ns(2208988800ULL << 32), 0);
    CHECK_EQ(sntp_to_unix_ns((NTP_2026 << 32) | 0x80000000u),
             1796184000LL * 1000000000LL + 500000000);
    /* 2036-02-07T06:28:16Z is NTP era 1 second 0. */
    CHECK_EQ(sntp_to_unix_ns(0), 2085978496LL * 1000000000LL);
    CHECK_EQ(sntp_to_unix_ns(1ULL << 32), 2085978497LL * 1000000000LL);
}

TEST(sntp_offset_and_delay_follow_rfc4330)
{
    /* Server 300 s ahead; 40 ms out, 10 ms in the server, 40 ms back. */
    int64_t t1 = 1796184000LL * 1000000000LL;
    int64_t t4 = t1 + 90000000;
    sntp_reply r = {.receive = ((NTP_2026 + 300) << 32) | (uint64_t)(0.04 * 4294967296.0),
                    .transmit = ((NTP_2026 + 300) << 32) | (uint64_t)(0.05 * 4294967296.0)};
    int64_t off, delay;

    sntp_offset(t1, &r, t4, &off, &delay);
    CHECK(off >= 299999 && off <= 300000);
    CHECK(delay >= 79 && delay <= 80);
    /* Server behind by an hour. */
    r.receive -= 7500ULL << 32;
    r.transmit -= 7500ULL << 32;
    sntp_offset(t1, &r, t4, &off, &delay);
    CHECK(off >= -7200001 && off <= -7200000);
}
