/*
 * blk_selftest.c - the disk checks of blk_selftest.h. The pattern depends
 * only on the block number and the word in it, so a second boot can check
 * what the first wrote without any state of its own.
 */
#ifdef TERN_TEST_HOOKS

#include "dev/blk_selftest.h"

#include "console.h"
#include "dev/blk.h"
#include "mm/kmalloc.h"

#include <stdio.h>
#include <string.h>

enum {
    SPAN = 65536,       /* bytes written at the start */
    MISALIGN = 24,      /* bytes into the allocation: the buffer crosses pages */
};

static uint64_t word(uint64_t lba, size_t i)
{
    return (lba * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)i * 0x100000001B3ull) ^ 0x7465726e;
}

static void fill(uint8_t *buf, uint64_t lba, uint32_t count, uint32_t lbs)
{
    for (uint32_t b = 0; b < count; b++)
        for (size_t i = 0; i < lbs / 8; i++) {
            uint64_t w = word(lba + b, i);
            memcpy(buf + (size_t)b * lbs + i * 8, &w, 8);
        }
}

static bool same(const uint8_t *buf, uint64_t lba, uint32_t count, uint32_t lbs)
{
    for (uint32_t b = 0; b < count; b++)
        for (size_t i = 0; i < lbs / 8; i++) {
            uint64_t w = word(lba + b, i);
            if (memcmp(buf + (size_t)b * lbs + i * 8, &w, 8))
                return false;
        }
    return true;
}

static bool zero(const uint8_t *buf, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (buf[i])
            return false;
    return true;
}

struct area {
    uint64_t lba;
    uint32_t count;
};

/* The pattern's places on d: start (SPAN bytes), middle, last block. */
static unsigned areas(const struct blk_dev *d, struct area a[3])
{
    const struct blk_topology *t = &d->topo;
    uint32_t start = SPAN / t->logical_block;
    if (start > t->capacity / 4)
        start = (uint32_t)(t->capacity / 4) ? (uint32_t)(t->capacity / 4) : 1;
    a[0] = (struct area){0, start};
    a[1] = (struct area){t->capacity / 2, 1};
    a[2] = (struct area){t->capacity - 1, 1};
    return 3;
}

static const char *write_check(struct blk_dev *d, uint8_t *buf, char *note, size_t n)
{
    const struct blk_topology *t = &d->topo;
    uint32_t lbs = t->logical_block;
    struct area a[3];
    unsigned na = areas(d, a);
    for (unsigned i = 0; i < na; i++) {
        fill(buf, a[i].lba, a[i].count, lbs);
        /* The first with FUA where the disk honours it. */
        if (blk_write_sync(d, a[i].lba, a[i].count, buf, i == 0 && t->fua ? BLK_F_FUA : 0))
            return "write failed";
    }
    if (blk_flush_sync(d))
        return "flush failed";
    for (unsigned i = 0; i < na; i++) {
        memset(buf, 0, (size_t)a[i].count * lbs);
        if (blk_read_sync(d, a[i].lba, a[i].count, buf))
            return "read failed";
        if (!same(buf, a[i].lba, a[i].count, lbs))
            return "read back different data";
    }
    uint32_t most = t->max_transfer / lbs;
    if (most <= t->capacity && blk_read_sync(d, 0, most, buf))
        return "a read of max_transfer failed";
    if (!same(buf, 0, a[0].count, lbs))
        return "the largest read returned different data";
    if (blk_read_sync(d, 0, most + 1, buf) != BLK_ERANGE ||
        blk_read_sync(d, t->capacity, 1, buf) != BLK_ERANGE ||
        blk_read_sync(d, t->capacity - 1, 2, buf) != BLK_ERANGE)
        return "a read beyond the capacity or limit was not refused";
    snprintf(note, n, "pattern, flush, largest transfer, range refusals");
    uint64_t q = t->capacity / 4;
    if (t->write_zeroes && q >= 8) {
        fill(buf, q, 4, lbs);
        if (blk_write_sync(d, q, 4, buf, 0) || blk_erase_sync(d, BLK_WRITE_ZEROES, q + 1, 2) ||
            blk_read_sync(d, q, 4, buf))
            return "write-zeroes failed";
        if (!same(buf, q, 1, lbs) || !zero(buf + lbs, 2 * (size_t)lbs) ||
            !same(buf + 3 * (size_t)lbs, q + 3, 1, lbs))
            return "write-zeroes did not zero exactly its blocks";
        snprintf(note + strlen(note), n - strlen(note), ", write-zeroes");
    }
    if (t->discard && q >= 16) {
        if (blk_erase_sync(d, BLK_DISCARD, q + 8, 4))
            return "discard failed";
        snprintf(note + strlen(note), n - strlen(note), ", discard");
    }
    return NULL;
}

static const char *verify_check(struct blk_dev *d, uint8_t *buf)
{
    struct area a[3];
    unsigned na = areas(d, a);
    for (unsigned i = 0; i < na; i++) {
        if (blk_read_sync(d, a[i].lba, a[i].count, buf))
            return "read failed";
        if (!same(buf, a[i].lba, a[i].count, d->topo.logical_block))
            return "the pattern written before the reboot is not there";
    }
    return NULL;
}

void blk_selftest(const char *name)
{
    bool write = !strcmp(name, "write");
    if (!write && strcmp(name, "verify")) {
        kprintf("selftest disk-%s: unknown test\n", name);
        return;
    }
    unsigned ran = 0;
    for (unsigned i = 0; i < blk_count(); i++) {
        struct blk_dev *d = blk_get(i);
        const char *why;
        if (!blk_durable_ok(d, &why))
            continue;
        size_t bytes = d->topo.max_transfer + (size_t)d->topo.logical_block + MISALIGN;
        uint8_t *mem = kmalloc(bytes > SPAN + MISALIGN ? bytes : SPAN + MISALIGN);
        if (!mem) {
            kprintf("selftest disk-%s: FAILED: %s: out of memory\n", name, d->name);
            continue;
        }
        char note[128] = "pattern read back";
        const char *err = write ? write_check(d, mem + MISALIGN, note, sizeof note)
                                : verify_check(d, mem + MISALIGN);
        kfree(mem);
        if (err)
            kprintf("selftest disk-%s: FAILED: %s: %s\n", name, d->name, err);
        else
            kprintf("selftest disk-%s: ok: %s: %s\n", name, d->name, note);
        ran++;
    }
    kprintf("selftest disk-%s: %u disk%s checked\n", name, ran, ran == 1 ? "" : "s");
}

#endif
