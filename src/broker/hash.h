/*
 * hash.h - SipHash (Aumasson and Bernstein), the keyed hash of the core's
 * hash tables: with a key the platform draws at start, a client cannot
 * choose topics or client ids that all land in one bucket (hash flooding).
 * Internal to the core.
 */
#ifndef TERN_BROKER_HASH_H
#define TERN_BROKER_HASH_H

#include <stddef.h>
#include <stdint.h>

/* SipHash-c-d of p[0..len) under key[2] (k0, k1 as read little-endian from
 * the 16 key bytes). The tables use c = 1, d = 3; the tests check the
 * published SipHash-2-4 vectors through the same code. */
uint64_t siphash(const uint64_t key[2], const uint8_t *p, size_t len, int c, int d);

/* The tables' hash: SipHash-1-3, with `extra` mixed into the key so equal
 * strings under different parents (topic levels) hash apart. */
uint32_t table_hash(const uint64_t key[2], uint64_t extra, const uint8_t *p, size_t len);

#endif
