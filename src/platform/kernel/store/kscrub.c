/*
 * kscrub.c - the scrubber's kernel side (kscrub.h): the schedule and the
 * I/O budget, reads that wait on the store thread, the console lines.
 */
#include "store/kscrub.h"

#include "clock.h"
#include "console.h"
#include "disk/blkdisk.h"
#include "mm/kmalloc.h"
#include "store/kwaitdisk.h"
#include "store/scrub.h"

#include <stdio.h>
#include <string.h>

struct kscrub {
    struct scrub sc;
    struct blkdisk bd;          /* its I/O buffer; reads that yield (kwaitdisk) */
    uint32_t rate_kib;
    uint32_t interval_s;
    uint64_t next_us;           /* the next step may run from then */
    uint64_t pass_start_us;
    uint64_t last_pass_ms;
    uint64_t gen;
    uint32_t console_lines;     /* finding lines this pass */
    uint64_t console_held;      /* findings this pass not printed */
};

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
    kprintf("tern: scrub: on, %u KiB/s, a pass every %u s; the first in %u s\n",
            (unsigned)rate_kib, (unsigned)interval_s, (unsigned)first);
    return k;
}

bool kscrub_due(const struct kscrub *k, uint64_t now_us)
{
    return k != NULL && now_us >= k->next_us;
}

void kscrub_step(struct kscrub *k, uint64_t now_us)
{
    uint64_t before = k->sc.pass_bytes;
    if (k->sc.pass_bytes == 0 && k->sc.phase == 0 && k->sc.item == 0)
        k->pass_start_us = now_us;
    bool ended = scrub_step(&k->sc, KSCRUB_STEP_BYTES);
    uint64_t after = clock_mono_ns() / 1000;
    uint64_t read = ended ? KSCRUB_STEP_BYTES : k->sc.pass_bytes - before;
    /* The budget: the next step waits as long as this one's bytes take at
     * the rate. */
    k->next_us = after + read * 1000000u / ((uint64_t)k->rate_kib * 1024u);
    if (ended) {
        k->last_pass_ms = (after - k->pass_start_us) / 1000;
        uint64_t next_pass = k->pass_start_us + (uint64_t)k->interval_s * 1000000u;
        if (next_pass > k->next_us)
            k->next_us = next_pass;
        kprintf("tern: scrub: pass %llu done in %llu ms: %llu damaged places found so far"
                "%s\n", (unsigned long long)k->sc.passes, (unsigned long long)k->last_pass_ms,
                (unsigned long long)k->sc.corrupt,
                k->console_held ? " (some not shown above: at most 8 lines a pass)" : "");
        k->console_lines = 0;
        k->console_held = 0;
        k->sc.pass_bytes = 0;
    }
    k->gen++;
}

int kscrub_request(struct kscrub *k, uint64_t now_us)
{
    /* Between passes the scrubber rests at the start of its first phase. */
    if (k->sc.phase != SCRUB_PH_SUPER || k->sc.item != 0 || k->sc.pos != 0)
        return 1;
    if (k->next_us > now_us)
        k->next_us = now_us;
    return 0;
}

uint64_t kscrub_generation(const struct kscrub *k)
{
    return k != NULL ? k->gen : 0;
}

void kscrub_status(const struct kscrub *k, broker_store_status *out)
{
    if (k == NULL)
        return;
    out->scrub_on = true;
    out->scrub_progress_pct = scrub_progress(&k->sc);
    out->scrub_passes = k->sc.passes;
    out->scrub_corrupt = k->sc.corrupt;
    out->scrub_last_pass_ms = k->last_pass_ms;
    if (k->sc.corrupt != 0)
        snprintf(out->scrub_last_corrupt, sizeof out->scrub_last_corrupt, "%s, byte %llu: %s",
                 k->sc.last.region, (unsigned long long)k->sc.last.offset, k->sc.last.what);
    else
        snprintf(out->scrub_last_corrupt, sizeof out->scrub_last_corrupt, "none");
}
