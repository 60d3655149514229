/*
 * test_kdrbg.c - the kernel's HMAC_DRBG (rng/drbg.c) against NIST CAVP
 * known answers (HMAC_DRBG, SHA-256, no prediction resistance, no reseed,
 * 1024-bit outputs): instantiate, generate twice, compare the second
 * output. Plus the interface's refusals.
 */
#include "test.h"

#include "platform/kernel/rng/drbg.c"

static size_t unhex(const char *s, uint8_t *out)
{
    size_t n = strlen(s) / 2;
    for (size_t i = 0; i < n; i++)
        sscanf(s + 2 * i, "%2hhx", &out[i]);
    return n;
}

struct kat {
    const char *entropy, *nonce, *pers, *returned;
};

static const struct kat kats[] = {
    {"ca851911349384bffe89de1cbdc46e6831e44d34a4fb935ee285dd14b71a7488",
     "659ba96c601dc69fc902940805ec0ca8", "",
     "e528e9abf2dece54d47c7e75e5fe302149f817ea9fb4bee6f4199697d04d5b89d54fbb978a15b5c443c9ec"
     "21036d2460b6f73ebad0dc2aba6e624abf07745bc107694bb7547bb0995f70de25d6b29e2d3011bb19d276"
     "76c07162c8b5ccde0668961df86803482cb37ed6d5c0bb8d50cf1f50d476aa0458bdaba806f48be9dcb8"},
    {"79737479ba4e7642a221fcfd1b820b134e9e3540a35bb48ffae29c20f5418ea3",
     "3593259c092bef4129bc2c6c9e19f343", "",
     "cf5ad5984f9e43917aa9087380dac46e410ddc8a7731859c84e9d0f31bd43655b924159413e2293b17610f"
     "211e09f770f172b8fb693a35b85d3b9e5e63b1dc252ac0e115002e9bedfb4b5b6fd43f33b8e0eafb2d072e"
     "1a6fee1f159df9b51e6c8da737e60d5032dd30544ec51558c6f080bdbdab1de8a939e961e06b5f1aca37"},
    {"5cacc68165a2e2ee20812f35ec73a79dbf30fd475476ac0c44fc6174cdac2b55",
     "6f885496c1e63af620becd9e71ecb824",
     "e72dd8590d4ed5295515c35ed6199e9d211b8f069b3058caa6670b96ef1208d0",
     "f1012cf543f94533df27fedfbf58e5b79a3dc517a9c402bdbfc9a0c0f721f9d53faf4aafdc4b8f7a1b580f"
     "caa52338d4bd95f58966a243cdcd3f446ed4bc546d9f607b190dd69954450d16cd0e2d6437067d8b44d19a"
     "6af7a7cfa8794e5fbd728e8fb2f2e8db5dd4ff1aa275f35886098e80ff844886060da8b1e7137846b23b"},
};

TEST(kdrbg_cavp_hmac_sha256)
{
    for (size_t i = 0; i < sizeof kats / sizeof kats[0]; i++) {
        uint8_t e[64], n[32], p[64], want[128], got[128];
        size_t el = unhex(kats[i].entropy, e), nl = unhex(kats[i].nonce, n);
        size_t pl = unhex(kats[i].pers, p);
        CHECK_EQ(unhex(kats[i].returned, want), 128);
        struct drbg d;
        drbg_instantiate(&d, e, el, n, nl, p, pl);
        CHECK_EQ(drbg_generate(&d, got, sizeof got, NULL, 0), 0);
        CHECK_EQ(drbg_generate(&d, got, sizeof got, NULL, 0), 0);
        CHECK_MEM(got, want, 128);
    }
}

TEST(kdrbg_refusals_and_reseed)
{
    struct drbg d = {0};
    uint8_t out[32], again[32];
    CHECK_EQ(drbg_generate(&d, out, sizeof out, NULL, 0), -1);   /* not instantiated */
    uint8_t seed[48] = {1, 2, 3};
    drbg_instantiate(&d, seed, 32, seed + 32, 16, NULL, 0);
    static uint8_t big[DRBG_MAX_REQUEST + 1];
    CHECK_EQ(drbg_generate(&d, big, sizeof big, NULL, 0), -1);    /* too large */
    CHECK_EQ(drbg_generate(&d, big, DRBG_MAX_REQUEST, NULL, 0), 0);
    d.reseed_counter = DRBG_RESEED_INTERVAL + 1;
    CHECK_EQ(drbg_generate(&d, out, sizeof out, NULL, 0), -1);   /* reseed due */
    drbg_reseed(&d, seed, 32, NULL, 0);
    CHECK_EQ(drbg_generate(&d, out, sizeof out, NULL, 0), 0);
    CHECK_EQ(drbg_generate(&d, again, sizeof again, NULL, 0), 0);
    CHECK(memcmp(out, again, sizeof out) != 0);
    drbg_wipe(&d);
    CHECK_EQ(drbg_generate(&d, out, sizeof out, NULL, 0), -1);
}
