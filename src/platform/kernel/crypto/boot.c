/*
 * boot.c - the crypto part of every boot: the date certificates are
 * checked against (wallclock.c), wolfSSL's set-up (setup.c), and the
 * known-answer self-tests (kat.c), each reported on the console. The
 * broker does not start when a self-test fails (SPEC B5).
 */
#include "crypto/crypto.h"

#include "arch/x86_64/simd.h"
#include "bootinfo.h"
#include "clock.h"
#include "console.h"
#include "crypto/kat.h"
#include "rng/entropy.h"
#include "wallclock.h"

#include <stdio.h>
#include <string.h>

struct kat_log {
    char passed[160];
    size_t len;
    int failed;
};

static void report(void *ctx, const char *name, const char *why)
{
    struct kat_log *log = ctx;
    if (why) {
        kprintf("tern: crypto self-test FAILED: %s: %s\n", name, why);
        log->failed++;
        return;
    }
    int n = snprintf(log->passed + log->len, sizeof log->passed - log->len, "%s%s",
                     log->len ? " " : "", name);
    if (n > 0 && (size_t)n < sizeof log->passed - log->len)
        log->len += (size_t)n;
}

int kat_boot(const char *corrupt)
{
    struct kat_log log;
    memset(&log, 0, sizeof log);
    uint64_t t0 = clock_mono_ns();
    int failed = kat_run_all(corrupt, report, &log);
    uint64_t us = (clock_mono_ns() - t0) / 1000;
    if (failed) {
        kprintf("tern: crypto self-tests: %d failed (passed: %s)\n", failed,
                log.len ? log.passed : "none");
        return -1;
    }
    kprintf("tern: crypto self-tests passed in %llu.%03llu ms: %s\n",
            (unsigned long long)(us / 1000), (unsigned long long)(us % 1000), log.passed);
    return 0;
}

int crypto_boot(const struct boot_info *bi, const struct simd_state *simd)
{
    char line[160];
    int dated = wallclock_init();
    wallclock_describe(line, sizeof line);
    kprintf("tern: clock: %s\n", line);
    if (dated != 0)
        kprintf("tern: clock: without a date no certificate can be checked: no TLS "
                "listener (ADR-025)\n");
    if (crypto_setup(simd) != 0)
        return -1;
    crypto_describe(line, sizeof line);
    kprintf("tern: crypto: %s%s\n", line, simd->avx_hidden ? " (AVX state unavailable)" : "");
    if (!rng_seeded()) {
        kprintf("tern: crypto self-tests not run: the RNG is not seeded; the broker will "
                "not start\n");
        return -1;
    }
    const char *corrupt = NULL;
#ifdef TERN_TEST_HOOKS
    char katfail[32];
    if (bootinfo_arg(bi, "tern.katfail", katfail, sizeof katfail))
        corrupt = katfail;
#else
    (void)bi;
#endif
    if (kat_boot(corrupt) != 0) {
        kprintf("tern: crypto self-test failed: the broker will not start\n");
        return -1;
    }
    return 0;
}
