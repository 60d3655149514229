/*
 * crypto_ops.h - one measurement of one wolfCrypt operation: run it until a
 * deadline on the platform's clock and say how many times it ran, how long
 * that took and which implementation wolfSSL dispatched to. The parts of
 * the report's "crypto" section (cryptobench.c writes them) and the costs
 * the handshake's breakdown is estimated from (handshake.c).
 */
#ifndef TERN_DIAG_CRYPTO_OPS_H
#define TERN_DIAG_CRYPTO_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "diag/diag_clock.h"

/* The operations measured, in the report's order. */
typedef enum diag_op {
    DIAG_OP_ECDSA_P256_SIGN = 0,
    DIAG_OP_ECDSA_P256_VERIFY,
    DIAG_OP_X25519_KEYGEN,
    DIAG_OP_X25519_SHARED,
    DIAG_OP_ECDH_P256_KEYGEN,
    DIAG_OP_ECDH_P256_SHARED,
    DIAG_OP_SHA256_64,        /* one whole hash of 64 bytes */
    DIAG_OP_SHA256_BULK,      /* DIAG_BULK_BYTES per update */
    DIAG_OP_AES128_GCM,       /* one DIAG_BULK_BYTES record sealed */
    DIAG_OP_AES256_GCM,
    DIAG_OP_CHACHA20_POLY1305,
    DIAG_OP_COUNT
} diag_op;

/* The size of a bulk operation: one full TLS record's plaintext. */
#define DIAG_BULK_BYTES 16384u

/* Timed samples kept per operation (a sample is one operation, or a batch
 * of a cheap one); the measurement stops when they are full. */
#define DIAG_OP_SAMPLES 512u

typedef struct diag_op_result {
    uint64_t iterations;  /* completed operations */
    uint64_t elapsed_ns;  /* wall time of those, on the platform's clock */
    uint64_t cycles;      /* cycle counter over the same span (0: no counter) */
    unsigned samples;     /* timed samples behind the medians */
    uint64_t median_ns;   /* of one operation: the median sample / its batch */
    uint64_t median_cycles; /* the same in cycles (0: no counter) */
    uint64_t bytes;       /* processed by bulk operations (0 for the others) */
    const char *impl;     /* the implementation wolfSSL chose (static text) */
    const char *why;      /* NULL, or why the operation could not be measured */
} diag_op_result;

/* The report's member name of an operation ("ecdsa_p256_sign", ...). */
const char *diag_op_name(diag_op op);
/* True for the throughput measurements (SHA-256 bulk, the AEADs). */
bool diag_op_is_bulk(diag_op op);

/* Run op at least once, then again until now_ns() reaches deadline_ns or
 * DIAG_OP_SAMPLES samples are taken. On failure r->why says what failed
 * and r->iterations is 0. */
void diag_op_measure(diag_op op, const struct diag_clock *clk, uint64_t deadline_ns,
                     diag_op_result *r);

/* "wolfSSL 5.7.2": the library measured. */
const char *diag_crypto_library(void);

/* The cost of one operation in ns, the median sample's (0 when it was not
 * measured). */
uint64_t diag_op_ns(const diag_op_result *r);

#endif
