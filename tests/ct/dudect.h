/*
 * dudect.h - one dudect-style timing test (dudect.c): many calls of a
 * function on secret inputs of two classes, a fixed input and fresh
 * random ones, interleaved at random; each call's duration in cycles;
 * Welch's t between the classes over all durations and over durations
 * cropped at several percentiles (cropping drops the long tail that
 * interrupts and a loaded machine add). A large |t| means the time
 * depends on the secret.
 */
#ifndef TERN_CT_DUDECT_H
#define TERN_CT_DUDECT_H

#include <stddef.h>
#include <stdint.h>

/* |t| above this flags a leak: dudect's own threshold for "definitely
 * not constant time". A constant-time function's |t| stays within a few
 * units (it is roughly normally distributed around 0); the leaky
 * control's is in the hundreds. */
#define CT_T_THRESHOLD 10.0

struct ct_target {
    const char *name;
    /* Bytes of secret input one call takes. */
    size_t len;
    /* The fixed class's input (NULL: all zero). Called once per run. */
    void (*fixed)(uint8_t *in, size_t len);
    /* The code under test, on one input. */
    void (*run)(const uint8_t *in);
    /* 1 for a control that leaks on purpose and must be flagged. */
    int leaky;
};

struct ct_result {
    double max_t;  /* largest |t| over the crops */
    double crop;   /* the percentile it was found at (100: no crop) */
    size_t n;      /* measurements used (after the warm-up) */
};

/* Measure t on n inputs. Returns 0, or -1 when out of memory or when the
 * system gives no random bytes. */
int ct_measure(const struct ct_target *t, size_t n, struct ct_result *r);

#endif
