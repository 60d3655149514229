/*
 * kcontend.c - the contention figures (kcontend.h). Each lock's counters
 * are copied under that lock (spin_stats_read), one lock at a time, so
 * reading them takes no lock while holding another; the CPUs' counters
 * are read as they stand (smp_get_counters).
 */
#include "serve/kcontend.h"

#include "arch/x86_64/percpu.h"
#include "arch/x86_64/smp.h"
#include "arch/x86_64/spinlock.h"
#include "console.h"
#include "mm/kmalloc.h"
#include "mm/pmm.h"
#include "store/ksqlite.h"
#include "store/kstore.h"
#include "store/ktele.h"
#include "wallclock.h"

#include <stdio.h>

static void lock_out(jw *w, const char *name, const struct spin_stats *s)
{
    jw_obj(w, name);
    jw_u64(w, "taken", s->taken);
    jw_u64(w, "contended", s->contended);
    jw_u64(w, "spins", s->spins);
    jw_u64(w, "wait_ticks", s->wait_ticks);
    jw_end(w);
}

void kcontend_write(jw *w, struct kstore *k)
{
    struct spin_stats s;
    jw_obj(w, "locks");
    kmalloc_lock_stats(&s);
    lock_out(w, "heap", &s);
    if (ksqlite_heap_stats(NULL, &s))
        lock_out(w, "sqlite_heap", &s);
    pmm_lock_stats(&s);
    lock_out(w, "frames", &s);
    console_lock_stats(&s);
    lock_out(w, "console", &s);
    wallclock_lock_stats(&s);
    lock_out(w, "wallclock", &s);
    if (k) {
        kstore_lock_stats(k, &s);
        lock_out(w, "store_queue", &s);
    }
    if (ktele_lock_stats(&s))
        lock_out(w, "telemetry", &s);
    jw_end(w);
    jw_arr(w, "cpus");
    for (unsigned i = 0; i < SMP_MAX_CPUS; i++) {
        struct smp_counters c;
        if (!smp_get_counters(i, &c))
            continue; /* absent, or did not come up */
        jw_obj(w, NULL);
        jw_u64(w, "id", i);
        jw_u64(w, "ipis_sent", c.ipis_sent);
        jw_u64(w, "ipis_skipped", c.ipis_skipped);
        jw_u64(w, "halts", c.halts);
        jw_end(w);
    }
    jw_end(w);
}
