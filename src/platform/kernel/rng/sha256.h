/*
 * sha256.h - SHA-256 (FIPS 180-4) and HMAC-SHA-256 (FIPS 198-1), small and
 * portable, for the entropy pool and the DRBG until wolfCrypt is linked
 * into the kernel. Checked against the FIPS 180-4 examples and RFC 4231 in
 * tests/unit/test_ksha256.c.
 */
#ifndef TERN_RNG_SHA256_H
#define TERN_RNG_SHA256_H

#include <stddef.h>
#include <stdint.h>

enum { SHA256_BYTES = 32, SHA256_BLOCK = 64 };

struct sha256 {
    uint32_t h[8];
    uint64_t total;            /* bytes hashed so far */
    uint8_t buf[SHA256_BLOCK];
    size_t used;               /* bytes waiting in buf */
};

void sha256_init(struct sha256 *c);
void sha256_update(struct sha256 *c, const void *data, size_t len);
/* Write the digest and wipe the context. */
void sha256_final(struct sha256 *c, uint8_t out[SHA256_BYTES]);
void sha256(const void *data, size_t len, uint8_t out[SHA256_BYTES]);

struct hmac_sha256 {
    struct sha256 inner, outer;
};
void hmac_sha256_init(struct hmac_sha256 *m, const void *key, size_t keylen);
void hmac_sha256_update(struct hmac_sha256 *m, const void *data, size_t len);
void hmac_sha256_final(struct hmac_sha256 *m, uint8_t out[SHA256_BYTES]);

/* Zero memory in a way the compiler may not drop. */
void secure_zero(void *p, size_t n);

#endif
