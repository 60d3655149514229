/*
 * ctx.c - what every tern wolfSSL context has in common, server or client:
 * the protocol versions, the cipher suites and key exchange groups of SPEC
 * C3, no session resumption, and memory I/O.
 *
 * Suites: TLS 1.3 AES-128-GCM, AES-256-GCM and ChaCha20-Poly1305; with TLS
 * 1.2 allowed, the ECDHE-ECDSA suites with the same ciphers (the server
 * certificate is ECDSA, so RSA suites could never be chosen). Groups:
 * X25519 first (cheaper), then P-256.
 *
 * Resumption is off on purpose: a resumed session skips the client
 * certificate, and with it the identity and operator decision made in the
 * verify callback. (The build has no session tickets; the session-ID cache
 * is switched off here, or compiled out: the unikernel's build.)
 */
#include "tls/internal.h"

static const char suites_tls13[] =
    "TLS13-AES128-GCM-SHA256:TLS13-AES256-GCM-SHA384:TLS13-CHACHA20-POLY1305-SHA256";
static const char suites_tls12_too[] =
    "TLS13-AES128-GCM-SHA256:TLS13-AES256-GCM-SHA384:TLS13-CHACHA20-POLY1305-SHA256:"
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305";

WOLFSSL_CTX *tls_ctx_new(bool server, tern_tls_version min, tern_tls_version max, char *err,
                         size_t err_size)
{
    int groups[] = {WOLFSSL_ECC_X25519, WOLFSSL_ECC_SECP256R1};
    WOLFSSL_METHOD *method;
    WOLFSSL_CTX *ctx = NULL;
    int rc;

    if (min == TERN_TLS_1_3)
        method = server ? wolfTLSv1_3_server_method() : wolfTLSv1_3_client_method();
    else if (max == TERN_TLS_1_2)
        method = server ? wolfTLSv1_2_server_method() : wolfTLSv1_2_client_method();
    else
        method = server ? wolfSSLv23_server_method() : wolfSSLv23_client_method();
    if (method == NULL)
        goto oom;
    ctx = wolfSSL_CTX_new(method); /* takes ownership of method, even on failure */
    if (ctx == NULL)
        goto oom;
    if (min == TERN_TLS_1_2 && max != TERN_TLS_1_2 &&
        (rc = wolfSSL_CTX_SetMinVersion(ctx, WOLFSSL_TLSV1_2)) != WOLFSSL_SUCCESS) {
        tls_message(err, err_size, "TLS: ", "cannot allow TLS 1.2", rc);
        goto fail;
    }
    rc = wolfSSL_CTX_set_cipher_list(ctx, min == TERN_TLS_1_3 ? suites_tls13 : suites_tls12_too);
    if (rc != WOLFSSL_SUCCESS) {
        tls_message(err, err_size, "TLS: ", "cannot set the cipher suites", rc);
        goto fail;
    }
    rc = wolfSSL_CTX_set_groups(ctx, groups, (int)(sizeof groups / sizeof groups[0]));
    if (rc != WOLFSSL_SUCCESS) {
        tls_message(err, err_size, "TLS: ", "cannot set the key exchange groups", rc);
        goto fail;
    }
#ifndef NO_SESSION_CACHE /* the unikernel's wolfSSL has no session cache at all */
    (void)wolfSSL_CTX_set_session_cache_mode(ctx, WOLFSSL_SESS_CACHE_OFF); /* returns old mode */
#endif
    wolfSSL_CTX_SetIORecv(ctx, tls_io_recv);
    wolfSSL_CTX_SetIOSend(ctx, tls_io_send);
    return ctx;

oom:
    tls_message(err, err_size, "TLS: ", "out of memory", 0);
fail:
    if (ctx != NULL)
        wolfSSL_CTX_free(ctx);
    return NULL;
}
