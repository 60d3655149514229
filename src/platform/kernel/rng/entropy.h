/*
 * entropy.h - the kernel's randomness (SPEC B3): noise sources feed a
 * SHA-256 pool that counts credited bits; once 256 bits are credited the
 * pool seeds an HMAC_DRBG, which is reseeded from the pool later. Nothing
 * that needs unpredictability (keys) may draw before rng_seeded().
 */
#ifndef TERN_RNG_ENTROPY_H
#define TERN_RNG_ENTROPY_H

#include <stddef.h>
#include <stdint.h>

enum rng_source { RNG_SRC_RDSEED, RNG_SRC_RDRAND, RNG_SRC_VIRTIO, RNG_SRC_JITTER, RNG_NSRC };

/* Gather from every source available and seed the DRBG if enough was
 * credited; the jitter source is run until seeded or max_ms passes. */
void rng_init(unsigned max_ms);
/* Periodic work from the main loop: more jitter while unseeded, reseeds
 * while seeded. Cheap when there is nothing to do. */
void rng_poll(void);
int rng_seeded(void);
/* Random bytes from the DRBG: 0, or -1 (nothing written) before seeding. */
int rng_bytes(void *out, size_t n);
/* For protocol nonces that must not wait for seeding (TCP initial
 * sequence numbers, DHCP transaction ids): the DRBG when seeded, else a
 * hash of the pool and the clock. Never for keys. */
uint32_t rng_u32_nonkey(void);
/* What the pool has seen, for the diagnostics report's RNG panel
 * (diag/rngpanel.c). A copy: reading it changes nothing. */
struct rng_stats {
    int seeded;
    unsigned reseeds;                   /* after the first seeding */
    uint64_t extractions;               /* seeds and nonces taken from the pool */
    unsigned pool_bits;                 /* credited since the last extraction */
    unsigned long credited[RNG_NSRC];   /* bits credited per source, ever */
    uint64_t drbg_generates;            /* DRBG requests since its last (re)seed */
    int jitter_ok;                      /* the jitter source is still used */
    unsigned long jitter_samples;       /* samples taken into the pool */
    unsigned long jitter_blocks;
    unsigned long jitter_estimated_bits; /* MCV estimate x samples, summed */
    unsigned jitter_last_estimate;      /* last block's, 1/256 bits per sample */
    unsigned rct_cutoff, apt_cutoff;    /* health test cutoffs in use */
    unsigned long health_samples;       /* samples the health tests saw */
    int health_failed;                  /* sticky */
    const char *health_failure;         /* which test, or NULL */
    const char *problem;                /* the last source failure, or NULL */
};
void rng_get_stats(struct rng_stats *out);
/* The source's name as the boot log and the report write it. */
const char *rng_source_name(enum rng_source s);

/* One line for the console: sources and credited bits. */
void rng_describe(char *buf, size_t n);

#endif
