/*
 * kat.c - the crypto known-answer self-tests (kat.h), each through the
 * same functions the TLS handshake and record layer call:
 *
 *   sha-256            wolfCrypt's SHA-256 (transcript hashes, HKDF,
 *                      signatures) and the kernel's own (rng/sha256.c, the
 *                      entropy pool and the DRBG), both on FIPS "abc"
 *   hmac-drbg          the kernel's HMAC_DRBG (every random byte wolfSSL
 *                      uses) against a NIST CAVP vector
 *   aes-128-gcm, aes-256-gcm
 *                      encrypt to the known ciphertext and tag, decrypt it
 *                      back, and refuse a tampered tag
 *   chacha20-poly1305  RFC 8439's AEAD example: encrypt to the known
 *                      ciphertext and tag, decrypt it back, refuse a
 *                      tampered tag (the one-shot API runs the same
 *                      wc_Chacha_* and wc_Poly1305* code, C or assembly, as
 *                      the TLS record layer)
 *   x25519             the public key of a known private key, and the
 *                      shared secret with a known peer
 *   ecdh-p256          RFC 5903's P-256 example: the known private key and
 *                      the peer's public key give the known shared secret
 *                      (wc_ecc_shared_secret, as TLS's P-256 key share)
 *   ecdsa-p256-verify  a known signature verifies, a tampered one does not
 *   ecdsa-p256-sign    sign with a known key and the DRBG, verify that
 *   pbkdf2-sha512      wolfCrypt's PBKDF2-HMAC-SHA512 (password files'
 *                      $7$ hashes, src/tls/kdf.c): the known key from a
 *                      mosquitto_passwd line's password and salt, 2 rounds
 *
 * Portable (no kernel headers, includes relative to this file) so the host
 * unit tests run the same file against the hosted wolfSSL build
 * (tests/unit/test_kkat.c). A test "corrupted" on request alters its
 * expected answer (or its signature) first and must then fail.
 */
#include "kat.h"

#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/settings.h>
#include <wolfssl/wolfcrypt/aes.h>
#include <wolfssl/wolfcrypt/chacha20_poly1305.h>
#include <wolfssl/wolfcrypt/curve25519.h>
#include <wolfssl/wolfcrypt/ecc.h>
#include <wolfssl/wolfcrypt/hash.h>
#include <wolfssl/wolfcrypt/pwdbased.h>
#include <wolfssl/wolfcrypt/random.h>
#include <wolfssl/wolfcrypt/sha256.h>

#include <stdlib.h>
#include <string.h>

#include "../rng/drbg.h"
#include "../rng/sha256.h"
#include "kat_vectors.h"

/* A copy of an expected answer, with one bit flipped when corrupted. */
static void expect(uint8_t *dst, const uint8_t *src, size_t n, int corrupt)
{
    memcpy(dst, src, n);
    if (corrupt)
        dst[n / 2] ^= 0x01;
}

static const char *kat_sha256(int corrupt)
{
    uint8_t want[32], got[32];
    wc_Sha256 *h = malloc(sizeof *h);
    const char *why = NULL;

    expect(want, kat_sha256_abc, sizeof want, corrupt);
    if (!h)
        return "out of memory";
    if (wc_InitSha256(h) != 0 || wc_Sha256Update(h, (const byte *)"abc", 3) != 0 ||
        wc_Sha256Final(h, got) != 0)
        why = "wolfCrypt SHA-256 failed to run";
    else if (memcmp(got, want, sizeof got) != 0)
        why = "wolfCrypt SHA-256 gave a wrong digest";
    wc_Sha256Free(h);
    free(h);
    if (why)
        return why;
    sha256("abc", 3, got);
    if (memcmp(got, want, sizeof got) != 0)
        return "the kernel's SHA-256 gave a wrong digest";
    return NULL;
}

static const char *kat_drbg(int corrupt)
{
    uint8_t want[sizeof kat_drbg_returned], got[sizeof kat_drbg_returned];
    struct drbg *d = malloc(sizeof *d);
    const char *why = NULL;

    expect(want, kat_drbg_returned, sizeof want, corrupt);
    if (!d)
        return "out of memory";
    memset(d, 0, sizeof *d);
    drbg_instantiate(d, kat_drbg_entropy, sizeof kat_drbg_entropy, kat_drbg_nonce,
                     sizeof kat_drbg_nonce, NULL, 0);
    if (drbg_generate(d, got, sizeof got, NULL, 0) != 0 ||
        drbg_generate(d, got, sizeof got, NULL, 0) != 0)
        why = "generate refused";
    else if (memcmp(got, want, sizeof got) != 0)
        why = "wrong output";
    drbg_wipe(d);
    free(d);
    return why;
}

static const char *kat_gcm_one(const struct kat_gcm *v, int corrupt)
{
    uint8_t ct[sizeof v->ct], pt[sizeof v->pt], tag[16], want_ct[sizeof v->ct];
    Aes *aes = malloc(sizeof *aes);
    const char *why = NULL;

    expect(want_ct, v->ct, sizeof want_ct, corrupt);
    if (!aes)
        return "out of memory";
    if (wc_AesInit(aes, NULL, INVALID_DEVID) != 0) {
        free(aes);
        return "cannot initialise";
    }
    if (wc_AesGcmSetKey(aes, v->key, v->key_len) != 0)
        why = "cannot set the key";
    else if (wc_AesGcmEncrypt(aes, ct, v->pt, sizeof v->pt, v->iv, sizeof v->iv, tag,
                              sizeof tag, v->aad, sizeof v->aad) != 0)
        why = "encryption failed to run";
    else if (memcmp(ct, want_ct, sizeof ct) != 0 || memcmp(tag, v->tag, sizeof tag) != 0)
        why = "wrong ciphertext or tag";
    else if (wc_AesGcmDecrypt(aes, pt, v->ct, sizeof v->ct, v->iv, sizeof v->iv, v->tag,
                              sizeof v->tag, v->aad, sizeof v->aad) != 0 ||
             memcmp(pt, v->pt, sizeof pt) != 0)
        why = "decryption of the known ciphertext failed";
    else {
        memcpy(tag, v->tag, sizeof tag);
        tag[0] ^= 0x80;
        if (wc_AesGcmDecrypt(aes, pt, v->ct, sizeof v->ct, v->iv, sizeof v->iv, tag,
                             sizeof tag, v->aad, sizeof v->aad) == 0)
            why = "a tampered tag was accepted";
    }
    wc_AesFree(aes);
    memset(aes, 0, sizeof *aes);
    free(aes);
    return why;
}

static const char *kat_gcm128(int corrupt)
{
    return kat_gcm_one(&kat_gcm[0], corrupt);
}

static const char *kat_gcm256(int corrupt)
{
    return kat_gcm_one(&kat_gcm[1], corrupt);
}

static const char *kat_chacha(int corrupt)
{
    enum { N = sizeof kat_chacha_ct };
    uint8_t ct[N], pt[N], tag[16], want_ct[N];

    _Static_assert(sizeof kat_chacha_pt - 1 == N, "plaintext and ciphertext lengths differ");
    expect(want_ct, kat_chacha_ct, sizeof want_ct, corrupt);
    if (wc_ChaCha20Poly1305_Encrypt(kat_chacha_key, kat_chacha_nonce, kat_chacha_aad,
                                    sizeof kat_chacha_aad, (const byte *)kat_chacha_pt, N, ct,
                                    tag) != 0)
        return "encryption failed to run";
    if (memcmp(ct, want_ct, sizeof ct) != 0 || memcmp(tag, kat_chacha_tag, sizeof tag) != 0)
        return "wrong ciphertext or tag";
    if (wc_ChaCha20Poly1305_Decrypt(kat_chacha_key, kat_chacha_nonce, kat_chacha_aad,
                                    sizeof kat_chacha_aad, kat_chacha_ct, N, kat_chacha_tag,
                                    pt) != 0 ||
        memcmp(pt, kat_chacha_pt, sizeof pt) != 0)
        return "decryption of the known ciphertext failed";
    memcpy(tag, kat_chacha_tag, sizeof tag);
    tag[0] ^= 0x80;
    if (wc_ChaCha20Poly1305_Decrypt(kat_chacha_key, kat_chacha_nonce, kat_chacha_aad,
                                    sizeof kat_chacha_aad, kat_chacha_ct, N, tag, pt) == 0)
        return "a tampered tag was accepted";
    return NULL;
}

static const char *kat_x25519(int corrupt)
{
    uint8_t want[32], pub[32], shared[32];
    word32 shared_len = sizeof shared;
    curve25519_key *keys = malloc(2 * sizeof *keys);
    const char *why = NULL;

    expect(want, kat_x25519_shared, sizeof want, corrupt);
    if (!keys)
        return "out of memory";
    if (wc_curve25519_init(&keys[0]) != 0 || wc_curve25519_init(&keys[1]) != 0) {
        free(keys);
        return "cannot initialise";
    }
    if (wc_curve25519_make_pub((int)sizeof pub, pub, (int)sizeof kat_x25519_a_priv,
                               kat_x25519_a_priv) != 0 ||
        memcmp(pub, kat_x25519_a_pub, sizeof pub) != 0)
        why = "wrong public key for the known private key";
    else if (wc_curve25519_import_private_raw_ex(kat_x25519_a_priv, sizeof kat_x25519_a_priv,
                                                 kat_x25519_a_pub, sizeof kat_x25519_a_pub,
                                                 &keys[0], EC25519_LITTLE_ENDIAN) != 0 ||
             wc_curve25519_import_public_ex(kat_x25519_b_pub, sizeof kat_x25519_b_pub,
                                            &keys[1], EC25519_LITTLE_ENDIAN) != 0)
        why = "cannot import the keys";
    else if (wc_curve25519_shared_secret_ex(&keys[0], &keys[1], shared, &shared_len,
                                            EC25519_LITTLE_ENDIAN) != 0 ||
             shared_len != sizeof shared)
        why = "key agreement failed to run";
    else if (memcmp(shared, want, sizeof shared) != 0)
        why = "wrong shared secret";
    wc_curve25519_free(&keys[0]);
    wc_curve25519_free(&keys[1]);
    memset(keys, 0, 2 * sizeof *keys);
    free(keys);
    return why;
}

static const char *kat_ecdh(int corrupt)
{
    uint8_t want[32], shared[32];
    word32 shared_len = sizeof shared;
    ecc_key *keys = malloc(2 * sizeof *keys);
    WC_RNG *rng = malloc(sizeof *rng);
    const char *why = NULL;

    expect(want, kat_ecdh_shared, sizeof want, corrupt);
    if (!keys || !rng) {
        free(keys);
        free(rng);
        return "out of memory";
    }
    /* A generator for the blinding timing-resistant builds ask for. */
    if (wc_InitRng(rng) != 0) {
        free(keys);
        free(rng);
        return "no random numbers";
    }
    if (wc_ecc_init(&keys[0]) != 0 || wc_ecc_init(&keys[1]) != 0) {
        why = "cannot initialise";
    } else {
        if (wc_ecc_import_unsigned(&keys[0], kat_ecdh_qx, kat_ecdh_qy, kat_ecdh_d,
                                   ECC_SECP256R1) != 0 ||
            wc_ecc_import_unsigned(&keys[1], kat_ecdh_peer_x, kat_ecdh_peer_y, NULL,
                                   ECC_SECP256R1) != 0 ||
            wc_ecc_set_rng(&keys[0], rng) != 0)
            why = "cannot import the keys";
        else if (wc_ecc_shared_secret(&keys[0], &keys[1], shared, &shared_len) != 0 ||
                 shared_len != sizeof shared)
            why = "key agreement failed to run";
        else if (memcmp(shared, want, sizeof shared) != 0)
            why = "wrong shared secret";
        wc_ecc_free(&keys[0]);
        wc_ecc_free(&keys[1]);
    }
    memset(keys, 0, 2 * sizeof *keys);
    free(keys);
    wc_FreeRng(rng);
    free(rng);
    return why;
}

/* Verify sig over the known hash with the known public key: 1 valid,
 * 0 invalid, -1 could not run. */
static int ecdsa_verify(const uint8_t *sig, size_t sig_len)
{
    ecc_key *key = malloc(sizeof *key);
    int valid = 0, rc = -1;

    if (!key)
        return -1;
    if (wc_ecc_init(key) == 0) {
        if (wc_ecc_import_unsigned(key, kat_ecdsa_qx, kat_ecdsa_qy, NULL, ECC_SECP256R1) == 0 &&
            wc_ecc_verify_hash(sig, (word32)sig_len, kat_ecdsa_hash, sizeof kat_ecdsa_hash,
                               &valid, key) == 0)
            rc = valid == 1;
        wc_ecc_free(key);
    }
    free(key);
    return rc;
}

static const char *kat_ecdsa_verify(int corrupt)
{
    uint8_t sig[sizeof kat_ecdsa_sig], hash[32];
    int rc;

    /* The message's hash, through wolfCrypt, is part of the answer. */
    if (wc_Sha256Hash((const byte *)kat_ecdsa_msg, (word32)strlen(kat_ecdsa_msg), hash) != 0 ||
        memcmp(hash, kat_ecdsa_hash, sizeof hash) != 0)
        return "wrong message hash";
    expect(sig, kat_ecdsa_sig, sizeof sig, corrupt);
    rc = ecdsa_verify(sig, sizeof sig);
    if (rc < 0)
        return "verification failed to run";
    if (rc == 0)
        return "the known signature did not verify";
    sig[sizeof sig - 1] ^= 0x01; /* last byte of s */
    if (ecdsa_verify(sig, sizeof sig) != 0)
        return "a tampered signature verified";
    return NULL;
}

static const char *kat_ecdsa_sign(int corrupt)
{
    uint8_t sig[ECC_MAX_SIG_SIZE];
    word32 sig_len = sizeof sig;
    ecc_key *key = malloc(sizeof *key);
    WC_RNG *rng = malloc(sizeof *rng);
    const char *why = NULL;
    int rc;

    if (!key || !rng) {
        free(key);
        free(rng);
        return "out of memory";
    }
    if (wc_InitRng(rng) != 0) {
        free(key);
        free(rng);
        return "no random numbers";
    }
    if (wc_ecc_init(key) != 0) {
        why = "cannot initialise";
    } else {
        if (wc_ecc_import_unsigned(key, kat_ecdsa_qx, kat_ecdsa_qy, kat_ecdsa_d,
                                   ECC_SECP256R1) != 0)
            why = "cannot import the key";
        else if (wc_ecc_sign_hash(kat_ecdsa_hash, sizeof kat_ecdsa_hash, sig, &sig_len, rng,
                                  key) != 0)
            why = "signing failed to run";
        wc_ecc_free(key);
    }
    memset(key, 0, sizeof *key);
    free(key);
    wc_FreeRng(rng);
    free(rng);
    if (why)
        return why;
    if (corrupt)
        sig[sig_len / 2] ^= 0x01;
    rc = ecdsa_verify(sig, sig_len);
    if (rc < 0)
        return "verification failed to run";
    if (rc == 0)
        return "its own signature did not verify";
    return NULL;
}

static const char *kat_pbkdf2(int corrupt)
{
    uint8_t want[sizeof kat_pbkdf2_key], got[sizeof kat_pbkdf2_key];

    expect(want, kat_pbkdf2_key, sizeof want, corrupt);
    if (wc_PBKDF2(got, (const byte *)kat_pbkdf2_password, (int)strlen(kat_pbkdf2_password),
                  kat_pbkdf2_salt, (int)sizeof kat_pbkdf2_salt, (int)kat_pbkdf2_rounds,
                  (int)sizeof got, WC_SHA512) != 0)
        return "derivation failed to run";
    if (memcmp(got, want, sizeof got) != 0)
        return "wrong derived key";
    return NULL;
}

static const struct {
    const char *name;
    const char *(*run)(int corrupt);
} tests[] = {
    {"sha-256", kat_sha256},
    {"hmac-drbg", kat_drbg},
    {"aes-128-gcm", kat_gcm128},
    {"aes-256-gcm", kat_gcm256},
    {"chacha20-poly1305", kat_chacha},
    {"x25519", kat_x25519},
    {"ecdh-p256", kat_ecdh},
    {"ecdsa-p256-verify", kat_ecdsa_verify},
    {"ecdsa-p256-sign", kat_ecdsa_sign},
    {"pbkdf2-sha512", kat_pbkdf2},
};

int kat_run_all(const char *corrupt, kat_report_fn report, void *ctx)
{
    int failed = 0;

    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        int bad = corrupt != NULL && strcmp(corrupt, tests[i].name) == 0;
        const char *why = tests[i].run(bad);

        if (why)
            failed++;
        report(ctx, tests[i].name, why);
    }
    return failed;
}
