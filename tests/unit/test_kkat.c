/*
 * test_kkat.c - the kernel's boot-time crypto known-answer tests
 * (crypto/kat.c) run on the host against the hosted wolfSSL build and the
 * kernel's own SHA-256 and HMAC_DRBG (linked from test_ksha256.c and
 * test_kdrbg.c): every test passes as shipped, and each one fails when its
 * expected answer is corrupted, so none of them can pass vacuously.
 */
#include "test.h"

#include "platform/kernel/crypto/kat.c"

struct outcome {
    int count;
    int failed;
    char names[512];
};

static void note(void *ctx, const char *name, const char *why)
{
    struct outcome *o = ctx;
    o->count++;
    if (why) {
        o->failed++;
        strncat(o->names, name, sizeof o->names - strlen(o->names) - 2);
        strcat(o->names, " ");
    }
}

TEST(kkat_all_pass)
{
    struct outcome o;
    memset(&o, 0, sizeof o);
    CHECK_EQ(kat_run_all(NULL, note, &o), 0);
    CHECK_EQ(o.count, 10);
    CHECK_EQ(o.failed, 0);
}

TEST(kkat_each_corruption_fails_only_its_test)
{
    static const char *const names[] = {"sha-256", "hmac-drbg", "aes-128-gcm",
                                        "aes-256-gcm", "chacha20-poly1305", "x25519",
                                        "ecdh-p256", "ecdsa-p256-verify",
                                        "ecdsa-p256-sign", "pbkdf2-sha512"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        struct outcome o;
        char want[64];
        memset(&o, 0, sizeof o);
        CHECK_EQ(kat_run_all(names[i], note, &o), 1);
        snprintf(want, sizeof want, "%s ", names[i]);
        CHECK(strcmp(o.names, want) == 0);
    }
}
