/*
 * verify.c - the server's certificate verify callback: where a client's
 * identity and operator role are decided, once, during the handshake.
 *
 * wolfSSL verifies the chain itself (signatures, dates, CA flags against
 * the client and operator CAs loaded in the context) and calls this for
 * every failure and, because the build defines WOLFSSL_ALWAYS_VERIFY_CB,
 * also for the leaf when it verified. That leaf call sees the peer's DER
 * certificates, so the identity comes straight from the bytes that were
 * verified, without keeping the peer certificate for the life of the
 * connection.
 *
 * Operator role: the leaf is verified once more against a certificate
 * manager holding only the operator CAs, when its issuer's name is one of
 * theirs (opnames.c: a leaf from another CA cannot verify there, and
 * asking would parse it a second time). Or the identity is listed in
 * tls.operators.
 */
#include <stdlib.h>

#include "tls/internal.h"

int tls_verify_client(int preverify_ok, WOLFSSL_X509_STORE_CTX *store)
{
    tern_tls_conn *c = store->userCtx; /* wolfSSL_SetCertCbCtx(ssl, c) */
    const tern_tls_server *s;
    const WOLFSSL_BUFFER_INFO *leaf;
    tern_tls_failure f;
    uint8_t issuer[TLS_NAME_HASH];

    if (c == NULL || c->server == NULL)
        return 0;
    if (!preverify_ok) {
        /* Keep the precise reason (expired, unknown CA...); the handshake
         * itself only ends with VERIFY_CERT_ERROR or the like. */
        tls_conn_set_failure(c, tls_failure_from_error(store->error), store->error);
        return 0;
    }
    if (store->error_depth != 0)
        return 1; /* an intermediate that verified: nothing to decide yet */
    if (store->certs == NULL || store->totalCerts < 1)
        return 1; /* no certificate sent: wolfSSL refuses that itself when one is
                     required, and handshake_done checks again */
    if (store->certs[0].buffer == NULL) {
        tls_conn_set_failure(c, TERN_TLS_FAIL_BAD_CERT, 0);
        return 0;
    }
    s = c->server;
    leaf = &store->certs[0];
    tls_mem_free(&s->alloc, c->identity); /* a second leaf call must not leak the first */
    c->identity = NULL;
    f = tls_identity_from_der(leaf->buffer, leaf->length, s->identity, &s->alloc, &c->identity,
                              issuer);
    if (f != TERN_TLS_FAIL_NONE) {
        tls_conn_set_failure(c, f, 0);
        return 0;
    }
    c->is_operator = tls_operator_listed(s, c->identity) ||
                     (s->operator_cm != NULL &&
                      tls_opnames_may_issue(&s->operator_names, issuer) &&
                      wolfSSL_CertManagerVerifyBuffer(s->operator_cm, leaf->buffer,
                                                      (long)leaf->length,
                                                      WOLFSSL_FILETYPE_ASN1) == WOLFSSL_SUCCESS);
    return 1;
}
