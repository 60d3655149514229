/*
 * fake_blk.c - the memory-backed block device with a volatile write cache
 * (fake_blk.h).
 */
#include "fake_blk.h"

#include <stdlib.h>
#include <string.h>

enum { SECTOR = 512 };

struct fake_write {
    uint64_t lba;
    uint32_t count;
    uint8_t *data;
};

/* The one device fake_blk_poll_all() polls (tests run one at a time). */
static struct fake_blk *current;

static uint64_t next_rand(struct fake_blk *f)
{
    /* xorshift64*: deterministic per seed */
    f->rng ^= f->rng >> 12;
    f->rng ^= f->rng << 25;
    f->rng ^= f->rng >> 27;
    return f->rng * 0x2545F4914F6CDD1Dull;
}

static int fake_submit_op(struct blk_dev *d, struct blk_req *req);
static int fake_poll_op(struct blk_dev *d);
/* No fail: the fake is never given up (no watchdog runs on the host). */
static const struct blk_ops fake_ops = {.submit = fake_submit_op, .poll = fake_poll_op};

void fake_blk_init(struct fake_blk *f, uint32_t logical, uint32_t physical, uint64_t blocks,
                   uint64_t seed)
{
    memset(f, 0, sizeof *f);
    f->dev.ops = &fake_ops;
    f->dev.drv = f;
    strcpy(f->dev.name, "fake");
    f->dev.topo.logical_block = logical;
    f->dev.topo.physical_block = physical;
    f->dev.topo.capacity = blocks;
    f->dev.topo.max_transfer = 128 * 1024;
    f->dev.topo.write_cache = true;
    f->dev.topo.flush = true;
    f->durable = calloc(blocks, logical);
    f->cur = calloc(blocks, logical);
    f->rng = seed * 2654435761u + 88172645463325252ull;
    current = f;
}

void fake_blk_set_current(struct fake_blk *f)
{
    current = f;
}

static void drop_pending(struct fake_blk *f)
{
    for (size_t i = 0; i < f->npend; i++)
        free(f->pend[i].data);
    f->npend = 0;
}

void fake_blk_free(struct fake_blk *f)
{
    drop_pending(f);
    free(f->pend);
    free(f->durable);
    free(f->cur);
    if (current == f)
        current = NULL;
    memset(f, 0, sizeof *f);
}

static uint32_t lb(const struct fake_blk *f)
{
    return f->dev.topo.logical_block;
}

/* Keep a random subset of the write's sectors in dst (torn). */
static void apply_torn(struct fake_blk *f, uint8_t *dst, uint64_t lba, uint32_t count,
                       const uint8_t *data)
{
    size_t sectors = (size_t)count * lb(f) / SECTOR;

    for (size_t s = 0; s < sectors; s++)
        if (next_rand(f) & 1)
            memcpy(dst + lba * lb(f) + s * SECTOR, data + s * SECTOR, SECTOR);
}

static bool countdown(uint64_t *nth)
{
    return *nth > 0 && --*nth == 0;
}

static int do_write(struct fake_blk *f, struct blk_req *req)
{
    size_t bytes = (size_t)req->count * lb(f);
    uint32_t pb = f->dev.topo.physical_block;
    struct fake_write w = {req->lba, req->count, malloc(bytes)};

    if ((req->lba * lb(f)) % pb != 0 || bytes % pb != 0)
        f->partial_block_writes++;
    memcpy(w.data, req->buf, bytes);
    if (f->fail_writes || countdown(&f->fail_write_nth)) {
        /* blk.h: a failed write leaves old, new or torn content. */
        apply_torn(f, f->cur, w.lba, w.count, w.data);
        free(w.data);
        w.data = malloc(bytes);
        memcpy(w.data, f->cur + w.lba * lb(f), bytes);
        f->failed++;
        if (f->npend == f->pend_cap) {
            f->pend_cap = f->pend_cap ? f->pend_cap * 2 : 64;
            f->pend = realloc(f->pend, f->pend_cap * sizeof *f->pend);
        }
        f->pend[f->npend++] = w;
        return BLK_EIO;
    }
    memcpy(f->cur + req->lba * lb(f), req->buf, bytes);
    if (f->npend == f->pend_cap) {
        f->pend_cap = f->pend_cap ? f->pend_cap * 2 : 64;
        f->pend = realloc(f->pend, f->pend_cap * sizeof *f->pend);
    }
    f->pend[f->npend++] = w;
    f->writes++;
    return BLK_OK;
}

static int do_flush(struct fake_blk *f)
{
    if (f->fail_flushes || countdown(&f->fail_flush_nth)) {
        f->failed++;
        return BLK_EIO;
    }
    /* What reads see is what the cache held: now all of it is durable. */
    for (size_t i = 0; i < f->npend; i++) {
        size_t at = f->pend[i].lba * lb(f);

        memcpy(f->durable + at, f->cur + at, (size_t)f->pend[i].count * lb(f));
    }
    drop_pending(f);
    f->flushes++;
    return BLK_OK;
}

static int fake_submit_op(struct blk_dev *d, struct blk_req *req)
{
    struct fake_blk *f = d->drv;

    if (f->nq == sizeof f->queue / sizeof f->queue[0])
        return BLK_EAGAIN;
    f->queue[f->nq++] = req;
    return BLK_OK;
}

static int fake_poll_op(struct blk_dev *d)
{
    return fake_blk_poll(d->drv);
}

int fake_blk_poll(struct fake_blk *f)
{
    size_t n = f->nq;

    for (size_t i = 0; i < n; i++) {
        struct blk_req *req = f->queue[i];

        if (f->dead || countdown(&f->die_nth)) {
            f->dead = true;
            req->status = BLK_EIO;
            continue;
        }
        switch (req->op) {
        case BLK_READ:
            memcpy(req->buf, f->cur + req->lba * lb(f), (size_t)req->count * lb(f));
            req->status = BLK_OK;
            break;
        case BLK_WRITE:
            req->status = do_write(f, req);
            break;
        case BLK_FLUSH:
            req->status = do_flush(f);
            break;
        default:
            req->status = BLK_EUNSUPP;
            break;
        }
    }
    f->nq = 0;
    for (size_t i = 0; i < n; i++)
        f->queue[i]->done(f->queue[i]);
    return n > 0;
}

int fake_blk_submit(struct blk_dev *d, struct blk_req *req)
{
    const struct blk_topology *t = &d->topo;

    if (req->op == BLK_FLUSH) {
        if (!t->flush)
            return BLK_EUNSUPP;
    } else if (req->op == BLK_READ || req->op == BLK_WRITE) {
        if (req->count == 0 || req->lba > t->capacity || req->count > t->capacity - req->lba ||
            (uint64_t)req->count * t->logical_block > t->max_transfer)
            return BLK_ERANGE;
        if (((uintptr_t)req->buf & 511) != 0)
            return BLK_EINVAL;
    } else {
        return BLK_EUNSUPP;
    }
    return d->ops->submit(d, req);
}

int fake_blk_poll_all(void)
{
    return current != NULL ? fake_blk_poll(current) : 0;
}

void fake_blk_wait(void *ctx)
{
    (void)fake_blk_poll(ctx);
}

const char *fake_blk_status_text(int status)
{
    switch (status) {
    case BLK_OK:
        return "ok";
    case BLK_EIO:
        return "I/O error";
    case BLK_EUNSUPP:
        return "not supported";
    case BLK_ERANGE:
        return "out of range";
    case BLK_EINVAL:
        return "invalid buffer";
    case BLK_EAGAIN:
        return "queue full";
    default:
        return "unknown status";
    }
}

size_t fake_blk_cut(struct fake_blk *f)
{
    size_t n = f->npend;

    for (size_t i = 0; i < n; i++) {
        const struct fake_write *w = &f->pend[i];

        switch (next_rand(f) % 3) {
        case 0:
            memcpy(f->durable + w->lba * lb(f), w->data, (size_t)w->count * lb(f));
            f->kept_writes++;
            break;
        case 1:
            f->lost_writes++;
            break;
        default:
            apply_torn(f, f->durable, w->lba, w->count, w->data);
            f->torn_writes++;
            break;
        }
    }
    drop_pending(f);
    memcpy(f->cur, f->durable, f->dev.topo.capacity * lb(f));
    f->cuts++;
    f->dead = false;
    f->die_nth = 0;
    return n;
}
