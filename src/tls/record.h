/*
 * record.h - tern's own TLS 1.3 record protection (RFC 8446 section 5),
 * used by src/tls/conn.c once a server handshake is done: the WOLFSSL
 * object is freed and an idle connection keeps only what this needs, the
 * traffic secrets, keys, IVs and sequence numbers of both directions
 * (~140 bytes instead of wolfSSL's ~3 KB session; conn.c keeps them
 * packed by suite and hands this structure, on the stack, to each call).
 *
 * Pure functions over bytes and this state, on wolfCrypt's AEADs
 * (AES-128/256-GCM, ChaCha20-Poly1305: the TLS 1.3 suites tern allows) and
 * its HKDF-Expand-Label. No allocation: a cipher's key schedule lives on
 * the stack for one call, so nothing of it stays with an idle connection.
 * Internal to src/tls/.
 */
#ifndef TERN_TLS_RECORD_H
#define TERN_TLS_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    TLS_REC_HEADER = 5,           /* type, legacy version (2), length (2) */
    TLS_REC_TAG = 16,             /* AEAD tag of every suite */
    TLS_REC_PLAIN_MAX = 16384,    /* content bytes in one record (2^14) */
    TLS_REC_BODY_MAX = 16384 + 256, /* TLSCiphertext.length limit (2^14 + 256) */
    TLS_REC_SECRET_MAX = 48,      /* SHA-384 */
    TLS_REC_KEY_MAX = 32,
    TLS_REC_IV = 12,
};

/* TLS content types. */
enum {
    TLS_CT_CHANGE_CIPHER_SPEC = 20,
    TLS_CT_ALERT = 21,
    TLS_CT_HANDSHAKE = 22,
    TLS_CT_APPLICATION_DATA = 23,
};

typedef enum tls_rec_suite {
    TLS_REC_NONE = 0,
    TLS_REC_AES128_GCM_SHA256,       /* 0x1301 */
    TLS_REC_AES256_GCM_SHA384,       /* 0x1302 */
    TLS_REC_CHACHA20_POLY1305_SHA256, /* 0x1303 */
} tls_rec_suite;

/* One direction: its traffic secret (for KeyUpdate), the key and IV
 * derived from it, and the next record's sequence number. */
typedef struct tls_rec_dir {
    uint8_t secret[TLS_REC_SECRET_MAX];
    uint8_t key[TLS_REC_KEY_MAX];
    uint8_t iv[TLS_REC_IV];
    uint64_t seq;
} tls_rec_dir;

typedef struct tls_rec {
    tls_rec_dir rd, wr; /* what we read (the peer's keys), what we write */
    uint8_t suite;      /* tls_rec_suite */
} tls_rec;

typedef enum tls_rec_result {
    TLS_REC_OK = 0,
    TLS_REC_BAD_MAC,        /* authentication failed: bad_record_mac */
    TLS_REC_OVERFLOW,       /* too long: record_overflow */
    TLS_REC_UNEXPECTED,     /* not an encrypted record, or no content type: unexpected_message */
    TLS_REC_EXHAUSTED,      /* sequence number would wrap */
    TLS_REC_CRYPTO,         /* wolfCrypt refused (should not happen) */
} tls_rec_result;

/* The suite of an IANA cipher suite number (0x1301...), NONE if not ours. */
tls_rec_suite tls_rec_suite_of(unsigned iana);
/* Hash length of a suite's HKDF: the traffic secret's size. */
size_t tls_rec_secret_len(tls_rec_suite s);
/* AEAD key length of a suite (16 or 32). */
size_t tls_rec_key_len(tls_rec_suite s);
/* "TLS13-AES128-GCM-SHA256" ... (wolfSSL's names, as the logs had them). */
const char *tls_rec_suite_name(tls_rec_suite s);

/* Install a traffic secret (secret_len = tls_rec_secret_len) in d: key
 * and IV derived, sequence number 0. False if wolfCrypt fails. */
bool tls_rec_set_secret(tls_rec_dir *d, tls_rec_suite s, const uint8_t *secret,
                        size_t secret_len);
/* KeyUpdate: the next generation of d's secret (RFC 8446 7.2). */
bool tls_rec_update(tls_rec_dir *d, tls_rec_suite s);

/* Total bytes of the record starting at buf (header included), or 0 when
 * fewer than TLS_REC_HEADER bytes are there to tell. */
size_t tls_rec_size(const uint8_t *buf, size_t len);
/* Bytes one record with len content bytes takes once sealed. */
static inline size_t tls_rec_sealed_size(size_t len)
{
    return TLS_REC_HEADER + len + 1 + TLS_REC_TAG;
}

/* Protect len (<= TLS_REC_PLAIN_MAX) bytes of content type `type` with
 * r->wr into out (tls_rec_sealed_size(len) bytes; may not overlap in). */
tls_rec_result tls_rec_seal(tls_rec *r, uint8_t type, const uint8_t *in, size_t len,
                            uint8_t *out);

/*
 * Open one whole record (rec_len = tls_rec_size(rec) bytes, header
 * included) with r->rd into out, which has room for rec_len - 5 - 16
 * bytes (may not overlap rec). On TLS_REC_OK: *type is the inner content
 * type and the first *len bytes of out its content (padding removed).
 * Nothing of r changes unless the record authenticates.
 */
tls_rec_result tls_rec_open(tls_rec *r, const uint8_t *rec, size_t rec_len, uint8_t *out,
                            uint8_t *type, size_t *len);

/* Overwrite secrets and keys (before freeing). */
void tls_rec_wipe(tls_rec *r);

#endif
