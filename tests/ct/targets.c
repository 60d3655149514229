/*
 * targets.c - the code the constant-time tests time, each on its secret
 * input (fixed class: all zero unless said), compiled as the kernel
 * compiles it (tests/ct/ct.mk):
 *
 *   sha256            the kernel's SHA-256 (rng/sha256.c) on a secret
 *                     64-byte message: the entropy pool and the DRBG hash
 *                     secret state with it
 *   hmac-sha256-key   its HMAC under a secret 32-byte key (the DRBG's K)
 *   drbg-generate     the DRBG output path (rng/drbg.c): generate 32
 *                     bytes from a secret state (K, V); every random byte
 *                     TLS uses comes out of it (crypto/random.c)
 *   drbg-instantiate  seeding from secret entropy and nonce (the reseed
 *                     runs the same update function)
 *   siphash-key       the core's table hash (broker/hash.c) under a
 *                     secret key: the key is what stops hash flooding,
 *                     and its hashes decide bucket placement
 *   passwd-key-compare
 *                     the password file's comparison of a derived key
 *                     (broker/ctcmp.c, broker_ct_equal) with the stored
 *                     one, 64 bytes; fixed class: the stored key itself,
 *                     so a leaky compare would run longest there
 *   control-leaky-key-compare
 *                     the same 64-byte comparison returning at the first
 *                     difference: must be flagged (the passwd target's
 *                     own leaky control, at its length)
 *   control-leaky-memcmp
 *                     a byte-at-a-time compare that returns at the first
 *                     difference, of a secret 32-byte token against a
 *                     reference (fixed class: the reference itself, so
 *                     every byte is compared; random inputs stop at the
 *                     first): it leaks on purpose and must be flagged,
 *                     so the test cannot pass by measuring nothing
 *   control-ct-compare
 *                     the same comparison done the constant-time way (OR
 *                     of XORs over every byte): must not be flagged, so
 *                     the test does not flag everything either
 *
 * Results are kept through a volatile store: the compiler may not drop a
 * call whose result it can see is unused.
 */
#include "targets.h"

#include "broker/hash.h"
#include "broker/passwd.h"
#include "platform/kernel/rng/drbg.h"
#include "platform/kernel/rng/sha256.h"

#include <string.h>

enum { TOKEN = 32 };

/* The controls' reference token (any fixed value does). */
static const uint8_t reference[TOKEN] = "tern ct control reference token";

static void run_sha256(const uint8_t *in)
{
    uint8_t out[SHA256_BYTES];
    sha256(in, 64, out);
    volatile uint8_t keep = out[0];
    (void)keep;
}

static void run_hmac(const uint8_t *in)
{
    static const uint8_t msg[32] = "a public message of 32 bytes ..";
    struct hmac_sha256 m;
    uint8_t out[SHA256_BYTES];
    hmac_sha256_init(&m, in, 32);
    hmac_sha256_update(&m, msg, sizeof msg);
    hmac_sha256_final(&m, out);
    volatile uint8_t keep = out[0];
    (void)keep;
}

static void run_drbg_generate(const uint8_t *in)
{
    struct drbg d;
    uint8_t out[32];
    memcpy(d.k, in, sizeof d.k);
    memcpy(d.v, in + sizeof d.k, sizeof d.v);
    d.reseed_counter = 1;
    d.instantiated = 1;
    int rc = drbg_generate(&d, out, sizeof out, NULL, 0);
    volatile uint8_t keep = (uint8_t)(out[0] ^ rc);
    (void)keep;
}

static void run_drbg_instantiate(const uint8_t *in)
{
    struct drbg d;
    drbg_instantiate(&d, in, 32, in + 32, 16, NULL, 0);
    volatile uint8_t keep = d.v[0];
    (void)keep;
}

static void run_siphash(const uint8_t *in)
{
    static const uint8_t id[] = "client-id-000042";
    uint64_t key[2];
    memcpy(key, in, sizeof key);
    volatile uint32_t keep = table_hash(key, 0x6964656e74ull, id, sizeof id - 1);
    (void)keep;
}

static void fixed_reference(uint8_t *in, size_t len)
{
    memcpy(in, reference, len < TOKEN ? len : TOKEN);
}

/* The mistake the control stands for: return at the first difference.
 * volatile reads keep the compiler from widening it into word or vector
 * compares (glibc's memcmp would compare 32 bytes in one step). */
static __attribute__((noinline)) int leaky_equal(const volatile uint8_t *a, const uint8_t *b,
                                                 size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return 0;
    return 1;
}

static __attribute__((noinline)) int ct_equal(const uint8_t *a, const uint8_t *b, size_t n)
{
    uint8_t d = 0;
    for (size_t i = 0; i < n; i++)
        d |= (uint8_t)(a[i] ^ b[i]);
    return d == 0;
}

static void run_leaky(const uint8_t *in)
{
    volatile int keep = leaky_equal(in, reference, TOKEN);
    (void)keep;
}

/* A stored derived key (any fixed value does). */
static const uint8_t stored_key[BROKER_PASSWD_KEY_LEN] =
    "tern ct stored PBKDF2-SHA512 derived key of sixty-four bytes...";

static void fixed_stored_key(uint8_t *in, size_t len)
{
    memcpy(in, stored_key, len < sizeof stored_key ? len : sizeof stored_key);
}

static void run_passwd_compare(const uint8_t *in)
{
    volatile bool keep = broker_ct_equal(in, stored_key, sizeof stored_key);
    (void)keep;
}

static void run_leaky_key(const uint8_t *in)
{
    volatile int keep = leaky_equal(in, stored_key, sizeof stored_key);
    (void)keep;
}

static void run_ct_compare(const uint8_t *in)
{
    volatile int keep = ct_equal(in, reference, TOKEN);
    (void)keep;
}

const struct ct_target ct_targets[] = {
    {"sha256", 64, NULL, run_sha256, 0},
    {"hmac-sha256-key", 32, NULL, run_hmac, 0},
    {"drbg-generate", 64, NULL, run_drbg_generate, 0},
    {"drbg-instantiate", 48, NULL, run_drbg_instantiate, 0},
    {"siphash-key", 16, NULL, run_siphash, 0},
    {"passwd-key-compare", BROKER_PASSWD_KEY_LEN, fixed_stored_key, run_passwd_compare, 0},
    {"control-leaky-key-compare", BROKER_PASSWD_KEY_LEN, fixed_stored_key, run_leaky_key, 1},
    {"control-leaky-memcmp", TOKEN, fixed_reference, run_leaky, 1},
    {"control-ct-compare", TOKEN, fixed_reference, run_ct_compare, 0},
};
const size_t ct_ntargets = sizeof ct_targets / sizeof ct_targets[0];
