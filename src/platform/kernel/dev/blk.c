/*
 * blk.c - the block layer of blk.h: the registry of disks, the checks every
 * request passes before a driver sees it (so drivers need not repeat
 * them), the counters, the watchdog that gives up a device which stopped
 * completing requests, the synchronous helpers for boot-time code, and the
 * one-line description for the boot log. Driver-independent: the host unit
 * tests run it against the RAM disk (tests/unit/test_kblk.c).
 */
#include "dev/blk.h"

#include "arch/x86_64/cpu.h"
#include "clock.h"
#include "console.h"

#include <stdio.h>
#include <string.h>

/* Filled at boot by the probes; the devices live as long as the kernel. */
static struct blk_dev *devices[BLK_MAX_DEVICES];
static unsigned ndevices;
/* Set by drivers' interrupt handlers, taken by blk_poll_all: one per CPU
 * that may own the disks (CPU 0 at boot, the storage core after), each
 * cleared only by its CPU, so one CPU's poll never eats the interrupt the
 * other sleeps on. A handler cannot tell which CPU's devices interrupted
 * (one shared vector), so it raises both; a spurious raise costs a poll. */
enum { BLK_OWNERS = 2 };
static volatile int irq_flag[BLK_OWNERS];
/* Boot-time: the owner and how to learn the calling CPU (blk.h). The
 * owner is written once by CPU 0 before the storage core starts (the
 * hand-over publishes it with release). */
static unsigned owner;
static unsigned (*cpu_fn)(void);

void blk_set_cpu_fn(unsigned (*cpu_id)(void)) { cpu_fn = cpu_id; }

static unsigned this_cpu_id(void) { return cpu_fn ? cpu_fn() : 0; }

unsigned blk_owner(void) { return owner; }

int blk_set_owner(unsigned cpu)
{
    if (cpu >= BLK_OWNERS || this_cpu_id() != owner) {
        kprintf("tern: disk: CPU %u cannot be given the disks\n", cpu);
        return -1;
    }
    for (unsigned i = 0; i < ndevices; i++)
        if (devices[i]->inflight) {
            kprintf("tern: disk: %s has requests in flight; the disks stay on CPU %u\n",
                    devices[i]->name, owner);
            return -1;
        }
    owner = cpu;
    irq_flag[cpu] = 1; /* its first loop polls once */
    return 0;
}

int blk_register(struct blk_dev *d)
{
    if (ndevices >= BLK_MAX_DEVICES)
        return -1;
    devices[ndevices++] = d;
    return 0;
}

unsigned blk_count(void) { return ndevices; }

struct blk_dev *blk_get(unsigned i) { return i < ndevices ? devices[i] : NULL; }

/* The checks of blk.h's contract that need only the topology. */
static int check(const struct blk_topology *t, const struct blk_req *r)
{
    if (r->flags & ~(uint32_t)BLK_F_FUA)
        return BLK_EINVAL;
    if ((r->flags & BLK_F_FUA) && (r->op != BLK_WRITE || !t->fua))
        return BLK_EUNSUPP;
    uint32_t limit;
    switch (r->op) {
    case BLK_READ:
    case BLK_WRITE:
        if (r->op == BLK_WRITE && t->read_only)
            return BLK_EUNSUPP;
        if (!r->buf)
            return BLK_EINVAL;
        limit = t->max_transfer / t->logical_block;
        break;
    case BLK_FLUSH:
        if (!t->flush)
            return BLK_EUNSUPP;
        return r->count || r->lba ? BLK_ERANGE : BLK_OK;
    case BLK_DISCARD:
        if (!t->discard || t->read_only)
            return BLK_EUNSUPP;
        limit = t->max_discard;
        break;
    case BLK_WRITE_ZEROES:
        if (!t->write_zeroes || t->read_only)
            return BLK_EUNSUPP;
        limit = t->max_write_zeroes;
        break;
    default:
        return BLK_EINVAL;
    }
    if (r->count == 0 || r->count > limit || r->lba >= t->capacity ||
        r->count > t->capacity - r->lba)
        return BLK_ERANGE;
    return BLK_OK;
}

int blk_submit(struct blk_dev *d, struct blk_req *req)
{
    if (this_cpu_id() != owner) {
        kprintf("tern: disk %s: a request from CPU %u, not the disks' CPU %u: refused\n",
                d->name, this_cpu_id(), owner);
        return BLK_EINVAL;
    }
    if (d->failed)
        return BLK_EIO;
    int s = check(&d->topo, req);
    if (s != BLK_OK)
        return s;
    s = d->ops->submit(d, req);
    if (s == BLK_OK) {
        /* The watchdog measures from the first request into an idle device. */
        if (d->inflight++ == 0)
            d->progress_ns = clock_mono_ns();
    }
    return s;
}

void blk_complete(struct blk_dev *d, struct blk_req *req, int status)
{
    if (d->inflight)
        d->inflight--;
    d->progress_ns = clock_mono_ns();
    uint64_t bytes = (uint64_t)req->count * d->topo.logical_block;
    if (status != BLK_OK) {
        d->errors++;
    } else {
        switch (req->op) {
        case BLK_READ: d->reads++; d->bytes_read += bytes; break;
        case BLK_WRITE: d->writes++; d->bytes_written += bytes; break;
        case BLK_FLUSH: d->flushes++; break;
        case BLK_DISCARD: d->discards++; break;
        case BLK_WRITE_ZEROES: d->zeroes++; break;
        }
    }
    req->status = status;
    req->done(req);
}

void blk_fail(struct blk_dev *d, const char *why)
{
    if (d->failed)
        return;
    d->failed = true;
    kprintf("tern: disk %s: %s; disk given up, %u request%s failed\n", d->name, why,
            d->inflight, d->inflight == 1 ? "" : "s");
    d->ops->fail(d, why);
}

/* Poll d, then give it up if it has been stuck too long; nonzero if
 * something completed. */
static int poll_dev(struct blk_dev *d)
{
    if (d->failed)
        return 0;
    int n = d->ops->poll(d);
    if (d->inflight &&
        clock_mono_ns() - d->progress_ns > (uint64_t)BLK_TIMEOUT_MS * 1000000) {
        blk_fail(d, "no completion within the time limit");
        n = 1;
    }
    return n;
}

int blk_poll_all(void)
{
    unsigned me = this_cpu_id();
    if (me != owner)
        return 0;
    __atomic_store_n(&irq_flag[me], 0, __ATOMIC_SEQ_CST);
    int any = 0;
    for (unsigned i = 0; i < ndevices; i++)
        any |= poll_dev(devices[i]) != 0;
    return any;
}

int blk_irq_pending(void)
{
    unsigned me = this_cpu_id();
    if (me != owner)
        return 0;
    if (irq_flag[me])
        return 1;
    for (unsigned i = 0; i < ndevices; i++)
        if (!devices[i]->irq && devices[i]->inflight && !devices[i]->failed)
            return 1;
    return 0;
}

void blk_irq_raise(void)
{
    for (unsigned i = 0; i < BLK_OWNERS; i++)
        irq_flag[i] = 1;
}

void blk_config_irq(void)
{
    uint8_t me = (uint8_t)this_cpu_id();
    for (unsigned i = 0; i < ndevices; i++)
        if (devices[i]->cfg_irq) {
            devices[i]->cfg_cpu = me;
            devices[i]->cfg_changes++;
        }
    blk_irq_raise();
}

/* ---- synchronous helpers ---- */

struct sync_wait {
    volatile int done;
};

static void sync_done(struct blk_req *req) { ((struct sync_wait *)req->ctx)->done = 1; }

static int run_sync(struct blk_dev *d, struct blk_req *req)
{
    struct sync_wait w = {0};
    req->done = sync_done;
    req->ctx = &w;
    uint64_t start = clock_mono_ns();
    int s;
    /* A full queue drains as the device completes others' requests. */
    while ((s = blk_submit(d, req)) == BLK_EAGAIN) {
        if (!poll_dev(d) && clock_mono_ns() - start > (uint64_t)BLK_TIMEOUT_MS * 1000000) {
            blk_fail(d, "queue stayed full");
            return BLK_EIO;
        }
        cpu_relax();
    }
    if (s != BLK_OK)
        return s;
    while (!w.done) {
        if (!poll_dev(d))
            cpu_relax();
    }
    return req->status;
}

int blk_read_sync(struct blk_dev *d, uint64_t lba, uint32_t count, void *buf)
{
    struct blk_req r = {.op = BLK_READ, .lba = lba, .count = count, .buf = buf};
    return run_sync(d, &r);
}

int blk_write_sync(struct blk_dev *d, uint64_t lba, uint32_t count, const void *buf,
                   uint32_t flags)
{
    /* The request's buffer is not const because reads share it; a write
     * never stores through it. */
    struct blk_req r = {.op = BLK_WRITE, .flags = flags, .lba = lba, .count = count,
                        .buf = (void *)(uintptr_t)buf};
    return run_sync(d, &r);
}

int blk_flush_sync(struct blk_dev *d)
{
    struct blk_req r = {.op = BLK_FLUSH};
    return run_sync(d, &r);
}

int blk_erase_sync(struct blk_dev *d, enum blk_op op, uint64_t lba, uint32_t count)
{
    if (op != BLK_DISCARD && op != BLK_WRITE_ZEROES)
        return BLK_EINVAL;
    struct blk_req r = {.op = op, .lba = lba, .count = count};
    return run_sync(d, &r);
}

bool blk_durable_ok(const struct blk_dev *d, const char **why)
{
    if (d->failed)
        *why = "the device was given up";
    else if (d->topo.read_only)
        *why = "read-only";
    else if (d->topo.write_cache && !d->topo.flush)
        *why = "volatile write cache without flush";
    else
        return true;
    return false;
}

/* ---- descriptions ---- */

/* bytes as "512 B", "64 KiB", "3 GiB" (whole units only, else the smaller). */
static void size_text(char *buf, size_t n, uint64_t bytes)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    unsigned u = 0;
    while (u < 5 && bytes >= 1024 && bytes % 1024 == 0) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, n, "%llu %s", (unsigned long long)bytes, unit[u]);
}

void blk_describe(const struct blk_dev *d, char *buf, unsigned n)
{
    const struct blk_topology *t = &d->topo;
    char cap[24], lb[16], pb[16], opt[16], xfer[16];
    size_text(cap, sizeof cap, t->capacity * t->logical_block);
    size_text(lb, sizeof lb, t->logical_block);
    size_text(pb, sizeof pb, t->physical_block);
    size_text(opt, sizeof opt, t->optimal_io);
    size_text(xfer, sizeof xfer, t->max_transfer);
    snprintf(buf, n,
             "%s%s%s%s: %s (%llu x %s), physical %s, optimal i/o %s, max transfer %s; "
             "%s%s%s%s%s%s; %s",
             d->name, d->model[0] ? " \"" : "", d->model, d->model[0] ? "\"" : "", cap,
             (unsigned long long)t->capacity, lb, pb, t->optimal_io ? opt : "unknown", xfer,
             t->write_cache ? "volatile write cache" : "no write cache",
             t->flush ? ", flush" : "", t->fua ? ", fua" : "", t->discard ? ", discard" : "",
             t->write_zeroes ? ", write-zeroes" : "", t->read_only ? ", read-only" : "",
             d->irq ? "msi-x" : "polled");
}

const char *blk_status_text(int status)
{
    switch (status) {
    case BLK_OK: return "ok";
    case BLK_EIO: return "I/O error";
    case BLK_EUNSUPP: return "not supported by the device";
    case BLK_ERANGE: return "outside the device or its limits";
    case BLK_EINVAL: return "invalid request";
    case BLK_EAGAIN: return "queue full";
    default: return "unknown status";
    }
}

int blk_recheck_capacity(struct blk_dev *d)
{
    uint64_t blocks;
    if (d->failed || !d->ops->capacity || d->ops->capacity(d, &blocks) != 0 ||
        blocks == d->topo.capacity)
        return 0;
    if (blocks < d->topo.capacity)
        return -1;
    d->topo.capacity = blocks;
    return 1;
}
