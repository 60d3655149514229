/*
 * handshake_pki.h - the certificates the handshake measurement uses, made
 * at run time with wolfCrypt (WOLFSSL_CERT_GEN, in both builds): a CA, a
 * server certificate and a client certificate it issued, each with a fresh
 * ECDSA P-256 key, as PEM for the TLS adapter. Nothing is kept: the keys
 * exist only for the measurement and are freed (wiped) with it.
 */
#ifndef TERN_DIAG_HANDSHAKE_PKI_H
#define TERN_DIAG_HANDSHAKE_PKI_H

#include <stddef.h>
#include <stdint.h>

/* Each PEM text fits in this (an ECDSA P-256 certificate is ~600 bytes of
 * DER, ~850 of PEM). */
#define DIAG_PKI_PEM_MAX 2048u

typedef struct diag_pem {
    uint8_t text[DIAG_PKI_PEM_MAX];
    size_t len;
} diag_pem;

typedef struct diag_pki {
    diag_pem ca_cert;
    diag_pem server_cert, server_key;
    diag_pem client_cert, client_key;
} diag_pki;

/* The client certificate's subject CN (the identity the server derives). */
#define DIAG_PKI_CLIENT_CN "tern-diag-client"

/* Make a fresh set; 0, or -1 with a static reason in *why. */
int diag_pki_make(diag_pki *p, const char **why);

/* Wipe the keys (before freeing p). */
void diag_pki_wipe(diag_pki *p);

#endif
