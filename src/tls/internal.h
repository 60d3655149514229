/*
 * internal.h - shared between the files of src/tls/ only: the structures
 * behind the opaque types of tls.h and the helpers the files share. The
 * only header here that includes wolfSSL; nothing outside src/tls/ sees it.
 */
#ifndef TERN_TLS_INTERNAL_H
#define TERN_TLS_INTERNAL_H

#include <wolfssl/options.h>
#include <wolfssl/ssl.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tls/record.h"
#include "tls/tls.h"

/* A byte queue that owns its buffer only while it holds bytes, so an idle
 * connection's queues cost nothing but their zeroed fields (16 bytes: the
 * buffer's capacity is kept in front of the buffer, queue.c). */
typedef struct tls_queue {
    uint8_t *buf; /* owned; NULL when empty */
    uint32_t off; /* first unconsumed byte */
    uint32_t len; /* unconsumed bytes from off; a queue holds under 4 GiB:
                     appending more fails */
} tls_queue;

bool tls_queue_append(tls_queue *q, const uint8_t *data, size_t len);
/* Copy up to max bytes out and consume them; returns how many. */
size_t tls_queue_take(tls_queue *q, uint8_t *dst, size_t max);
void tls_queue_consume(tls_queue *q, size_t n);
/* Make room for n more bytes at the end and count them as queued: the
 * caller writes them through the pointer (NULL when out of memory). */
uint8_t *tls_queue_extend(tls_queue *q, size_t n);
/* Take back the last n bytes appended (n <= len). */
void tls_queue_drop_tail(tls_queue *q, size_t n);
void tls_queue_free(tls_queue *q);

/* Remembered certificate signatures (sigcache.c): slots in the table, each
 * a 32-byte tag and its sequence number (40 bytes), so TLS_SIGCACHE_SLOTS *
 * 40 bytes per server context (80 KB; a reload builds a new, empty one).
 * Enough for a fleet of this many distinct client certificates to
 * reconnect without the CA's verify.
 *
 * Threading: one table serves every thread that runs handshakes of its
 * context (the daemon's I/O threads, ADR-065) without a lock. A slot is a
 * sequence lock: a writer makes seq odd (compare-and-swap from the even
 * value it read, so two writers never write one slot at once: the loser
 * skips storing, it is a cache), writes the tag's words, makes seq even
 * again; a reader reads seq, the words, and seq again, and counts a hit
 * only when seq was even and unchanged. Every access is atomic, so a torn
 * tag is never compared as if whole (it reads as a miss). */
#define TLS_SIGCACHE_SLOTS 2048
#define TLS_SIGCACHE_TAG 32
#define TLS_SIGCACHE_WORDS (TLS_SIGCACHE_TAG / 8)

typedef struct tls_sigslot {
    _Atomic uint32_t seq;                      /* odd while a writer writes */
    _Atomic uint64_t tag[TLS_SIGCACHE_WORDS];  /* all zero = empty */
} tls_sigslot;

typedef struct tls_sigcache {
    tls_sigslot *slots;                /* owned, TLS_SIGCACHE_SLOTS */
    uint8_t salt[32];                  /* random per context: keys the tags */
    _Atomic uint64_t hits, misses;     /* lookups answered from memory, and not */
} tls_sigcache;

/* Empty table with a fresh salt; false when out of memory or randomness. */
bool tls_sigcache_init(tls_sigcache *sc);
void tls_sigcache_free(tls_sigcache *sc);
/* Does sig (DER ECDSA) verify digest under key_der (SubjectPublicKeyInfo)?
 * Returns 0 with *result 1 or 0, or a wolfCrypt error (bad key, memory).
 * Answers from the table when these exact bytes verified before; stores
 * only what verified. */
int tls_sigcache_verify(tls_sigcache *sc, const uint8_t *sig, unsigned sig_len,
                        const uint8_t *digest, unsigned digest_len, const uint8_t *key_der,
                        unsigned key_len, int *result);
/* wolfSSL's ECDSA verify callback for server contexts (ctx: the connection):
 * certificate signatures through the connection's server's table, the
 * CertificateVerify always computed. */
int tls_ecc_verify(WOLFSSL *ssl, const unsigned char *sig, unsigned int sig_len,
                   const unsigned char *digest, unsigned int digest_len,
                   const unsigned char *key_der, unsigned int key_len, int *result, void *ctx);

/* The operator CAs' subject name hashes (opnames.c): a leaf whose issuer
 * hash is none of them cannot verify against the operator manager, so the
 * operator check skips its second parse. Hashes are wolfSSL's (KEYID_SIZE:
 * SHA-1 or SHA-256 by build), zero-padded to TLS_NAME_HASH bytes. */
#define TLS_NAME_HASH 32

typedef struct tls_opnames {
    uint8_t *hashes; /* owned; count * TLS_NAME_HASH bytes */
    size_t count;
    bool filter;     /* false: the bundle was not fully understood, ask every time */
} tls_opnames;

/* From the operator CA bundle (PEM); never fails: what it cannot read turns
 * the filter off (every leaf is then asked about). */
void tls_opnames_load(tls_opnames *o, const uint8_t *pem, size_t len);
void tls_opnames_free(tls_opnames *o);
/* Could a CA of the list have issued a leaf with this issuer name hash?
 * True when the filter is off. */
bool tls_opnames_may_issue(const tls_opnames *o, const uint8_t issuer_hash[TLS_NAME_HASH]);

struct tern_tls_server {
    WOLFSSL_CTX *ctx;                  /* owned; trusts client and operator CAs */
    WOLFSSL_CERT_MANAGER *operator_cm; /* owned; operator CAs only; NULL = none */
    tls_opnames operator_names;        /* the operator CAs' subjects, when operator_cm */
    char *operators;                   /* owned: identities, each NUL-terminated, back
                                          to back; NULL when none */
    size_t operators_len;              /* bytes of operators, NULs included */
    tls_sigcache sigcache;             /* client certificate signatures that verified */
    tern_tls_identity_source identity;
    bool require_client_cert;
    /* Creator + one per connection. Atomic: with the daemon's I/O threads
     * (ADR-065) connections of one context are made and freed on several
     * threads, and a reload's old context goes on whichever frees its last. */
    _Atomic unsigned refs;
    tern_tls_allocator alloc;          /* its connections' long-lived blocks */
};

struct tern_tls_client {
    WOLFSSL_CTX *ctx; /* owned */
    _Atomic unsigned refs; /* as the server's */
};

/* Every idle connection holds one, kept to 128 bytes (a kernel heap size
 * class, _Static_assert below), and on the server side after the handover
 * the record layer's keys packed by suite (TLS_CONN_KEYS_AES128 for
 * AES-128-GCM, another 128-byte block). */
struct tern_tls_conn {
    WOLFSSL *ssl;              /* owned; NULL once the record layer took over */
    tern_tls_server *server;   /* reference held; NULL on the client side */
    union {
        uint8_t *keys;           /* server side (server != NULL), owned: during the
                                    handshake TLS 1.3's traffic secrets as caught
                                    (TLS_CONN_SECRETS bytes: the read one, then the
                                    write one); once ssl is NULL the record layer's
                                    keys (tls_conn_keys_size(suite) bytes: per
                                    direction, read first, its traffic secret, key and
                                    IV, each as long as the suite's); NULL otherwise */
        tern_tls_client *client; /* client side (server == NULL): reference held */
    };
    uint64_t seq_rd, seq_wr;   /* record layer: the next records' sequence numbers */
    tls_queue in;              /* ciphertext received but not yet read */
    tls_queue out;             /* ciphertext waiting for the transport */
    tls_queue plain;           /* record layer: plaintext decrypted but not yet read
                                  (the reader's buffer was too small) */
    const uint8_t *view;       /* caller's input, borrowed during tern_tls_read */
    char *identity;            /* owned; set by the verify callback */
    uint32_t view_len;
    int error;                 /* wolfSSL error code of the failure */
    int16_t peer_alert;        /* fatal alert wolfSSL did not see: a plaintext one in
                                  the handshake, or any after the handover; -1 if none */
    uint8_t state;             /* tern_tls_state */
    uint8_t failure;           /* tern_tls_failure; the first reason wins */
    uint8_t secrets;           /* handshake: bit 0 read, bit 1 write secret caught */
    uint8_t suite;             /* tls_rec_suite once the record layer took over, else
                                  TLS_REC_NONE */
    bool is_operator;
    bool close_sent;           /* record layer: close_notify queued */
};
_Static_assert(sizeof(struct tern_tls_conn) <= 128,
               "struct tern_tls_conn outgrew the 128-byte kernel heap class");

enum {
    TLS_CONN_SECRETS = 2 * TLS_REC_SECRET_MAX, /* the handshake's caught secrets */
    TLS_CONN_KEYS_AES128 = 2 * (32 + 16 + TLS_REC_IV), /* 120: a 128-byte class */
};

/* Bytes of the packed keys of a suite (struct tern_tls_conn's keys). */
size_t tls_conn_keys_size(tls_rec_suite s);
/* A handed-over server connection's record state, unpacked into r (the
 * caller wipes it with tls_rec_wipe). Also for tests. */
void tls_conn_rec_load(const tern_tls_conn *c, tls_rec *r);
/* The reverse: r's keys and sequence numbers back into c (packed), and r
 * wiped. Also for the record layer's fuzz target, which builds a
 * handed-over connection from fixed secrets. */
void tls_conn_rec_store(tern_tls_conn *c, tls_rec *r);

/* A context with tern's versions, suites, groups, no resumption and the
 * memory I/O callbacks below. NULL with a message on failure. */
WOLFSSL_CTX *tls_ctx_new(bool server, tern_tls_version min, tern_tls_version max, char *err,
                         size_t err_size);

/* wolfSSL's I/O callbacks: the connection (ctx) is the transport. */
int tls_io_recv(WOLFSSL *ssl, char *buf, int size, void *ctx);
int tls_io_send(WOLFSSL *ssl, char *buf, int size, void *ctx);

/* Record why c failed (unless a reason is already recorded). */
void tls_conn_set_failure(tern_tls_conn *c, tern_tls_failure f, int error);

/* wolfSSL's verify callback for server contexts: records certificate
 * failures and, on the verified leaf, extracts identity and operator role
 * into the connection (its user context). */
int tls_verify_client(int preverify_ok, WOLFSSL_X509_STORE_CTX *store);

/* Identity of a DER certificate by the configured source, and (when
 * issuer_hash is not NULL) its issuer name hash as wolfSSL computes it
 * (tls_opnames_may_issue), from the same parse. Returns
 * TERN_TLS_FAIL_NONE and a string from a (malloc when NULL) in *out (the
 * caller frees it the same way), or
 * TERN_TLS_FAIL_NO_IDENTITY when the field is missing or unusable (empty,
 * not UTF-8, control characters, too long), AMBIGUOUS_IDENTITY when there
 * are two (two subject CNs, two SANs of the type), or OUT_OF_MEMORY /
 * BAD_CERT. */
tern_tls_failure tls_identity_from_der(const uint8_t *der, size_t len,
                                       tern_tls_identity_source src,
                                       const tern_tls_allocator *a, char **out,
                                       uint8_t issuer_hash[TLS_NAME_HASH]);

/* A server connection's long-lived blocks (tern_tls_server_set_allocator):
 * a's, or malloc's when a is NULL or has none. tls_mem_zalloc zeroes. */
void *tls_mem_zalloc(const tern_tls_allocator *a, size_t size);
void tls_mem_free(const tern_tls_allocator *a, void *p);

/* Parse the comma-separated operators list into s. False with a message. */
bool tls_operators_set(tern_tls_server *s, const char *list, const char *prefix, char *err,
                       size_t err_size);
bool tls_operator_listed(const tern_tls_server *s, const char *identity);

/* Map a wolfSSL error code to a failure category. */
tern_tls_failure tls_failure_from_error(int error);

/* Error messages without printf (the unikernel's libc may lack it):
 * err = a + b (+ " (wolfSSL CODE)" when code != 0), cut to size. */
void tls_message(char *err, size_t size, const char *a, const char *b, int code);

/* wolfSSL_Init/Cleanup, reference-counted by wolfSSL itself. */
bool tls_library_up(void);
void tls_library_down(void);

#endif
