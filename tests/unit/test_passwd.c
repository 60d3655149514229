/*
 * test_passwd.c - the password file (broker/passwd.h): the parser on the
 * lines mosquitto_passwd writes and on corrupt and truncated ones (each
 * refused naming the line), and the verifier with a stand-in KDF that
 * records what it was asked, so the unknown-user path is seen to cost one
 * derivation with the same rounds as a known user's.
 */
#include "broker/passwd.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

/* Two lines mosquitto_passwd 2.0.11 wrote (alice:secret, bob:"b:ob pw"). */
#define ALICE                                                                                   \
    "alice:$7$101$PCYW1kbeAM23Ccsx$xqy4YFXlxUrx66Qdu7Ek3Hv0h28WSjNSw58XWOKGZ97vL2eu6pzT9oc/3sjak" \
    "wq1N9IdvlGpQDh6Hc/f7hRU6w=="
#define BOB                                                                                     \
    "bob:$7$101$CkJXIILRZnEBhUzU$eMmdbQ5hdkfQhXMnygsyiOtExTZw3jZsjA0aiHFiH/OxMbe7qkDQM6kT/jh6PRXf" \
    "p0p6bGdoTTuT3svD0eaWVQ=="
/* 64 bytes of base64 that decode to 64 zero bytes, and a 12-byte salt. */
#define ZKEY "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="
#define SALT "PCYW1kbeAM23Ccsx"

static broker_passwd *parse(const char *text, char *err, size_t errsz)
{
    return broker_passwd_parse(NULL, "pw", text, strlen(text), err, errsz);
}

/* The parse fails and the message starts "pw:LINE:" and contains what. */
static bool refused(const char *text, const char *line, const char *what)
{
    char err[512];
    broker_passwd *p = parse(text, err, sizeof err);
    if (p) {
        broker_passwd_free(p);
        return false;
    }
    if (strncmp(err, line, strlen(line)) != 0 || !strstr(err, what)) {
        fprintf(stderr, "    got: %s\n", err);
        return false;
    }
    return true;
}

TEST(passwd_parses_mosquitto_passwd_lines_comments_blank_and_crlf)
{
    char err[256];
    broker_passwd *p =
        parse("# made by mosquitto_passwd\n\n" ALICE "\r\n" BOB " \t\n", err, sizeof err);
    CHECK(p != NULL);
    CHECK_EQ(broker_passwd_count(p), 2);
    broker_passwd_free(p);
    p = parse("", err, sizeof err); /* an empty file: no users */
    CHECK(p != NULL);
    CHECK_EQ(broker_passwd_count(p), 0);
    broker_passwd_free(p);
}

TEST(passwd_refuses_sha512_without_pbkdf2_naming_the_line)
{
    CHECK(refused(ALICE "\ncarol:$6$KgQx8os1bTcU8QTX$ElTb8zvshm+tZgCaRP6l2T4gqnPKZ5sNOF9QvlIDtmldX"
                        "ldSWT1n104YKuy2xxQF8SIetk1goxjDhYDjhCpKxA==\n",
                  "pw:2:", "$6$"));
}

TEST(passwd_refuses_corrupt_lines_with_line_and_cause)
{
    CHECK(refused("alice\n", "pw:1:", "expected USER:HASH"));
    CHECK(refused(":$7$101$" SALT "$" ZKEY "\n", "pw:1:", "empty user name"));
    CHECK(refused("alice:secret\n", "pw:1:", "plain-text"));
    CHECK(refused("#\nalice:$7$$" SALT "$" ZKEY "\n", "pw:2:", "iteration count"));
    CHECK(refused("alice:$7$1x1$" SALT "$" ZKEY "\n", "pw:1:", "iteration count"));
    CHECK(refused("alice:$7$0$" SALT "$" ZKEY "\n", "pw:1:", "out of range"));
    CHECK(refused("alice:$7$100001$" SALT "$" ZKEY "\n", "pw:1:", "out of range"));
    CHECK(refused("alice:$7$101$PCYW1kb!AM23Ccsx$" ZKEY "\n", "pw:1:", "bad salt"));
    CHECK(refused("alice:$7$101$$" ZKEY "\n", "pw:1:", "bad salt"));
    CHECK(refused("alice:$7$101$" SALT "$" ZKEY "$\n", "pw:1:", "unexpected '$'"));
    CHECK(refused("alice:$7$101$" SALT "$AAAA\n", "pw:1:", "64 bytes"));
    CHECK(refused("alice:$7$101$" SALT "$" ZKEY "AAAA\n", "pw:1:", "64 bytes"));
    CHECK(refused("a\0b:$7$101$" SALT "$" ZKEY "\n", "pw:1:", "expected USER")); /* cut at NUL */
    CHECK(refused(ALICE "\n" BOB "\n" ALICE "\n", "pw:3:", "already defined on line 1"));
}

TEST(passwd_refuses_every_truncation_of_a_good_line)
{
    /* Each prefix of a valid line (past the user name) is refused, never
     * taken as a shorter hash. */
    const char *line = ALICE;
    size_t n = strlen(line);
    for (size_t cut = 6; cut < n - 2; cut++) {
        char err[256];
        broker_passwd *p = broker_passwd_parse(NULL, "pw", line, cut, err, sizeof err);
        if (p) {
            fprintf(stderr, "    accepted a line cut at %zu\n", cut);
            broker_passwd_free(p);
        }
        CHECK(p == NULL);
        CHECK(strncmp(err, "pw:1:", 5) == 0);
    }
}

TEST(passwd_nul_byte_in_a_line_is_refused)
{
    static const char text[] = "alice:$7$101$" SALT "$" ZKEY "\nb\0b:x\n";
    char err[256];
    broker_passwd *p = broker_passwd_parse(NULL, "pw", text, sizeof text - 1, err, sizeof err);
    CHECK(p == NULL);
    CHECK(strstr(err, "pw:2: NUL") != NULL);
}

/* ---- the verifier, with a stand-in KDF ---------------------------------- */

static unsigned kdf_calls;
static uint32_t kdf_last_iterations;
static uint8_t kdf_fill; /* the stand-in derives every byte as this */

static bool fake_kdf(const uint8_t *pw, size_t pw_len, const uint8_t *salt, size_t salt_len,
                     uint32_t iterations, uint8_t *out, size_t out_len)
{
    (void)salt, (void)salt_len;
    kdf_calls++;
    kdf_last_iterations = iterations;
    /* "right" derives to zeros (ZKEY), anything else to kdf_fill. */
    uint8_t v = pw_len == 5 && memcmp(pw, "right", 5) == 0 ? 0 : kdf_fill;
    memset(out, v, out_len);
    return true;
}

static bool failing_kdf(const uint8_t *pw, size_t pw_len, const uint8_t *salt, size_t salt_len,
                        uint32_t iterations, uint8_t *out, size_t out_len)
{
    (void)pw, (void)pw_len, (void)salt, (void)salt_len, (void)iterations;
    memset(out, 0, out_len); /* what a right password gives: still false */
    return false;
}

static bool check(const broker_passwd *p, broker_pbkdf2_fn kdf, const char *user, const char *pw)
{
    return broker_passwd_check(p, kdf, (const uint8_t *)user, strlen(user), (const uint8_t *)pw,
                               strlen(pw));
}

TEST(passwd_check_right_wrong_and_unknown_cost_one_derivation_each)
{
    char err[256];
    broker_passwd *p = parse("zed:$7$500$" SALT "$" ZKEY "\namy:$7$500$" SALT "$" ZKEY "\n", err,
                             sizeof err);
    CHECK(p != NULL);
    kdf_fill = 0x55;
    kdf_calls = 0;
    CHECK(check(p, fake_kdf, "amy", "right"));
    CHECK_EQ(kdf_calls, 1);
    CHECK_EQ(kdf_last_iterations, 500);
    CHECK(!check(p, fake_kdf, "amy", "wrong"));
    CHECK_EQ(kdf_calls, 2);
    /* Unknown: one derivation, same rounds, and false even when the
     * stand-in derives the dummy's key. */
    kdf_last_iterations = 0;
    CHECK(!check(p, fake_kdf, "nobody", "right"));
    CHECK_EQ(kdf_calls, 3);
    CHECK_EQ(kdf_last_iterations, 500);
    CHECK(!check(p, fake_kdf, "am", "right"));   /* a prefix of a user */
    CHECK(!check(p, fake_kdf, "amyy", "right")); /* a longer name */
    CHECK(!check(p, fake_kdf, "", "right"));
    CHECK_EQ(kdf_calls, 6);
    kdf_fill = 0;
    CHECK(check(p, fake_kdf, "zed", "wrong")); /* fill 0 derives the stored key */
    CHECK(!check(p, failing_kdf, "zed", "right"));
    CHECK(!check(p, NULL, "zed", "right"));
    CHECK(!check(NULL, fake_kdf, "zed", "right"));
    broker_passwd_free(p);
}

TEST(passwd_ct_equal_sees_a_difference_in_any_byte)
{
    uint8_t a[64], b[64];
    memset(a, 7, sizeof a);
    memcpy(b, a, sizeof b);
    CHECK(broker_ct_equal(a, b, sizeof a));
    for (size_t i = 0; i < sizeof a; i++) {
        b[i] ^= 1;
        CHECK(!broker_ct_equal(a, b, sizeof a));
        b[i] ^= 1;
    }
    CHECK(broker_ct_equal(a, b, 0));
}

/* An allocator that fails after `left` allocations: no leak, no crash. */
static int left;
static void *fail_alloc(void *ctx, size_t n)
{
    (void)ctx;
    return left-- > 0 ? malloc(n) : NULL;
}
static void *fail_realloc(void *ctx, void *p, size_t n)
{
    (void)ctx;
    return left-- > 0 ? realloc(p, n) : NULL;
}
static void plain_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}

TEST(passwd_parse_out_of_memory_at_each_allocation_fails_cleanly)
{
    broker_allocator a = {NULL, fail_alloc, fail_realloc, plain_free};
    const char *text = ALICE "\n" BOB "\n";
    for (int n = 0; n < 6; n++) {
        char err[256];
        left = n;
        broker_passwd *p = broker_passwd_parse(&a, "pw", text, strlen(text), err, sizeof err);
        if (p) {
            CHECK_EQ(broker_passwd_count(p), 2);
            broker_passwd_free(p);
        } else {
            CHECK(strstr(err, "out of memory") != NULL);
        }
    }
}
