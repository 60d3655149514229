/*
 * opnames.c - the subject names of the operator CAs, so that the operator
 * check asks wolfSSL only about certificates an operator CA could have
 * issued.
 *
 * Why: the operator role is decided by verifying the client's leaf once more
 * against a certificate manager holding only the operator CAs (verify.c).
 * For an ordinary client that manager finds no signer and says no, but only
 * after parsing the whole certificate again: ~19,000 instructions of every
 * mutual-TLS handshake (docs/PERFORMANCE.md, "The cost of a handshake").
 * wolfSSL accepts a signer only when its subject name hash equals the leaf's
 * issuer name hash (ParseCertRelative drops a signer found by key id whose
 * name differs), so a leaf whose issuer hash is none of the operator CAs'
 * subject hashes cannot verify against that manager: the answer "no" needs
 * no second parse. The identity parse (identity.c) gives the leaf's issuer
 * hash for free.
 *
 * The list is only a filter in front of the manager, never a replacement:
 * a match still goes through the full verification. When the bundle holds
 * anything this walk does not understand (a PEM block other than
 * CERTIFICATE, a certificate it cannot parse), the filter is off and every
 * leaf is asked about, as before: a gap here must never cost an operator
 * the role.
 */
#include <stdlib.h>
#include <string.h>

#include "tls/internal.h" /* first: wolfSSL's options.h before its headers */

#include <wolfssl/wolfcrypt/asn.h>
#include <wolfssl/wolfcrypt/asn_public.h>

/* wolfSSL's name hashes are SHA-1 or SHA-256 by build (KEYID_SIZE): kept in
 * TLS_NAME_HASH bytes, zero-padded, so both compare the same way. */
_Static_assert(KEYID_SIZE <= TLS_NAME_HASH, "TLS_NAME_HASH is shorter than wolfSSL's KEYID_SIZE");

static const char pem_begin[] = "-----BEGIN ";
static const char cert_begin[] = "-----BEGIN CERTIFICATE-----";
static const char cert_end[] = "-----END CERTIFICATE-----";

/* First occurrence of the NUL-terminated needle in hay[0, len), or NULL
 * (memmem is a GNU extension; the kernel's libc need not have it). */
static const uint8_t *find(const uint8_t *hay, size_t len, const char *needle)
{
    size_t n = strlen(needle);

    for (size_t i = 0; len >= n && i <= len - n; i++)
        if (hay[i] == (uint8_t)needle[0] && memcmp(hay + i, needle, n) == 0)
            return hay + i;
    return NULL;
}

/* The subject name hash of one PEM certificate (pem, len: from its BEGIN
 * line to the end of its END line) into out. False when wolfSSL cannot
 * read it. */
static bool subject_hash(const uint8_t *pem, size_t len, uint8_t out[TLS_NAME_HASH])
{
    DecodedCert *dc;
    uint8_t *der;
    int der_len;
    bool ok = false;

    if (len > INT32_MAX)
        return false;
    der = malloc(len); /* DER is shorter than its base64 */
    dc = malloc(sizeof *dc);
    if (der == NULL || dc == NULL)
        goto done;
    der_len = wc_CertPemToDer(pem, (int)len, der, (int)len, CERT_TYPE);
    if (der_len <= 0)
        goto done;
    wc_InitDecodedCert(dc, der, (word32)der_len, NULL);
    ok = wc_ParseCert(dc, CA_TYPE, NO_VERIFY, NULL) == 0;
    if (ok) {
        memset(out, 0, TLS_NAME_HASH);
        memcpy(out, dc->subjectHash, KEYID_SIZE);
    }
    wc_FreeDecodedCert(dc);
done:
    free(dc);
    free(der);
    return ok;
}

void tls_opnames_load(tls_opnames *o, const uint8_t *pem, size_t len)
{
    size_t count = 0, pos = 0;
    const uint8_t *p;

    o->hashes = NULL;
    o->count = 0;
    o->filter = false;
    /* Every PEM block must be a certificate; count them. */
    while ((p = find(pem + pos, len - pos, pem_begin)) != NULL) {
        size_t at = (size_t)(p - pem);

        if (len - at < sizeof cert_begin - 1 ||
            memcmp(p, cert_begin, sizeof cert_begin - 1) != 0)
            return; /* another kind of block: leave the filter off */
        count++;
        pos = at + sizeof cert_begin - 1;
    }
    if (count == 0 || count > SIZE_MAX / TLS_NAME_HASH)
        return;
    o->hashes = malloc(count * TLS_NAME_HASH);
    if (o->hashes == NULL)
        return;
    pos = 0;
    for (size_t i = 0; i < count; i++) {
        const uint8_t *b = find(pem + pos, len - pos, cert_begin);
        const uint8_t *e = b == NULL ? NULL
                                     : find(b, len - (size_t)(b - pem), cert_end);

        if (e == NULL ||
            !subject_hash(b, (size_t)(e - b) + sizeof cert_end - 1,
                          o->hashes + i * TLS_NAME_HASH)) {
            tls_opnames_free(o);
            return;
        }
        pos = (size_t)(e - pem) + sizeof cert_end - 1;
    }
    o->count = count;
    o->filter = true;
}

void tls_opnames_free(tls_opnames *o)
{
    free(o->hashes);
    o->hashes = NULL;
    o->count = 0;
    o->filter = false;
}

bool tls_opnames_may_issue(const tls_opnames *o, const uint8_t issuer_hash[TLS_NAME_HASH])
{
    if (!o->filter)
        return true;
    for (size_t i = 0; i < o->count; i++)
        if (memcmp(o->hashes + i * TLS_NAME_HASH, issuer_hash, TLS_NAME_HASH) == 0)
            return true;
    return false;
}
