/*
 * handshake_pki.c - run-time certificates for the handshake measurement
 * (handshake_pki.h): a self-signed CA and two leaves it signs, ECDSA P-256
 * with SHA-256 like tern's own PKI (scripts/pki.sh), valid from wolfSSL's
 * "now" (its clock: time() in the daemon, the kernel's wall clock), so the
 * server accepts them whatever the date is.
 */
#include "diag/handshake_pki.h"

#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/settings.h>
#include <wolfssl/wolfcrypt/asn_public.h>
#include <wolfssl/wolfcrypt/ecc.h>
#include <wolfssl/wolfcrypt/random.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#if !defined(WOLFSSL_CERT_GEN) || !defined(HAVE_ECC)
#error "the handshake measurement makes its certificates: wolfSSL needs WOLFSSL_CERT_GEN"
#endif

/* DER of one certificate or key. */
#define DER_MAX 1024u
/* Days the certificates are valid: only this run uses them. */
#define PKI_DAYS 2

typedef struct pki_work {
    Cert cert;
    WC_RNG rng;
    ecc_key ca_key, leaf_key;
    byte ca_der[DER_MAX];
    int ca_der_len;
    byte der[DER_MAX];
} pki_work;

/* Zero key material so it does not linger in freed memory; volatile so the
 * compiler keeps stores to memory about to be freed. */
static void wipe(void *mem, size_t n)
{
    volatile uint8_t *b = mem;

    while (n--)
        *b++ = 0;
}

static int to_pem(const byte *der, int der_len, int type, diag_pem *out)
{
    int n = wc_DerToPem(der, (word32)der_len, out->text, (word32)sizeof out->text, type);

    if (n <= 0)
        return -1;
    out->len = (size_t)n;
    return 0;
}

static void name(Cert *c, const char *cn)
{
    strncpy(c->subject.commonName, cn, CTC_NAME_SIZE - 1);
    c->subject.commonName[CTC_NAME_SIZE - 1] = '\0';
    strncpy(c->subject.org, "tern diagnostics", CTC_NAME_SIZE - 1);
    c->subject.org[CTC_NAME_SIZE - 1] = '\0';
}

/* A fresh key in k; 0 or -1. *up is set once k needs wc_ecc_free. */
static int new_key(pki_work *w, ecc_key *k, bool *up)
{
    if (wc_ecc_init(k) != 0)
        return -1;
    *up = true;
#ifdef ECC_TIMING_RESISTANT
    if (wc_ecc_set_rng(k, &w->rng) != 0)
        return -1;
#endif
    return wc_ecc_make_key_ex(&w->rng, 32, k, ECC_SECP256R1) == 0 ? 0 : -1;
}

/* The DER of a certificate for key `subject` named cn, signed by the CA
 * key (self-signed when subject is the CA key). Its length, or -1. */
static int make_cert(pki_work *w, ecc_key *subject, const char *cn, int is_ca)
{
    int body;

    if (wc_InitCert(&w->cert) != 0)
        return -1;
    w->cert.sigType = CTC_SHA256wECDSA;
    w->cert.daysValid = PKI_DAYS;
    w->cert.isCA = is_ca;
    name(&w->cert, cn);
    if (!is_ca && wc_SetIssuerBuffer(&w->cert, w->ca_der, w->ca_der_len) != 0)
        return -1;
    body = wc_MakeCert_ex(&w->cert, w->der, DER_MAX, ECC_TYPE, subject, &w->rng);
    if (body <= 0)
        return -1;
    return wc_SignCert_ex(w->cert.bodySz, w->cert.sigType, w->der, DER_MAX, ECC_TYPE, &w->ca_key,
                          &w->rng);
}

static int leaf(pki_work *w, const char *cn, diag_pem *cert, diag_pem *key)
{
    bool up = false;
    int n, rc = -1;

    if (new_key(w, &w->leaf_key, &up) != 0)
        goto done;
    n = make_cert(w, &w->leaf_key, cn, 0);
    if (n <= 0 || to_pem(w->der, n, CERT_TYPE, cert) != 0)
        goto done;
    n = wc_EccKeyToDer(&w->leaf_key, w->der, DER_MAX);
    if (n <= 0 || to_pem(w->der, n, ECC_PRIVATEKEY_TYPE, key) != 0)
        goto done;
    rc = 0;
done:
    if (up)
        wc_ecc_free(&w->leaf_key);
    return rc;
}

int diag_pki_make(diag_pki *p, const char **why)
{
    pki_work *w = calloc(1, sizeof *w);
    int rc = -1;
    bool rng_up = false, ca_up = false;

    memset(p, 0, sizeof *p);
    *why = "out of memory";
    if (w == NULL)
        return -1;
    *why = "wolfCrypt could not make the certificates";
    if (wc_InitRng(&w->rng) != 0)
        goto done;
    rng_up = true;
    if (new_key(w, &w->ca_key, &ca_up) != 0)
        goto done;
    w->ca_der_len = make_cert(w, &w->ca_key, "tern-diag CA", 1);
    if (w->ca_der_len <= 0)
        goto done;
    memcpy(w->ca_der, w->der, (size_t)w->ca_der_len);
    if (to_pem(w->ca_der, w->ca_der_len, CERT_TYPE, &p->ca_cert) != 0 ||
        leaf(w, "tern-diag-server", &p->server_cert, &p->server_key) != 0 ||
        leaf(w, DIAG_PKI_CLIENT_CN, &p->client_cert, &p->client_key) != 0)
        goto done;
    *why = NULL;
    rc = 0;
done:
    if (ca_up)
        wc_ecc_free(&w->ca_key);
    if (rng_up)
        wc_FreeRng(&w->rng);
    wipe(w, sizeof *w);
    free(w);
    if (rc != 0)
        diag_pki_wipe(p);
    return rc;
}

void diag_pki_wipe(diag_pki *p)
{
    wipe(p->server_key.text, sizeof p->server_key.text);
    wipe(p->client_key.text, sizeof p->client_key.text);
    p->server_key.len = p->client_key.len = 0;
}
