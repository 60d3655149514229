/*
 * test_khw_stats.c - the RNG panel's bit statistics (diag/hwbits.c) and
 * the memory bandwidth arithmetic (diag/hwrate.c) on the host: a fair
 * source passes, a stuck one (constant bytes, a long run inside good
 * data) and a biased one (one bit in eight forced) are caught, runs are
 * counted across byte boundaries; rates are exact where the numbers are
 * known and saturate instead of wrapping.
 */
#include "test.h"

#include "platform/kernel/diag/hwbits.c"
#include "platform/kernel/diag/hwrate.c"

/* splitmix64: a fair stand-in for a good source. */
static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void fill(uint8_t *b, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = mix(&seed);
        memcpy(b + i, &v, n - i < 8 ? n - i : 8);
    }
}

enum { N = 64 * 1024 };

TEST(khw_bits_fair_source_is_neither_stuck_nor_biased)
{
    static uint8_t b[N];
    fill(b, N, 1);
    struct bitstat s;
    bitstat_init(&s);
    bitstat_add(&s, b, N / 2);
    bitstat_add(&s, b + N / 2, N / 2);
    CHECK_EQ(s.bits, (uint64_t)N * 8);
    uint64_t pct = bitstat_ones_milli_pct(&s);
    CHECK(pct > 49800 && pct < 50200);
    CHECK(s.longest >= 12 && s.longest < 40);
    CHECK(!bitstat_stuck(&s));
    CHECK(!bitstat_biased(&s));
}

TEST(khw_bits_constant_output_is_stuck_and_biased)
{
    static uint8_t b[N];
    memset(b, 0xFF, N);
    struct bitstat s;
    bitstat_init(&s);
    bitstat_add(&s, b, N);
    CHECK_EQ(s.longest, (uint64_t)N * 8);
    CHECK_EQ(bitstat_ones_milli_pct(&s), 100000);
    CHECK(bitstat_stuck(&s));
    CHECK(bitstat_biased(&s));
    /* 0x55 alternates: half ones, runs of 1: not stuck, not biased by
     * count - the check's limits, stated in hwbits.h. */
    memset(b, 0x55, N);
    bitstat_init(&s);
    bitstat_add(&s, b, N);
    CHECK_EQ(s.longest, 1);
    CHECK(!bitstat_stuck(&s) && !bitstat_biased(&s));
}

TEST(khw_bits_run_across_byte_boundaries)
{
    /* 0x80, eight zero bytes, 0x01: a run of 64 zero bits between the ones */
    uint8_t b[10] = {0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0x01};
    struct bitstat s;
    bitstat_init(&s);
    for (unsigned i = 0; i < sizeof b; i++)
        bitstat_add(&s, b + i, 1);       /* byte by byte: the run must carry */
    CHECK_EQ(s.longest, 64);
    CHECK_EQ(s.ones, 2);
    CHECK(bitstat_stuck(&s));
    /* A run of 63 is not stuck (the threshold is inclusive at 64). */
    uint8_t c[9] = {0x01, 0, 0, 0, 0, 0, 0, 0, 0x01}; /* 7 + 56 zero bits */
    bitstat_init(&s);
    bitstat_add(&s, c, sizeof c);
    CHECK_EQ(s.longest, 63);
    CHECK(!bitstat_stuck(&s));
}

TEST(khw_bits_one_forced_bit_in_eight_is_biased)
{
    static uint8_t b[N];
    fill(b, N, 7);
    for (size_t i = 0; i < N; i++)
        b[i] |= 1;                        /* 56.25% ones */
    struct bitstat s;
    bitstat_init(&s);
    bitstat_add(&s, b, N);
    CHECK(bitstat_biased(&s));
    CHECK(!bitstat_stuck(&s));
    uint64_t pct = bitstat_ones_milli_pct(&s);
    CHECK(pct > 56000 && pct < 56500);
    /* A slight lean within noise is not biased: 4 sigma is under 6. */
    fill(b, N, 7);
    struct bitstat t;
    bitstat_init(&t);
    bitstat_add(&t, b, N);
    uint64_t sigma4 = 2 * isqrt64(t.bits);  /* 4 x sqrt(bits)/2 */
    t.ones = t.bits / 2 + sigma4;
    CHECK(!bitstat_biased(&t));
    t.ones = t.bits / 2 + 2 * sigma4;      /* 8 sigma */
    CHECK(bitstat_biased(&t));
}

TEST(khw_isqrt_floor)
{
    CHECK_EQ(isqrt64(0), 0);
    CHECK_EQ(isqrt64(1), 1);
    CHECK_EQ(isqrt64(15), 3);
    CHECK_EQ(isqrt64(16), 4);
    CHECK_EQ(isqrt64(524288), 724);
    CHECK(isqrt64(UINT64_MAX) == 0xFFFFFFFFull);
}

TEST(khw_rate_mib_s_exact_and_saturating)
{
    /* 64 MiB in 0.5 s at 3 GHz: 128 MiB/s */
    CHECK_EQ(hw_mib_s_milli(64ull << 20, 1500000000ull, 3000000000ull), 128000);
    /* 1 MiB in 3 of 7 ticks/s: 7/3 MiB/s = 2.333 */
    CHECK_EQ(hw_mib_s_milli(1 << 20, 3, 7), 2333);
    /* intermediates beyond 64 bits: 1 TiB x 4 GHz */
    CHECK_EQ(hw_mib_s_milli(1ull << 40, 4000000000ull, 4000000000ull), (1ull << 20) * 1000);
    CHECK_EQ(hw_mib_s_milli(1, 0, 1000), 0);
    CHECK_EQ(hw_mib_s_milli(1, 1000, 0), 0);
    CHECK(hw_mib_s_milli(UINT64_MAX, 1, UINT64_MAX) == UINT64_MAX);
    CHECK_EQ(hw_ticks_ns(3000000000ull, 3000000000ull), 1000000000);
    CHECK_EQ(hw_ticks_ns(1ull << 62, 1ull << 40), (1ull << 22) * 1000000000ull);
    CHECK_EQ(hw_khz(150000000, 50000000), 3000000); /* 150 M ticks in 50 ms */
    CHECK_EQ(hw_khz(1, 0), 0);
}
