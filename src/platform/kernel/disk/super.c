/*
 * super.c - the tern partition's A/B superblocks: encoding, the checked
 * decoder, the region sizing rule, and the read / format / update protocol
 * over struct kdisk. Field offsets are docs/DISK.md's table; all fields are
 * little-endian.
 */
#include "super.h"

#include "crc32.h"

#include <stdio.h>
#include <string.h>

/* v2 and v3 fields (v3 changed only what the regions hold: database
 * pages carry checksums, docs/DISK.md). Magic, version, size and CRC stay where they are in every
 * layout version, so an older release can verify a newer superblock's CRC
 * before refusing it. */
enum {
    S_MAGIC = 0,
    S_VERSION = 8,
    S_BYTES = 12,
    S_CRC = 16,
    S_FLAGS = 20,
    S_GENERATION = 24,
    S_VOLUME_ID = 32,
    S_LOGICAL = 48,
    S_PHYSICAL = 52,
    S_ALIGN = 56,
    S_REGION_COUNT = 60,
    S_PARTITION_BYTES = 64,
    S_RESERVED1 = 72,        /* to 128, zero */
    S_REGIONS = 128,
    S_REGION_SIZE = 24,      /* kind u32, flags u32, offset u64, length u64 */
    S_RESERVED2 = S_REGIONS + KSUPER_MAX_REGIONS * S_REGION_SIZE, /* to 512, zero */
    S_MIN_BYTES = 24,        /* the fixed prefix a later version must keep */
    MIB = 1024 * 1024,
};
_Static_assert((int)S_RESERVED2 <= (int)KSUPER_BYTES, "the region table overruns the superblock");

static const char magic[KSUPER_MAGIC_LEN] = KSUPER_MAGIC;

const char *ksuper_kind_name(uint32_t kind)
{
    switch (kind) {
    case KDISK_REGION_DB: return "database";
    case KDISK_REGION_WAL: return "WAL";
    case KDISK_REGION_BACKUP_A: return "backup A";
    case KDISK_REGION_BACKUP_B: return "backup B";
    case KDISK_REGION_TELEMETRY: return "telemetry";
    default: return "unknown";
    }
}

static int pow2(uint64_t v) { return v && !(v & (v - 1)); }

/* CRC of a superblock of n bytes with its CRC field taken as zero. */
static uint32_t sb_crc(const uint8_t *buf, uint32_t n)
{
    static const uint8_t zero[4];
    uint32_t crc = crc32(buf, S_CRC);
    crc = crc32_update(crc, zero, sizeof zero);
    return crc32_update(crc, buf + S_CRC + 4, n - S_CRC - 4);
}

static enum ksuper_slot_state fail(enum ksuper_slot_state st, char *why, size_t why_size,
                                   const char *text)
{
    snprintf(why, why_size, "%s", text);
    return st;
}

/* The checks of a region table that need nothing but the superblock. */
static int check_regions(const struct ksuper *sb, char *why, size_t why_size)
{
    unsigned have = 0;
    for (unsigned i = 0; i < sb->region_count; i++) {
        const struct ksuper_region *r = &sb->regions[i];
        const char *name = ksuper_kind_name(r->kind);
        if (r->kind == 0 || r->flags != 0) {
            snprintf(why, why_size, "region entry %u has kind 0 or non-zero flags", i);
            return -1;
        }
        if (r->length == 0 || r->offset < KSUPER_AREA || r->offset % sb->physical_block ||
            r->length % sb->physical_block || r->offset > sb->partition_bytes ||
            r->length > sb->partition_bytes - r->offset) {
            snprintf(why, why_size,
                     "%s region (bytes %llu+%llu) is empty, inside the superblock area, beyond the "
                     "partition's %llu bytes or not on %u-byte blocks",
                     name, (unsigned long long)r->offset, (unsigned long long)r->length,
                     (unsigned long long)sb->partition_bytes, (unsigned)sb->physical_block);
            return -1;
        }
        for (unsigned j = 0; j < i; j++) {
            const struct ksuper_region *q = &sb->regions[j];
            if (q->kind == r->kind) {
                snprintf(why, why_size, "two regions of kind %u (%s)", (unsigned)r->kind, name);
                return -1;
            }
            if (!(r->offset + r->length <= q->offset || q->offset + q->length <= r->offset)) {
                snprintf(why, why_size, "%s and %s regions overlap", ksuper_kind_name(q->kind), name);
                return -1;
            }
        }
        if (r->kind <= KDISK_REGION_KINDS)
            have |= 1u << r->kind;
    }
    for (uint32_t k = 1; k <= KDISK_REGION_KINDS; k++)
        if (!(have & 1u << k)) {
            snprintf(why, why_size, "no %s region", ksuper_kind_name(k));
            return -1;
        }
    return 0;
}

enum ksuper_slot_state ksuper_decode(const uint8_t *buf, size_t len, struct ksuper *out, char *why,
                                     size_t why_size)
{
    if (len > KSUPER_READ_BYTES)
        len = KSUPER_READ_BYTES;
    why[0] = '\0';
    if (len < KSUPER_BYTES)
        return fail(KSUPER_CORRUPT, why, why_size, "short superblock read");
    if (kdisk_is_zero(buf, len))
        return KSUPER_BLANK;
    if (memcmp(buf + S_MAGIC, magic, sizeof magic) != 0)
        return fail(KSUPER_FOREIGN, why, why_size, "foreign data (no tern superblock magic)");
    uint32_t version = kdisk_le32(buf + S_VERSION), bytes = kdisk_le32(buf + S_BYTES);
    if (bytes < S_MIN_BYTES || bytes > len) {
        snprintf(why, why_size, "declared size %u is not between %u and %u", (unsigned)bytes,
                 (unsigned)S_MIN_BYTES, (unsigned)len);
        return KSUPER_CORRUPT;
    }
    uint32_t stored = kdisk_le32(buf + S_CRC), crc = sb_crc(buf, bytes);
    if (stored != crc) {
        snprintf(why, why_size, "CRC32 mismatch (stored 0x%08x, computed 0x%08x)", (unsigned)stored,
                 (unsigned)crc);
        return KSUPER_CORRUPT;
    }
    if (version > KSUPER_VERSION) {
        snprintf(why, why_size, "layout version %u is newer than this release's %u: a newer tern is needed",
                 (unsigned)version, (unsigned)KSUPER_VERSION);
        return KSUPER_NEWER;
    }
    if (version < KSUPER_VERSION) {
        snprintf(why, why_size,
                 "layout version %u is older than this release's %u: migrate it with tern-disk",
                 (unsigned)version, (unsigned)KSUPER_VERSION);
        return KSUPER_OLDER;
    }
    if (bytes != KSUPER_BYTES)
        return fail(KSUPER_CORRUPT, why, why_size, "a version 3 superblock must be 512 bytes");
    if (kdisk_le32(buf + S_FLAGS) || !kdisk_is_zero(buf + S_RESERVED1, S_REGIONS - S_RESERVED1) ||
        !kdisk_is_zero(buf + S_RESERVED2, KSUPER_BYTES - S_RESERVED2))
        return fail(KSUPER_CORRUPT, why, why_size, "non-zero flags or reserved bytes");

    struct ksuper sb;
    memset(&sb, 0, sizeof sb);
    sb.version = version;
    sb.generation = kdisk_le64(buf + S_GENERATION);
    memcpy(sb.volume_id, buf + S_VOLUME_ID, sizeof sb.volume_id);
    sb.logical_block = kdisk_le32(buf + S_LOGICAL);
    sb.physical_block = kdisk_le32(buf + S_PHYSICAL);
    sb.align = kdisk_le32(buf + S_ALIGN);
    uint32_t count = kdisk_le32(buf + S_REGION_COUNT);
    sb.partition_bytes = kdisk_le64(buf + S_PARTITION_BYTES);
    if (sb.generation == 0)
        return fail(KSUPER_CORRUPT, why, why_size, "generation 0");
    if (!pow2(sb.logical_block) || sb.logical_block < 512 || sb.logical_block > 4096 ||
        !pow2(sb.physical_block) || sb.physical_block < sb.logical_block ||
        sb.physical_block > KDISK_IO_BYTES) {
        snprintf(why, why_size, "block sizes %u/%u are not powers of two in 512..%u",
                 (unsigned)sb.logical_block, (unsigned)sb.physical_block, (unsigned)KDISK_IO_BYTES);
        return KSUPER_CORRUPT;
    }
    if (sb.align < KSUPER_ALIGN_MIN || sb.align > KSUPER_ALIGN_MAX || sb.align % sb.physical_block) {
        snprintf(why, why_size, "alignment %u is not a multiple of 1 MiB and the physical block up to 16 MiB",
                 (unsigned)sb.align);
        return KSUPER_CORRUPT;
    }
    if (count < KDISK_REGION_KINDS || count > KSUPER_MAX_REGIONS) {
        snprintf(why, why_size, "%u regions (need %u..%u)", (unsigned)count,
                 (unsigned)KDISK_REGION_KINDS, (unsigned)KSUPER_MAX_REGIONS);
        return KSUPER_CORRUPT;
    }
    if (sb.partition_bytes < KSUPER_AREA || sb.partition_bytes > (UINT64_C(1) << 60))
        return fail(KSUPER_CORRUPT, why, why_size, "partition size out of range");
    sb.region_count = count;
    for (unsigned i = 0; i < KSUPER_MAX_REGIONS; i++) {
        const uint8_t *e = buf + S_REGIONS + i * S_REGION_SIZE;
        if (i >= count) {
            if (!kdisk_is_zero(e, S_REGION_SIZE))
                return fail(KSUPER_CORRUPT, why, why_size, "a region entry past the count is not zero");
            continue;
        }
        sb.regions[i] = (struct ksuper_region){
            .kind = kdisk_le32(e),
            .flags = kdisk_le32(e + 4),
            .offset = kdisk_le64(e + 8),
            .length = kdisk_le64(e + 16),
        };
    }
    if (check_regions(&sb, why, why_size))
        return KSUPER_CORRUPT;
    *out = sb;
    return KSUPER_VALID;
}

void ksuper_encode(const struct ksuper *sb, uint8_t out[KSUPER_BYTES])
{
    memset(out, 0, KSUPER_BYTES);
    memcpy(out + S_MAGIC, magic, sizeof magic);
    kdisk_put32(out + S_VERSION, sb->version);
    kdisk_put32(out + S_BYTES, KSUPER_BYTES);
    kdisk_put64(out + S_GENERATION, sb->generation);
    memcpy(out + S_VOLUME_ID, sb->volume_id, sizeof sb->volume_id);
    kdisk_put32(out + S_LOGICAL, sb->logical_block);
    kdisk_put32(out + S_PHYSICAL, sb->physical_block);
    kdisk_put32(out + S_ALIGN, sb->align);
    kdisk_put32(out + S_REGION_COUNT, sb->region_count);
    kdisk_put64(out + S_PARTITION_BYTES, sb->partition_bytes);
    for (unsigned i = 0; i < sb->region_count && i < KSUPER_MAX_REGIONS; i++) {
        uint8_t *e = out + S_REGIONS + i * S_REGION_SIZE;
        kdisk_put32(e, sb->regions[i].kind);
        kdisk_put32(e + 4, sb->regions[i].flags);
        kdisk_put64(e + 8, sb->regions[i].offset);
        kdisk_put64(e + 16, sb->regions[i].length);
    }
    kdisk_put32(out + S_CRC, sb_crc(out, KSUPER_BYTES));
}

/* The geometry checks shared by reading and formatting. */
static int check_geom(const struct ksuper_geom *g, char *why, size_t why_size)
{
    if (g->start % g->physical_block) {
        snprintf(why, why_size, "the partition starts at byte %llu, not on a %u-byte physical block",
                 (unsigned long long)g->start, (unsigned)g->physical_block);
        return -1;
    }
    if (g->bytes < KSUPER_AREA) {
        snprintf(why, why_size, "the partition has %llu bytes, less than the %u of the superblock area",
                 (unsigned long long)g->bytes, (unsigned)KSUPER_AREA);
        return -1;
    }
    return 0;
}

int ksuper_check(const struct ksuper *sb, const struct ksuper_geom *g, char *why, size_t why_size)
{
    if (sb->partition_bytes > g->bytes) {
        snprintf(why, why_size, "the partition (%llu bytes) is smaller than its layout (%llu bytes)",
                 (unsigned long long)g->bytes, (unsigned long long)sb->partition_bytes);
        return -1;
    }
    for (unsigned i = 0; i < sb->region_count; i++) {
        const struct ksuper_region *r = &sb->regions[i];
        if (r->offset % g->physical_block || r->length % g->physical_block) {
            snprintf(why, why_size, "%s region (bytes %llu+%llu) is not on this device's %u-byte physical blocks",
                     ksuper_kind_name(r->kind), (unsigned long long)r->offset,
                     (unsigned long long)r->length, (unsigned)g->physical_block);
            return -1;
        }
    }
    return 0;
}

/* --- the sizing rule ---------------------------------------------------- */

static uint64_t gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* 1 MiB, or the least common multiple of 1 MiB and the optimal I/O size
 * when the device reports one that is whole physical blocks and the
 * multiple is at most 16 MiB (a larger one would waste too much of a
 * small disk; 1 MiB is then still a whole number of physical blocks). */
static uint32_t choose_align(const struct ksuper_geom *g)
{
    uint64_t opt = g->optimal_io;
    if (opt == 0 || opt % g->physical_block)
        return KSUPER_ALIGN_MIN;
    uint64_t lcm = (uint64_t)KSUPER_ALIGN_MIN / gcd(KSUPER_ALIGN_MIN, opt) * opt;
    return lcm <= KSUPER_ALIGN_MAX ? (uint32_t)lcm : KSUPER_ALIGN_MIN;
}

static uint64_t clamp(uint64_t v, uint64_t lo, uint64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* v rounded down to align, but at least one align. */
static uint64_t units(uint64_t v, uint64_t align) { return v / align ? v / align * align : align; }

int ksuper_plan(const struct ksuper_geom *g, const uint8_t volume_id[16], struct ksuper *out,
                char *why, size_t why_size)
{
    if (check_geom(g, why, why_size))
        return -1;
    const uint64_t align = choose_align(g);
    /* Regions are aligned on the disk, not just in the partition; the
     * partition's end rounded down may lie before its start. */
    const uint64_t first_abs = (g->start + KSUPER_AREA + align - 1) / align * align;
    const uint64_t end_abs = (g->start + g->bytes) / align * align;
    const uint64_t first = first_abs - g->start;
    const uint64_t usable = end_abs > first_abs ? end_abs - first_abs : 0;
    const uint64_t tel = units(clamp(usable / 64, KSUPER_TELEMETRY_MIN, KSUPER_TELEMETRY_MAX), align);
    const uint64_t wal = units(clamp(usable / 16, KSUPER_WAL_MIN, KSUPER_WAL_MAX), align);
    const uint64_t db = usable > tel + wal ? (usable - tel - wal) / 3 / align * align : 0;
    if (db < KSUPER_DB_MIN) {
        /* what the rule needs once the clamps are at their minimums, plus
         * what rounding the partition's end down to align may cost */
        uint64_t need = first + tel + wal + 3 * ((KSUPER_DB_MIN + align - 1) / align * align) +
                        ((g->start + g->bytes) % align ? align : 0);
        snprintf(why, why_size, "the partition has %llu MiB; layout v%u needs at least %llu MiB",
                 (unsigned long long)(g->bytes / MIB), (unsigned)KSUPER_VERSION, (unsigned long long)((need + MIB - 1) / MIB));
        return -1;
    }
    struct ksuper sb;
    memset(&sb, 0, sizeof sb);
    sb.version = KSUPER_VERSION;
    memcpy(sb.volume_id, volume_id, sizeof sb.volume_id);
    sb.logical_block = g->logical_block;
    sb.physical_block = g->physical_block;
    sb.align = (uint32_t)align;
    sb.partition_bytes = g->bytes;
    /* WAL and telemetry first, then the database followed by its backups,
     * so that growth (issue 14) can extend the database over the space
     * its backups held while new backups go into the added space. */
    static const uint32_t order[] = {KDISK_REGION_WAL, KDISK_REGION_TELEMETRY, KDISK_REGION_DB,
                                     KDISK_REGION_BACKUP_A, KDISK_REGION_BACKUP_B};
    uint64_t at = first;
    for (unsigned i = 0; i < sizeof order / sizeof order[0]; i++) {
        uint64_t len = order[i] == KDISK_REGION_WAL ? wal : order[i] == KDISK_REGION_TELEMETRY ? tel : db;
        sb.regions[sb.region_count++] = (struct ksuper_region){.kind = order[i], .offset = at, .length = len};
        at += len;
    }
    *out = sb;
    return 0;
}

/* --- I/O ---------------------------------------------------------------- */

static uint64_t slot_offset(unsigned slot) { return slot ? KSUPER_SLOT_B : KSUPER_SLOT_A; }
static char slot_name(unsigned slot) { return slot ? 'B' : 'A'; }

static int read_slot(const struct kdisk *d, const struct ksuper_geom *g, unsigned slot,
                     struct ksuper *sb, char *why, size_t why_size, struct kdisk_report *rep,
                     enum ksuper_slot_state *st)
{
    uint64_t lba = (g->start + slot_offset(slot)) / d->logical_block;
    if (kdisk_read(d, lba, KSUPER_READ_BYTES / d->logical_block, d->io,
                   slot ? "superblock B" : "superblock A", rep))
        return KDISK_EIO;
    *st = ksuper_decode(d->io, KSUPER_READ_BYTES, sb, why, why_size);
    if (*st == KSUPER_VALID && ksuper_check(sb, g, why, why_size))
        *st = KSUPER_CORRUPT;
    return KDISK_OK;
}

/* First non-zero byte in the partition's first KSUPER_BLANK_SCAN bytes, or
 * UINT64_MAX when they are all zero; KDISK_EIO through *rc. */
static uint64_t first_data(const struct kdisk *d, const struct ksuper_geom *g, struct kdisk_report *rep,
                           int *rc)
{
    const uint64_t scan = g->bytes < KSUPER_BLANK_SCAN ? g->bytes : KSUPER_BLANK_SCAN;
    *rc = KDISK_OK;
    for (uint64_t off = 0; off < scan; off += KDISK_IO_BYTES) {
        uint64_t n = scan - off < KDISK_IO_BYTES ? scan - off : KDISK_IO_BYTES;
        if ((*rc = kdisk_read(d, (g->start + off) / d->logical_block, (uint32_t)(n / d->logical_block),
                              d->io, "the tern partition", rep)))
            return UINT64_MAX;
        for (uint64_t i = 0; i < n; i++)
            if (d->io[i])
                return off + i;
    }
    return UINT64_MAX;
}

static const char *state_text(enum ksuper_slot_state st, const char *why)
{
    return st == KSUPER_BLANK ? "blank" : why;
}

int ksuper_read(const struct kdisk *d, const struct ksuper_geom *g, struct ksuper_state *out,
                struct kdisk_report *rep)
{
    char why[2][KDISK_MSG_MAX];
    struct ksuper sb[2];
    enum ksuper_slot_state st[2];
    int rc = kdisk_check(d, rep);
    if (rc)
        return rc;
    if (check_geom(g, why[0], sizeof why[0]))
        return kdisk_fail(rep, KDISK_EREFUSED, "%s", why[0]);
    for (unsigned s = 0; s < 2; s++)
        if (read_slot(d, g, s, &sb[s], why[s], sizeof why[s], rep, &st[s]))
            return KDISK_EIO;
    for (unsigned s = 0; s < 2; s++)
        if (st[s] == KSUPER_NEWER)
            return kdisk_fail(rep, KDISK_EREFUSED, "superblock %c: %s", slot_name(s), why[s]);
    if (st[0] == KSUPER_FOREIGN)
        return kdisk_fail(rep, KDISK_EREFUSED,
                          "the tern partition starts with foreign data (no tern superblock): "
                          "refusing to use or format it");
    if (st[0] == KSUPER_VALID || st[1] == KSUPER_VALID) {
        unsigned win = st[0] != KSUPER_VALID                                      ? 1
                       : st[1] != KSUPER_VALID                                    ? 0
                       : sb[1].generation > sb[0].generation ? 1 : 0;
        unsigned other = 1 - win;
        if (st[other] != KSUPER_VALID)
            kdisk_note(rep, "superblock %c is unusable (%s); using superblock %c (generation %llu)",
                       slot_name(other), state_text(st[other], why[other]), slot_name(win),
                       (unsigned long long)sb[win].generation);
        out->sb = sb[win];
        out->slot = win;
        return KDISK_OK;
    }
    if (st[0] == KSUPER_BLANK && st[1] == KSUPER_BLANK) {
        uint64_t at = first_data(d, g, rep, &rc);
        if (rc)
            return rc;
        if (at == UINT64_MAX)
            return kdisk_fail(rep, KDISK_EBLANK, "the tern partition is blank");
        return kdisk_fail(rep, KDISK_EREFUSED,
                          "the tern partition has no superblock but holds data at byte %llu "
                          "(foreign): refusing to use or format it",
                          (unsigned long long)at);
    }
    return kdisk_fail(rep, KDISK_EREFUSED, "no usable superblock: A: %s; B: %s",
                      state_text(st[0], why[0]), state_text(st[1], why[1]));
}

/* Write sb into slot (one physical block: the superblock, then zeros). */
static int write_slot(const struct kdisk *d, const struct ksuper_geom *g, unsigned slot,
                      const struct ksuper *sb, struct kdisk_report *rep)
{
    memset(d->io, 0, g->physical_block);
    ksuper_encode(sb, d->io);
    uint64_t lba = (g->start + slot_offset(slot)) / d->logical_block;
    const char *what = slot ? "superblock B" : "superblock A";
    if (kdisk_write(d, lba, g->physical_block / d->logical_block, d->io, what, rep))
        return KDISK_EIO;
    return kdisk_flush(d, what, rep);
}

int ksuper_format(const struct kdisk *d, const struct ksuper_geom *g, const uint8_t volume_id[16],
                  struct ksuper_state *out, struct kdisk_report *rep)
{
    char why[KDISK_MSG_MAX];
    struct ksuper sb;
    int rc = kdisk_check(d, rep);
    if (rc)
        return rc;
    if (ksuper_plan(g, volume_id, &sb, why, sizeof why))
        return kdisk_fail(rep, KDISK_EINVAL, "cannot format: %s", why);
    /* Region contents are whatever the disk held; zeroing each region's
     * start gives their readers a defined empty state (docs/DISK.md). */
    memset(d->io, 0, KDISK_IO_BYTES);
    for (unsigned i = 0; i < sb.region_count; i++) {
        const struct ksuper_region *r = &sb.regions[i];
        uint64_t n = r->length < KDISK_IO_BYTES ? r->length : KDISK_IO_BYTES;
        if (kdisk_write(d, (g->start + r->offset) / d->logical_block, (uint32_t)(n / d->logical_block),
                        d->io, ksuper_kind_name(r->kind), rep))
            return KDISK_EIO;
    }
    sb.generation = 1;
    if ((rc = write_slot(d, g, 0, &sb, rep)))
        return rc;
    sb.generation = 2;
    if ((rc = write_slot(d, g, 1, &sb, rep)))
        return rc;
    out->sb = sb;
    out->slot = 1;
    return KDISK_OK;
}

int ksuper_update(const struct kdisk *d, const struct ksuper_geom *g, struct ksuper_state *cur,
                  const struct ksuper *next, struct kdisk_report *rep)
{
    char why[KDISK_MSG_MAX];
    struct ksuper sb = *next, check;
    int rc = kdisk_check(d, rep);
    if (rc)
        return rc;
    sb.version = KSUPER_VERSION;
    sb.generation = cur->sb.generation + 1;
    /* What a reader would refuse is never written. */
    uint8_t enc[KSUPER_BYTES];
    ksuper_encode(&sb, enc);
    if (ksuper_decode(enc, sizeof enc, &check, why, sizeof why) != KSUPER_VALID ||
        ksuper_check(&check, g, why, sizeof why))
        return kdisk_fail(rep, KDISK_EINVAL, "superblock update refused: %s", why);
    unsigned slot = 1 - cur->slot;
    if ((rc = write_slot(d, g, slot, &check, rep)))
        return rc;
    cur->sb = check;
    cur->slot = slot;
    return KDISK_OK;
}

/* --- growth ------------------------------------------------------------- */

static const struct ksuper_region *find_kind(const struct ksuper *sb, uint32_t kind)
{
    for (unsigned i = 0; i < sb->region_count; i++)
        if (sb->regions[i].kind == kind)
            return &sb->regions[i];
    return NULL;
}

int ksuper_grow_plan(const struct ksuper *cur, const struct ksuper_geom *g, struct ksuper *next,
                     char *why, size_t why_size)
{
    const struct ksuper_region *db = find_kind(cur, KDISK_REGION_DB);
    const struct ksuper_region *ba = find_kind(cur, KDISK_REGION_BACKUP_A);
    const struct ksuper_region *bb = find_kind(cur, KDISK_REGION_BACKUP_B);
    if (!db || !ba || !bb) {
        snprintf(why, why_size, "the layout lacks the database or a backup region");
        return -1;
    }
    if (g->bytes < cur->partition_bytes) {
        snprintf(why, why_size, "the partition (%llu bytes) is smaller than its layout (%llu bytes)",
                 (unsigned long long)g->bytes, (unsigned long long)cur->partition_bytes);
        return -1;
    }
    const uint64_t db_end = db->offset + db->length;
    for (unsigned i = 0; i < cur->region_count; i++) {
        const struct ksuper_region *r = &cur->regions[i];
        int backup = r->kind == KDISK_REGION_BACKUP_A || r->kind == KDISK_REGION_BACKUP_B;
        if (r == db)
            continue;
        if (backup ? r->offset < db_end : r->offset + r->length > db->offset) {
            snprintf(why, why_size, "the %s region (bytes %llu+%llu) %s the database: the layout "
                     "cannot grow in place", ksuper_kind_name(r->kind), (unsigned long long)r->offset,
                     (unsigned long long)r->length, backup ? "lies before" : "lies past");
            return -1;
        }
    }
    const uint64_t align = cur->align;
    const uint64_t end_abs = (g->start + g->bytes) / align * align;
    const uint64_t db_abs = g->start + db->offset;
    if (end_abs <= db_abs)
        return 1;
    const uint64_t each = (end_abs - db_abs) / 3 / align * align;
    if (each <= db->length)
        return 1;
    struct ksuper sb = *cur;
    sb.partition_bytes = g->bytes;
    for (unsigned i = 0; i < sb.region_count; i++) {
        struct ksuper_region *r = &sb.regions[i];
        if (r->kind == KDISK_REGION_DB)
            r->length = each;
        else if (r->kind == KDISK_REGION_BACKUP_A)
            *r = (struct ksuper_region){.kind = r->kind, .offset = db->offset + each, .length = each};
        else if (r->kind == KDISK_REGION_BACKUP_B)
            *r = (struct ksuper_region){.kind = r->kind, .offset = db->offset + 2 * each, .length = each};
    }
    *next = sb;
    return 0;
}
