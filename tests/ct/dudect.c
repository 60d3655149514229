/*
 * dudect.c - one dudect-style measurement (dudect.h). The inputs of both
 * classes are drawn before timing starts and sit in one array, so the
 * classes differ only in their values, not in where or when they were
 * made; the order of the classes is random, so drift (frequency scaling,
 * other load on the machine) falls on both alike. Cycles come from the
 * TSC fenced on both sides, so the call, not what surrounds it, is timed.
 */
#define _DEFAULT_SOURCE /* getrandom, ssize_t */

#include "dudect.h"

#include "ttest.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <x86intrin.h>

/* Percentiles of all durations to crop at (100: keep everything). */
static const double crops[] = {100, 99.9, 99, 95, 90, 80, 50};
/* Calls run first and not counted: cold caches and branch predictors. */
enum { WARMUP = 1000 };
/* A crop that leaves fewer than this in either class says nothing. */
enum { MIN_PER_CLASS = 100 };

static uint64_t cycles(void)
{
    _mm_lfence();
    uint64_t c = __rdtsc();
    _mm_lfence();
    return c;
}

static int fill_random(uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t got = getrandom(p, n, 0);
        if (got <= 0)
            return -1;
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Largest |t| over the crops of dt[0..m) by class cls[]. */
static void analyse(const uint64_t *dt, const uint8_t *cls, size_t m, struct ct_result *r)
{
    uint64_t *sorted = malloc(m * sizeof *sorted);
    r->max_t = 0;
    r->crop = 100;
    r->n = m;
    if (!sorted)
        return;
    memcpy(sorted, dt, m * sizeof *sorted);
    qsort(sorted, m, sizeof *sorted, cmp_u64);
    for (size_t k = 0; k < sizeof crops / sizeof crops[0]; k++) {
        uint64_t limit = sorted[(size_t)(crops[k] / 100.0 * (double)(m - 1))];
        struct ttest t;
        memset(&t, 0, sizeof t);
        for (size_t i = 0; i < m; i++)
            if (dt[i] <= limit)
                ttest_push(&t, cls[i], (double)dt[i]);
        if (t.n[0] < MIN_PER_CLASS || t.n[1] < MIN_PER_CLASS)
            continue;
        double v = fabs(ttest_t(&t));
        if (v > r->max_t) {
            r->max_t = v;
            r->crop = crops[k];
        }
    }
    free(sorted);
}

int ct_measure(const struct ct_target *t, size_t n, struct ct_result *r)
{
    size_t total = n + WARMUP;
    uint8_t *in = malloc(total * t->len), *cls = malloc(total), *fixed = calloc(1, t->len);
    uint64_t *dt = malloc(total * sizeof *dt);
    int rc = -1;

    if (!in || !cls || !fixed || !dt)
        goto out;
    if (t->fixed)
        t->fixed(fixed, t->len);
    if (fill_random(cls, total) != 0 || fill_random(in, total * t->len) != 0)
        goto out;
    for (size_t i = 0; i < total; i++) {
        cls[i] = (uint8_t)(cls[i] & 1);
        if (cls[i] == 0)
            memcpy(in + i * t->len, fixed, t->len);
    }
    for (size_t i = 0; i < total; i++) {
        uint64_t t0 = cycles();
        t->run(in + i * t->len);
        dt[i] = cycles() - t0;
    }
    analyse(dt + WARMUP, cls + WARMUP, n, r);
    rc = 0;
out:
    free(in);
    free(cls);
    free(fixed);
    free(dt);
    return rc;
}
