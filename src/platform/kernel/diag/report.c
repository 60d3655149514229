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

#include "clock.h"
#include "crypto/kdiagclock.h"
#include "dev/rtc.h"
#include "diag/cryptobench.h"
#include "diag/diskbench.h"
#include "diag/hw.h"
#include "json/json.h"
#include "version.h"

#include <stdio.h>

/* Schema version of the report (docs/DIAGNOSTICS.md: additions keep it,
 * a change of meaning or a removal bumps it). */
enum { DIAG_SCHEMA = 1 };

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

/* The report's opening: what every report starts with. */
static void open_report(jw *w, const struct diag_env *env, char *report, size_t cap)
{
    jw_init(w, report, cap);
    jw_obj(w, NULL);
    jw_u64(w, "schema", DIAG_SCHEMA);
    jw_str(w, "tern", TERN_VERSION);
    jw_str(w, "mode", env->mode);
}

size_t diag_run(const struct diag_env *env, char *report, size_t cap)
{
    uint64_t t0 = clock_mono_ns();
    jw w;
    open_report(&w, env, report, cap);
    time_member(&w);

    diag_hw_write(&w, env);
    diag_membw_write(&w);
    diag_disk_read_budget(&w, env->budget_ms);
    if (env->serve_after) {
        jw_obj(&w, "disk_write");
        jw_bool(&w, "done", false);
        jw_str(&w, "why", "not run in diag-serve");
        jw_end(&w);
    } else {
        diag_disk_write_test(&w, env);
    }
    struct diag_clock clk = kdiag_clock(env->tsc); /* cycles only from an invariant TSC */
    diag_crypto_write(&w, &clk, env->budget_ms ? env->budget_ms : DIAG_CRYPTO_BUDGET_MS);

    jw_u64(&w, "elapsed_ms", (clock_mono_ns() - t0) / 1000000);
    jw_end(&w);
    size_t n = jw_finish(&w);
    if (n)
        return n;
    /* Too large for cap (or a writer misused jw): still one valid document
     * that says so, rather than none. */
    open_report(&w, env, report, cap);
    jw_null(&w, "report");
    jw_str(&w, "report_why", "the sections did not fit the report buffer or were malformed");
    jw_end(&w);
    return jw_finish(&w);
}
