/*
 * test_khealth.c - SP 800-90B health tests and the MCV estimate
 * (rng/health.c) on the host: a stuck source trips the repetition count
 * test, a biased one the adaptive proportion test, a good one passes both
 * for many windows; the estimate is near 8 bits for uniform bytes and
 * near -log2(p) for a biased source.
 */
#include "test.h"

#include "platform/kernel/rng/health.c"

#include <stdlib.h>

/* A small deterministic generator (xorshift) standing in for noise. */
static uint64_t xs = 88172645463325252ull;
static uint8_t noise(void)
{
    xs ^= xs << 13;
    xs ^= xs >> 7;
    xs ^= xs << 17;
    return (uint8_t)(xs >> 24);
}

TEST(khealth_stuck_source_detected)
{
    struct health h;
    health_init(&h, HEALTH_RCT_CUTOFF_H1, HEALTH_APT_CUTOFF_H1);
    int fired = -1;
    for (int i = 0; i < 100; i++)
        if (health_sample(&h, 0x42) < 0) {
            fired = i;
            break;
        }
    CHECK_EQ(fired, HEALTH_RCT_CUTOFF_H1 - 1);   /* the 21st identical sample */
    CHECK(h.failure && strstr(h.failure, "repetition"));
    CHECK_EQ(health_sample(&h, noise()), -1);     /* sticky */
}

TEST(khealth_biased_source_detected)
{
    /* 0 with probability ~0.75, else noise: no long runs are needed for
     * the APT to notice the proportion. */
    struct health h;
    health_init(&h, HEALTH_RCT_CUTOFF_H1, HEALTH_APT_CUTOFF_H1);
    int fired = 0;
    for (int i = 0; i < 100000 && !fired; i++) {
        uint8_t r = noise();
        uint8_t s = (r & 3) ? 0 : noise() | 1;
        /* Avoid tripping the RCT first: break up runs of zeros. */
        if (h.rct_count >= HEALTH_RCT_CUTOFF_H1 - 2)
            s = 0x55;
        fired = health_sample(&h, s) < 0;
    }
    CHECK(fired);
    CHECK(h.failure && strstr(h.failure, "proportion"));
}

TEST(khealth_good_source_passes)
{
    struct health h;
    health_init(&h, HEALTH_RCT_CUTOFF_H1, HEALTH_APT_CUTOFF_H1);
    for (int i = 0; i < 1000000; i++)
        CHECK_EQ(health_sample(&h, noise()), 0);
    /* Even a source of only ~2 bits per sample passes the 1-bit cutoffs. */
    health_init(&h, HEALTH_RCT_CUTOFF_H1, HEALTH_APT_CUTOFF_H1);
    for (int i = 0; i < 1000000; i++)
        CHECK_EQ(health_sample(&h, noise() & 3), 0);
}

TEST(khealth_mcv_estimate)
{
    static uint8_t s[100000];
    for (size_t i = 0; i < sizeof s; i++)
        s[i] = noise();
    unsigned h = health_mcv_estimate(s, sizeof s);
    CHECK(h > 7 * 256 && h <= 8 * 256);          /* uniform bytes: ~7.6 after the bound */
    memset(s, 9, sizeof s);
    CHECK_EQ(health_mcv_estimate(s, sizeof s), 0);
    /* p(most common) = 1/2: about 1 bit, a little less for the bound. */
    for (size_t i = 0; i < sizeof s; i++)
        s[i] = (noise() & 1) ? 7 : (uint8_t)(noise() | 8);
    h = health_mcv_estimate(s, sizeof s);
    CHECK(h > 240 && h <= 256);
    /* Small samples get a wide confidence bound: 1024 uniform bytes. */
    for (size_t i = 0; i < 1024; i++)
        s[i] = noise();
    h = health_mcv_estimate(s, 1024);
    CHECK(h > 4 * 256 && h < 8 * 256);
}
