/*
 * kscrub.c - the scrubber's kernel side (kscrub.h): the schedule and the
 * I/O budget, reads that wait on the store thread, the console lines.
 *
 * The pass (sc) is the store thread's alone; the main loop (CPU 0, the
 * console's "scrub now" and the $SYS status) sees only `shown` and the
 * schedule (next_us), both under lock: with a storage core the store
 * thread runs on CPU 1 (ADR-064). The lock is held for copies only,
 * never across a read.
 */
#include "store/kscrub.h"

#include "arch/x86_64/spinlock.h"

#include "clock.h"
#include "console.h"
#include "disk/blkdisk.h"
#include "mm/kmalloc.h"
#include "store/kwaitdisk.h"
#include "store/scrub.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* What the main side may see of the pass, refreshed after every step. */
struct kscrub_shown {
    unsigned progress_pct;
    uint64_t passes, corrupt, last_pass_ms;
    bool resting;               /* between passes: "scrub now" starts one */
    char last_corrupt[sizeof ((broker_store_status *)0)->scrub_last_corrupt];
};

struct kscrub {
    struct spinlock lock;       /* next_us, gen, shown */
    struct kscrub_shown shown;
    struct scrub sc;
    struct blkdisk bd;          /* its I/O buffer; reads that yield (kwaitdisk) */
    uint32_t rate_kib;
    uint32_t interval_s;
    uint64_t next_us;           /* the next step may run from then */
    uint64_t pass_start_us;
    uint64_t last_pass_ms;
    _Atomic uint64_t gen;       /* moved under lock; read without it by the
                                 * main loop's per-turn look (kscrub_generation) */
    uint32_t console_lines;     /* finding lines this pass */
    uint64_t console_held;      /* findings this pass not printed */
};

/* Refresh shown from the pass; called locked, on the store thread. */
static void show_pass(struct kscrub *k)
{
    struct kscrub_shown *o = &k->shown;
    o->progress_pct = scrub_progress(&k->sc);
    o->passes = k->sc.passes;
    o->corrupt = k->sc.corrupt;
    o->last_pass_ms = k->last_pass_ms;
    /* Between passes the scrubber rests at the start of its first phase. */
    o->resting = k->sc.phase == SCRUB_PH_SUPER && k->sc.item == 0 && k->sc.pos == 0;
    if (k->sc.corrupt != 0)
        snprintf(o->last_corrupt, sizeof o->last_corrupt, "%s, byte %llu: %s",
                 k->sc.last.region, (unsigned long long)k->sc.last.offset, k->sc.last.what);
    else
        snprintf(o->last_corrupt, sizeof o->last_corrupt, "none");
}

static void on_finding(void *ctx, const struct scrub_finding *f)
{
    struct kscrub *k = ctx;
    if (k->console_lines >= KSCRUB_CONSOLE_PER_PASS) {
        k->console_held++;
        return;
    }
    k->console_lines++;
    kprintf("tern: scrub: DAMAGE in %s at byte %llu: %s\n", f->region,
            (unsigned long long)f->offset, f->what);
}

struct kscrub *kscrub_start(struct blk_dev *dev, const struct klayout *l, uint32_t rate_kib,
                            uint32_t interval_s)
{
    if (rate_kib == 0)
        return NULL;
    struct kscrub *k = kmalloc(sizeof *k);
    if (k == NULL)
        return NULL;
    memset(k, 0, sizeof *k);
    k->lock = (struct spinlock)SPINLOCK_INIT;
    if (blkdisk_open(dev, &k->bd) != 0) {
        kfree(k);
        return NULL;
    }
    kwaitdisk_attach(&k->bd); /* the store thread yields while it reads */
    k->bd.disk.write = NULL;  /* the scrubber never writes */
    k->bd.disk.flush = NULL;
    k->rate_kib = rate_kib;
    k->interval_s = interval_s;
    scrub_init(&k->sc, &k->bd.disk, l, on_finding, k);
    uint64_t now = clock_mono_ns() / 1000;
    uint32_t first = interval_s < KSCRUB_FIRST_DELAY_S ? interval_s : KSCRUB_FIRST_DELAY_S;
    k->next_us = now + (uint64_t)first * 1000000u;
    k->pass_start_us = k->next_us;
    show_pass(k);
    kprintf("tern: scrub: on, %u KiB/s, a pass every %u s; the first in %u s\n",
            (unsigned)rate_kib, (unsigned)interval_s, (unsigned)first);
    return k;
}

bool kscrub_due(struct kscrub *k, uint64_t now_us)
{
    if (k == NULL)
        return false;
    spin_lock(&k->lock);
    bool due = now_us >= k->next_us;
    spin_unlock(&k->lock);
    return due;
}

void kscrub_step(struct kscrub *k, uint64_t now_us)
{
    uint64_t before = k->sc.pass_bytes;
    if (k->sc.pass_bytes == 0 && k->sc.phase == 0 && k->sc.item == 0)
        k->pass_start_us = now_us;
    bool ended = scrub_step(&k->sc, KSCRUB_STEP_BYTES); /* unlocked: it reads the disk */
    uint64_t after = clock_mono_ns() / 1000;
    uint64_t read = ended ? KSCRUB_STEP_BYTES : k->sc.pass_bytes - before;
    /* The budget: the next step waits as long as this one's bytes take at
     * the rate. */
    uint64_t next = after + read * 1000000u / ((uint64_t)k->rate_kib * 1024u);
    if (ended) {
        k->last_pass_ms = (after - k->pass_start_us) / 1000;
        uint64_t next_pass = k->pass_start_us + (uint64_t)k->interval_s * 1000000u;
        if (next_pass > next)
            next = next_pass;
        kprintf("tern: scrub: pass %llu done in %llu ms: %llu damaged places found so far"
                "%s\n", (unsigned long long)k->sc.passes, (unsigned long long)k->last_pass_ms,
                (unsigned long long)k->sc.corrupt,
                k->console_held ? " (some not shown above: at most 8 lines a pass)" : "");
        k->console_lines = 0;
        k->console_held = 0;
        k->sc.pass_bytes = 0;
    }
    spin_lock(&k->lock);
    /* A "scrub now" that came during this step saw the pass resting only
     * if this step began it: the pass it asked for is this one. */
    k->next_us = next;
    show_pass(k);
    k->gen++;
    spin_unlock(&k->lock);
}

int kscrub_request(struct kscrub *k, uint64_t now_us)
{
    spin_lock(&k->lock);
    int running = !k->shown.resting;
    if (!running && k->next_us > now_us)
        k->next_us = now_us;
    spin_unlock(&k->lock);
    return running;
}

uint64_t kscrub_generation(struct kscrub *k)
{
    if (k == NULL)
        return 0;
    /* No lock (issue 18: the main loop asks every turn); kscrub_status
     * takes it for the snapshot that goes with a generation. */
    return atomic_load_explicit(&k->gen, memory_order_acquire);
}

uint64_t kscrub_status(struct kscrub *k, broker_store_status *out)
{
    if (k == NULL)
        return 0;
    spin_lock(&k->lock);
    out->scrub_on = true;
    out->scrub_progress_pct = k->shown.progress_pct;
    out->scrub_passes = k->shown.passes;
    out->scrub_corrupt = k->shown.corrupt;
    out->scrub_last_pass_ms = k->shown.last_pass_ms;
    memcpy(out->scrub_last_corrupt, k->shown.last_corrupt, sizeof out->scrub_last_corrupt);
    uint64_t gen = k->gen;
    spin_unlock(&k->lock);
    return gen;
}
