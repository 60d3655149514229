/*
 * record_keys.h - the fixed traffic secrets of the record layer's fuzz
 * target (fuzz_record.c), which opens records with them, and of its seed
 * generator (gen_record_seeds.c), which seals the seeds with them: the
 * seeds are valid records only while both use these. A server reads what
 * the client writes (the client secret) and writes with its own.
 */
#ifndef TERN_FUZZ_RECORD_KEYS_H
#define TERN_FUZZ_RECORD_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tls/record.h"

enum { FUZZ_RECORD_CLIENT = 1, FUZZ_RECORD_SERVER = 2 };

/* The suite an input's first byte selects. */
static inline tls_rec_suite fuzz_record_suite(uint8_t b)
{
    return (tls_rec_suite)(TLS_REC_AES128_GCM_SHA256 + b % 3);
}

/* The traffic secret of one side, as long as suite s needs. */
static inline bool fuzz_record_secret(tls_rec_dir *d, tls_rec_suite s, uint8_t side)
{
    uint8_t secret[TLS_REC_SECRET_MAX];

    for (size_t i = 0; i < sizeof secret; i++)
        secret[i] = (uint8_t)(i * 31u + side * 101u + 7u);
    return tls_rec_set_secret(d, s, secret, tls_rec_secret_len(s));
}

/* Both directions of one end: the server reads with the client's secret,
 * the client with the server's. */
static inline bool fuzz_record_end(tls_rec *r, tls_rec_suite s, bool server)
{
    memset(r, 0, sizeof *r);
    r->suite = (uint8_t)s;
    return fuzz_record_secret(&r->rd, s, server ? FUZZ_RECORD_CLIENT : FUZZ_RECORD_SERVER) &&
           fuzz_record_secret(&r->wr, s, server ? FUZZ_RECORD_SERVER : FUZZ_RECORD_CLIENT);
}

#endif
