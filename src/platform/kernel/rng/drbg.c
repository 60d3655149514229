/*
 * drbg.c - HMAC_DRBG (SP 800-90A, 10.1.2). State is (K, V); the update
 * function mixes provided data in with one or two HMAC rounds. Seed
 * material is a concatenation of up to three strings, passed as pieces so
 * no buffer of unknown size is built.
 */
#include "drbg.h"

#include "sha256.h"

#include <string.h>

struct piece {
    const void *p;
    size_t n;
};

/* HMAC_DRBG_Update: K = HMAC(K, V || round || data); V = HMAC(K, V);
 * a second round with 0x01 only when data is not empty. */
static void update(struct drbg *d, const struct piece *data, unsigned npieces)
{
    size_t total = 0;
    for (unsigned i = 0; i < npieces; i++)
        total += data[i].n;
    for (uint8_t round = 0; round < 2; round++) {
        if (round == 1 && total == 0)
            return;
        struct hmac_sha256 m;
        hmac_sha256_init(&m, d->k, sizeof d->k);
        hmac_sha256_update(&m, d->v, sizeof d->v);
        hmac_sha256_update(&m, &round, 1);
        for (unsigned i = 0; i < npieces; i++)
            hmac_sha256_update(&m, data[i].p, data[i].n);
        hmac_sha256_final(&m, d->k);
        hmac_sha256_init(&m, d->k, sizeof d->k);
        hmac_sha256_update(&m, d->v, sizeof d->v);
        hmac_sha256_final(&m, d->v);
    }
}

void drbg_instantiate(struct drbg *d, const void *entropy, size_t elen, const void *nonce,
                      size_t nlen, const void *pers, size_t plen)
{
    memset(d->k, 0x00, sizeof d->k);
    memset(d->v, 0x01, sizeof d->v);
    struct piece seed[3] = {{entropy, elen}, {nonce, nlen}, {pers, plen}};
    update(d, seed, 3);
    d->reseed_counter = 1;
    d->instantiated = 1;
}

void drbg_reseed(struct drbg *d, const void *entropy, size_t elen, const void *add,
                 size_t alen)
{
    struct piece seed[2] = {{entropy, elen}, {add, alen}};
    update(d, seed, 2);
    d->reseed_counter = 1;
}

int drbg_generate(struct drbg *d, void *out, size_t n, const void *add, size_t alen)
{
    if (!d->instantiated || d->reseed_counter > DRBG_RESEED_INTERVAL || n > DRBG_MAX_REQUEST)
        return -1;
    struct piece extra = {add, alen};
    if (alen)
        update(d, &extra, 1);
    uint8_t *o = out;
    while (n) {
        struct hmac_sha256 m;
        hmac_sha256_init(&m, d->k, sizeof d->k);
        hmac_sha256_update(&m, d->v, sizeof d->v);
        hmac_sha256_final(&m, d->v);
        size_t take = n < sizeof d->v ? n : sizeof d->v;
        memcpy(o, d->v, take);
        o += take;
        n -= take;
    }
    update(d, &extra, alen ? 1 : 0);
    d->reseed_counter++;
    return 0;
}

void drbg_wipe(struct drbg *d)
{
    secure_zero(d, sizeof *d);
}
