/*
 * katboot.c - runs the known-answer tests at boot and says on the console
 * what passed, or exactly which test failed and how. Kept apart from
 * kat.c, which is portable and also runs in the host unit tests.
 */
#include "crypto/kat.h"

#include "clock.h"
#include "console.h"

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
