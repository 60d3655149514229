/*
 * drbg.h - HMAC_DRBG with SHA-256 (NIST SP 800-90A Rev. 1, 10.1.2), no
 * prediction resistance. The caller supplies entropy: entropy.c feeds it
 * from the pool. Checked against NIST CAVP vectors in
 * tests/unit/test_kdrbg.c.
 */
#ifndef TERN_RNG_DRBG_H
#define TERN_RNG_DRBG_H

#include <stddef.h>
#include <stdint.h>

enum {
    DRBG_MAX_REQUEST = 65536,                 /* bytes per generate (2^19 bits) */
};
#define DRBG_RESEED_INTERVAL (1ull << 32)     /* generates between reseeds (90A allows 2^48) */

struct drbg {
    uint8_t k[32], v[32];
    uint64_t reseed_counter;
    int instantiated;
};

void drbg_instantiate(struct drbg *d, const void *entropy, size_t elen, const void *nonce,
                      size_t nlen, const void *pers, size_t plen);
void drbg_reseed(struct drbg *d, const void *entropy, size_t elen, const void *add,
                 size_t alen);
/* Fill out[0..n). Returns 0, or -1 (nothing written) if not instantiated,
 * if a reseed is due, or if n exceeds DRBG_MAX_REQUEST. */
int drbg_generate(struct drbg *d, void *out, size_t n, const void *add, size_t alen);
/* Forget the state. */
void drbg_wipe(struct drbg *d);

#endif
