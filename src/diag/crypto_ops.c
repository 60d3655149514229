/*
 * crypto_ops.c - the wolfCrypt operations of the report's "crypto" section,
 * each timed on the platform's clock (diag_clock.h) through the same
 * wolfCrypt build the TLS uses: the daemon's libwolfssl.a, or the kernel's
 * freestanding wolfSSL (crypto/user_settings.h). Floating-point free: the
 * kernel compiles this file with -mgeneral-regs-only.
 *
 * Each measurement sets its keys and buffers up outside the timed span,
 * then runs the operation once and again until the deadline. Cheap
 * operations run in batches between clock reads so reading the clock does
 * not weigh on their cost.
 */
#include "diag/crypto_ops.h"

#include "diag/crypto_stats.h"

#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/settings.h>
#include <wolfssl/wolfcrypt/aes.h>
#include <wolfssl/wolfcrypt/chacha20_poly1305.h>
#include <wolfssl/wolfcrypt/cpuid.h>
#include <wolfssl/wolfcrypt/curve25519.h>
#include <wolfssl/wolfcrypt/ecc.h>
#include <wolfssl/wolfcrypt/error-crypt.h>
#include <wolfssl/wolfcrypt/random.h>
#include <wolfssl/wolfcrypt/sha256.h>
#include <wolfssl/version.h>

#include <stdlib.h>
#include <string.h>

static const char *const names[DIAG_OP_COUNT] = {
    [DIAG_OP_ECDSA_P256_SIGN] = "ecdsa_p256_sign",
    [DIAG_OP_ECDSA_P256_VERIFY] = "ecdsa_p256_verify",
    [DIAG_OP_X25519_KEYGEN] = "x25519_keygen",
    [DIAG_OP_X25519_SHARED] = "x25519_shared_secret",
    [DIAG_OP_ECDH_P256_KEYGEN] = "ecdh_p256_keygen",
    [DIAG_OP_ECDH_P256_SHARED] = "ecdh_p256_shared_secret",
    [DIAG_OP_SHA256_64] = "sha256_64_bytes",
    [DIAG_OP_SHA256_BULK] = "sha256",
    [DIAG_OP_AES128_GCM] = "aes128_gcm",
    [DIAG_OP_AES256_GCM] = "aes256_gcm",
    [DIAG_OP_CHACHA20_POLY1305] = "chacha20_poly1305",
};

const char *diag_op_name(diag_op op)
{
    return (unsigned)op < DIAG_OP_COUNT ? names[op] : "unknown";
}

bool diag_op_is_bulk(diag_op op)
{
    return op == DIAG_OP_SHA256_BULK || op == DIAG_OP_AES128_GCM || op == DIAG_OP_AES256_GCM ||
           op == DIAG_OP_CHACHA20_POLY1305;
}

const char *diag_crypto_library(void)
{
    return "wolfSSL " LIBWOLFSSL_VERSION_STRING;
}

uint64_t diag_op_ns(const diag_op_result *r)
{
    return r->iterations ? r->median_ns : 0;
}

/* ---- which implementation wolfSSL dispatches to ----
 * wolfSSL 5.7 picks its x86_64 code at run time from cpuid_get_flags()
 * (the kernel clears AVX there when it could not enable the state:
 * crypto/setup.c). These mirror the choices in its aes.c (AES-GCM),
 * sha256.c (Sha256 transform), chacha.c and poly1305.c, fe_x25519_asm.S
 * (fe_init: BMI2+ADX) and sp_x86_64.c (BMI2+ADX), for the build options
 * tern uses (USE_INTEL_SPEEDUP, WOLFSSL_AESNI, WOLFSSL_SP_X86_64_ASM). */
#ifdef HAVE_CPUID_INTEL
static word32 flags(void)
{
    return cpuid_get_flags();
}
#define HAS(f, bit) (((f) & (bit)) != 0)
#else
static word32 flags(void)
{
    return 0;
}
#define HAS(f, bit) ((void)(f), false)
#endif

static const char *impl_of(diag_op op, int aes_ni)
{
    word32 f = flags();
    bool avx1 = HAS(f, CPUID_AVX1), avx2 = HAS(f, CPUID_AVX2), bmi2 = HAS(f, CPUID_BMI2);
    bool bmi2_adx = bmi2 && HAS(f, CPUID_ADX), sha_ni = HAS(f, CPUID_SHA);

    switch (op) {
    case DIAG_OP_ECDSA_P256_SIGN:
    case DIAG_OP_ECDSA_P256_VERIFY:
    case DIAG_OP_ECDH_P256_KEYGEN:
    case DIAG_OP_ECDH_P256_SHARED:
#if defined(WOLFSSL_HAVE_SP_ECC) && defined(WOLFSSL_SP_X86_64_ASM)
        return bmi2_adx ? "SP P-256, x86_64 asm (BMI2/ADX)" : "SP P-256, x86_64 asm";
#else
        return "wolfCrypt C";
#endif
    case DIAG_OP_X25519_KEYGEN:
    case DIAG_OP_X25519_SHARED:
#if defined(USE_INTEL_SPEEDUP) && defined(CURVE25519_SMALL) == 0
        return bmi2_adx ? "x86_64 asm (BMI2/ADX)" : "x86_64 asm";
#else
        return "C";
#endif
    case DIAG_OP_SHA256_64:
    case DIAG_OP_SHA256_BULK:
#ifdef USE_INTEL_SPEEDUP
        if (sha_ni)
            return avx1 ? "SHA-NI (AVX)" : "SHA-NI (SSE2)";
        if (avx2)
            return bmi2 ? "AVX2 asm (RORX)" : "AVX2 asm";
        if (avx1)
            return bmi2 ? "AVX asm (RORX)" : "AVX asm";
#endif
        return "C";
    case DIAG_OP_AES128_GCM:
    case DIAG_OP_AES256_GCM:
        if (aes_ni)
            return avx2 ? "AES-NI, AVX2 asm" : avx1 ? "AES-NI, AVX asm" : "AES-NI asm";
        return "C (GCM 4-bit table)";
    case DIAG_OP_CHACHA20_POLY1305:
#ifdef USE_INTEL_SPEEDUP
        /* Poly1305's non-AVX2 code (named _avx in wolfSSL) is scalar x86_64. */
        return avx2 ? "ChaCha20 AVX2 asm, Poly1305 AVX2 asm"
               : avx1 ? "ChaCha20 AVX asm, Poly1305 x86_64 asm"
                      : "ChaCha20 x86_64 asm, Poly1305 x86_64 asm";
#else
        return "C";
#endif
    case DIAG_OP_COUNT:
        break;
    }
    return "unknown";
}

/* ---- set-up and one step of each operation ---- */

typedef struct bench {
    WC_RNG rng;
    bool rng_up;
    ecc_key ecc, ecc_peer;
    bool ecc_up, ecc_peer_up;
    curve25519_key x, x_peer;
    bool x_up, x_peer_up;
    Aes aes;
    bool aes_up;
    wc_Sha256 sha;
    bool sha_up;
    byte hash[WC_SHA256_DIGEST_SIZE];
    byte sig[ECC_MAX_SIG_SIZE];
    word32 sig_len;
    byte key[32], iv[12], aad[13], tag[16];
    byte secret[66];
    byte *in, *out; /* DIAG_BULK_BYTES each, bulk operations only */
    uint64_t ns[DIAG_OP_SAMPLES], cyc[DIAG_OP_SAMPLES];
} bench;

static int ecc_new(bench *b, ecc_key *k, bool *up)
{
    int rc = wc_ecc_init(k);

    if (rc != 0)
        return rc;
    *up = true;
#ifdef ECC_TIMING_RESISTANT
    /* Blinding of the private key in shared-secret and sign needs an RNG. */
    if ((rc = wc_ecc_set_rng(k, &b->rng)) != 0)
        return rc;
#endif
    return wc_ecc_make_key_ex(&b->rng, 32, k, ECC_SECP256R1);
}

static int x25519_new(bench *b, curve25519_key *k, bool *up)
{
    int rc = wc_curve25519_init(k);

    if (rc != 0)
        return rc;
    *up = true;
    return wc_curve25519_make_key(&b->rng, CURVE25519_KEYSIZE, k);
}

/* Keys, buffers and contexts for op; 0 or a wolfCrypt error. */
static int setup(bench *b, diag_op op)
{
    int rc;

    memset(b->key, 0x5a, sizeof b->key);
    memset(b->iv, 0xa5, sizeof b->iv);
    memset(b->aad, 0x17, sizeof b->aad);
    memset(b->hash, 0x3c, sizeof b->hash);
    if ((rc = wc_InitRng(&b->rng)) != 0)
        return rc;
    b->rng_up = true;
    if (diag_op_is_bulk(op) || op == DIAG_OP_SHA256_64) {
        b->in = calloc(1, DIAG_BULK_BYTES);
        b->out = calloc(1, DIAG_BULK_BYTES);
        if (b->in == NULL || b->out == NULL)
            return MEMORY_E;
    }
    switch (op) {
    case DIAG_OP_ECDSA_P256_SIGN:
    case DIAG_OP_ECDH_P256_KEYGEN:
        return ecc_new(b, &b->ecc, &b->ecc_up);
    case DIAG_OP_ECDSA_P256_VERIFY:
        if ((rc = ecc_new(b, &b->ecc, &b->ecc_up)) != 0)
            return rc;
        b->sig_len = sizeof b->sig;
        return wc_ecc_sign_hash(b->hash, sizeof b->hash, b->sig, &b->sig_len, &b->rng, &b->ecc);
    case DIAG_OP_ECDH_P256_SHARED:
        if ((rc = ecc_new(b, &b->ecc, &b->ecc_up)) != 0)
            return rc;
        return ecc_new(b, &b->ecc_peer, &b->ecc_peer_up);
    case DIAG_OP_X25519_KEYGEN:
        return x25519_new(b, &b->x, &b->x_up);
    case DIAG_OP_X25519_SHARED:
        if ((rc = x25519_new(b, &b->x, &b->x_up)) != 0)
            return rc;
        return x25519_new(b, &b->x_peer, &b->x_peer_up);
    case DIAG_OP_SHA256_64:
        return 0;
    case DIAG_OP_SHA256_BULK:
        if ((rc = wc_InitSha256(&b->sha)) != 0)
            return rc;
        b->sha_up = true;
        return 0;
    case DIAG_OP_AES128_GCM:
    case DIAG_OP_AES256_GCM:
        if ((rc = wc_AesInit(&b->aes, NULL, INVALID_DEVID)) != 0)
            return rc;
        b->aes_up = true;
        return wc_AesGcmSetKey(&b->aes, b->key, op == DIAG_OP_AES128_GCM ? 16 : 32);
    case DIAG_OP_CHACHA20_POLY1305:
        return 0;
    case DIAG_OP_COUNT:
        break;
    }
    return BAD_FUNC_ARG;
}

static void teardown(bench *b)
{
    if (b->sha_up) {
        (void)wc_Sha256Final(&b->sha, b->hash);
        wc_Sha256Free(&b->sha);
    }
    if (b->aes_up)
        wc_AesFree(&b->aes);
    if (b->x_up)
        wc_curve25519_free(&b->x);
    if (b->x_peer_up)
        wc_curve25519_free(&b->x_peer);
    if (b->ecc_up)
        wc_ecc_free(&b->ecc);
    if (b->ecc_peer_up)
        wc_ecc_free(&b->ecc_peer);
    if (b->rng_up)
        wc_FreeRng(&b->rng);
    free(b->in);
    free(b->out);
}

/* One operation; 0 or a wolfCrypt error. */
static int step(bench *b, diag_op op)
{
    word32 len;
    int rc, ok = 0;

    switch (op) {
    case DIAG_OP_ECDSA_P256_SIGN:
        b->sig_len = sizeof b->sig;
        return wc_ecc_sign_hash(b->hash, sizeof b->hash, b->sig, &b->sig_len, &b->rng, &b->ecc);
    case DIAG_OP_ECDSA_P256_VERIFY:
        rc = wc_ecc_verify_hash(b->sig, b->sig_len, b->hash, sizeof b->hash, &ok, &b->ecc);
        return rc != 0 ? rc : ok == 1 ? 0 : SIG_VERIFY_E;
    case DIAG_OP_X25519_KEYGEN:
        /* A fresh ephemeral key, as a TLS 1.3 server makes for each handshake. */
        return wc_curve25519_make_key(&b->rng, CURVE25519_KEYSIZE, &b->x);
    case DIAG_OP_X25519_SHARED:
        len = sizeof b->secret;
        return wc_curve25519_shared_secret(&b->x, &b->x_peer, b->secret, &len);
    case DIAG_OP_ECDH_P256_KEYGEN:
        /* A new key object each time, as each handshake's ephemeral key is. */
        wc_ecc_free(&b->ecc);
        b->ecc_up = false;
        return ecc_new(b, &b->ecc, &b->ecc_up);
    case DIAG_OP_ECDH_P256_SHARED:
        len = sizeof b->secret;
        return wc_ecc_shared_secret(&b->ecc, &b->ecc_peer, b->secret, &len);
    case DIAG_OP_SHA256_64:
        return wc_Sha256Hash(b->in, 64, b->hash);
    case DIAG_OP_SHA256_BULK:
        return wc_Sha256Update(&b->sha, b->in, DIAG_BULK_BYTES);
    case DIAG_OP_AES128_GCM:
    case DIAG_OP_AES256_GCM:
        return wc_AesGcmEncrypt(&b->aes, b->out, b->in, DIAG_BULK_BYTES, b->iv, sizeof b->iv,
                                b->tag, sizeof b->tag, b->aad, sizeof b->aad);
    case DIAG_OP_CHACHA20_POLY1305:
        return wc_ChaCha20Poly1305_Encrypt(b->key, b->iv, b->aad, sizeof b->aad, b->in,
                                           DIAG_BULK_BYTES, b->out, b->tag);
    case DIAG_OP_COUNT:
        break;
    }
    return BAD_FUNC_ARG;
}

/* Operations between two clock reads: enough that the read is noise next
 * to a 64-byte hash (~0.1-1 us), one for everything slower. */
static unsigned batch_of(diag_op op)
{
    return op == DIAG_OP_SHA256_64 ? 32u : 1u;
}

void diag_op_measure(diag_op op, const struct diag_clock *clk, uint64_t deadline_ns,
                     diag_op_result *r)
{
    bench *b = calloc(1, sizeof *b);
    unsigned batch = batch_of(op);
    uint64_t t0, c0 = 0, c1 = 0, now;
    unsigned n = 0;
    int rc;

    memset(r, 0, sizeof *r);
    r->impl = impl_of(op, 0);
    if (b == NULL) {
        r->why = "out of memory";
        return;
    }
    if ((rc = setup(b, op)) != 0) {
        r->why = "wolfCrypt refused the set-up";
        goto done;
    }
#ifdef WOLFSSL_AESNI
    if (op == DIAG_OP_AES128_GCM || op == DIAG_OP_AES256_GCM)
        r->impl = impl_of(op, b->aes.use_aesni); /* what SetKey chose for this key */
#endif
    t0 = now = clk->now_ns(clk->ctx);
    if (clk->cycles != NULL)
        c0 = c1 = clk->cycles(clk->ctx);
    do {
        uint64_t s0 = now, sc0 = c1;

        for (unsigned i = 0; i < batch; i++) {
            if ((rc = step(b, op)) != 0) {
                r->iterations = 0;
                r->why = "wolfCrypt failed the operation";
                goto done;
            }
        }
        r->iterations += batch;
        now = clk->now_ns(clk->ctx);
        if (clk->cycles != NULL)
            c1 = clk->cycles(clk->ctx);
        b->ns[n] = now - s0;
        b->cyc[n] = c1 - sc0;
        n++;
    } while (n < DIAG_OP_SAMPLES && now < deadline_ns);
    r->elapsed_ns = now - t0;
    r->cycles = c1 - c0;
    r->samples = n;
    diag_sort_u64(b->ns, n);
    diag_sort_u64(b->cyc, n);
    r->median_ns = diag_rank_u64(b->ns, n, 50) / batch;
    r->median_cycles = diag_rank_u64(b->cyc, n, 50) / batch;
    if (diag_op_is_bulk(op))
        r->bytes = r->iterations * DIAG_BULK_BYTES;
done:
    teardown(b);
    free(b);
}
