/*
 * tls.h - TLS for tern: the whole public face of src/tls/, a thin adapter
 * over wolfSSL that never touches a socket. Ciphertext goes in and
 * plaintext comes out; plaintext goes in and ciphertext comes out. The
 * Linux daemon moves the bytes with recv/send, the unikernel will move them
 * through lwIP: both drive the same adapter.
 *
 * A server context (tern_tls_server) is built once from PEM text: the server
 * certificate chain and key, the client CA bundle, an optional operator CA
 * bundle and the options of SPEC C3 (minimum version, client certificate
 * required, where the identity comes from, operator identities). Each
 * accepted connection gets a tern_tls_conn from it. After the handshake the
 * connection knows the client's identity and whether it is an operator;
 * the platform hands both to the core (broker_conn_info).
 *
 * One turn of a connection:
 *
 *     st = tern_tls_read(c, bytes_from_socket, n, plain, cap, &plain_len);
 *     if (st == TERN_TLS_ESTABLISHED and the core has no connection yet)
 *         broker_open(identity = tern_tls_identity(c), ...);
 *     broker_input(plain, plain_len);   more with tern_tls_read(c, NULL, 0, ...)
 *                                       while tern_tls_has_input(c)
 *     tern_tls_write(c, core_output, len);
 *     send(tern_tls_out_peek(c, &len)); tern_tls_out_consume(c, sent);
 *
 * Handshake messages and alerts appear in the output the same way, so the
 * platform sends tern_tls_out_peek() after every call, whatever the state.
 *
 * Memory: an idle established TLS 1.3 server connection holds its traffic
 * secrets, keys and sequence numbers (~200 bytes), the adapter's small
 * structure and its identity string, no buffer: wolfSSL runs the handshake
 * only and is freed when it completes (the adapter protects records
 * itself from then on, src/tls/record.c), and the adapter's queues are
 * freed whenever they empty. TLS 1.2 and client connections keep
 * wolfSSL's session (~3 KB).
 *
 * Time: certificate validity is checked against wolfSSL's clock, which is
 * time() on the hosted build. tern_tls_set_clock() replaces it (the one
 * replaceable point; the unikernel points it at its agreed clock, B4).
 *
 * Threading: a connection is used by one thread at a time. A context may
 * be shared by threads that each run their own connections (the daemon's
 * I/O threads, ADR-065): after creation (and set_allocator) it is only
 * read, its reference count is atomic, wolfSSL's WOLFSSL_CTX is shared
 * read-only as wolfSSL allows (its own count and its certificate store
 * are under wolfSSL's locks in a build with threads), and the signature
 * cache is lock-free (sigcache.c). A reload gives each thread a
 * reference to the new context; the old one goes with its last
 * connection, on whichever thread frees it. The allocator given to a
 * server must then be safe to call from those threads.
 */
#ifndef TERN_TLS_H
#define TERN_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef struct tern_tls_server tern_tls_server;
typedef struct tern_tls_client tern_tls_client;
typedef struct tern_tls_conn tern_tls_conn;

/* Longest identity accepted, in bytes (longer certificates are refused). */
#define TERN_TLS_IDENTITY_MAX 256u
/* Enough for any error message of the context constructors. */
#define TERN_TLS_ERR_SIZE 256u

typedef enum tern_tls_version {
    TERN_TLS_1_2 = 12,
    TERN_TLS_1_3 = 13,
} tern_tls_version;

/* Where a client's identity comes from: the subject's one CN, or the one
 * subjectAltName of a type (a certificate with two CNs, or two of that
 * type, is refused: its identity would be ambiguous). */
typedef enum tern_tls_identity_source {
    TERN_TLS_IDENTITY_CN = 0,
    TERN_TLS_IDENTITY_SAN_DNS,
    TERN_TLS_IDENTITY_SAN_EMAIL,
    TERN_TLS_IDENTITY_SAN_URI,
} tern_tls_identity_source;

/* Borrowed bytes (PEM text need not be NUL-terminated). */
typedef struct tern_tls_bytes {
    const uint8_t *data;
    size_t len;
} tern_tls_bytes;

/* The input of a server context an error is about (tern_tls_server_config
 * .failed), so a caller can name it in its own terms (a configuration key
 * and its line). */
typedef enum tern_tls_server_input {
    TERN_TLS_INPUT_NONE = 0,   /* none in particular (library, memory) */
    TERN_TLS_INPUT_CERT,       /* cert_chain */
    TERN_TLS_INPUT_KEY,        /* key */
    TERN_TLS_INPUT_CLIENT_CA,  /* client_ca */
    TERN_TLS_INPUT_OPERATOR_CA, /* operator_ca */
    TERN_TLS_INPUT_OPERATORS,  /* operators */
} tern_tls_server_input;

typedef struct tern_tls_server_config {
    tern_tls_bytes cert_chain;  /* PEM: server certificate (ECDSA P-256), then intermediates */
    tern_tls_bytes key;         /* PEM: its private key */
    tern_tls_bytes client_ca;   /* PEM bundle of CAs whose clients are accepted; may be
                                   empty only when client certificates are not required */
    tern_tls_bytes operator_ca; /* PEM bundle; clients issued directly by one of these
                                   are operators (and are accepted). Empty = none */
    const char *operators;      /* comma-separated identities that are operators; NULL or
                                   "" = none. Copied. */
    tern_tls_version min_version;
    bool require_client_cert;
    tern_tls_identity_source identity;
    /* Optional (NULL = unused): on failure, set to the input err is about;
     * err then holds only what is wrong with it, for the caller to name
     * the input ("tls.key: FILE: does not match the server certificate"). */
    tern_tls_server_input *failed;
} tern_tls_server_config;

/*
 * Build a server context. NULL on failure with one line in err naming what
 * is wrong ("server certificate: ...", "client CA: ...", ...; without the
 * input's name when cfg->failed is set). Nothing of cfg is referenced
 * afterwards. The caller holds one reference.
 */
tern_tls_server *tern_tls_server_create(const tern_tls_server_config *cfg, char *err,
                                        size_t err_size);
/* Drop a reference; the context goes when its last connection is freed. */
void tern_tls_server_release(tern_tls_server *s);
/* Take another reference (for another thread that will make connections
 * from s: a reload hands one to each I/O thread); returns s. */
tern_tls_server *tern_tls_server_retain(tern_tls_server *s);

/* Where a server connection's long-lived blocks come from: the connection
 * itself, its record keys and its identity (wolfSSL's handshake memory
 * stays malloc's). The daemon gives its small-block pool, so an idle
 * connection's blocks are not scattered among the holes the handshakes
 * leave (src/platform/posix/pool.h). NULL members: malloc and free. */
typedef struct tern_tls_allocator {
    void *ctx;
    void *(*alloc)(void *ctx, size_t size);
    void (*free)(void *ctx, void *p);
} tern_tls_allocator;
/* Before the server's first connection; the allocator must outlive every
 * connection (and the server). */
void tern_tls_server_set_allocator(tern_tls_server *s, const tern_tls_allocator *a);

/* Client side: tests, and bridges to other brokers later (C7). */
typedef struct tern_tls_client_config {
    tern_tls_bytes ca;          /* PEM bundle trusted for the server's certificate */
    tern_tls_bytes cert_chain;  /* optional client certificate (PEM), empty = none */
    tern_tls_bytes key;         /* its key */
    tern_tls_version min_version, max_version;
} tern_tls_client_config;

tern_tls_client *tern_tls_client_create(const tern_tls_client_config *cfg, char *err,
                                        size_t err_size);
void tern_tls_client_release(tern_tls_client *cl);

/* A connection; NULL when out of memory. Each holds a reference on its
 * context. */
tern_tls_conn *tern_tls_server_conn(tern_tls_server *s);
tern_tls_conn *tern_tls_client_conn(tern_tls_client *cl);
/* Client side, before the handshake: the server's certificate must carry
 * name (a DNS subjectAltName, or the subject CN when it has none of that
 * type), or the handshake fails with TERN_TLS_FAIL_NAME_MISMATCH. Without
 * it only the chain is checked. False when out of memory. */
bool tern_tls_client_check_name(tern_tls_conn *c, const char *name);
void tern_tls_conn_free(tern_tls_conn *c);

typedef enum tern_tls_state {
    TERN_TLS_HANDSHAKING = 0,
    TERN_TLS_ESTABLISHED,
    TERN_TLS_PEER_CLOSED, /* the peer sent close_notify: nothing more will come */
    TERN_TLS_FAILED,      /* see tern_tls_failure(); output may hold an alert */
} tern_tls_state;

/*
 * Ciphertext in, plaintext out. Takes all of in (in_len may be 0; in is
 * only read during the call: what the adapter could not use yet is copied
 * and kept). Runs the handshake while it is in progress (a client starts
 * its handshake with an empty call) and decrypts records once it is done,
 * both in the same call, writing up to out_cap bytes of plaintext to out.
 * Returns the state after the call. Input after a failure is ignored.
 * in_len of 4 GiB or more fails the connection (no transport reads that
 * much at once; the adapter's queues count in 32 bits).
 */
tern_tls_state tern_tls_read(tern_tls_conn *c, const uint8_t *in, size_t in_len, uint8_t *out,
                             size_t out_cap, size_t *out_len);

/* True while input is buffered that tern_tls_read(c, NULL, 0, ...) would
 * turn into plaintext or state changes (out_cap was too small last time). */
bool tern_tls_has_input(const tern_tls_conn *c);

/*
 * Plaintext in: encrypts all len bytes into records (full 16 KiB records
 * for bulk data) appended to the output. Only when established; returns
 * false (and the state is FAILED) when out of memory or not established.
 */
bool tern_tls_write(tern_tls_conn *c, const uint8_t *data, size_t len);

/* Ciphertext out: what is waiting to be sent (pointer valid until the next
 * call on c), and how much of it the transport took. */
const uint8_t *tern_tls_out_peek(const tern_tls_conn *c, size_t *len);
void tern_tls_out_consume(tern_tls_conn *c, size_t n);
size_t tern_tls_out_pending(const tern_tls_conn *c);

/* Queue a close_notify alert (once established); the caller sends the
 * output and closes. */
void tern_tls_shutdown(tern_tls_conn *c);

/* TLS 1.3 KeyUpdate (RFC 8446 4.6.3): our sending key moves on, and with
 * ask_peer the peer is asked to move its own (connections still on
 * wolfSSL, TLS 1.3 clients, always ask). A peer's KeyUpdate is answered
 * by tern_tls_read on its own. False (and the state unchanged) when not
 * established or not TLS 1.3; false and FAILED when out of memory. */
bool tern_tls_key_update(tern_tls_conn *c, bool ask_peer);

tern_tls_state tern_tls_state_of(const tern_tls_conn *c);

/* After the handshake (server side): the verified identity, NULL when the
 * client sent no certificate (only possible with client certificates
 * optional); valid until the connection is freed. */
const char *tern_tls_identity(const tern_tls_conn *c);
bool tern_tls_is_operator(const tern_tls_conn *c);
/* "TLSv1.3", "TLSv1.2"; the negotiated cipher suite; for logs. */
const char *tern_tls_version_name(const tern_tls_conn *c);
const char *tern_tls_cipher_name(const tern_tls_conn *c);

/* Why a connection failed, for logs (SPEC C3: say why a client was refused). */
typedef enum tern_tls_failure {
    TERN_TLS_FAIL_NONE = 0,
    TERN_TLS_FAIL_NO_CERT,          /* client sent no certificate */
    TERN_TLS_FAIL_UNKNOWN_CA,       /* certificate not issued by a trusted CA */
    TERN_TLS_FAIL_EXPIRED,          /* certificate (or its CA) expired */
    TERN_TLS_FAIL_NOT_YET_VALID,    /* certificate (or its CA) not valid yet */
    TERN_TLS_FAIL_BAD_CERT,         /* bad signature, unparsable, wrong usage */
    TERN_TLS_FAIL_NO_IDENTITY,      /* verified, but no usable identity in it */
    TERN_TLS_FAIL_AMBIGUOUS_IDENTITY, /* verified, but it names two: two CNs, or two
                                         subjectAltNames of the configured type */
    TERN_TLS_FAIL_VERSION,          /* no protocol version in common */
    TERN_TLS_FAIL_NO_SHARED_CIPHER, /* no cipher suite, group or signature in common */
    TERN_TLS_FAIL_NOT_TLS,          /* the bytes are not TLS records */
    TERN_TLS_FAIL_PEER_ALERT,       /* the peer aborted with an alert */
    TERN_TLS_FAIL_PROTOCOL,         /* any other protocol error (bad record, MAC...) */
    TERN_TLS_FAIL_OUT_OF_MEMORY,
    TERN_TLS_FAIL_NAME_MISMATCH,    /* client side: the server's certificate does not carry
                                       the name asked for (tern_tls_client_check_name) */
} tern_tls_failure;

tern_tls_failure tern_tls_failure_of(const tern_tls_conn *c);
/* The wolfSSL error code behind the failure (negative), 0 when none. */
int tern_tls_error_code(const tern_tls_conn *c);
/* Why c failed, in words for a log line, written to buf (NUL-terminated,
 * cut to size): the failure's text, then the peer's alert in brackets
 * (with a hint when it refused our certificate) or the wolfSSL code. */
void tern_tls_describe_failure(const tern_tls_conn *c, char *buf, size_t size);
/* "certificate expired", ...; never NULL. */
const char *tern_tls_failure_text(tern_tls_failure f);
/* TLS alert descriptions (RFC 8446 section 6, RFC 5246 for 1.2): the
 * ones a broker sees, named once here. */
typedef enum tern_tls_alert {
    TERN_TLS_ALERT_UNEXPECTED_MESSAGE = 10,
    TERN_TLS_ALERT_BAD_RECORD_MAC = 20,
    TERN_TLS_ALERT_RECORD_OVERFLOW = 22,
    TERN_TLS_ALERT_HANDSHAKE_FAILURE = 40,
    TERN_TLS_ALERT_BAD_CERTIFICATE = 42,
    TERN_TLS_ALERT_UNSUPPORTED_CERTIFICATE = 43,
    TERN_TLS_ALERT_CERTIFICATE_REVOKED = 44,
    TERN_TLS_ALERT_CERTIFICATE_EXPIRED = 45,
    TERN_TLS_ALERT_CERTIFICATE_UNKNOWN = 46,
    TERN_TLS_ALERT_ILLEGAL_PARAMETER = 47,
    TERN_TLS_ALERT_UNKNOWN_CA = 48,
    TERN_TLS_ALERT_DECODE_ERROR = 50,
    TERN_TLS_ALERT_DECRYPT_ERROR = 51,
    TERN_TLS_ALERT_PROTOCOL_VERSION = 70,
    TERN_TLS_ALERT_INSUFFICIENT_SECURITY = 71,
    TERN_TLS_ALERT_INTERNAL_ERROR = 80,
    TERN_TLS_ALERT_INAPPROPRIATE_FALLBACK = 86,
    TERN_TLS_ALERT_MISSING_EXTENSION = 109,
    TERN_TLS_ALERT_UNRECOGNIZED_NAME = 112,
    TERN_TLS_ALERT_CERTIFICATE_REQUIRED = 116,
    TERN_TLS_ALERT_NO_APPLICATION_PROTOCOL = 120,
} tern_tls_alert;

/* The fatal alert the peer sent (a tern_tls_alert, e.g. unknown_ca when a
 * client does not trust our certificate), -1 if none. */
int tern_tls_peer_alert(const tern_tls_conn *c);
/* "unknown_ca", ...; "alert" for codes without a name here. */
const char *tern_tls_alert_text(int code);
/* Does this alert from a client say it refused the server's certificate
 * (bad, unsupported, expired, unknown, or from a CA it does not trust)? */
bool tern_tls_alert_refuses_certificate(int code);

/* Replace the clock certificate validity is checked against. fn behaves
 * like time(): seconds since the Unix epoch, also stored through t when t
 * is not NULL. NULL restores wolfSSL's default (time()). Process-wide,
 * because wolfSSL's clock is (the state lives in wolfSSL, not here); set it
 * before the first handshake. */
typedef time_t (*tern_tls_clock_fn)(time_t *t);
void tern_tls_set_clock(tern_tls_clock_fn fn);

/* PBKDF2-HMAC-SHA512 (wolfCrypt's): the core's broker_pbkdf2_fn for
 * password files (broker/passwd.h). False on failure, and always in a
 * build without PBKDF2 (the unikernel's, which refuses
 * auth.password_file). */
bool tern_tls_pbkdf2_sha512(const uint8_t *pw, size_t pw_len, const uint8_t *salt,
                            size_t salt_len, uint32_t iterations, uint8_t *out, size_t out_len);

#endif
