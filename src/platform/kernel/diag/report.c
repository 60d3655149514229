/*
 * report.c - the diagnostics report (docs/DIAGNOSTICS.md): one JSON object,
 * {"schema": 1, "tern": VERSION, "mode": ..., "time": ..., sections...,
 * "elapsed_ms": ...}, assembled from the section writers of the other
 * diagnostics parts: diag/hw.h (cpu, hypervisor, cores, memory, firmware,
 * pci, nics, disks, rng; memory_bandwidth), diag/diskbench.h (disk_read,
 * disk_write) and src/diag/cryptobench.h (crypto, handshake). The disk
 * write test asks for WIPE on the consoles, so it runs only in the plain
 * diag mode; diag-serve says so in its place.
 */
#include "diag/diag.h"

#include "arch/x86_64/cpu.h"
#include "clock.h"
#include "dev/rtc.h"
#include "diag/diag_clock.h"
#include "json/json.h"
#include "version.h"

#include <stdio.h>

/* The sections' headers, as each part lands (a build made before a part
 * is merged writes its sections as null with "not in this build"; see the
 * weak definitions below). */
#if __has_include("diag/hw.h")
#include "diag/hw.h"
#else
void diag_hw_write(jw *w, const struct diag_env *env);
void diag_membw_write(jw *w);
#endif
#if __has_include("diag/diskbench.h")
#include "diag/diskbench.h"
#else
void diag_disk_read_write(jw *w);
void diag_disk_write_test(jw *w, const struct diag_env *env);
#endif
#if __has_include("diag/cryptobench.h")
#include "diag/cryptobench.h"
#else
#define DIAG_CRYPTO_BUDGET_MS 3000u
void diag_crypto_write(jw *w, const struct diag_clock *clk, unsigned budget_ms);
#endif

/* Schema version of the report (docs/DIAGNOSTICS.md: additions keep it,
 * a change of meaning or a removal bumps it). */
enum { DIAG_SCHEMA = 1 };

static void absent(jw *w, const char *name)
{
    char why[40];
    snprintf(why, sizeof why, "%s_why", name);
    jw_null(w, name);
    jw_str(w, why, "not in this build");
}

/* A section whose part is not linked into this kernel: named null with
 * its reason, never left out. A part's own definition replaces these. */
__attribute__((weak)) void diag_hw_write(jw *w, const struct diag_env *env)
{
    static const char *const names[] = {"cpu", "hypervisor", "cores", "memory", "firmware",
                                        "pci", "nics", "disks", "rng"};
    (void)env;
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        absent(w, names[i]);
}
__attribute__((weak)) void diag_membw_write(jw *w) { absent(w, "memory_bandwidth"); }
__attribute__((weak)) void diag_disk_read_write(jw *w) { absent(w, "disk_read"); }
__attribute__((weak)) void diag_disk_write_test(jw *w, const struct diag_env *env)
{
    (void)env;
    absent(w, "disk_write");
}
__attribute__((weak)) void diag_crypto_write(jw *w, const struct diag_clock *clk,
                                             unsigned budget_ms)
{
    (void)clk;
    (void)budget_ms;
    absent(w, "crypto");
    absent(w, "handshake");
}

static uint64_t now_ns(void *ctx)
{
    (void)ctx;
    return clock_mono_ns();
}

static uint64_t cycles(void *ctx)
{
    (void)ctx;
    return rdtsc();
}

static void time_member(jw *w)
{
    struct rtc_time t;
    if (rtc_read(&t) != 0) {
        jw_null(w, "time");
        jw_str(w, "time_why", "the RTC did not give a plausible time");
        return;
    }
    char iso[32];
    snprintf(iso, sizeof iso, "%04d-%02d-%02dT%02d:%02d:%02dZ", t.year, t.month, t.day, t.hour,
             t.minute, t.second);
    jw_str(w, "time", iso);
}

size_t diag_run(const struct diag_env *env, char *report, size_t cap)
{
    uint64_t t0 = clock_mono_ns();
    jw w;
    jw_init(&w, report, cap);
    jw_obj(&w, NULL);
    jw_u64(&w, "schema", DIAG_SCHEMA);
    jw_str(&w, "tern", TERN_VERSION);
    jw_str(&w, "mode", env->mode);
    time_member(&w);

    diag_hw_write(&w, env);
    diag_membw_write(&w);
    diag_disk_read_write(&w);
    if (env->serve_after) {
        jw_obj(&w, "disk_write");
        jw_bool(&w, "done", false);
        jw_str(&w, "why", "not run in diag-serve");
        jw_end(&w);
    } else {
        diag_disk_write_test(&w, env);
    }
    /* Cycle counts only from a TSC whose rate does not change. */
    struct diag_clock clk = {now_ns, env->tsc && env->tsc->invariant ? cycles : NULL, NULL};
    diag_crypto_write(&w, &clk, env->budget_ms ? env->budget_ms : DIAG_CRYPTO_BUDGET_MS);

    jw_u64(&w, "elapsed_ms", (clock_mono_ns() - t0) / 1000000);
    jw_end(&w);
    size_t n = jw_finish(&w);
    if (n)
        return n;
    /* Too large for cap (or a writer misused jw): still one valid document
     * that says so, rather than none. */
    jw_init(&w, report, cap);
    jw_obj(&w, NULL);
    jw_u64(&w, "schema", DIAG_SCHEMA);
    jw_str(&w, "tern", TERN_VERSION);
    jw_str(&w, "mode", env->mode);
    jw_null(&w, "report");
    jw_str(&w, "report_why", "the sections did not fit the report buffer or were malformed");
    jw_end(&w);
    return jw_finish(&w);
}
