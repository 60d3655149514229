/*
 * health.h - continuous health tests for a noise source (NIST SP 800-90B,
 * 4.4): the repetition count test (a stuck source) and the adaptive
 * proportion test (a source that lost much of its entropy), on 8-bit
 * samples; and the most-common-value min-entropy estimate (6.3.1) used to
 * decide what a block of samples is worth. Pure functions of the samples,
 * tested on the host (tests/unit/test_khealth.c).
 */
#ifndef TERN_RNG_HEALTH_H
#define TERN_RNG_HEALTH_H

#include <stddef.h>
#include <stdint.h>

/* Cutoffs for a claimed min-entropy of H bits per sample and a false
 * alarm rate of 2^-20: RCT C = 1 + ceil(20 / H); APT C = 1 +
 * CRITBINOM(512, 2^-H, 1 - 2^-20), as in SP 800-90B table 2. */
enum {
    HEALTH_APT_WINDOW = 512,
    HEALTH_RCT_CUTOFF_H1 = 21, HEALTH_APT_CUTOFF_H1 = 311,   /* H = 1 */
    HEALTH_RCT_CUTOFF_H8 = 4, HEALTH_APT_CUTOFF_H8 = 13,     /* H = 8 */
};

struct health {
    unsigned rct_cutoff, apt_cutoff;
    uint8_t rct_last;
    unsigned rct_count;
    uint8_t apt_first;
    unsigned apt_count, apt_seen;   /* matches of apt_first; samples in window */
    unsigned long samples;
    int failed;                     /* 1 once either test fired; sticky */
    const char *failure;            /* which one */
};

void health_init(struct health *h, unsigned rct_cutoff, unsigned apt_cutoff);
/* Feed one sample; returns 0, or -1 if a test fired (now or before). */
int health_sample(struct health *h, uint8_t s);
/* Most-common-value min-entropy estimate of n 8-bit samples, in 1/256
 * bits per sample (0..2048): -log2 of the upper 99% confidence bound on
 * the most common value's probability. n must be >= 2. */
unsigned health_mcv_estimate(const uint8_t *s, size_t n);

#endif
