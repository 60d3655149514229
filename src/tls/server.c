/*
 * server.c - the server context: built once from PEM text (server chain and
 * key, client CAs, operator CAs) and shared, reference-counted, by every
 * connection accepted with it. A context that replaced it (certificate
 * rotation on reload) leaves it alive until its last connection is freed.
 *
 * Everything is checked here, at start-up, so a bad file stops the daemon
 * with a message instead of failing every handshake later: the server
 * certificate must be ECDSA P-256 (SPEC C3; the unikernel's wolfSSL build
 * carries no other curve), its key must match it, and client certificates
 * required means a client CA (or an operator CA) must be given.
 */
#include <stdlib.h>
#include <string.h>

#include "tls/internal.h" /* first: wolfSSL's options.h before its headers */

#include <wolfssl/wolfcrypt/asn.h>
#include <wolfssl/wolfcrypt/asn_public.h>
#include <wolfssl/wolfcrypt/error-crypt.h>

/* For a failure about input `in`: the prefix of its message, the input's
 * name, unless the caller names it (cfg->failed, which is then set). Call
 * only once the input has failed. */
static const char *about(const tern_tls_server_config *cfg, tern_tls_server_input in,
                         const char *name)
{
    if (cfg->failed == NULL)
        return name;
    *cfg->failed = in;
    return "";
}

/* Is the first certificate of the PEM chain an ECDSA P-256 one? */
static bool server_cert_is_p256(const tern_tls_server_config *cfg, char *err, size_t err_size)
{
    const tern_tls_bytes *chain = &cfg->cert_chain;
    DecodedCert *dc = NULL;
    uint8_t *der = NULL;
    int der_len;
    bool ok = false;

    if (chain->len == 0 || chain->len > INT32_MAX) {
        tls_message(err, err_size, about(cfg, TERN_TLS_INPUT_CERT, "server certificate: "),
                    "empty or too large", 0);
        return false;
    }
    der = malloc(chain->len); /* DER is always shorter than its PEM */
    dc = malloc(sizeof *dc);
    if (der == NULL || dc == NULL) {
        tls_message(err, err_size, about(cfg, TERN_TLS_INPUT_CERT, "server certificate: "),
                    "out of memory", 0);
        goto done;
    }
    der_len = wc_CertPemToDer(chain->data, (int)chain->len, der, (int)chain->len, CERT_TYPE);
    if (der_len <= 0) {
        tls_message(err, err_size, about(cfg, TERN_TLS_INPUT_CERT, "server certificate: "),
                    "no PEM certificate found", der_len);
        goto done;
    }
    wc_InitDecodedCert(dc, der, (word32)der_len, NULL);
    if (wc_ParseCert(dc, CERT_TYPE, NO_VERIFY, NULL) != 0)
        tls_message(err, err_size, about(cfg, TERN_TLS_INPUT_CERT, "server certificate: "),
                    "cannot parse it", 0);
    else if (dc->keyOID != ECDSAk || dc->pkCurveOID != ECC_SECP256R1_OID)
        tls_message(err, err_size, about(cfg, TERN_TLS_INPUT_CERT, "server certificate: "),
                    "must have an ECDSA P-256 key (scripts/pki.sh makes one)", 0);
    else
        ok = true;
    wc_FreeDecodedCert(dc);
done:
    free(dc);
    free(der);
    return ok;
}

static bool load_identity(tern_tls_server *s, const tern_tls_server_config *cfg, char *err,
                          size_t err_size)
{
    int rc;

    if (!server_cert_is_p256(cfg, err, err_size))
        return false;
    rc = wolfSSL_CTX_use_certificate_chain_buffer_format(s->ctx, cfg->cert_chain.data,
                                                         (long)cfg->cert_chain.len,
                                                         WOLFSSL_FILETYPE_PEM);
    if (rc != WOLFSSL_SUCCESS) {
        tls_message(err, err_size, about(cfg, TERN_TLS_INPUT_CERT, "server certificate: "),
                    "cannot load the chain", rc);
        return false;
    }
    if (cfg->key.len == 0 || cfg->key.len > INT32_MAX) {
        tls_message(err, err_size, about(cfg, TERN_TLS_INPUT_KEY, "server key: "),
                    "empty or too large", 0);
        return false;
    }
    rc = wolfSSL_CTX_use_PrivateKey_buffer(s->ctx, cfg->key.data, (long)cfg->key.len,
                                           WOLFSSL_FILETYPE_PEM);
    if (rc != WOLFSSL_SUCCESS) {
        tls_message(err, err_size, about(cfg, TERN_TLS_INPUT_KEY, "server key: "),
                    "cannot load it (PEM, unencrypted, ECDSA P-256 expected)", rc);
        return false;
    }
    rc = wolfSSL_CTX_check_private_key(s->ctx);
    if (rc != WOLFSSL_SUCCESS) {
        tls_message(err, err_size, about(cfg, TERN_TLS_INPUT_KEY, "server key: "),
                    "does not match the server certificate", rc);
        return false;
    }
    return true;
}

/* Why a CA bundle did not load, in words: wolfSSL checks CA dates too. */
static const char *ca_load_problem(int rc)
{
    if (rc == ASN_AFTER_DATE_E)
        return "a CA certificate in it has expired";
    if (rc == ASN_BEFORE_DATE_E)
        return "a CA certificate in it is not valid yet (is the clock right?)";
    return "cannot load the PEM bundle";
}

static bool load_cas(tern_tls_server *s, const tern_tls_server_config *cfg, char *err,
                     size_t err_size)
{
    int rc;

    if (cfg->client_ca.len > INT32_MAX || cfg->operator_ca.len > INT32_MAX) {
        tls_message(err, err_size,
                    about(cfg,
                          cfg->client_ca.len > INT32_MAX ? TERN_TLS_INPUT_CLIENT_CA
                                                         : TERN_TLS_INPUT_OPERATOR_CA,
                          "CA bundle: "),
                    "too large", 0);
        return false;
    }
    if (cfg->client_ca.len > 0) {
        rc = wolfSSL_CTX_load_verify_buffer(s->ctx, cfg->client_ca.data,
                                            (long)cfg->client_ca.len, WOLFSSL_FILETYPE_PEM);
        if (rc != WOLFSSL_SUCCESS) {
            tls_message(err, err_size, about(cfg, TERN_TLS_INPUT_CLIENT_CA, "client CA: "),
                        ca_load_problem(rc), rc);
            return false;
        }
    }
    if (cfg->operator_ca.len > 0) {
        /* Operators connect like every client, so their CA is trusted by the
         * context too; the separate manager only answers "operator?". */
        rc = wolfSSL_CTX_load_verify_buffer(s->ctx, cfg->operator_ca.data,
                                            (long)cfg->operator_ca.len, WOLFSSL_FILETYPE_PEM);
        if (rc == WOLFSSL_SUCCESS) {
            s->operator_cm = wolfSSL_CertManagerNew();
            rc = s->operator_cm == NULL
                     ? MEMORY_E
                     : wolfSSL_CertManagerLoadCABuffer(s->operator_cm, cfg->operator_ca.data,
                                                       (long)cfg->operator_ca.len,
                                                       WOLFSSL_FILETYPE_PEM);
        }
        if (rc != WOLFSSL_SUCCESS) {
            tls_message(err, err_size, about(cfg, TERN_TLS_INPUT_OPERATOR_CA, "operator CA: "),
                        ca_load_problem(rc), rc);
            return false;
        }
        tls_opnames_load(&s->operator_names, cfg->operator_ca.data, cfg->operator_ca.len);
    }
    if (cfg->require_client_cert && cfg->client_ca.len == 0 && cfg->operator_ca.len == 0) {
        tls_message(err, err_size, about(cfg, TERN_TLS_INPUT_CLIENT_CA, "client CA: "),
                    "required when client certificates are required", 0);
        return false;
    }
    return true;
}

static void server_free(tern_tls_server *s)
{
    if (s->ctx != NULL)
        wolfSSL_CTX_free(s->ctx);
    if (s->operator_cm != NULL)
        wolfSSL_CertManagerFree(s->operator_cm);
    tls_opnames_free(&s->operator_names);
    tls_sigcache_free(&s->sigcache);
    free(s->operators);
    free(s);
    tls_library_down();
}

tern_tls_server *tern_tls_server_create(const tern_tls_server_config *cfg, char *err,
                                        size_t err_size)
{
    tern_tls_server *s;
    int mode;

    if (!tls_library_up()) {
        tls_message(err, err_size, "TLS: ", "wolfSSL failed to initialise", 0);
        return NULL;
    }
    s = calloc(1, sizeof *s);
    if (s == NULL) {
        tls_message(err, err_size, "TLS: ", "out of memory", 0);
        tls_library_down();
        return NULL;
    }
    atomic_init(&s->refs, 1);
    s->identity = cfg->identity;
    s->require_client_cert = cfg->require_client_cert;
    s->ctx = tls_ctx_new(true, cfg->min_version, TERN_TLS_1_3, err, err_size);
    if (s->ctx == NULL || !load_identity(s, cfg, err, err_size) ||
        !load_cas(s, cfg, err, err_size))
        goto fail;
    if (!tls_sigcache_init(&s->sigcache)) {
        tls_message(err, err_size, "TLS: ", "out of memory", 0);
        goto fail;
    }
    /* Every ECDSA verification of a handshake goes through sigcache.c: the
     * client certificate's signature by its CA is remembered, the
     * CertificateVerify is always computed. */
    wolfSSL_CTX_SetEccVerifyCb(s->ctx, tls_ecc_verify);
    if (!tls_operators_set(s, cfg->operators, cfg->failed ? "" : "operators: ", err, err_size)) {
        (void)about(cfg, TERN_TLS_INPUT_OPERATORS, "");
        goto fail;
    }
    /* Ask for a certificate whenever there is a CA to check it against;
     * without one (and not required) ask for none. */
    if (cfg->client_ca.len == 0 && cfg->operator_ca.len == 0)
        mode = WOLFSSL_VERIFY_NONE;
    else
        mode = WOLFSSL_VERIFY_PEER |
               (cfg->require_client_cert ? WOLFSSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0);
    wolfSSL_CTX_set_verify(s->ctx, mode, mode == WOLFSSL_VERIFY_NONE ? NULL : tls_verify_client);
    return s;

fail:
    server_free(s);
    return NULL;
}

void tern_tls_server_release(tern_tls_server *s)
{
    /* acq_rel: the thread that frees sees every other thread's use done. */
    if (s != NULL && atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1)
        server_free(s);
}

tern_tls_server *tern_tls_server_retain(tern_tls_server *s)
{
    /* relaxed: the caller already holds a reference, so s cannot go now. */
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    return s;
}

void tern_tls_server_set_allocator(tern_tls_server *s, const tern_tls_allocator *a)
{
    s->alloc = *a;
}

void *tls_mem_zalloc(const tern_tls_allocator *a, size_t size)
{
    void *p;

    if (a == NULL || a->alloc == NULL)
        return calloc(1, size);
    p = a->alloc(a->ctx, size);
    if (p != NULL)
        memset(p, 0, size);
    return p;
}

void tls_mem_free(const tern_tls_allocator *a, void *p)
{
    if (a == NULL || a->free == NULL)
        free(p);
    else if (p != NULL)
        a->free(a->ctx, p);
}
