/*
 * record.c - TLS 1.3 record protection on wolfCrypt (see record.h): key
 * derivation from traffic secrets, KeyUpdate, sealing and opening records.
 *
 * Per record: nonce = IV XOR the 64-bit sequence number (left-padded to 12
 * bytes), additional data = the 5-byte record header, plaintext =
 * content || content type || zero padding (RFC 8446 5.2, 5.3). The AES key
 * schedule is set up on the stack for each record and wiped after: that is
 * a few hundred nanoseconds with AES-NI, and it is what lets an idle
 * connection hold 2 x 92 bytes of keys instead of two ~1 KB cipher states.
 */
#include "tls/record.h"

#include <string.h>

#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/aes.h>
#include <wolfssl/wolfcrypt/chacha20_poly1305.h>
#include <wolfssl/wolfcrypt/hash.h>
#include <wolfssl/wolfcrypt/kdf.h>

static void wipe(void *p, size_t n)
{
    volatile uint8_t *v = p;

    while (n-- > 0)
        *v++ = 0;
}

tls_rec_suite tls_rec_suite_of(unsigned iana)
{
    switch (iana) {
    case 0x1301:
        return TLS_REC_AES128_GCM_SHA256;
    case 0x1302:
        return TLS_REC_AES256_GCM_SHA384;
    case 0x1303:
        return TLS_REC_CHACHA20_POLY1305_SHA256;
    default:
        return TLS_REC_NONE;
    }
}

size_t tls_rec_secret_len(tls_rec_suite s)
{
    return s == TLS_REC_AES256_GCM_SHA384 ? 48 : 32;
}

size_t tls_rec_key_len(tls_rec_suite s)
{
    return s == TLS_REC_AES128_GCM_SHA256 ? 16 : 32;
}

const char *tls_rec_suite_name(tls_rec_suite s)
{
    switch (s) {
    case TLS_REC_AES128_GCM_SHA256:
        return "TLS13-AES128-GCM-SHA256";
    case TLS_REC_AES256_GCM_SHA384:
        return "TLS13-AES256-GCM-SHA384";
    case TLS_REC_CHACHA20_POLY1305_SHA256:
        return "TLS13-CHACHA20-POLY1305-SHA256";
    default:
        return "none";
    }
}

/* HKDF-Expand-Label(secret, label, "", len) (RFC 8446 7.1). */
static bool expand_label(tls_rec_suite s, const uint8_t *secret, const char *label,
                         uint8_t *out, size_t len)
{
    static const uint8_t protocol[] = "tls13 ";

    return wc_Tls13_HKDF_Expand_Label(out, (word32)len, secret, (word32)tls_rec_secret_len(s),
                                      protocol, sizeof protocol - 1, (const byte *)label,
                                      (word32)strlen(label), NULL, 0,
                                      s == TLS_REC_AES256_GCM_SHA384 ? WC_SHA384 : WC_SHA256) ==
           0;
}

static bool derive(tls_rec_dir *d, tls_rec_suite s)
{
    d->seq = 0;
    return expand_label(s, d->secret, "key", d->key, tls_rec_key_len(s)) &&
           expand_label(s, d->secret, "iv", d->iv, TLS_REC_IV);
}

bool tls_rec_set_secret(tls_rec_dir *d, tls_rec_suite s, const uint8_t *secret,
                        size_t secret_len)
{
    if (s == TLS_REC_NONE || secret_len != tls_rec_secret_len(s))
        return false;
    memcpy(d->secret, secret, secret_len);
    return derive(d, s);
}

bool tls_rec_update(tls_rec_dir *d, tls_rec_suite s)
{
    uint8_t next[TLS_REC_SECRET_MAX];
    bool ok = expand_label(s, d->secret, "traffic upd", next, tls_rec_secret_len(s));

    if (ok) {
        memcpy(d->secret, next, tls_rec_secret_len(s));
        ok = derive(d, s);
    }
    wipe(next, sizeof next);
    return ok;
}

size_t tls_rec_size(const uint8_t *buf, size_t len)
{
    if (len < TLS_REC_HEADER)
        return 0;
    return TLS_REC_HEADER + ((size_t)buf[3] << 8 | buf[4]);
}

static void nonce_of(const tls_rec_dir *d, uint8_t nonce[TLS_REC_IV])
{
    memcpy(nonce, d->iv, TLS_REC_IV);
    for (int i = 0; i < 8; i++)
        nonce[TLS_REC_IV - 1 - i] ^= (uint8_t)(d->seq >> (8 * i));
}

/* One AEAD operation with d's key: seal (encrypt) or open in -> out. */
static int aead(const tls_rec_dir *d, tls_rec_suite s, bool seal, const uint8_t *aad,
                const uint8_t *in, size_t len, uint8_t *out, uint8_t tag[TLS_REC_TAG])
{
    uint8_t nonce[TLS_REC_IV];
    int rc;

    nonce_of(d, nonce);
    if (s == TLS_REC_CHACHA20_POLY1305_SHA256) {
        rc = seal ? wc_ChaCha20Poly1305_Encrypt(d->key, nonce, aad, TLS_REC_HEADER, in,
                                                (word32)len, out, tag)
                  : wc_ChaCha20Poly1305_Decrypt(d->key, nonce, aad, TLS_REC_HEADER, in,
                                                (word32)len, tag, out);
    } else {
        Aes aes;

        rc = wc_AesInit(&aes, NULL, INVALID_DEVID);
        if (rc == 0) {
            rc = wc_AesGcmSetKey(&aes, d->key, (word32)tls_rec_key_len(s));
            if (rc == 0 && seal)
                rc = wc_AesGcmEncrypt(&aes, out, in, (word32)len, nonce, TLS_REC_IV, tag,
                                      TLS_REC_TAG, aad, TLS_REC_HEADER);
            else if (rc == 0)
                rc = wc_AesGcmDecrypt(&aes, out, in, (word32)len, nonce, TLS_REC_IV, tag,
                                      TLS_REC_TAG, aad, TLS_REC_HEADER);
            wc_AesFree(&aes);
        }
        wipe(&aes, sizeof aes);
    }
    return rc;
}

tls_rec_result tls_rec_seal(tls_rec *r, uint8_t type, const uint8_t *in, size_t len,
                            uint8_t *out)
{
    size_t body = len + 1 + TLS_REC_TAG;
    tls_rec_suite s = (tls_rec_suite)r->suite;

    if (len > TLS_REC_PLAIN_MAX)
        return TLS_REC_OVERFLOW;
    if (r->wr.seq == UINT64_MAX)
        return TLS_REC_EXHAUSTED;
    out[0] = TLS_CT_APPLICATION_DATA; /* opaque_type */
    out[1] = 3;
    out[2] = 3;
    out[3] = (uint8_t)(body >> 8);
    out[4] = (uint8_t)body;
    memcpy(out + TLS_REC_HEADER, in, len);
    out[TLS_REC_HEADER + len] = type; /* TLSInnerPlaintext: no padding */
    if (aead(&r->wr, s, true, out, out + TLS_REC_HEADER, len + 1, out + TLS_REC_HEADER,
             out + TLS_REC_HEADER + len + 1) != 0)
        return TLS_REC_CRYPTO;
    r->wr.seq++;
    return TLS_REC_OK;
}

tls_rec_result tls_rec_open(tls_rec *r, const uint8_t *rec, size_t rec_len, uint8_t *out,
                            uint8_t *type, size_t *len)
{
    size_t body = rec_len - TLS_REC_HEADER, n;
    uint8_t tag[TLS_REC_TAG];

    /* After the handshake only application_data records are valid
     * (a ChangeCipherSpec or a plaintext alert now is a protocol error). */
    if (rec[0] != TLS_CT_APPLICATION_DATA || rec[1] != 3 || rec[2] != 3)
        return TLS_REC_UNEXPECTED;
    if (body > TLS_REC_BODY_MAX)
        return TLS_REC_OVERFLOW;
    if (body < 1 + TLS_REC_TAG) /* no room for a content type: cannot authenticate */
        return TLS_REC_BAD_MAC;
    if (r->rd.seq == UINT64_MAX)
        return TLS_REC_EXHAUSTED;
    n = body - TLS_REC_TAG;
    memcpy(tag, rec + rec_len - TLS_REC_TAG, TLS_REC_TAG);
    if (aead(&r->rd, (tls_rec_suite)r->suite, false, rec, rec + TLS_REC_HEADER, n, out, tag) !=
        0) {
        wipe(out, n);
        return TLS_REC_BAD_MAC;
    }
    r->rd.seq++;
    /* The content type is the last non-zero byte; zeros after it are padding. */
    while (n > 0 && out[n - 1] == 0)
        n--;
    if (n == 0)
        return TLS_REC_UNEXPECTED;
    *type = out[n - 1];
    *len = n - 1;
    if (*len > TLS_REC_PLAIN_MAX)
        return TLS_REC_OVERFLOW;
    return TLS_REC_OK;
}

void tls_rec_wipe(tls_rec *r)
{
    wipe(r, sizeof *r);
}
