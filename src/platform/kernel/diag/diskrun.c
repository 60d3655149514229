/*
 * diskrun.c - the timed request engine (diskrun.h): a ring of slots, each
 * one request in flight; the loop fills free slots until the budget, the
 * span or the sample buffer runs out, and polls the block layer for
 * completions. Latency is submit to completion as the poll sees it, so it
 * includes the (short) polling delay, as an application's would.
 */
#include "diag/diskrun.h"

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/memlayout.h"
#include "clock.h"
#include "diag/diskstat.h"
#include "mm/pmm.h"
#include "rng/entropy.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

struct slot {
    struct blk_req req;
    uint64_t t0;          /* submit time of the request (the write, when flushed) */
    uint64_t bytes;
    bool busy, done, flushing;
};

static void slot_done(struct blk_req *req)
{
    ((struct slot *)req->ctx)->done = true;
}

/* Submit s's current request; BLK_OK, BLK_EAGAIN, or a failure. */
static int submit(struct blk_dev *d, struct slot *s)
{
    s->done = false;
    return blk_submit(d, &s->req);
}

/* Wait for one request of d outside the slots (the final flush). */
static int wait_one(struct blk_dev *d, struct slot *s)
{
    int rc;
    while ((rc = submit(d, s)) == BLK_EAGAIN)
        blk_poll_all();
    if (rc != BLK_OK)
        return rc;
    while (!s->done)
        if (!blk_poll_all())
            cpu_relax();
    return s->req.status;
}

int diskrun(struct blk_dev *d, const struct diskrun_plan *p, struct diskrun_result *r)
{
    struct slot slots[DISKRUN_MAX_DEPTH];
    struct diskstat_lcg lcg;
    unsigned depth = p->depth < 1 ? 1 : p->depth > DISKRUN_MAX_DEPTH ? DISKRUN_MAX_DEPTH
                                                                      : p->depth;
    if (p->flush_each)
        depth = 1;
    uint32_t lb = d->topo.logical_block;
    uint64_t units = p->req_blocks ? p->blocks / p->req_blocks : 0; /* whole requests in the span */
    memset(r, 0, sizeof *r);
    memset(slots, 0, sizeof slots);
    r->status = BLK_OK;
    r->stop = "span";
    if (units == 0)
        return BLK_OK;
    diskstat_lcg_seed(&lcg, p->seed);
    uint64_t next = 0;       /* sequential: the next request's index */
    unsigned inflight = 0;
    bool stop = false;
    uint64_t start = clock_mono_ns(), last = start;
    for (;;) {
        /* Fill free slots. */
        for (unsigned i = 0; i < depth && !stop; i++) {
            struct slot *s = &slots[i];
            if (s->busy)
                continue;
            uint64_t now = clock_mono_ns();
            if (now - start >= p->budget_ns) {
                stop = true;
                r->stop = "time";
                break;
            }
            if (p->lat && r->samples + inflight >= p->lat_cap) {
                stop = true;
                r->stop = "samples";
                break;
            }
            uint64_t idx;
            if (p->order == DISKRUN_SEQ) {
                if (next >= units) {
                    stop = true;
                    r->stop = "span";
                    break;
                }
                idx = next++;
            } else {
                idx = diskstat_lcg_below(&lcg, units);
            }
            s->req = (struct blk_req){.op = p->op, .flags = p->flags,
                                      .lba = p->first + idx * p->req_blocks,
                                      .count = p->req_blocks, .buf = p->buf[i],
                                      .done = slot_done, .ctx = s};
            s->bytes = (uint64_t)p->req_blocks * lb;
            s->flushing = false;
            s->t0 = clock_mono_ns();
            int rc = submit(d, s);
            if (rc == BLK_EAGAIN) {
                if (p->order == DISKRUN_SEQ)
                    next--; /* the driver's queue is full: this one again later */
                break;
            }
            if (rc != BLK_OK) {
                r->status = rc;
                r->stop = "error";
                stop = true;
                break;
            }
            s->busy = true;
            inflight++;
            if (inflight > r->depth)
                r->depth = inflight;
        }
        if (inflight == 0 && stop)
            break;
        if (!blk_poll_all())
            cpu_relax();
        /* Collect. */
        for (unsigned i = 0; i < depth; i++) {
            struct slot *s = &slots[i];
            if (!s->busy || !s->done)
                continue;
            uint64_t now = clock_mono_ns();
            if (s->req.status != BLK_OK) {
                s->busy = false;
                inflight--;
                if (r->status == BLK_OK)
                    r->status = s->req.status;
                r->stop = "error";
                stop = true;
                continue;
            }
            if (p->flush_each && !s->flushing) {
                s->flushing = true;
                s->req = (struct blk_req){.op = BLK_FLUSH, .done = slot_done, .ctx = s};
                int rc;
                while ((rc = submit(d, s)) == BLK_EAGAIN)
                    blk_poll_all();
                if (rc == BLK_OK)
                    continue;
                s->req.status = rc;
                s->busy = false;
                inflight--;
                r->status = rc;
                r->stop = "error";
                stop = true;
                continue;
            }
            s->busy = false;
            inflight--;
            r->ops++;
            r->bytes += s->bytes;
            if (p->lat && r->samples < p->lat_cap)
                p->lat[r->samples++] = now - s->t0;
            last = now;
        }
    }
    if (p->flush_end && r->status == BLK_OK && r->ops) {
        struct slot f;
        memset(&f, 0, sizeof f);
        f.req = (struct blk_req){.op = BLK_FLUSH, .done = slot_done, .ctx = &f};
        int rc = wait_one(d, &f);
        last = clock_mono_ns();
        if (rc != BLK_OK) {
            r->status = rc;
            r->stop = "error";
        }
    }
    r->elapsed_ns = last - start;
    return r->status;
}

/* ---- memory, JSON, naming ------------------------------------------------ */

int diskrun_mem_get(struct diskrun_mem *m, uint32_t slot_bytes, unsigned slots)
{
    memset(m, 0, sizeof *m);
    m->buf_pages = ((size_t)slot_bytes * slots + PAGE_SIZE - 1) / PAGE_SIZE;
    m->lat_pages = (DISKBENCH_SAMPLES_MAX * sizeof(uint64_t) + PAGE_SIZE - 1) / PAGE_SIZE;
    m->buf_phys = pmm_alloc_contig(m->buf_pages);
    m->lat_phys = m->buf_phys ? pmm_alloc_contig(m->lat_pages) : 0;
    if (!m->lat_phys) {
        if (m->buf_phys)
            pmm_free_contig(m->buf_phys, m->buf_pages);
        memset(m, 0, sizeof *m);
        return -1;
    }
    m->buf = phys_to_virt(m->buf_phys);
    m->lat = phys_to_virt(m->lat_phys);
    m->slot_bytes = slot_bytes;
    m->slots = slots;
    return 0;
}

void diskrun_mem_put(struct diskrun_mem *m)
{
    if (m->buf_phys)
        pmm_free_contig(m->buf_phys, m->buf_pages);
    if (m->lat_phys)
        pmm_free_contig(m->lat_phys, m->lat_pages);
    memset(m, 0, sizeof *m);
}

void diskrun_mem_plan(const struct diskrun_mem *m, struct diskrun_plan *p)
{
    for (unsigned i = 0; i < DISKRUN_MAX_DEPTH; i++)
        p->buf[i] = i < m->slots ? m->buf + (size_t)i * m->slot_bytes : NULL;
    p->lat = m->lat;
    p->lat_cap = DISKBENCH_SAMPLES_MAX;
}

static void us3(jw *w, const char *key, uint64_t ns)
{
    jw_fixed(w, key, (int64_t)(ns > INT64_MAX ? INT64_MAX : ns), 3); /* ns = us with 3 decimals */
}

/* A value that cannot be given: null and its "_why" sibling. */
static void null_why(jw *w, const char *key, const char *why)
{
    char k[40];
    snprintf(k, sizeof k, "%s_why", key);
    jw_null(w, key);
    jw_str(w, k, why);
}

void diskrun_json(jw *w, const char *key, const char *noun, const struct diskrun_plan *p,
                  struct diskrun_result *r, uint32_t logical_block)
{
    char k[32], why[80];
    const char *fail = NULL;
    if (r->status != BLK_OK) {
        snprintf(why, sizeof why, "%s failed after %llu requests: %s",
                 p->op == BLK_WRITE ? "a write" : "a read", (unsigned long long)r->ops,
                 blk_status_text(r->status));
        fail = why;
    } else if (r->ops == 0) {
        fail = "no request completed";
    }
    jw_obj(w, key);
    jw_u64(w, "request_bytes", (uint64_t)p->req_blocks * logical_block);
    unsigned asked = p->flush_each ? 1 : p->depth;
    jw_u64(w, "depth_asked", asked);
    jw_u64(w, "depth", r->depth);
    if (r->ops && r->depth < asked) {
        char took[64];
        snprintf(took, sizeof took, "the driver took at most %u request%s at once", r->depth,
                 r->depth == 1 ? "" : "s");
        jw_str(w, "depth_why", took);
    }
    if (p->order == DISKRUN_SEQ) {
        jw_u64(w, "bytes", r->bytes);
        jw_u64(w, "time_ns", r->elapsed_ns);
        if (fail) {
            null_why(w, "mib_s", fail);
        } else {
            jw_fixed(w, "mib_s", (int64_t)diskstat_mib_s_x10(r->bytes, r->elapsed_ns), 1);
        }
    } else {
        snprintf(k, sizeof k, "%ss", noun);
        jw_u64(w, k, r->ops);
        jw_u64(w, "time_ns", r->elapsed_ns);
        snprintf(k, sizeof k, "%ss_per_s", noun);
        struct diskstat_pct pct;
        static const char *const names[] = {"p50_us", "p90_us", "p99_us", "max_us"};
        if (fail || diskstat_percentiles(p->lat, r->samples, &pct)) {
            if (!fail)
                fail = "no latency samples";
            null_why(w, k, fail);
            for (unsigned i = 0; i < 4; i++)
                null_why(w, names[i], fail);
        } else {
            jw_u64(w, k, diskstat_per_s(r->ops, r->elapsed_ns, 0));
            us3(w, names[0], pct.p50);
            us3(w, names[1], pct.p90);
            us3(w, names[2], pct.p99);
            us3(w, names[3], pct.max);
            jw_u64(w, "samples", r->samples);
        }
    }
    jw_str(w, "stopped_by", r->stop);
    jw_end(w);
}

void diskrun_bus(const struct blk_dev *d, char *out, size_t n)
{
    size_t i = 0;
    while (i + 1 < n && d->name[i] && d->name[i] != ' ')
        out[i] = d->name[i], i++;
    out[i] = '\0';
}

int diskrun_seed(uint64_t *seed)
{
    if (rng_bytes(seed, sizeof *seed) == 0)
        return 1;
    *seed = (uint64_t)rng_u32_nonkey() << 32 | rng_u32_nonkey();
    return 0;
}
