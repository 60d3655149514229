/*
 * diskspan.c - the free span a write test may use (diskspan.h): covered
 * ranges gathered (partitions, hybrid MBR records, the GPT's own blocks),
 * sorted, and the largest aligned gap between them taken.
 */
#include "diskspan.h"

#include <stdio.h>
#include <string.h>

enum {
    MBR_SIG = 510,
    MBR_TABLE = 446,
    MBR_RECORD = 16,
    MBR_TYPE_PROTECTIVE = 0xEE,
    /* covered ranges: partitions, MBR records, the two GPT copies */
    MAX_RANGES = GPT_MAX_PARTS + DISKSPAN_MBR_RECORDS + 2,
};

unsigned diskspan_mbr_ranges(const uint8_t *lba0, uint64_t capacity,
                             struct diskspan out[DISKSPAN_MBR_RECORDS])
{
    unsigned n = 0;
    if (lba0[MBR_SIG] != 0x55 || lba0[MBR_SIG + 1] != 0xAA || capacity == 0)
        return 0;
    for (unsigned i = 0; i < DISKSPAN_MBR_RECORDS; i++) {
        const uint8_t *r = lba0 + MBR_TABLE + i * MBR_RECORD;
        uint8_t type = r[4];
        uint64_t start = kdisk_le32(r + 8), size = kdisk_le32(r + 12);
        if (type == 0 || type == MBR_TYPE_PROTECTIVE || size == 0 || start >= capacity)
            continue;
        uint64_t last = start + size - 1;
        out[n].first = start;
        out[n].last = last < capacity ? last : capacity - 1;
        n++;
    }
    return n;
}

static void sort_ranges(struct diskspan *r, unsigned n)
{
    for (unsigned i = 1; i < n; i++) {
        struct diskspan v = r[i];
        unsigned j = i;
        for (; j > 0 && r[j - 1].first > v.first; j--)
            r[j] = r[j - 1];
        r[j] = v;
    }
}

/* Blocks an entry array of h takes, rounded up. */
static uint64_t array_blocks(const struct gpt_header *h, uint32_t logical_block)
{
    uint64_t bytes = (uint64_t)h->entries * h->entry_size;
    return (bytes + logical_block - 1) / logical_block;
}

int diskspan_free(const struct gpt *g, const struct diskspan *extra, unsigned n_extra,
                  uint64_t capacity, uint32_t logical_block, uint32_t align_bytes,
                  uint64_t min_bytes, struct diskspan *out, char *why, size_t why_size)
{
    const struct gpt_header *h = &g->hdr;
    if (logical_block == 0 || align_bytes < logical_block || (align_bytes & (align_bytes - 1)) ||
        align_bytes % logical_block) {
        snprintf(why, why_size, "bad alignment %u for %u-byte blocks", (unsigned)align_bytes,
                 (unsigned)logical_block);
        return -1;
    }
    if (g->from_backup) {
        snprintf(why, why_size, "the primary GPT is damaged (the backup is in use): "
                 "repair the table first");
        return -1;
    }
    if (g->count > GPT_MAX_PARTS || n_extra > DISKSPAN_MBR_RECORDS) {
        snprintf(why, why_size, "too many partitions");
        return -1;
    }
    uint64_t arr = array_blocks(h, logical_block);
    /* The GPT copies: LBA 0 (MBR), 1 (header), the array; and at the end
     * the backup array and header, assumed to take as much as the
     * primary's. Whatever the header's usable range says, none of these is
     * ever free. */
    if (capacity < 2 * (arr + 2) + 1 || h->first_usable > h->last_usable ||
        h->last_usable >= capacity) {
        snprintf(why, why_size, "the GPT's usable range does not fit the disk");
        return -1;
    }
    uint64_t lo = h->first_usable, hi = h->last_usable;
    if (lo < h->array_lba + arr)
        lo = h->array_lba + arr; /* the array in use lies before the usable range */
    if (lo < 2 + arr)
        lo = 2 + arr;
    if (hi > capacity - 2 - arr)
        hi = capacity - 2 - arr;
    if (lo > hi) {
        snprintf(why, why_size, "no usable space between the GPT copies");
        return -1;
    }

    struct diskspan r[MAX_RANGES];
    unsigned n = 0;
    for (unsigned i = 0; i < g->count; i++) {
        const struct gpt_part *p = &g->parts[i];
        if (p->first > p->last || p->first < h->first_usable || p->last > h->last_usable) {
            snprintf(why, why_size, "partition %u (LBA %llu-%llu) lies outside the usable "
                     "range %llu-%llu: table refused", (unsigned)p->index,
                     (unsigned long long)p->first, (unsigned long long)p->last,
                     (unsigned long long)h->first_usable, (unsigned long long)h->last_usable);
            return -1;
        }
        r[n++] = (struct diskspan){p->first, p->last};
    }
    sort_ranges(r, n);
    for (unsigned i = 1; i < n; i++) {
        if (r[i].first <= r[i - 1].last) {
            snprintf(why, why_size, "partitions overlap at LBA %llu: table refused",
                     (unsigned long long)r[i].first);
            return -1;
        }
    }
    for (unsigned i = 0; i < n_extra; i++) {
        if (extra[i].first > extra[i].last) {
            snprintf(why, why_size, "an MBR record ends before it starts: table refused");
            return -1;
        }
        r[n++] = extra[i]; /* hybrid MBR records may overlap GPT partitions */
    }
    sort_ranges(r, n);

    /* Walk the gaps of [lo, hi] between covered ranges. */
    uint64_t align = align_bytes / logical_block;
    uint64_t min_blocks = (min_bytes + logical_block - 1) / logical_block;
    if (min_blocks < align)
        min_blocks = align;
    struct diskspan best = {0, 0};
    uint64_t best_len = 0, cursor = lo; /* first block not known covered */
    for (unsigned i = 0; i <= n && cursor <= hi; i++) {
        uint64_t gap_end = hi; /* inclusive */
        if (i < n) {
            if (r[i].last < cursor) {
                continue;
            }
            if (r[i].first <= cursor) {
                cursor = r[i].last + 1;
                if (r[i].last >= hi)
                    break;
                continue;
            }
            gap_end = r[i].first - 1 < hi ? r[i].first - 1 : hi;
        }
        uint64_t a = (cursor + align - 1) / align * align;
        uint64_t e = (gap_end + 1) / align * align; /* exclusive, rounded down */
        if (e > a && e - a > best_len) {
            best_len = e - a;
            best = (struct diskspan){a, e - 1};
        }
        if (i < n) {
            if (r[i].last >= hi)
                break;
            cursor = r[i].last + 1;
        }
    }
    if (best_len < min_blocks) {
        snprintf(why, why_size, "no free space of at least %llu KiB outside the partitions",
                 (unsigned long long)(min_blocks * logical_block >> 10));
        return -1;
    }
    *out = best;
    return 0;
}
