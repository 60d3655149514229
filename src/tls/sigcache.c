/*
 * sigcache.c - remembered certificate signatures: the ECDSA verifications a
 * server context has already done for the certificates clients sent, so a
 * client that comes back (a reconnect, a storm after an outage) costs no
 * second P-256 verify of its certificate by the CA. (docs/PERFORMANCE.md
 * "The cost of a handshake", docs/SECURITY.md S29, ADR-053.)
 *
 * wolfSSL (built with HAVE_PK_CALLBACKS) hands every ECDSA verification of
 * a handshake to tls_ecc_verify(): the signatures of the peer's certificates
 * (ProcessPeerCerts) and the client's CertificateVerify. What is remembered
 * is only the fact "signature S over digest H verifies under public key K"
 * for exact bytes (K, H, S): ECDSA verification is a deterministic function
 * of those bytes, so answering it from memory gives the answer the
 * arithmetic would. Everything else about a certificate (the chain to a
 * configured CA, validity dates against the clock now, CA and key-usage
 * flags, the identity) wolfSSL and src/tls/ check on every handshake as
 * before; and the CertificateVerify (possession of the client's private key,
 * over this handshake's transcript) is always verified, never looked up.
 *
 * Entries are 32-byte tags, SHA-256 over a per-context random salt and the
 * length-prefixed (K, H, S); a hit needs a SHA-256 collision with a
 * signature that verified. The salt also places entries in the table, so
 * nobody outside can aim at a slot. Threads share the table without a lock
 * (each slot a sequence lock: tls/internal.h). The table lives in the server context:
 * a reload (new CAs, new configuration) builds a new context with an empty
 * one. Only successful verifications are stored, so a bad signature is
 * recomputed every time, and fails every time.
 */
#include <stdlib.h>
#include <string.h>

#include "tls/internal.h" /* first: wolfSSL's options.h before its headers */

#include <wolfssl/wolfcrypt/asn_public.h>
#include <wolfssl/wolfcrypt/ecc.h>
#include <wolfssl/wolfcrypt/error-crypt.h>
#include <wolfssl/wolfcrypt/random.h>
#include <wolfssl/wolfcrypt/sha256.h>

bool tls_sigcache_init(tls_sigcache *sc)
{
    WC_RNG rng;
    bool ok;

    memset(sc, 0, sizeof *sc);
    if (wc_InitRng(&rng) != 0)
        return false;
    ok = wc_RNG_GenerateBlock(&rng, sc->salt, sizeof sc->salt) == 0;
    (void)wc_FreeRng(&rng);
    if (!ok)
        return false;
    /* All zero is every slot's initial state (seq 0, empty tag). */
    sc->slots = calloc(TLS_SIGCACHE_SLOTS, sizeof *sc->slots);
    return sc->slots != NULL;
}

void tls_sigcache_free(tls_sigcache *sc)
{
    free(sc->slots);
    sc->slots = NULL;
}

static void put_len(wc_Sha256 *h, size_t len)
{
    uint8_t b[4] = {(uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8),
                    (uint8_t)len};

    (void)wc_Sha256Update(h, b, sizeof b);
}

/* The tag of (key, digest, sig); false if SHA-256 failed. Each part is
 * length-prefixed so that no two different triples hash the same bytes. */
static bool tag_of(const tls_sigcache *sc, const uint8_t *key, size_t key_len,
                   const uint8_t *digest, size_t digest_len, const uint8_t *sig, size_t sig_len,
                   uint8_t tag[TLS_SIGCACHE_TAG])
{
    wc_Sha256 h;
    bool ok;

    if (wc_InitSha256(&h) != 0)
        return false;
    ok = wc_Sha256Update(&h, sc->salt, sizeof sc->salt) == 0;
    put_len(&h, key_len);
    ok = ok && wc_Sha256Update(&h, key, (word32)key_len) == 0;
    put_len(&h, digest_len);
    ok = ok && wc_Sha256Update(&h, digest, (word32)digest_len) == 0;
    put_len(&h, sig_len);
    ok = ok && wc_Sha256Update(&h, sig, (word32)sig_len) == 0;
    ok = ok && wc_Sha256Final(&h, tag) == 0;
    wc_Sha256Free(&h);
    return ok;
}

/* The slot a tag lives in: direct-mapped, a newer entry replaces an older. */
static tls_sigslot *slot_of(const tls_sigcache *sc, const uint64_t tag[TLS_SIGCACHE_WORDS])
{
    uint32_t i = (uint32_t)(tag[0] & 0xffffffu);

    return &sc->slots[i % TLS_SIGCACHE_SLOTS];
}

/* Does sl hold tag, read whole (internal.h: the slot's sequence lock)? A
 * slot being written, or written meanwhile, answers no. No fences (which
 * ThreadSanitizer cannot follow): the words are loaded with acquire and
 * stored with release, so a reader that sees a word a writer stored also
 * sees that writer's odd seq when it reads seq again, and one that reads
 * an even seq the writer stored last sees all of its words. */
static bool slot_holds(tls_sigslot *sl, const uint64_t tag[TLS_SIGCACHE_WORDS])
{
    uint32_t before = atomic_load_explicit(&sl->seq, memory_order_acquire);
    bool same = (before & 1u) == 0;

    for (int i = 0; i < TLS_SIGCACHE_WORDS; i++)
        same = (atomic_load_explicit(&sl->tag[i], memory_order_acquire) == tag[i]) && same;
    return same && atomic_load_explicit(&sl->seq, memory_order_relaxed) == before;
}

/* Store tag in sl, unless another thread is writing it (then that one's
 * entry wins: this is a cache). */
static void slot_store(tls_sigslot *sl, const uint64_t tag[TLS_SIGCACHE_WORDS])
{
    uint32_t seq = atomic_load_explicit(&sl->seq, memory_order_relaxed);

    if ((seq & 1u) != 0 ||
        !atomic_compare_exchange_strong_explicit(&sl->seq, &seq, seq + 1u, memory_order_relaxed,
                                                 memory_order_relaxed))
        return;
    /* Each word's release orders the odd seq before it. */
    for (int i = 0; i < TLS_SIGCACHE_WORDS; i++)
        atomic_store_explicit(&sl->tag[i], tag[i], memory_order_release);
    atomic_store_explicit(&sl->seq, seq + 2u, memory_order_release);
}

/* Verify with wolfCrypt: *result 1 if sig is a valid signature of digest
 * under the DER public key (SubjectPublicKeyInfo), else 0. */
static int ecdsa_verify(const uint8_t *sig, unsigned sig_len, const uint8_t *digest,
                        unsigned digest_len, const uint8_t *key_der, unsigned key_len,
                        int *result)
{
    ecc_key *key = malloc(sizeof *key); /* a few KB: the kernel's stacks are small */
    word32 idx = 0;
    int rc;

    *result = 0;
    if (key == NULL)
        return MEMORY_E;
    rc = wc_ecc_init(key);
    if (rc == 0) {
        rc = wc_EccPublicKeyDecode(key_der, &idx, key, key_len);
        if (rc == 0)
            rc = wc_ecc_verify_hash(sig, sig_len, digest, digest_len, result, key);
        wc_ecc_free(key);
    }
    free(key);
    return rc;
}

int tls_sigcache_verify(tls_sigcache *sc, const uint8_t *sig, unsigned sig_len,
                        const uint8_t *digest, unsigned digest_len, const uint8_t *key_der,
                        unsigned key_len, int *result)
{
    uint8_t bytes[TLS_SIGCACHE_TAG];
    uint64_t tag[TLS_SIGCACHE_WORDS];
    tls_sigslot *slot = NULL;
    int rc;

    if (sc->slots != NULL &&
        tag_of(sc, key_der, key_len, digest, digest_len, sig, sig_len, bytes)) {
        memcpy(tag, bytes, sizeof tag);
        slot = slot_of(sc, tag);
        if (slot_holds(slot, tag)) {
            atomic_fetch_add_explicit(&sc->hits, 1, memory_order_relaxed);
            *result = 1;
            return 0;
        }
    }
    rc = ecdsa_verify(sig, sig_len, digest, digest_len, key_der, key_len, result);
    if (slot != NULL) {
        atomic_fetch_add_explicit(&sc->misses, 1, memory_order_relaxed);
        if (rc == 0 && *result == 1)
            slot_store(slot, tag);
    }
    return rc;
}

int tls_ecc_verify(WOLFSSL *ssl, const unsigned char *sig, unsigned int sig_len,
                   const unsigned char *digest, unsigned int digest_len,
                   const unsigned char *key_der, unsigned int key_len, int *result, void *ctx)
{
    tern_tls_conn *c = ctx; /* wolfSSL_SetEccVerifyCtx(ssl, c) */

    (void)ssl;
    /* The verify callback sets the identity once the leaf verified: every
     * ECDSA verification after that is the CertificateVerify, unique to this
     * handshake, so it is never looked up nor stored. */
    if (c != NULL && c->server != NULL && c->identity == NULL)
        return tls_sigcache_verify(&c->server->sigcache, sig, sig_len, digest, digest_len,
                                   key_der, key_len, result);
    return ecdsa_verify(sig, sig_len, digest, digest_len, key_der, key_len, result);
}
