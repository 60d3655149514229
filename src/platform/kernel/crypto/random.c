/*
 * random.c - wolfSSL's source of random bytes (CUSTOM_RAND_GENERATE_BLOCK
 * in user_settings.h): the kernel's HMAC_DRBG (rng/entropy.c), so TLS keys,
 * nonces and ECDSA's per-signature secrets all come from the one DRBG the
 * entropy pool seeds and reseeds. wolfSSL keeps no generator of its own.
 *
 * Before the DRBG is seeded this fails, and with it every key generation:
 * the broker does not listen for TLS until then (serve/serve.c).
 */
#include "rng/drbg.h"
#include "rng/entropy.h"

#include <stddef.h>

int tern_crypto_random_block(unsigned char *out, unsigned int size);

int tern_crypto_random_block(unsigned char *out, unsigned int size)
{
    size_t left = size;
    while (left > 0) {
        size_t n = left < DRBG_MAX_REQUEST ? left : DRBG_MAX_REQUEST;
        if (rng_bytes(out, n) != 0)
            return -1; /* nonzero: wolfSSL reports RNG failure */
        out += n;
        left -= n;
    }
    return 0;
}
