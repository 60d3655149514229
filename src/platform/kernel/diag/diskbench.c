/*
 * diskbench.c - the report's disk_read section (diskbench.h): for each
 * disk, one sequential and two random runs of reads (diskrun.c), each a
 * third of the disk's time budget. Reads only: nothing here writes.
 */
#include "diag/diskbench.h"

#include "console.h"
#include "diag/diskrun.h"

#include <stdio.h>

/* Random read size in blocks: 4 KiB, or one block when blocks are larger. */
static uint32_t rand_blocks(uint32_t lb)
{
    return lb >= DISKBENCH_RAND_BYTES ? 1 : DISKBENCH_RAND_BYTES / lb;
}

static uint32_t seq_blocks(const struct blk_topology *t)
{
    uint32_t bytes = t->max_transfer < DISKBENCH_SEQ_REQ_MAX ? t->max_transfer
                                                             : DISKBENCH_SEQ_REQ_MAX;
    return bytes / t->logical_block ? bytes / t->logical_block : 1;
}

static void one_disk(jw *w, struct blk_dev *d, unsigned budget_ms)
{
    const struct blk_topology *t = &d->topo;
    char bus[BLK_NAME_MAX];
    diskrun_bus(d, bus, sizeof bus);
    jw_obj(w, NULL);
    jw_str(w, "bus", bus);
    jw_str(w, "name", d->name);
    jw_str(w, "model", d->model[0] ? d->model : NULL);
    if (!d->model[0])
        jw_str(w, "model_why", "not reported by the device");
    jw_u64(w, "capacity_bytes", t->capacity * t->logical_block);

    const char *why = NULL;
    struct diskrun_mem m;
    uint32_t sb = seq_blocks(t), rb = rand_blocks(t->logical_block);
    uint32_t slot = sb > rb ? sb : rb;
    unsigned slots = DISKBENCH_SEQ_DEPTH > DISKBENCH_RAND_DEPTH ? DISKBENCH_SEQ_DEPTH
                                                                : DISKBENCH_RAND_DEPTH;
    if (d->failed)
        why = "the device was given up";
    else if (t->capacity < rb)
        why = "the disk is smaller than one request";
    else if (diskrun_mem_get(&m, slot * t->logical_block, slots))
        why = "no memory for the buffers";
    if (why) {
        jw_null(w, "sequential");
        jw_str(w, "sequential_why", why);
        jw_null(w, "random");
        jw_str(w, "random_why", why);
        jw_end(w);
        return;
    }
    uint64_t seed = 0;
    int drbg = diskrun_seed(&seed);
    uint64_t run_ns = (uint64_t)budget_ms * 1000000 / 3;

    struct diskrun_plan p = {.op = BLK_READ, .order = DISKRUN_SEQ, .first = 0,
                             .req_blocks = sb, .depth = DISKBENCH_SEQ_DEPTH,
                             .budget_ns = run_ns, .seed = seed};
    uint64_t span = DISKBENCH_SEQ_SPAN_MAX / t->logical_block;
    p.blocks = t->capacity < span ? t->capacity : span;
    diskrun_mem_plan(&m, &p);
    struct diskrun_result r;
    kprintf("tern: diag: %s: sequential reads (%u KiB requests, %u in flight)\n", d->name,
            (unsigned)(sb * t->logical_block >> 10), (unsigned)DISKBENCH_SEQ_DEPTH);
    diskrun(d, &p, &r);
    diskrun_json(w, "sequential", "read", &p, &r, t->logical_block);

    jw_arr(w, "random");
    static const unsigned depths[] = {1, DISKBENCH_RAND_DEPTH};
    for (unsigned i = 0; i < sizeof depths / sizeof depths[0]; i++) {
        p.order = DISKRUN_RANDOM;
        p.first = 0;
        p.blocks = t->capacity;
        p.req_blocks = rb;
        p.depth = depths[i];
        p.seed = seed + i;
        kprintf("tern: diag: %s: random %u-byte reads, %u in flight\n", d->name,
                (unsigned)(rb * t->logical_block), depths[i]);
        diskrun(d, &p, &r);
        diskrun_json(w, NULL, "read", &p, &r, t->logical_block);
    }
    jw_end(w);
    jw_str(w, "spread", "uniform over the whole disk, aligned to the request size");
    jw_str(w, "seed", drbg ? "drbg" : "not from the drbg (not seeded yet)");
    diskrun_mem_put(&m);
    jw_end(w);
}

void diag_disk_read_budget(jw *w, unsigned budget_ms)
{
    if (!budget_ms)
        budget_ms = DISKBENCH_BUDGET_MS;
    jw_arr(w, "disk_read");
    for (unsigned i = 0; i < blk_count(); i++)
        one_disk(w, blk_get(i), budget_ms);
    jw_end(w);
}

void diag_disk_read_write(jw *w) { diag_disk_read_budget(w, 0); }
