/*
 * tls.c - the load generator's TLS client, on wolfSSL.
 *
 * Why wolfSSL: a handshake benchmark measures the slower end, and OpenSSL
 * 3's client spends several times more CPU per handshake than wolfSSL's
 * (docs/PERFORMANCE.md). One context per worker thread holds the CA and the
 * client certificate, parsed once; each connection gets its own session
 * object and never resumes, so every handshake is a full mutual TLS 1.3
 * one. wolfSSL reads and writes the non-blocking socket itself and reports
 * "would block" as WANT_READ / WANT_WRITE, which map onto epoll events.
 */
#include <wolfssl/options.h>
#include <wolfssl/ssl.h>

#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

struct bench_tls_ctx {
    WOLFSSL_CTX *ctx;
};

struct bench_tls {
    WOLFSSL *ssl;
};

int tls_global_init(void)
{
    return wolfSSL_Init() == WOLFSSL_SUCCESS ? 0 : -1;
}

void tls_global_cleanup(void)
{
    (void)wolfSSL_Cleanup();
}

bench_tls_ctx *tls_ctx_new(const char *cafile, const char *cert, const char *key,
                           const char *group)
{
    bench_tls_ctx *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->ctx = wolfSSL_CTX_new(wolfTLSv1_3_client_method());
    if (!t->ctx) {
        fprintf(stderr, "tern-bench: wolfSSL_CTX_new failed\n");
        free(t);
        return NULL;
    }
    const char *what = NULL;
    if (wolfSSL_CTX_load_verify_locations(t->ctx, cafile, NULL) != WOLFSSL_SUCCESS)
        what = cafile;
    else if (cert && wolfSSL_CTX_use_certificate_chain_file(t->ctx, cert) != WOLFSSL_SUCCESS)
        what = cert;
    else if (key &&
             wolfSSL_CTX_use_PrivateKey_file(t->ctx, key, WOLFSSL_FILETYPE_PEM) != WOLFSSL_SUCCESS)
        what = key;
    if (what) {
        fprintf(stderr, "tern-bench: %s: cannot load (PEM expected)\n", what);
        tls_ctx_free(t);
        return NULL;
    }
    /* The key share goes with the first group. X25519 is what most TLS 1.3
     * clients offer first; P-256 stays listed so a server without X25519
     * can still pick it (with a HelloRetryRequest). */
    int groups[2] = { WOLFSSL_ECC_X25519, WOLFSSL_ECC_SECP256R1 };
    if (strcmp(group, "p256") == 0) {
        groups[0] = WOLFSSL_ECC_SECP256R1;
        groups[1] = WOLFSSL_ECC_X25519;
    }
    if (wolfSSL_CTX_set_groups(t->ctx, groups, 2) != WOLFSSL_SUCCESS) {
        fprintf(stderr, "tern-bench: cannot set the TLS key exchange groups\n");
        tls_ctx_free(t);
        return NULL;
    }
    /* The server must prove itself against the CA; the broker's address is
     * a literal IP we chose, so no name check. */
    wolfSSL_CTX_set_verify(t->ctx, WOLFSSL_VERIFY_PEER, NULL);
    return t;
}

void tls_ctx_free(bench_tls_ctx *t)
{
    if (!t)
        return;
    wolfSSL_CTX_free(t->ctx);
    free(t);
}

bench_tls *tls_new(bench_tls_ctx *ctx, int fd)
{
    bench_tls *t = malloc(sizeof *t);
    if (!t)
        return NULL;
    t->ssl = wolfSSL_new(ctx->ctx);
    if (!t->ssl || wolfSSL_set_fd(t->ssl, fd) != WOLFSSL_SUCCESS) {
        if (t->ssl)
            wolfSSL_free(t->ssl);
        free(t);
        return NULL;
    }
    return t;
}

void tls_free(bench_tls *t)
{
    if (!t)
        return;
    wolfSSL_free(t->ssl);
    free(t);
}

/* Map a failed call to "wait for this event" (0) or a real error (-1). */
static int would_block(bench_tls *t, int ret, uint32_t *want)
{
    int err = wolfSSL_get_error(t->ssl, ret);
    if (err == WOLFSSL_ERROR_WANT_READ) {
        *want = EPOLLIN;
        return 0;
    }
    if (err == WOLFSSL_ERROR_WANT_WRITE) {
        *want = EPOLLOUT;
        return 0;
    }
    return -1;
}

int tls_handshake(bench_tls *t, uint32_t *want)
{
    int ret = wolfSSL_connect(t->ssl);
    if (ret == WOLFSSL_SUCCESS)
        return 1;
    return would_block(t, ret, want);
}

ssize_t tls_read(bench_tls *t, uint8_t *buf, size_t n)
{
    int len = n > (size_t)INT32_MAX ? INT32_MAX : (int)n;
    int ret = wolfSSL_read(t->ssl, buf, len);
    if (ret > 0)
        return ret;
    uint32_t want;
    return ret < 0 && would_block(t, ret, &want) == 0 ? 0 : -1;
}

ssize_t tls_write(bench_tls *t, const uint8_t *buf, size_t n)
{
    int len = n > (size_t)INT32_MAX ? INT32_MAX : (int)n;
    int ret = wolfSSL_write(t->ssl, buf, len);
    if (ret > 0)
        return ret;
    uint32_t want;
    return ret < 0 && would_block(t, ret, &want) == 0 ? 0 : -1;
}
