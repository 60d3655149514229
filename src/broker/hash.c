/*
 * hash.c - SipHash for the core's hash tables (hash.h). Written from the
 * algorithm's description: four 64-bit words of state initialised from the
 * key and four constants, c rounds per 8-byte little-endian block, the
 * last block carrying the length in its top byte, then d rounds.
 */
#include "broker/hash.h"

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

typedef struct sip {
    uint64_t v0, v1, v2, v3;
} sip;

static void sip_round(sip *s)
{
    s->v0 += s->v1;
    s->v1 = ROTL(s->v1, 13);
    s->v1 ^= s->v0;
    s->v0 = ROTL(s->v0, 32);
    s->v2 += s->v3;
    s->v3 = ROTL(s->v3, 16);
    s->v3 ^= s->v2;
    s->v0 += s->v3;
    s->v3 = ROTL(s->v3, 21);
    s->v3 ^= s->v0;
    s->v2 += s->v1;
    s->v1 = ROTL(s->v1, 17);
    s->v1 ^= s->v2;
    s->v2 = ROTL(s->v2, 32);
}

static void sip_block(sip *s, uint64_t m, int c)
{
    s->v3 ^= m;
    for (int i = 0; i < c; i++)
        sip_round(s);
    s->v0 ^= m;
}

uint64_t siphash(const uint64_t key[2], const uint8_t *p, size_t len, int c, int d)
{
    sip s = {
        key[0] ^ 0x736f6d6570736575ull, /* "somepseu" */
        key[1] ^ 0x646f72616e646f6dull, /* "dorandom" */
        key[0] ^ 0x6c7967656e657261ull, /* "lygenera" */
        key[1] ^ 0x7465646279746573ull, /* "tedbytes" */
    };
    size_t whole = len - len % 8;
    for (size_t i = 0; i < whole; i += 8) {
        uint64_t m = 0;
        for (int j = 7; j >= 0; j--)
            m = m << 8 | p[i + (size_t)j];
        sip_block(&s, m, c);
    }
    uint64_t last = (uint64_t)(len & 0xff) << 56;
    for (size_t j = 0; j < len % 8; j++)
        last |= (uint64_t)p[whole + j] << (8 * j);
    sip_block(&s, last, c);
    s.v2 ^= 0xff;
    for (int i = 0; i < d; i++)
        sip_round(&s);
    return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

uint32_t table_hash(const uint64_t key[2], uint64_t extra, const uint8_t *p, size_t len)
{
    const uint64_t k[2] = {key[0] ^ extra, key[1]};
    uint64_t h = siphash(k, p, len, 1, 3);
    return (uint32_t)(h ^ (h >> 32));
}
