/*
 * fuzz_disk.c - libFuzzer target for the disk layout's readers (SPEC H3,
 * issue 13): the GPT reader (disk/gpt.c) and the superblock decoder and
 * reader (disk/super.c), compiled on the host. The first byte picks:
 *   0  gpt_read on a sparse disk: the input's head at LBA 0, its tail at
 *      the disk's end, zeros between;
 *   1  ksuper_decode of the bytes;
 *   2  ksuper_read of a partition whose two slots hold the input;
 *   3  ksuper_plan for a fuzzed geometry;
 *   4  the store VFS's region header (store/region.c): rgn_hdr_parse of
 *      two copies and rgn_hdr_pick of the results.
 * Properties:
 *   - nothing is read outside the input or written at all (ASan, and the
 *     disk's write call aborts);
 *   - every report line is NUL-terminated and one line;
 *   - an accepted GPT's partitions lie in its usable LBAs, on the disk,
 *     without overlaps, with printable names;
 *   - an accepted superblock encodes back to exactly its bytes (v2 has one
 *     spelling), and its regions lie inside the partition without
 *     overlaps;
 *   - a plan decodes as valid, fits the partition, is aligned on the disk
 *     and gives the database and both backups one size;
 *   - a region header copy is parsed without reading past its length; an
 *     accepted copy belongs to the region asked about (a database copy for
 *     a backup region or the reverse counts: region.h), fits its capacity
 *     and encodes back to exactly its 64 bytes; the pick is an accepted
 *     copy with the highest seq, the empty region (only from blank or torn
 *     copies), or one of the two copies' errors.
 */
#include "platform/kernel/disk/gpt.h"
#include "platform/kernel/disk/super.h"
#include "platform/kernel/rng/sha256.h"
#include "platform/kernel/store/region.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c) ((c) ? (void)0 : abort())

/* Bytes of the disk: head at byte head_at, tail ending at the disk's end
 * (the tail wins where they meet), zeros elsewhere. */
struct sparse {
    const uint8_t *head, *tail;
    size_t head_len, tail_len;
    uint64_t head_at, bytes;
    uint32_t block;
};

/* Copy the part of [from, from + len) that overlaps [at, at + n) into out
 * (which holds [at, at + n)). */
static void overlay(uint8_t *out, uint64_t at, uint64_t n, const uint8_t *src, uint64_t from, uint64_t len)
{
    uint64_t lo = at > from ? at : from, hi = at + n < from + len ? at + n : from + len;
    if (lo < hi)
        memcpy(out + (lo - at), src + (lo - from), (size_t)(hi - lo));
}

static int sp_read(void *ctx, uint64_t lba, uint32_t count, void *buf)
{
    const struct sparse *s = ctx;
    uint64_t at = lba * s->block, n = (uint64_t)count * s->block;
    FUZZ_ASSERT(at + n <= s->bytes);
    memset(buf, 0, (size_t)n);
    overlay(buf, at, n, s->head, s->head_at, s->head_len);
    overlay(buf, at, n, s->tail, s->bytes - s->tail_len, s->tail_len);
    return 0;
}

static int no_write(void *ctx, uint64_t lba, uint32_t count, const void *buf)
{
    (void)ctx, (void)lba, (void)count, (void)buf;
    abort();
}

static int no_flush(void *ctx)
{
    (void)ctx;
    abort();
}

static void line_ok(const char *s)
{
    FUZZ_ASSERT(memchr(s, '\0', KDISK_MSG_MAX) != NULL);
    FUZZ_ASSERT(strchr(s, '\n') == NULL);
}

static void report_ok(const struct kdisk_report *rep)
{
    line_ok(rep->error);
    FUZZ_ASSERT(rep->note_count <= KDISK_NOTES_MAX);
    for (unsigned i = 0; i < rep->note_count; i++)
        line_ok(rep->notes[i]);
}

static uint8_t io[KDISK_IO_BYTES] __attribute__((aligned(512)));

static struct kdisk sparse_disk(struct sparse *s, uint32_t logical, uint32_t physical)
{
    return (struct kdisk){.read = sp_read, .write = no_write, .flush = no_flush, .ctx = s,
                          .logical_block = logical, .physical_block = physical,
                          .capacity = s->bytes / logical, .io = io};
}

/* Flags byte: bit 0 logical 4096 (else 512), bit 1 physical 4096. */
static void blocks_of(uint8_t flags, uint32_t *logical, uint32_t *physical)
{
    *logical = flags & 1 ? 4096 : 512;
    *physical = flags & 2 ? 4096 : *logical;
}

/* flags, capacity (u32 blocks), head length (u32), then the bytes. */
static void fuzz_gpt(const uint8_t *d, size_t n)
{
    if (n < 9)
        return;
    uint32_t logical, physical;
    blocks_of(d[0], &logical, &physical);
    uint64_t cap = kdisk_le32(d + 1) % (1u << 24) + 1;
    size_t head = kdisk_le32(d + 5), rest = n - 9;
    head = head < rest ? head : rest;
    struct sparse s = {.head = d + 9, .head_len = head, .tail = d + 9 + head, .tail_len = rest - head,
                       .bytes = cap * logical, .block = logical};
    if (s.tail_len > s.bytes)
        s.tail_len = (size_t)s.bytes;
    struct kdisk disk = sparse_disk(&s, logical, physical);
    static struct gpt g;
    struct kdisk_report rep;
    kdisk_report_clear(&rep);
    int rc = gpt_read(&disk, &g, &rep);
    report_ok(&rep);
    if (rc != KDISK_OK) {
        FUZZ_ASSERT(rc == KDISK_EREFUSED && rep.error[0]);
        return;
    }
    const struct gpt_header *h = &g.hdr;
    FUZZ_ASSERT(h->first_usable <= h->last_usable && h->last_usable < cap);
    FUZZ_ASSERT(g.count <= GPT_MAX_PARTS);
    for (unsigned i = 0; i < g.count; i++) {
        const struct gpt_part *p = &g.parts[i];
        FUZZ_ASSERT(p->first >= h->first_usable && p->first <= p->last && p->last <= h->last_usable);
        FUZZ_ASSERT(p->index >= 1 && p->index <= h->entries);
        FUZZ_ASSERT(!gpt_guid_is_zero(&p->type));
        for (const char *c = p->name; *c; c++)
            FUZZ_ASSERT(*c >= 0x20 && *c < 0x7f);
        for (unsigned j = 0; j < i; j++)
            FUZZ_ASSERT(g.parts[j].last < p->first || p->last < g.parts[j].first);
    }
}

static void regions_ok(const struct ksuper *sb, uint64_t part_bytes)
{
    FUZZ_ASSERT(sb->region_count >= KDISK_REGION_KINDS && sb->region_count <= KSUPER_MAX_REGIONS);
    FUZZ_ASSERT(sb->partition_bytes <= part_bytes);
    for (unsigned i = 0; i < sb->region_count; i++) {
        const struct ksuper_region *r = &sb->regions[i];
        FUZZ_ASSERT(r->length && r->offset >= KSUPER_AREA && r->offset + r->length <= sb->partition_bytes);
        for (unsigned j = 0; j < i; j++)
            FUZZ_ASSERT(sb->regions[j].kind != r->kind &&
                        (sb->regions[j].offset + sb->regions[j].length <= r->offset ||
                         r->offset + r->length <= sb->regions[j].offset));
    }
}

static void fuzz_decode(const uint8_t *d, size_t n)
{
    static uint8_t buf[KSUPER_READ_BYTES];
    memset(buf, 0, sizeof buf);
    memcpy(buf, d, n < sizeof buf ? n : sizeof buf);
    struct ksuper sb;
    char why[KDISK_MSG_MAX];
    enum ksuper_slot_state st = ksuper_decode(buf, sizeof buf, &sb, why, sizeof why);
    line_ok(why);
    if (st != KSUPER_VALID)
        return;
    regions_ok(&sb, sb.partition_bytes);
    uint8_t again[KSUPER_BYTES];
    ksuper_encode(&sb, again);
    FUZZ_ASSERT(memcmp(again, buf, KSUPER_BYTES) == 0);
}

/* flags, partition size in MiB (u16), then slot A's bytes, then B's. */
static void fuzz_read(const uint8_t *d, size_t n)
{
    if (n < 3)
        return;
    uint32_t logical, physical;
    blocks_of(d[0], &logical, &physical);
    const uint64_t mib = 1u << 20, part = ((uint64_t)kdisk_le16(d + 1) % 4096 + 1) * mib;
    static uint8_t first[KSUPER_SLOT_B + KSUPER_READ_BYTES];
    memset(first, 0, sizeof first);
    size_t len = n - 3;
    memcpy(first + KSUPER_SLOT_A, d + 3, len < KSUPER_READ_BYTES ? len : KSUPER_READ_BYTES);
    if (len > KSUPER_READ_BYTES)
        memcpy(first + KSUPER_SLOT_B, d + 3 + KSUPER_READ_BYTES,
               len - KSUPER_READ_BYTES < KSUPER_READ_BYTES ? len - KSUPER_READ_BYTES : KSUPER_READ_BYTES);
    /* the partition starts at 1 MiB */
    struct sparse s = {.head = first, .head_len = sizeof first, .head_at = mib, .bytes = mib + part,
                       .block = logical};
    struct kdisk disk = sparse_disk(&s, logical, physical);
    struct ksuper_geom g = {.start = mib, .bytes = part, .logical_block = logical, .physical_block = physical};
    struct ksuper_state st;
    struct kdisk_report rep;
    kdisk_report_clear(&rep);
    int rc = ksuper_read(&disk, &g, &st, &rep);
    report_ok(&rep);
    if (rc == KDISK_OK) {
        FUZZ_ASSERT(st.slot < 2 && st.sb.generation >= 1);
        regions_ok(&st.sb, part);
    } else {
        FUZZ_ASSERT((rc == KDISK_EREFUSED || rc == KDISK_EBLANK) && rep.error[0]);
    }
}

/* flags, start in 4 KiB units (u32), size in 4 KiB units (u32), optimal
 * I/O bytes (u32). */
static void fuzz_plan(const uint8_t *d, size_t n)
{
    if (n < 13)
        return;
    uint32_t logical, physical;
    blocks_of(d[0], &logical, &physical);
    struct ksuper_geom g = {.start = (uint64_t)kdisk_le32(d + 1) * 4096,
                            .bytes = (uint64_t)kdisk_le32(d + 5) * 4096,
                            .logical_block = logical, .physical_block = physical,
                            .optimal_io = kdisk_le32(d + 9)};
    static const uint8_t vol[16];
    struct ksuper sb, back;
    char why[KDISK_MSG_MAX];
    if (ksuper_plan(&g, vol, &sb, why, sizeof why)) {
        line_ok(why);
        return;
    }
    sb.generation = 1;
    uint8_t buf[KSUPER_BYTES];
    ksuper_encode(&sb, buf);
    FUZZ_ASSERT(ksuper_decode(buf, sizeof buf, &back, why, sizeof why) == KSUPER_VALID);
    FUZZ_ASSERT(ksuper_check(&back, &g, why, sizeof why) == 0);
    regions_ok(&back, g.bytes);
    uint64_t db = 0;
    for (unsigned i = 0; i < back.region_count; i++) {
        const struct ksuper_region *r = &back.regions[i];
        FUZZ_ASSERT((g.start + r->offset) % back.align == 0 && r->length % back.align == 0);
        if (r->kind == KDISK_REGION_DB || r->kind == KDISK_REGION_BACKUP_A || r->kind == KDISK_REGION_BACKUP_B) {
            FUZZ_ASSERT(db == 0 || db == r->length);
            db = r->length;
        }
    }
}

/* Where a region header keeps its checksum: the first 8 bytes of SHA-256
 * over the bytes before it (docs/DISK.md, "Inside the regions"). */
enum { RGN_CHECK_AT = 56 };

/* One copy parsed from a buffer of exactly its length (so ASan sees any
 * read past it), with the properties of an accepted copy. */
/* The roles a copy may name for a region of role (region.h: the database
 * and a backup may stand for each other). */
static int same_class(uint32_t got, uint32_t role)
{
    int data_got = got == RGN_ROLE_DB || got == RGN_ROLE_BACKUP;
    int data_role = role == RGN_ROLE_DB || role == RGN_ROLE_BACKUP;
    return got == role || (data_got && data_role);
}

static int parse_copy(const uint8_t *d, size_t n, int fix, uint32_t role, uint64_t lba,
                      uint64_t blocks, uint64_t capacity, struct rgn_hdr *out)
{
    uint8_t *buf = malloc(n ? n : 1);
    FUZZ_ASSERT(buf != NULL);
    memcpy(buf, d, n);
    if (fix && n >= RGN_HDR_BYTES) {
        /* past the checksum, so the fields' checks get fuzzed too */
        uint8_t digest[SHA256_BYTES];
        sha256(buf, RGN_CHECK_AT, digest);
        memcpy(buf + RGN_CHECK_AT, digest, RGN_HDR_BYTES - RGN_CHECK_AT);
    }
    int rc = rgn_hdr_parse(buf, n, role, lba, blocks, capacity, out);
    FUZZ_ASSERT(rc <= RGN_OK && rc >= RGN_BAD);
    line_ok(rgn_parse_text(rc));
    if (rc == RGN_OK) {
        FUZZ_ASSERT(same_class(out->role, role) && out->lba == lba && out->blocks == blocks);
        FUZZ_ASSERT(out->size <= capacity && out->owner <= RGN_OWNER_JOURNAL && out->flags == 0);
        FUZZ_ASSERT(out->owner != RGN_OWNER_NONE || out->size == 0);
        uint8_t again[RGN_HDR_BYTES];
        rgn_hdr_encode(out, again);
        FUZZ_ASSERT(memcmp(again, buf, RGN_HDR_BYTES) == 0);
    }
    free(buf);
    return rc;
}

/* flags (bit 0: write the right checksum into each copy), role, lba (u32),
 * blocks (u32), capacity in 512-byte units (u32), copy 0's length, then
 * copy 0's bytes and copy 1's (the rest). */
static void fuzz_region(const uint8_t *d, size_t n)
{
    if (n < 15)
        return;
    int fix = d[0] & 1;
    uint32_t role = d[1] % 5; /* the three roles and two that are none */
    uint64_t lba = kdisk_le32(d + 2), blocks = kdisk_le32(d + 6);
    uint64_t capacity = (uint64_t)kdisk_le32(d + 10) * 512;
    size_t len0 = d[14], rest = n - 15;
    len0 = len0 < rest ? len0 : rest;
    struct rgn_hdr h[RGN_HDR_COPIES], pick;
    int rc[RGN_HDR_COPIES];
    rc[0] = parse_copy(d + 15, len0, fix, role, lba, blocks, capacity, &h[0]);
    rc[1] = parse_copy(d + 15 + len0, rest - len0, fix, role, lba, blocks, capacity, &h[1]);
    unsigned slot = 2;
    int got = rgn_hdr_pick(h, rc, role, lba, blocks, &pick, &slot);
    if (got != RGN_OK) {
        FUZZ_ASSERT((got == rc[0] || got == rc[1]) && got != RGN_BLANK);
        return;
    }
    FUZZ_ASSERT(slot < RGN_HDR_COPIES);
    FUZZ_ASSERT(same_class(pick.role, role) && pick.lba == lba && pick.blocks == blocks);
    if (rc[slot] == RGN_OK) {
        FUZZ_ASSERT(memcmp(&pick, &h[slot], sizeof pick) == 0);
        FUZZ_ASSERT(rc[slot ^ 1] != RGN_OK || h[slot ^ 1].seq <= pick.seq);
    } else {
        /* the empty region: nothing valid, the next write goes to copy 0 */
        FUZZ_ASSERT(rc[0] != RGN_OK && rc[1] != RGN_OK && slot == 1);
        FUZZ_ASSERT(pick.size == 0 && pick.owner == RGN_OWNER_NONE && pick.seq == 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    switch (data[0] % 5) {
    case 0: fuzz_gpt(data + 1, size - 1); break;
    case 1: fuzz_decode(data + 1, size - 1); break;
    case 2: fuzz_read(data + 1, size - 1); break;
    case 3: fuzz_plan(data + 1, size - 1); break;
    default: fuzz_region(data + 1, size - 1); break;
    }
    return 0;
}
