/*
 * test_ksynflow.c - the kernel's SYN recognition and refused-flow table
 * (net/synflow.c) on the host: a bare SYN is recognised and named, every
 * other segment (SYN+ACK, RST, FIN, plain ACK), other protocols, fragments
 * and frames cut short or lying about their lengths are not; a refused
 * flow is remembered for SYN_REMEMBER_MS and then forgotten, other flows
 * are not confused with it, and a full set forgets its oldest entry first.
 */
#include "test.h"

#include "platform/kernel/net/synflow.c"

/* An Ethernet + IPv4 + TCP frame from 10.0.2.2:sport to 10.0.2.15:dport. */
static size_t frame(uint8_t *f, uint16_t sport, uint16_t dport, uint8_t flags)
{
    memset(f, 0, 80);
    f[12] = 0x08; /* IPv4 */
    uint8_t *ip = f + 14;
    ip[0] = 0x45;
    ip[3] = 40 + 4; /* total: IP 20 + TCP 24 (an MSS option) */
    ip[6] = 0x40;   /* don't fragment */
    ip[8] = 64;
    ip[9] = 6;
    memcpy(ip + 12, (uint8_t[]){10, 0, 2, 2}, 4);
    memcpy(ip + 16, (uint8_t[]){10, 0, 2, 15}, 4);
    uint8_t *tcp = ip + 20;
    tcp[0] = (uint8_t)(sport >> 8);
    tcp[1] = (uint8_t)sport;
    tcp[2] = (uint8_t)(dport >> 8);
    tcp[3] = (uint8_t)dport;
    tcp[12] = 6 << 4;
    tcp[13] = flags;
    tcp[20] = 2; /* MSS option */
    tcp[21] = 4;
    return 14 + 44;
}

TEST(ksynflow_a_bare_syn_is_recognised_and_named)
{
    uint8_t f[80];
    syn_flow fl;
    size_t n = frame(f, 40000, 8883, 0x02);
    CHECK(syn_parse(f, n, &fl));
    CHECK_EQ(fl.sport, 40000);
    CHECK_EQ(fl.dport, 8883);
    CHECK_MEM(fl.src, ((uint8_t[]){10, 0, 2, 2}), 4);
    /* Ethernet padding after the datagram changes nothing. */
    CHECK(syn_parse(f, 64, &fl));
}

TEST(ksynflow_other_segments_are_left_to_lwip)
{
    uint8_t f[80];
    syn_flow fl;
    static const uint8_t not_new[] = {0x12 /* SYN+ACK */, 0x06 /* SYN+RST */,
                                      0x03 /* SYN+FIN */, 0x10 /* ACK */, 0x00};
    for (size_t i = 0; i < sizeof not_new; i++)
        CHECK(!syn_parse(f, frame(f, 1, 2, not_new[i]), &fl));
    size_t n = frame(f, 1, 2, 0x02);
    f[12] = 0x86; /* IPv6 ethertype */
    CHECK(!syn_parse(f, n, &fl));
    n = frame(f, 1, 2, 0x02);
    f[14 + 9] = 17; /* UDP */
    CHECK(!syn_parse(f, n, &fl));
    n = frame(f, 1, 2, 0x02);
    f[14 + 6] = 0x20; /* more fragments */
    CHECK(!syn_parse(f, n, &fl));
    n = frame(f, 1, 2, 0x02);
    f[14 + 7] = 1; /* a fragment offset */
    CHECK(!syn_parse(f, n, &fl));
    n = frame(f, 1, 2, 0x02);
    f[14] = 0x65; /* IP version 6 in an IPv4 frame */
    CHECK(!syn_parse(f, n, &fl));
}

TEST(ksynflow_truncated_or_lying_frames_are_refused)
{
    uint8_t f[80];
    syn_flow fl;
    size_t n = frame(f, 1, 2, 0x02);
    for (size_t cut = 0; cut < n; cut++)
        CHECK(!syn_parse(f, cut, &fl)); /* every truncation */
    n = frame(f, 1, 2, 0x02);
    f[14] = 0x44; /* IHL 16 bytes: below the minimum */
    CHECK(!syn_parse(f, n, &fl));
    n = frame(f, 1, 2, 0x02);
    f[14] = 0x4f; /* IHL 60: the TCP header no longer fits the total */
    CHECK(!syn_parse(f, n, &fl));
    n = frame(f, 1, 2, 0x02);
    f[14 + 3] = 200; /* total length beyond the frame */
    CHECK(!syn_parse(f, n, &fl));
    n = frame(f, 1, 2, 0x02);
    f[14 + 20 + 12] = 15 << 4; /* TCP data offset 60: beyond the total */
    CHECK(!syn_parse(f, n, &fl));
    n = frame(f, 1, 2, 0x02);
    f[14 + 20 + 12] = 4 << 4; /* TCP data offset 16: below the minimum */
    CHECK(!syn_parse(f, n, &fl));
}

static const uint64_t key[2] = {0x0123456789abcdefull, 0xfedcba9876543210ull};

TEST(ksynflow_a_refused_flow_is_remembered_then_forgotten)
{
    static syn_table t;
    syn_flow a = {{10, 0, 2, 2}, 40000, 8883}, b = a, c = a;
    b.sport = 40001;
    memcpy(c.src, (uint8_t[]){10, 0, 2, 3}, 4);
    syn_table_init(&t, key);
    CHECK(!syn_table_has(&t, &a, 1000));
    syn_table_add(&t, &a, 1000);
    CHECK(syn_table_has(&t, &a, 1000));
    CHECK(syn_table_has(&t, &a, 1000 + SYN_REMEMBER_MS - 1));
    CHECK(!syn_table_has(&t, &a, 1000 + SYN_REMEMBER_MS));
    CHECK(!syn_table_has(&t, &b, 1001)); /* another port */
    CHECK(!syn_table_has(&t, &c, 1001)); /* another address */
    /* Refused again: remembered from the new time. */
    syn_table_add(&t, &a, 2000);
    CHECK(syn_table_has(&t, &a, 2000 + SYN_REMEMBER_MS - 1));
}

TEST(ksynflow_a_full_set_forgets_its_oldest_first)
{
    static syn_table t;
    syn_flow f[64];
    uint32_t set0 = 0;
    size_t same = 0;
    syn_table_init(&t, key);
    /* Find SYN_TABLE_WAYS + 1 flows of one set. */
    for (uint16_t port = 1; same < SYN_TABLE_WAYS + 1 && port != 0; port++) {
        syn_flow x = {{10, 0, 2, 2}, port, 8883};
        uint32_t s = flow_hash(&t, &x) % SYN_TABLE_SETS;
        if (same == 0)
            set0 = s;
        if (s == set0)
            f[same++] = x;
    }
    CHECK_EQ(same, SYN_TABLE_WAYS + 1);
    for (size_t i = 0; i < SYN_TABLE_WAYS; i++)
        syn_table_add(&t, &f[i], 100 + i);
    syn_table_add(&t, &f[SYN_TABLE_WAYS], 200);
    CHECK(!syn_table_has(&t, &f[0], 201)); /* the oldest went */
    for (size_t i = 1; i <= SYN_TABLE_WAYS; i++)
        CHECK(syn_table_has(&t, &f[i], 201));
}
