/*
 * diskwrite.c - the report's disk_write section (diskbench.h): find the
 * free span (diskspan.c over the GPT gpt_read checked), say on the
 * consoles exactly what would be written, take the operator's answer
 * (diskask.c over dev/conin.c, as the installer does), and only after
 * WIPE run the write measurements (diskrun.c) inside that span.
 *
 * Order matters as in the installer: every disk is surveyed with reads
 * only, and the answer taken, before the first write.
 */
#include "diag/diskbench.h"

#include "arch/x86_64/cpu.h"
#include "bootinfo.h"
#include "clock.h"
#include "console.h"
#include "dev/conin.h"
#include "diag/diskask.h"
#include "diag/diskrun.h"
#include "diag/diskspan.h"
#include "diag/diskstat.h"
#include "disk/blkdisk.h"
#include "disk/gpt.h"
#include "mm/kmalloc.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

enum { WHY_MAX = 200, POLL_US = 1000 };

/* What the survey found on one disk. */
struct candidate {
    struct blk_dev *dev;
    bool ok;                  /* span is free and may be asked about */
    struct diskspan span;
    char why[WHY_MAX];        /* when not ok */
};

/* Survey d with reads only: its largest free span, or why none. */
static void survey(struct blk_dev *d, struct gpt *g, struct candidate *c)
{
    struct blkdisk bd;
    struct kdisk_report rep;
    memset(c, 0, sizeof *c);
    c->dev = d;
    if (d->failed) {
        snprintf(c->why, sizeof c->why, "the device was given up");
        return;
    }
    if (d->topo.read_only) {
        snprintf(c->why, sizeof c->why, "read-only device");
        return;
    }
    if (blkdisk_open(d, &bd)) {
        snprintf(c->why, sizeof c->why, "no memory for the disk's I/O buffer");
        return;
    }
    kdisk_report_clear(&rep);
    int rc = gpt_read(&bd.disk, g, &rep);
    if (rc != KDISK_OK) {
        snprintf(c->why, sizeof c->why, "no valid GPT, so no way to tell free space (%s)",
                 rep.error[0] ? rep.error : "unreadable");
    } else if (kdisk_read(&bd.disk, 0, 1, bd.disk.io, "the MBR", &rep)) {
        snprintf(c->why, sizeof c->why, "%s", rep.error);
    } else {
        struct diskspan mbr[DISKSPAN_MBR_RECORDS];
        unsigned n = diskspan_mbr_ranges(bd.disk.io, d->topo.capacity, mbr);
        uint32_t align = DISKBENCH_ALIGN;
        if (align < d->topo.physical_block)
            align = d->topo.physical_block;
        c->ok = diskspan_free(g, mbr, n, d->topo.capacity, d->topo.logical_block, align,
                              DISKBENCH_MIN_FREE, &c->span, c->why, sizeof c->why) == 0;
    }
    blkdisk_close(&bd);
}

static void wait_us(uint64_t us)
{
    uint64_t until = clock_mono_ns() + us * 1000;
    while (clock_mono_ns() < until)
        cpu_relax();
}

/* The WIPE question on the consoles: 1 for WIPE, else 0 with why. */
static int ask(unsigned seconds, char *why, size_t n)
{
    struct diskask a;
    diskask_init(&a);
    conin_drain();
    kprintf("tern: diag: type WIPE and press Enter within %u s to run the write test; "
            "anything else skips it:\n", seconds);
    uint64_t until = clock_mono_ns() + (uint64_t)seconds * 1000000000;
    while (clock_mono_ns() < until) {
        int c = conin_getc();
        if (c < 0) {
            wait_us(POLL_US);
            continue;
        }
        const char *echo;
        enum diskask_state s = diskask_feed(&a, c, &echo);
        if (echo)
            console_write(echo, strlen(echo));
        if (s == DISKASK_WIPE) {
            console_write("\n", 1);
            kprintf("tern: diag: WIPE confirmed\n");
            return 1;
        }
        if (s == DISKASK_REFUSED) {
            console_write("\n", 1);
            kprintf("tern: diag: write test skipped: the answer was not WIPE; nothing "
                    "was written\n");
            snprintf(why, n, "not confirmed: the answer was not WIPE");
            return 0;
        }
    }
    console_write("\n", 1);
    kprintf("tern: diag: write test skipped: no answer within %u s; nothing was written\n",
            seconds);
    snprintf(why, n, "not confirmed: no answer within %u s", seconds);
    return 0;
}

static unsigned wipe_seconds(const struct diag_env *env)
{
    unsigned s = DISKBENCH_WIPE_S;
#ifdef TERN_TEST_HOOKS
    char arg[8]; /* test kernels: tern.test.diag.wipe_s=SECONDS (1..999) */
    if (env && env->boot && bootinfo_arg(env->boot, "tern.test.diag.wipe_s", arg, sizeof arg)) {
        unsigned v = 0, i = 0;
        for (; arg[i] >= '0' && arg[i] <= '9' && i < 3; i++)
            v = v * 10 + (unsigned)(arg[i] - '0');
        if (!arg[i] && v)
            s = v;
    }
#else
    (void)env;
#endif
    return s;
}

static void disk_facts(jw *w, const struct blk_dev *d)
{
    char bus[BLK_NAME_MAX];
    diskrun_bus(d, bus, sizeof bus);
    jw_str(w, "bus", bus);
    jw_str(w, "name", d->name);
    jw_str(w, "model", d->model[0] ? d->model : NULL);
    if (!d->model[0])
        jw_str(w, "model_why", "not reported by the device");
    jw_u64(w, "capacity_bytes", d->topo.capacity * d->topo.logical_block);
}

static void span_facts(jw *w, const struct candidate *c)
{
    uint32_t lb = c->dev->topo.logical_block;
    jw_u64(w, "span_start_bytes", c->span.first * lb);
    jw_u64(w, "span_bytes", (c->span.last - c->span.first + 1) * lb);
}

/* Every disk surveyed and what was found (the report says why a disk was
 * not the one tested). */
static void survey_list(jw *w, const struct candidate *cs, unsigned n)
{
    jw_arr(w, "disks");
    for (unsigned i = 0; i < n; i++) {
        jw_obj(w, NULL);
        jw_str(w, "name", cs[i].dev->name);
        if (cs[i].ok) {
            span_facts(w, &cs[i]);
        } else {
            jw_null(w, "span_bytes");
            jw_str(w, "span_bytes_why", cs[i].why);
        }
        jw_end(w);
    }
    jw_end(w);
}

/* Pseudo-random bytes for the write buffers (so no layer on the way can
 * compress or deduplicate them away). */
static void fill(uint8_t *p, size_t n, uint64_t seed)
{
    struct diskstat_lcg g;
    diskstat_lcg_seed(&g, seed);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)diskstat_lcg_below(&g, 256);
}

static void measure(jw *w, const struct candidate *c, unsigned budget_ms)
{
    struct blk_dev *d = c->dev;
    const struct blk_topology *t = &d->topo;
    uint32_t lb = t->logical_block;
    uint64_t span_blocks = c->span.last - c->span.first + 1;
    uint32_t sb = (t->max_transfer < DISKBENCH_SEQ_REQ_MAX ? t->max_transfer
                                                           : DISKBENCH_SEQ_REQ_MAX) / lb;
    uint32_t rb = lb >= DISKBENCH_RAND_BYTES ? 1 : DISKBENCH_RAND_BYTES / lb;
    if (!sb)
        sb = 1;
    struct diskrun_mem m;
    if (diskrun_mem_get(&m, (sb > rb ? sb : rb) * lb, DISKBENCH_SEQ_DEPTH)) {
        jw_bool(w, "done", false);
        jw_str(w, "why", "no memory for the buffers");
        disk_facts(w, d);
        span_facts(w, c);
        return;
    }
    uint64_t seed = 0;
    diskrun_seed(&seed);
    fill(m.buf, (size_t)m.slot_bytes * m.slots, seed);
    uint64_t run_ns = (uint64_t)budget_ms * 1000000 / 2;

    /* Durability of each random write: FUA when honoured, else a flush
     * after it when there is a volatile cache, else none is needed. */
    const char *durable;
    uint32_t flags = 0;
    int flush_each = 0;
    if (t->write_cache && t->fua) {
        flags = BLK_F_FUA;
        durable = "fua";
    } else if (t->write_cache && t->flush) {
        flush_each = 1;
        durable = "write+flush";
    } else if (!t->write_cache) {
        durable = "no volatile write cache: durable when done";
    } else {
        durable = "volatile write cache without flush: not durable";
    }
    jw_bool(w, "done", true);
    disk_facts(w, d);
    span_facts(w, c);
    struct diskrun_plan p = {.op = BLK_WRITE, .order = DISKRUN_SEQ, .first = c->span.first,
                             .req_blocks = sb, .depth = DISKBENCH_SEQ_DEPTH,
                             .flush_end = t->write_cache && t->flush, .budget_ns = run_ns,
                             .seed = seed};
    uint64_t cap = DISKBENCH_SEQ_SPAN_MAX / lb;
    p.blocks = span_blocks < cap ? span_blocks : cap;
    diskrun_mem_plan(&m, &p);
    struct diskrun_result r;
    kprintf("tern: diag: %s: sequential writes in the free span\n", d->name);
    diskrun(d, &p, &r);
    diskrun_json(w, "sequential", "write", &p, &r, lb);
    jw_bool(w, "sequential_flushed", p.flush_end != 0);

    p = (struct diskrun_plan){.op = BLK_WRITE, .order = DISKRUN_RANDOM, .first = c->span.first,
                              .blocks = span_blocks, .req_blocks = rb, .depth = 1,
                              .flags = flags, .flush_each = flush_each, .budget_ns = run_ns,
                              .seed = seed + 1};
    diskrun_mem_plan(&m, &p);
    kprintf("tern: diag: %s: random %u-byte writes in the free span (%s)\n", d->name,
            (unsigned)(rb * lb), durable);
    diskrun(d, &p, &r);
    diskrun_json(w, "random", "write", &p, &r, lb);
    jw_str(w, "random_durability", durable);
    diskrun_mem_put(&m);
    kprintf("tern: diag: %s: write test done; the free span now holds test data\n", d->name);
}

void diag_disk_write_test(jw *w, const struct diag_env *env)
{
    unsigned budget_ms = env && env->budget_ms ? env->budget_ms : DISKBENCH_BUDGET_MS;
    struct candidate cs[BLK_MAX_DEVICES];
    unsigned n = blk_count() < BLK_MAX_DEVICES ? blk_count() : BLK_MAX_DEVICES;
    struct gpt *g = kmalloc(sizeof *g);
    jw_obj(w, "disk_write");
    if (!g) {
        jw_bool(w, "done", false);
        jw_str(w, "why", "no memory to read partition tables");
        jw_end(w);
        return;
    }
    const struct candidate *pick = NULL;
    for (unsigned i = 0; i < n; i++) {
        survey(blk_get(i), g, &cs[i]);
        if (cs[i].ok && !pick)
            pick = &cs[i];
    }
    kfree(g);
    if (!pick) {
        jw_bool(w, "done", false);
        jw_str(w, "why", n ? "no disk has free space outside its partitions"
                           : "no disk");
        survey_list(w, cs, n);
        jw_end(w);
        kprintf("tern: diag: write test: no disk has free space outside its partitions; "
                "nothing was written\n");
        return;
    }
    const struct blk_dev *d = pick->dev;
    uint32_t lb = d->topo.logical_block;
    uint64_t start = pick->span.first * lb, len = (pick->span.last - pick->span.first + 1) * lb;
    kprintf("tern: diag: write test: disk %s, model \"%s\", %llu MiB\n", d->name,
            d->model[0] ? d->model : "not reported",
            (unsigned long long)(d->topo.capacity * lb >> 20));
    kprintf("tern: diag: write test: would write %llu MiB at byte %llu (LBA %llu-%llu), "
            "space no partition covers\n", (unsigned long long)(len >> 20),
            (unsigned long long)start, (unsigned long long)pick->span.first,
            (unsigned long long)pick->span.last);
    kprintf("tern: diag: write test: partitions and the partition table are untouched; "
            "the span is overwritten with test data and not restored (it is unallocated)\n");
    char why[WHY_MAX];
    if (!ask(wipe_seconds(env), why, sizeof why)) {
        jw_bool(w, "done", false);
        jw_str(w, "why", why);
        disk_facts(w, d);
        span_facts(w, pick);
    } else {
        measure(w, pick, budget_ms);
    }
    survey_list(w, cs, n);
    jw_end(w);
}
