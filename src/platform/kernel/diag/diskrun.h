/*
 * diskrun.h - the engine under the disk measurements (diskbench.c reads,
 * diskwrite.c writes): one timed run of requests against a block device,
 * sequential or at random over a span, with a number of requests kept in
 * flight, every request's latency kept as a sample. Kernel-only (it
 * drives dev/blk.h by polling, like the blk_*_sync helpers: diagnostics
 * run at boot, before the broker), and it never chooses what to write:
 * the plan says where, the caller has checked that it may.
 */
#ifndef TERN_DIAG_DISKRUN_H
#define TERN_DIAG_DISKRUN_H

#include "dev/blk.h"
#include "json/json.h"

#include <stddef.h>
#include <stdint.h>

/* The measurements' tunables, defined here once. */
enum {
    DISKRUN_MAX_DEPTH = 8,                   /* slots the engine has */
    DISKBENCH_SEQ_DEPTH = 4,                 /* sequential requests in flight */
    DISKBENCH_SEQ_REQ_MAX = 1 << 20,         /* bytes per sequential request, at most */
    DISKBENCH_RAND_BYTES = 4096,             /* random request size (or one block if larger) */
    DISKBENCH_RAND_DEPTH = 8,                /* the "higher" queue depth */
    DISKBENCH_SAMPLES_MAX = 65536,           /* latencies kept per run: its op bound */
    DISKBENCH_BUDGET_MS = 3000,              /* per disk and section, split between its runs,
                                                when the caller gives none */
    DISKBENCH_ALIGN = 1 << 20,               /* write span alignment (>= any physical block) */
    DISKBENCH_MIN_FREE = 1 << 20,            /* the least free span the write test uses */
    DISKBENCH_WIPE_S = 30,                   /* seconds to answer the WIPE question */
};
#define DISKBENCH_SEQ_SPAN_MAX (256ull << 20) /* bytes a sequential run covers, at most */

enum diskrun_order { DISKRUN_SEQ, DISKRUN_RANDOM };

struct diskrun_plan {
    enum blk_op op;            /* BLK_READ or BLK_WRITE */
    enum diskrun_order order;
    uint64_t first, blocks;    /* the span, logical blocks */
    uint32_t req_blocks;       /* per request; random requests start at
                                  multiples of it from first */
    unsigned depth;            /* wanted in flight, 1..DISKRUN_MAX_DEPTH */
    uint32_t flags;            /* BLK_F_FUA for writes */
    int flush_each;            /* a flush after each write, in its latency
                                  (depth 1 only) */
    int flush_end;             /* one flush after the last request, in the time */
    uint64_t budget_ns;        /* no new request after this long */
    uint64_t seed;             /* random order */
    uint8_t *buf[DISKRUN_MAX_DEPTH]; /* one per slot: req_blocks blocks */
    uint64_t *lat;             /* samples (ns), lat_cap of them */
    size_t lat_cap;
};

struct diskrun_result {
    uint64_t ops;              /* requests completed (a write+flush is one) */
    uint64_t bytes;
    uint64_t elapsed_ns;       /* first submit to last completion (and flush) */
    unsigned depth;            /* most requests in flight at once */
    size_t samples;            /* latencies in plan.lat */
    int status;                /* BLK_OK, or the first failure */
    const char *stop;          /* "time", "span", "samples" or "error" */
};

/* Run p on d; BLK_OK or the first failure (also in r->status: what
 * completed before it is still counted). */
int diskrun(struct blk_dev *d, const struct diskrun_plan *p, struct diskrun_result *r);

#endif

/* Direct-map memory for the slot buffers and the samples (blk.h wants
 * direct-map buffers; the frame allocator gives whole pages). */
struct diskrun_mem {
    uint64_t buf_phys, lat_phys;
    size_t buf_pages, lat_pages;
    uint8_t *buf;              /* slots * slot_bytes */
    uint64_t *lat;             /* DISKBENCH_SAMPLES_MAX samples */
    uint32_t slot_bytes;
    unsigned slots;
};
/* 0, or -1 (nothing held) when memory is short. */
int diskrun_mem_get(struct diskrun_mem *m, uint32_t slot_bytes, unsigned slots);
void diskrun_mem_put(struct diskrun_mem *m);
/* Point p's buffers and samples at m (slot i at i * slot_bytes). */
void diskrun_mem_plan(const struct diskrun_mem *m, struct diskrun_plan *p);

/* One run as a JSON object (member key): request_bytes, depth_asked,
 * depth, then for DISKRUN_SEQ bytes, time_ns, mib_s; for DISKRUN_RANDOM
 * "<noun>s" (count), time_ns, "<noun>s_per_s", p50_us, p90_us, p99_us,
 * max_us (microseconds, three decimals); stopped_by. A failed run keeps
 * its counts and gives null figures with the failure as the why. Sorts
 * the samples. */
void diskrun_json(jw *w, const char *key, const char *noun, const struct diskrun_plan *p,
                  struct diskrun_result *r, uint32_t logical_block);

/* The bus of d: its name's first word ("virtio-blk"). */
void diskrun_bus(const struct blk_dev *d, char *out, size_t n);
/* A seed for the random order: from the DRBG (1) or, before it is seeded,
 * the non-key fallback (0). */
int diskrun_seed(uint64_t *seed);
