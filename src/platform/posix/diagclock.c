/*
 * diagclock.c - the daemon's side of the diagnostics (diagclock.h): its
 * clock, and `ternd --diag`, which prints the crypto and handshake figures
 * the kernel's diagnostics report has (docs/DIAGNOSTICS.md) for the host.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "platform/posix/diagclock.h"

#include "diag/cryptobench.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

/* The whole document: the two sections are ~5 KiB. */
#define DIAG_DOC_MAX (64u * 1024u)

static uint64_t mono_ns(void *ctx)
{
    struct timespec ts;

    (void)ctx;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
static uint64_t tsc(void *ctx)
{
    (void)ctx;
    return __rdtsc();
}
#endif

struct diag_clock posix_diag_clock(void)
{
    struct diag_clock c = {mono_ns, NULL, NULL};

#if defined(__x86_64__)
    c.cycles = tsc;
#endif
    return c;
}

int posix_diag_run(unsigned budget_ms)
{
    struct diag_clock clk = posix_diag_clock();
    char *buf = malloc(DIAG_DOC_MAX);
    size_t n;

    if (buf == NULL) {
        fprintf(stderr, "ternd: --diag: out of memory\n");
        return 1;
    }
    n = diag_crypto_report(buf, DIAG_DOC_MAX, &clk, budget_ms, "daemon");
    if (n == 0) {
        fprintf(stderr, "ternd: --diag: the report did not fit in %u bytes\n", DIAG_DOC_MAX);
        free(buf);
        return 1;
    }
    fwrite(buf, 1, n, stdout);
    fputc('\n', stdout);
    free(buf);
    return 0;
}
