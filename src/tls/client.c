/*
 * client.c - the client context: trusts a CA bundle for the server's
 * certificate and optionally presents a client certificate. The unit tests
 * use it as the other end of the server; bridges to other brokers (C7)
 * will use it for their outbound connections.
 *
 * No host name check yet: the tests talk to themselves, and a bridge will
 * add the name it dials when bridges exist.
 */
#include <stdlib.h>

#include "tls/internal.h"

static void client_free(tern_tls_client *cl)
{
    if (cl->ctx != NULL)
        wolfSSL_CTX_free(cl->ctx);
    free(cl);
    tls_library_down();
}

static bool load(WOLFSSL_CTX *ctx, const tern_tls_client_config *cfg, char *err,
                 size_t err_size)
{
    int rc;

    if (cfg->ca.len == 0 || cfg->ca.len > INT32_MAX || cfg->cert_chain.len > INT32_MAX ||
        cfg->key.len > INT32_MAX) {
        tls_message(err, err_size, "client: ", "CA bundle missing, or a file too large", 0);
        return false;
    }
    rc = wolfSSL_CTX_load_verify_buffer(ctx, cfg->ca.data, (long)cfg->ca.len,
                                        WOLFSSL_FILETYPE_PEM);
    if (rc != WOLFSSL_SUCCESS) {
        tls_message(err, err_size, "client CA: ", "cannot load the PEM bundle", rc);
        return false;
    }
    if (cfg->cert_chain.len == 0)
        return true;
    rc = wolfSSL_CTX_use_certificate_chain_buffer_format(ctx, cfg->cert_chain.data,
                                                         (long)cfg->cert_chain.len,
                                                         WOLFSSL_FILETYPE_PEM);
    if (rc == WOLFSSL_SUCCESS)
        rc = wolfSSL_CTX_use_PrivateKey_buffer(ctx, cfg->key.data, (long)cfg->key.len,
                                               WOLFSSL_FILETYPE_PEM);
    if (rc != WOLFSSL_SUCCESS) {
        tls_message(err, err_size, "client certificate: ", "cannot load it or its key", rc);
        return false;
    }
    return true;
}

tern_tls_client *tern_tls_client_create(const tern_tls_client_config *cfg, char *err,
                                        size_t err_size)
{
    tern_tls_client *cl;

    if (!tls_library_up()) {
        tls_message(err, err_size, "TLS: ", "wolfSSL failed to initialise", 0);
        return NULL;
    }
    cl = calloc(1, sizeof *cl);
    if (cl == NULL) {
        tls_message(err, err_size, "TLS: ", "out of memory", 0);
        tls_library_down();
        return NULL;
    }
    atomic_init(&cl->refs, 1);
    cl->ctx = tls_ctx_new(false, cfg->min_version, cfg->max_version, err, err_size);
    if (cl->ctx == NULL || !load(cl->ctx, cfg, err, err_size)) {
        client_free(cl);
        return NULL;
    }
    wolfSSL_CTX_set_verify(cl->ctx, WOLFSSL_VERIFY_PEER, NULL);
    return cl;
}

void tern_tls_client_release(tern_tls_client *cl)
{
    if (cl != NULL && atomic_fetch_sub_explicit(&cl->refs, 1, memory_order_acq_rel) == 1)
        client_free(cl);
}
