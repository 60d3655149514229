/*
 * test_ksha256.c - the kernel's SHA-256 and HMAC-SHA-256 (rng/sha256.c) on
 * the host: the FIPS 180-4 example messages (one block, two blocks, the
 * empty message, a million 'a's fed in odd-sized pieces) and RFC 4231
 * HMAC test cases 1, 2 and 6 (a key longer than a block).
 */
#include "test.h"

#include "platform/kernel/rng/sha256.c"

static void hex(const char *s, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sscanf(s + 2 * i, "%2hhx", &out[i]);
}

static int digest_is(const void *msg, size_t len, const char *want_hex)
{
    uint8_t got[32], want[32];
    sha256(msg, len, got);
    hex(want_hex, want, 32);
    return memcmp(got, want, 32) == 0;
}

TEST(ksha256_fips180_examples)
{
    CHECK(digest_is("abc", 3,
                    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    CHECK(digest_is("", 0,
                    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    CHECK(digest_is(two, strlen(two),
                    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
}

TEST(ksha256_million_a_in_pieces)
{
    static char a[1000000];
    memset(a, 'a', sizeof a);
    struct sha256 c;
    sha256_init(&c);
    size_t off = 0, step = 1;
    while (off < sizeof a) {
        size_t n = step < sizeof a - off ? step : sizeof a - off;
        sha256_update(&c, a + off, n);
        off += n;
        step = step * 7 % 997 + 1; /* odd sizes across block boundaries */
    }
    uint8_t got[32], want[32];
    sha256_final(&c, got);
    hex("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0", want, 32);
    CHECK_MEM(got, want, 32);
    /* Padding edge cases: lengths around 55, 56, 64 bytes against one-shot. */
    for (size_t len = 50; len < 130; len++) {
        uint8_t one[32], parts[32];
        sha256(a, len, one);
        sha256_init(&c);
        sha256_update(&c, a, len / 3);
        sha256_update(&c, a, len - len / 3);
        sha256_final(&c, parts);
        CHECK_MEM(one, parts, 32);
    }
}

static int hmac_is(const uint8_t *key, size_t klen, const void *msg, size_t mlen,
                   const char *want_hex)
{
    struct hmac_sha256 m;
    uint8_t got[32], want[32];
    hmac_sha256_init(&m, key, klen);
    hmac_sha256_update(&m, msg, mlen);
    hmac_sha256_final(&m, got);
    hex(want_hex, want, 32);
    return memcmp(got, want, 32) == 0;
}

TEST(ksha256_hmac_rfc4231)
{
    uint8_t k1[20];
    memset(k1, 0x0b, sizeof k1);
    CHECK(hmac_is(k1, 20, "Hi There", 8,
                  "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"));
    CHECK(hmac_is((const uint8_t *)"Jefe", 4, "what do ya want for nothing?", 28,
                  "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"));
    uint8_t k6[131];
    memset(k6, 0xaa, sizeof k6);
    const char *m6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    CHECK(hmac_is(k6, sizeof k6, m6, strlen(m6),
                  "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"));
}
