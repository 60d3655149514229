/*
 * gpt.c - reading and writing the GUID Partition Table. The parsers are
 * pure functions over one block or one entry; gpt_read and gpt_write do
 * the I/O through struct kdisk, one KDISK_IO_BYTES chunk at a time, so
 * nothing here allocates. Offsets and rules: UEFI specification 2.10,
 * 5.2.3 (protective MBR) and 5.3.2-5.3.3 (header, entries); docs/DISK.md.
 */
#include "gpt.h"

#include "crc32.h"

#include <stdio.h>
#include <string.h>

/* Header fields (UEFI 5.3.2, table 5-5). */
enum {
    H_SIGNATURE = 0,
    H_REVISION = 8,
    H_SIZE = 12,
    H_CRC = 16,
    H_RESERVED = 20,
    H_MY_LBA = 24,
    H_ALT_LBA = 32,
    H_FIRST_USABLE = 40,
    H_LAST_USABLE = 48,
    H_DISK_GUID = 56,
    H_ARRAY_LBA = 72,
    H_ENTRIES = 80,
    H_ENTRY_SIZE = 84,
    H_ARRAY_CRC = 88,
    GPT_REVISION_1_0 = 0x00010000,
};

/* Entry fields (UEFI 5.3.3, table 5-6). */
enum {
    E_TYPE = 0,
    E_GUID = 16,
    E_FIRST = 32,
    E_LAST = 40,
    E_ATTRS = 48,
    E_NAME = 56,
};

/* Protective MBR (UEFI 5.2.3): four 16-byte records from 446, 0x55AA at 510. */
enum {
    MBR_RECORDS = 446,
    MBR_RECORD_SIZE = 16,
    MBR_SIGNATURE = 510,
    MBR_TYPE_GPT = 0xEE,
    R_TYPE = 4,
    R_START = 8,
    R_SIZE = 12,
};

static const char gpt_signature[8] = {'E', 'F', 'I', ' ', 'P', 'A', 'R', 'T'};

/* --- GUIDs -------------------------------------------------------------- */

/* On-disk byte for each of the 16 bytes of the text form, in text order:
 * the first three fields are little-endian. */
static const uint8_t guid_order[16] = {3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int gpt_guid_parse(const char *text, struct gpt_guid *out)
{
    unsigned byte = 0;
    for (unsigned i = 0; i < GPT_GUID_TEXT - 1; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (text[i] != '-')
                return -1;
            continue;
        }
        int hi = hexval(text[i]), lo = hi < 0 ? -1 : hexval(text[i + 1]);
        if (lo < 0)
            return -1;
        out->b[guid_order[byte++]] = (uint8_t)(hi << 4 | lo);
        i++;
    }
    return text[GPT_GUID_TEXT - 1] == '\0' ? 0 : -1;
}

void gpt_guid_text(const struct gpt_guid *g, char out[GPT_GUID_TEXT])
{
    static const char hex[] = "0123456789abcdef";
    unsigned o = 0;
    for (unsigned i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        uint8_t v = g->b[guid_order[i]];
        out[o++] = hex[v >> 4];
        out[o++] = hex[v & 15];
    }
    out[o] = '\0';
}

int gpt_guid_eq(const struct gpt_guid *a, const struct gpt_guid *b)
{
    return memcmp(a->b, b->b, sizeof a->b) == 0;
}

int gpt_guid_is_zero(const struct gpt_guid *g) { return kdisk_is_zero(g->b, sizeof g->b); }

void gpt_guid_random(struct gpt_guid *out, const uint8_t random[16])
{
    memcpy(out->b, random, 16);
    out->b[7] = (uint8_t)((out->b[7] & 0x0f) | 0x40); /* version 4 (time_hi, little-endian) */
    out->b[8] = (uint8_t)((out->b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
}

/* --- parsers ------------------------------------------------------------ */

int gpt_mbr_check(const uint8_t *lba0, char *why, size_t why_size)
{
    if (lba0[MBR_SIGNATURE] != 0x55 || lba0[MBR_SIGNATURE + 1] != 0xAA) {
        snprintf(why, why_size, "no MBR signature (0x55AA) at LBA 0");
        return -1;
    }
    for (unsigned i = 0; i < 4; i++) {
        const uint8_t *r = lba0 + MBR_RECORDS + i * MBR_RECORD_SIZE;
        if (r[R_TYPE] == MBR_TYPE_GPT && kdisk_le32(r + R_START) == 1 && kdisk_le32(r + R_SIZE))
            return 0;
    }
    snprintf(why, why_size, "the MBR at LBA 0 has no protective (type 0xEE) record at LBA 1");
    return -1;
}

static int bad(char *why, size_t why_size, const char *what)
{
    snprintf(why, why_size, "%s", what);
    return -1;
}

/* Is [a, a+n) clear of [b, b+m)? (n, m > 0, no overflow: all < 2^49.) */
static int apart(uint64_t a, uint64_t n, uint64_t b, uint64_t m) { return a + n <= b || b + m <= a; }

static int pow2(uint32_t v) { return v && !(v & (v - 1)); }

int gpt_header_parse(const uint8_t *blk, uint32_t block_size, uint64_t capacity, uint64_t lba,
                     struct gpt_header *out, char *why, size_t why_size)
{
    if (memcmp(blk + H_SIGNATURE, gpt_signature, sizeof gpt_signature) != 0)
        return bad(why, why_size, "no \"EFI PART\" signature");
    if (kdisk_le32(blk + H_REVISION) != GPT_REVISION_1_0) {
        snprintf(why, why_size, "revision 0x%08x is not 1.0", (unsigned)kdisk_le32(blk + H_REVISION));
        return -1;
    }
    uint32_t size = kdisk_le32(blk + H_SIZE);
    if (size < GPT_HEADER_MIN || size > block_size) {
        snprintf(why, why_size, "header size %u is not between %u and the block size %u",
                 (unsigned)size, (unsigned)GPT_HEADER_MIN, (unsigned)block_size);
        return -1;
    }
    uint32_t stored = kdisk_le32(blk + H_CRC);
    uint8_t zero[4] = {0};
    uint32_t crc = crc32(blk, H_CRC);
    crc = crc32_update(crc, zero, sizeof zero);
    crc = crc32_update(crc, blk + H_RESERVED, size - H_RESERVED);
    if (crc != stored) {
        snprintf(why, why_size, "header CRC32 mismatch (stored 0x%08x, computed 0x%08x)",
                 (unsigned)stored, (unsigned)crc);
        return -1;
    }
    struct gpt_header h = {
        .header_size = size,
        .my_lba = kdisk_le64(blk + H_MY_LBA),
        .alternate_lba = kdisk_le64(blk + H_ALT_LBA),
        .first_usable = kdisk_le64(blk + H_FIRST_USABLE),
        .last_usable = kdisk_le64(blk + H_LAST_USABLE),
        .array_lba = kdisk_le64(blk + H_ARRAY_LBA),
        .entries = kdisk_le32(blk + H_ENTRIES),
        .entry_size = kdisk_le32(blk + H_ENTRY_SIZE),
        .array_crc = kdisk_le32(blk + H_ARRAY_CRC),
    };
    memcpy(h.disk_guid.b, blk + H_DISK_GUID, 16);
    if (h.my_lba != lba) {
        snprintf(why, why_size, "MyLBA %llu is not the header's LBA %llu",
                 (unsigned long long)h.my_lba, (unsigned long long)lba);
        return -1;
    }
    if (h.alternate_lba >= capacity || h.alternate_lba == h.my_lba || h.alternate_lba == 0) {
        snprintf(why, why_size, "AlternateLBA %llu is not another LBA of the disk's %llu",
                 (unsigned long long)h.alternate_lba, (unsigned long long)capacity);
        return -1;
    }
    if (h.first_usable == 0 || h.first_usable > h.last_usable || h.last_usable >= capacity) {
        snprintf(why, why_size, "usable LBAs %llu..%llu do not fit the disk's %llu",
                 (unsigned long long)h.first_usable, (unsigned long long)h.last_usable,
                 (unsigned long long)capacity);
        return -1;
    }
    if (h.entries == 0 || h.entries > GPT_MAX_ENTRIES || h.entry_size < GPT_ENTRY_SIZE ||
        h.entry_size > GPT_MAX_ENTRY_SIZE || !pow2(h.entry_size) ||
        (uint64_t)h.entries * h.entry_size > GPT_MAX_ARRAY) {
        snprintf(why, why_size,
                 "%u entries of %u bytes: need 1..%u entries of 128 x 2^n bytes, at most %u "
                 "bytes in all",
                 (unsigned)h.entries, (unsigned)h.entry_size, (unsigned)GPT_MAX_ENTRIES,
                 (unsigned)GPT_MAX_ARRAY);
        return -1;
    }
    uint64_t usable = h.last_usable - h.first_usable + 1;
    uint64_t array_blocks = ((uint64_t)h.entries * h.entry_size + block_size - 1) / block_size;
    if (h.array_lba == 0 || h.array_lba >= capacity || array_blocks > capacity - h.array_lba ||
        !apart(h.array_lba, array_blocks, h.my_lba, 1) ||
        !apart(h.array_lba, array_blocks, h.first_usable, usable)) {
        snprintf(why, why_size,
                 "entry array at LBA %llu (%llu blocks) overlaps the header, the usable LBAs or "
                 "the disk's end",
                 (unsigned long long)h.array_lba, (unsigned long long)array_blocks);
        return -1;
    }
    if (!apart(h.my_lba, 1, h.first_usable, usable) || !apart(h.alternate_lba, 1, h.first_usable, usable))
        return bad(why, why_size, "a header lies inside the usable LBAs");
    *out = h;
    return 0;
}

int gpt_entry_parse(const uint8_t *entry, uint32_t index, const struct gpt_header *h,
                    struct gpt_part *out, char *why, size_t why_size)
{
    struct gpt_part p;
    memset(&p, 0, sizeof p);
    memcpy(p.type.b, entry + E_TYPE, 16);
    if (gpt_guid_is_zero(&p.type))
        return 0;
    memcpy(p.guid.b, entry + E_GUID, 16);
    p.first = kdisk_le64(entry + E_FIRST);
    p.last = kdisk_le64(entry + E_LAST);
    p.attributes = kdisk_le64(entry + E_ATTRS);
    p.index = index;
    if (p.first > p.last || p.first < h->first_usable || p.last > h->last_usable) {
        snprintf(why, why_size, "partition %u (LBA %llu..%llu) is not inside the usable LBAs %llu..%llu",
                 (unsigned)index, (unsigned long long)p.first, (unsigned long long)p.last,
                 (unsigned long long)h->first_usable, (unsigned long long)h->last_usable);
        return -1;
    }
    for (unsigned i = 0; i < GPT_NAME_UNITS; i++) {
        uint16_t u = kdisk_le16(entry + E_NAME + 2 * i);
        if (u == 0)
            break;
        p.name[i] = u >= 0x20 && u < 0x7f ? (char)u : '?';
    }
    *out = p;
    return 1;
}

int gpt_check_overlap(const struct gpt_part *p, unsigned n, char *why, size_t why_size)
{
    for (unsigned i = 0; i < n; i++)
        for (unsigned j = i + 1; j < n; j++)
            if (!apart(p[i].first, p[i].last - p[i].first + 1, p[j].first, p[j].last - p[j].first + 1)) {
                snprintf(why, why_size, "partitions %u (LBA %llu..%llu) and %u (LBA %llu..%llu) overlap",
                         (unsigned)p[i].index, (unsigned long long)p[i].first,
                         (unsigned long long)p[i].last, (unsigned)p[j].index,
                         (unsigned long long)p[j].first, (unsigned long long)p[j].last);
                return -1;
            }
    return 0;
}

/* --- reader ------------------------------------------------------------- */

/* One copy (header at lba) read and checked. With out, its partitions are
 * parsed into out too; without, only the array's CRC is checked. Returns
 * 0, 1 unusable (why says why), or KDISK_EIO (rep says why). */
static int read_copy(const struct kdisk *d, uint64_t lba, struct gpt_header *h, struct gpt *out,
                     char *why, size_t why_size, struct kdisk_report *rep)
{
    const uint32_t bs = d->logical_block;
    if (kdisk_read(d, lba, 1, d->io, "a GPT header", rep))
        return KDISK_EIO;
    if (gpt_header_parse(d->io, bs, d->capacity, lba, h, why, why_size))
        return 1;
    const uint64_t bytes = (uint64_t)h->entries * h->entry_size;
    const uint32_t chunk_blocks = KDISK_IO_BYTES / bs;
    uint32_t crc = 0;
    unsigned count = 0;
    for (uint64_t off = 0; off < bytes; off += (uint64_t)chunk_blocks * bs) {
        uint64_t left = bytes - off;
        uint64_t n = left < (uint64_t)chunk_blocks * bs ? left : (uint64_t)chunk_blocks * bs;
        uint32_t blocks = (uint32_t)((n + bs - 1) / bs);
        if (kdisk_read(d, h->array_lba + off / bs, blocks, d->io, "a GPT entry array", rep))
            return KDISK_EIO;
        crc = crc32_update(crc, d->io, (size_t)n);
        if (!out)
            continue;
        /* entry_size divides the chunk (both powers of two, entry <= chunk) */
        for (uint64_t e = 0; e < n; e += h->entry_size) {
            uint32_t index = (uint32_t)((off + e) / h->entry_size) + 1;
            struct gpt_part p;
            int r = gpt_entry_parse(d->io + e, index, h, &p, why, why_size);
            if (r < 0)
                return 1;
            if (r == 0)
                continue;
            if (count == GPT_MAX_PARTS) {
                snprintf(why, why_size, "more than %u partitions in use", (unsigned)GPT_MAX_PARTS);
                return 1;
            }
            out->parts[count++] = p;
        }
    }
    if (crc != h->array_crc) {
        snprintf(why, why_size, "entry array CRC32 mismatch (stored 0x%08x, computed 0x%08x)",
                 (unsigned)h->array_crc, (unsigned)crc);
        return 1;
    }
    if (out) {
        if (gpt_check_overlap(out->parts, count, why, why_size))
            return 1;
        out->count = count;
        out->hdr = *h;
    }
    return 0;
}

/* Do two usable copies describe the same partitions? */
static int same_table(const struct gpt_header *a, const struct gpt_header *b)
{
    return gpt_guid_eq(&a->disk_guid, &b->disk_guid) && a->first_usable == b->first_usable &&
           a->last_usable == b->last_usable && a->entries == b->entries &&
           a->entry_size == b->entry_size && a->array_crc == b->array_crc;
}

int gpt_read(const struct kdisk *d, struct gpt *out, struct kdisk_report *rep)
{
    char why[KDISK_MSG_MAX], why_backup[KDISK_MSG_MAX];
    int rc = kdisk_check(d, rep);
    if (rc)
        return rc;
    memset(out, 0, sizeof *out);
    if (d->capacity < 3)
        return kdisk_fail(rep, KDISK_EREFUSED, "no GPT: the disk has only %llu blocks",
                          (unsigned long long)d->capacity);
    if (kdisk_read(d, 0, 1, d->io, "the protective MBR", rep))
        return KDISK_EIO;
    if (gpt_mbr_check(d->io, why, sizeof why))
        return kdisk_fail(rep, KDISK_EREFUSED, "not a GPT disk: %s", why);

    struct gpt_header primary, backup;
    int p = read_copy(d, 1, &primary, out, why, sizeof why, rep);
    if (p == KDISK_EIO)
        return KDISK_EIO;
    uint64_t backup_lba = p == 0 ? primary.alternate_lba : d->capacity - 1;
    int b = read_copy(d, backup_lba, &backup, p == 0 ? NULL : out, why_backup, sizeof why_backup, rep);
    if (b == KDISK_EIO) {
        if (p != 0) {
            kdisk_note(rep, "primary GPT at LBA 1 is unusable (%s)", why);
            return KDISK_EIO;
        }
        /* The primary is good: an unreadable backup is only noted. */
        kdisk_note(rep, "backup GPT at LBA %llu is unreadable (%s); using the primary",
                   (unsigned long long)backup_lba, rep->error);
        rep->error[0] = '\0';
        return KDISK_OK;
    }
    if (p == 0 && b == 0) {
        if (!same_table(&primary, &backup) || backup.alternate_lba != 1)
            kdisk_note(rep, "backup GPT at LBA %llu differs from the primary; using the primary",
                       (unsigned long long)backup_lba);
        return KDISK_OK;
    }
    if (p == 0) {
        kdisk_note(rep, "backup GPT at LBA %llu is unusable (%s); using the primary",
                   (unsigned long long)backup_lba, why_backup);
        return KDISK_OK;
    }
    if (b == 0) {
        out->from_backup = 1;
        kdisk_note(rep, "primary GPT at LBA 1 is unusable (%s); using the backup at LBA %llu", why,
                   (unsigned long long)backup_lba);
        return KDISK_OK;
    }
    memset(out, 0, sizeof *out);
    return kdisk_fail(rep, KDISK_EREFUSED, "no usable GPT: primary at LBA 1: %s; backup at LBA %llu: %s",
                      why, (unsigned long long)backup_lba, why_backup);
}

/* --- writer ------------------------------------------------------------- */

static uint64_t array_blocks_of(const struct kdisk *d)
{
    return (uint64_t)GPT_WRITE_ENTRIES * GPT_ENTRY_SIZE / d->logical_block;
}

int gpt_usable(const struct kdisk *d, uint64_t *first_usable, uint64_t *last_usable,
               struct kdisk_report *rep)
{
    int rc = kdisk_check(d, rep);
    if (rc)
        return rc;
    uint64_t ratio = d->physical_block / d->logical_block, ab = array_blocks_of(d);
    uint64_t first = (2 + ab + ratio - 1) / ratio * ratio;
    /* the backup array sits right before the last LBA; the usable range
     * ends on the physical block boundary at or before it */
    uint64_t backup_array = d->capacity > ab + 1 ? d->capacity - 1 - ab : 0;
    uint64_t end = backup_array / ratio * ratio;
    if (end <= first)
        return kdisk_fail(rep, KDISK_EINVAL, "a disk of %llu blocks is too small for a GPT",
                          (unsigned long long)d->capacity);
    *first_usable = first;
    *last_usable = end - 1;
    return KDISK_OK;
}

/* The bytes of entry number i (0-based) of the array the writer builds. */
static void fill_entry(uint8_t *e, unsigned i, const struct gpt_new_part *parts, unsigned n)
{
    memset(e, 0, GPT_ENTRY_SIZE);
    if (i >= n)
        return;
    memcpy(e + E_TYPE, parts[i].type.b, 16);
    memcpy(e + E_GUID, parts[i].guid.b, 16);
    kdisk_put64(e + E_FIRST, parts[i].first);
    kdisk_put64(e + E_LAST, parts[i].last);
    const char *name = parts[i].name ? parts[i].name : "";
    for (unsigned k = 0; k < GPT_NAME_UNITS && name[k]; k++)
        kdisk_put16(e + E_NAME + 2 * k, (uint8_t)name[k]);
}

/* What the writer puts on the disk: both headers' fields and array CRC. */
struct gpt_plan {
    const struct gpt_guid *disk_guid;
    const struct gpt_new_part *parts;
    unsigned n;
    uint64_t first_usable, last_usable, backup_array, array_blocks;
    uint32_t array_crc;
};

static void fill_header(uint8_t *blk, const struct gpt_plan *g, uint64_t my, uint64_t alt,
                        uint64_t array)
{
    memcpy(blk + H_SIGNATURE, gpt_signature, sizeof gpt_signature);
    kdisk_put32(blk + H_REVISION, GPT_REVISION_1_0);
    kdisk_put32(blk + H_SIZE, GPT_HEADER_MIN);
    kdisk_put64(blk + H_MY_LBA, my);
    kdisk_put64(blk + H_ALT_LBA, alt);
    kdisk_put64(blk + H_FIRST_USABLE, g->first_usable);
    kdisk_put64(blk + H_LAST_USABLE, g->last_usable);
    memcpy(blk + H_DISK_GUID, g->disk_guid->b, 16);
    kdisk_put64(blk + H_ARRAY_LBA, array);
    kdisk_put32(blk + H_ENTRIES, GPT_WRITE_ENTRIES);
    kdisk_put32(blk + H_ENTRY_SIZE, GPT_ENTRY_SIZE);
    kdisk_put32(blk + H_ARRAY_CRC, g->array_crc);
    kdisk_put32(blk + H_CRC, crc32(blk, GPT_HEADER_MIN));
}

static void fill_mbr(uint8_t *blk, uint64_t capacity)
{
    uint8_t *r = blk + MBR_RECORDS;
    r[1] = 0x00, r[2] = 0x02, r[3] = 0x00;      /* CHS of LBA 1 */
    r[R_TYPE] = MBR_TYPE_GPT;
    r[5] = r[6] = r[7] = 0xFF;                  /* CHS beyond reach */
    kdisk_put32(r + R_START, 1);
    kdisk_put32(r + R_SIZE, capacity - 1 > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)(capacity - 1));
    blk[MBR_SIGNATURE] = 0x55;
    blk[MBR_SIGNATURE + 1] = 0xAA;
}

/* Logical block lba as the writer lays it out (zero where nothing is). */
static void fill_block(uint8_t *blk, uint64_t lba, const struct kdisk *d, const struct gpt_plan *g)
{
    const uint32_t bs = d->logical_block;
    memset(blk, 0, bs);
    if (lba == 0) {
        fill_mbr(blk, d->capacity);
    } else if (lba == 1) {
        fill_header(blk, g, 1, d->capacity - 1, 2);
    } else if (lba == d->capacity - 1) {
        fill_header(blk, g, d->capacity - 1, 1, g->backup_array);
    } else {
        uint64_t array = lba >= 2 && lba < 2 + g->array_blocks ? lba - 2
                         : lba >= g->backup_array && lba < g->backup_array + g->array_blocks
                             ? lba - g->backup_array
                             : UINT64_MAX;
        if (array == UINT64_MAX)
            return;
        for (uint32_t k = 0; k < bs / GPT_ENTRY_SIZE; k++)
            fill_entry(blk + k * GPT_ENTRY_SIZE, (unsigned)(array * (bs / GPT_ENTRY_SIZE) + k),
                       g->parts, g->n);
    }
}

/* Write LBAs [from, to) as the plan lays them out, one io buffer at a time
 * (a multiple of the physical block, so whole physical blocks stay whole). */
static int write_area(const struct kdisk *d, const struct gpt_plan *g, uint64_t from, uint64_t to,
                      const char *what, struct kdisk_report *rep)
{
    const uint32_t bs = d->logical_block, chunk = KDISK_IO_BYTES / bs;
    for (uint64_t lba = from; lba < to; lba += chunk) {
        uint32_t n = to - lba < chunk ? (uint32_t)(to - lba) : chunk;
        for (uint32_t i = 0; i < n; i++)
            fill_block(d->io + (size_t)i * bs, lba + i, d, g);
        if (kdisk_write(d, lba, n, d->io, what, rep))
            return KDISK_EIO;
    }
    return KDISK_OK;
}

static int check_new_parts(const struct kdisk *d, const struct gpt_plan *g, struct kdisk_report *rep)
{
    const uint64_t ratio = d->physical_block / d->logical_block;
    if (g->n > GPT_WRITE_ENTRIES)
        return kdisk_fail(rep, KDISK_EINVAL, "%u partitions: at most %u", g->n,
                          (unsigned)GPT_WRITE_ENTRIES);
    for (unsigned i = 0; i < g->n; i++) {
        const struct gpt_new_part *p = &g->parts[i];
        if (gpt_guid_is_zero(&p->type) || gpt_guid_is_zero(&p->guid))
            return kdisk_fail(rep, KDISK_EINVAL, "partition %u has a zero type or GUID", i + 1);
        if (p->first > p->last || p->first < g->first_usable || p->last > g->last_usable)
            return kdisk_fail(rep, KDISK_EINVAL,
                              "partition %u (LBA %llu..%llu) is not inside the usable LBAs %llu..%llu",
                              i + 1, (unsigned long long)p->first, (unsigned long long)p->last,
                              (unsigned long long)g->first_usable, (unsigned long long)g->last_usable);
        if (p->first % ratio || (p->last + 1) % ratio)
            return kdisk_fail(rep, KDISK_EINVAL,
                              "partition %u (LBA %llu..%llu) does not start and end on %u-byte "
                              "physical blocks",
                              i + 1, (unsigned long long)p->first, (unsigned long long)p->last,
                              (unsigned)d->physical_block);
        const char *name = p->name ? p->name : "";
        if (strlen(name) > GPT_NAME_UNITS)
            return kdisk_fail(rep, KDISK_EINVAL, "partition %u's name is longer than %u characters",
                              i + 1, (unsigned)GPT_NAME_UNITS);
        for (const char *c = name; *c; c++)
            if (*c < 0x20 || *c >= 0x7f)
                return kdisk_fail(rep, KDISK_EINVAL, "partition %u's name is not printable ASCII",
                                  i + 1);
        for (unsigned j = 0; j < i; j++) {
            const struct gpt_new_part *q = &g->parts[j];
            if (gpt_guid_eq(&p->guid, &q->guid))
                return kdisk_fail(rep, KDISK_EINVAL, "partitions %u and %u have the same GUID", j + 1,
                                  i + 1);
            if (!apart(p->first, p->last - p->first + 1, q->first, q->last - q->first + 1))
                return kdisk_fail(rep, KDISK_EINVAL, "partitions %u and %u overlap", j + 1, i + 1);
        }
    }
    return KDISK_OK;
}

int gpt_write(const struct kdisk *d, const struct gpt_guid *disk_guid,
              const struct gpt_new_part *parts, unsigned n, struct kdisk_report *rep)
{
    struct gpt_plan g = {.disk_guid = disk_guid, .parts = parts, .n = n};
    int rc = gpt_usable(d, &g.first_usable, &g.last_usable, rep);
    if (rc)
        return rc;
    if (!d->write || !d->flush)
        return kdisk_fail(rep, KDISK_EINVAL, "the disk is read-only");
    rc = check_new_parts(d, &g, rep);
    if (rc)
        return rc;
    g.array_blocks = array_blocks_of(d);
    g.backup_array = d->capacity - 1 - g.array_blocks;
    uint8_t e[GPT_ENTRY_SIZE];
    for (unsigned i = 0; i < GPT_WRITE_ENTRIES; i++) {
        fill_entry(e, i, parts, n);
        g.array_crc = crc32_update(g.array_crc, e, sizeof e);
    }
    /* backup first, so a disk interrupted here still has no valid primary
     * pointing at a missing backup; then the primary, then one flush */
    if (write_area(d, &g, g.last_usable + 1, d->capacity, "the backup GPT", rep) ||
        write_area(d, &g, 0, g.first_usable, "the primary GPT", rep))
        return KDISK_EIO;
    return kdisk_flush(d, "the GPT", rep);
}

/* --- growth ------------------------------------------------------------- */

/* Blocks of the area the primary copy is rewritten in: LBA 0 through the
 * end of its entry array, on a physical block boundary. */
static uint64_t primary_area(const struct kdisk *d, const struct gpt_header *h)
{
    const uint64_t ratio = d->physical_block / d->logical_block;
    const uint64_t ab = ((uint64_t)h->entries * h->entry_size + d->logical_block - 1) / d->logical_block;
    return (h->array_lba + ab + ratio - 1) / ratio * ratio;
}

/* Where the grown table's backup copy goes: its array right before the
 * last LBA; the area written starts on the physical block after the new
 * LastUsableLBA. */
struct grow_plan {
    uint64_t array_blocks, backup_array, last_usable, area_first;
};

static void grow_plan_of(const struct kdisk *d, const struct gpt_header *h, struct grow_plan *p)
{
    const uint64_t ratio = d->physical_block / d->logical_block;
    p->array_blocks = ((uint64_t)h->entries * h->entry_size + d->logical_block - 1) / d->logical_block;
    p->backup_array = d->capacity - 1 - p->array_blocks;
    p->area_first = p->backup_array / ratio * ratio;
    p->last_usable = p->area_first - 1;
}

int gpt_grow_room(const struct kdisk *d, const struct gpt *g, uint64_t *last_usable, char *why,
                  size_t why_size, struct kdisk_report *rep)
{
    const struct gpt_header *h = &g->hdr;
    const uint32_t bs = d->logical_block;
    if (kdisk_check(d, rep))
        return bad(why, why_size, rep->error);
    if (g->from_backup)
        return bad(why, why_size, "the primary GPT is unusable (repair it with tern-disk first)");
    if (h->alternate_lba == d->capacity - 1)
        return 0;
    if (h->alternate_lba > d->capacity - 1)
        return bad(why, why_size, "the backup GPT lies past the disk's end");
    struct grow_plan p;
    grow_plan_of(d, h, &p);
    if ((primary_area(d, h) + (d->capacity - p.area_first)) * bs > KDISK_IO_BYTES) {
        snprintf(why, why_size, "the GPT's entry array (%u x %u bytes at LBA %llu) is too large to "
                 "move in one %u-byte buffer", (unsigned)h->entries, (unsigned)h->entry_size,
                 (unsigned long long)h->array_lba, (unsigned)KDISK_IO_BYTES);
        return -1;
    }
    /* The new copy must not touch what the old table still needs: the old
     * backup header and its array (when that header is valid). */
    uint64_t keep_end = h->alternate_lba + 1;
    if (h->last_usable + 1 > keep_end)
        keep_end = h->last_usable + 1;
    if (kdisk_read(d, h->alternate_lba, 1, d->io, "the old backup GPT header", rep))
        return bad(why, why_size, rep->error);
    struct gpt_header old;
    char ignore[KDISK_MSG_MAX];
    if (!gpt_header_parse(d->io, bs, d->capacity, h->alternate_lba, &old, ignore, sizeof ignore) &&
        old.array_lba + p.array_blocks > keep_end)
        keep_end = old.array_lba + p.array_blocks;
    if (p.area_first < keep_end || p.last_usable <= h->last_usable) {
        snprintf(why, why_size, "the disk grew by %llu blocks: too little to move the backup GPT "
                 "clear of the old one", (unsigned long long)(d->capacity - 1 - h->alternate_lba));
        return -1;
    }
    *last_usable = p.last_usable;
    return 1;
}

/* Re-encode a header's CRC after its fields changed. */
static void header_crc(uint8_t *blk, uint32_t size)
{
    kdisk_put32(blk + H_CRC, 0);
    kdisk_put32(blk + H_CRC, crc32(blk, size));
}

int gpt_grow(const struct kdisk *d, const struct gpt *g, uint32_t index, uint64_t new_last,
             struct kdisk_report *rep)
{
    char why[KDISK_MSG_MAX];
    uint64_t last_usable;
    int room = gpt_grow_room(d, g, &last_usable, why, sizeof why, rep);
    if (room <= 0)
        return kdisk_fail(rep, KDISK_EINVAL, "cannot grow the GPT: %s", room ? why : "not grown");
    if (!d->write || !d->flush)
        return kdisk_fail(rep, KDISK_EINVAL, "the disk is read-only");
    const struct gpt_header *h = &g->hdr;
    const uint32_t bs = d->logical_block;
    struct grow_plan p;
    grow_plan_of(d, h, &p);
    const uint64_t prim = primary_area(d, h), back = d->capacity - p.area_first;
    uint8_t *pa = d->io, *ba = d->io + prim * bs;
    if (kdisk_read(d, 0, (uint32_t)prim, pa, "the primary GPT", rep))
        return KDISK_EIO;
    /* The table read at open must still be there. */
    struct gpt_header now;
    if (gpt_header_parse(pa + bs, bs, d->capacity, 1, &now, why, sizeof why) ||
        now.array_crc != h->array_crc || now.alternate_lba != h->alternate_lba)
        return kdisk_fail(rep, KDISK_EREFUSED, "the primary GPT changed since it was read");
    uint8_t *array = pa + h->array_lba * bs;
    const size_t array_bytes = (size_t)h->entries * h->entry_size;
    if (crc32(array, array_bytes) != h->array_crc)
        return kdisk_fail(rep, KDISK_EREFUSED, "the primary GPT's entry array changed since it was read");
    if (index) {
        uint8_t *e = array + (size_t)(index - 1) * h->entry_size;
        uint64_t first = kdisk_le64(e + E_FIRST), old_last = kdisk_le64(e + E_LAST);
        const uint64_t ratio = d->physical_block / d->logical_block;
        if (index > h->entries || gpt_guid_is_zero((const struct gpt_guid *)(const void *)(e + E_TYPE)) ||
            new_last < old_last || new_last > last_usable || (new_last + 1) % ratio)
            return kdisk_fail(rep, KDISK_EINVAL,
                              "partition %u (LBA %llu..%llu) cannot end at LBA %llu (usable to %llu)",
                              (unsigned)index, (unsigned long long)first,
                              (unsigned long long)old_last, (unsigned long long)new_last,
                              (unsigned long long)last_usable);
        kdisk_put64(e + E_LAST, new_last);
    }
    const uint32_t array_crc = crc32(array, array_bytes);
    /* primary header */
    uint8_t *ph = pa + bs;
    kdisk_put64(ph + H_ALT_LBA, d->capacity - 1);
    kdisk_put64(ph + H_LAST_USABLE, last_usable);
    kdisk_put32(ph + H_ARRAY_CRC, array_crc);
    header_crc(ph, h->header_size);
    /* protective MBR: its size followed the old disk only when it covered
     * all of it (a hybrid MBR's record is left alone) */
    for (unsigned i = 0; i < 4; i++) {
        uint8_t *r = pa + MBR_RECORDS + i * MBR_RECORD_SIZE;
        uint64_t old_size = h->alternate_lba > 0xFFFFFFFFu ? 0xFFFFFFFFu : h->alternate_lba;
        if (r[R_TYPE] == MBR_TYPE_GPT && kdisk_le32(r + R_START) == 1 &&
            kdisk_le32(r + R_SIZE) == old_size)
            kdisk_put32(r + R_SIZE,
                        d->capacity - 1 > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)(d->capacity - 1));
    }
    /* backup copy: zeros, the array, the header on the last LBA */
    memset(ba, 0, back * bs);
    memcpy(ba + (p.backup_array - p.area_first) * bs, array, array_bytes);
    uint8_t *bh = ba + (back - 1) * bs;
    memcpy(bh, ph, bs);
    kdisk_put64(bh + H_MY_LBA, d->capacity - 1);
    kdisk_put64(bh + H_ALT_LBA, 1);
    kdisk_put64(bh + H_ARRAY_LBA, p.backup_array);
    header_crc(bh, h->header_size);
    /* The backup first and durable: until the primary is rewritten, the
     * old primary and the old backup are the table; once it is (or while
     * it is torn, which fails its CRCs), the new backup is. */
    if (kdisk_write(d, p.area_first, (uint32_t)back, ba, "the new backup GPT", rep) ||
        kdisk_flush(d, "the new backup GPT", rep) ||
        kdisk_write(d, 0, (uint32_t)prim, pa, "the primary GPT", rep))
        return KDISK_EIO;
    return kdisk_flush(d, "the GPT", rep);
}

int gpt_repair_primary(const struct kdisk *d, const struct gpt *g, struct kdisk_report *rep)
{
    const struct gpt_header *h = &g->hdr;
    const uint32_t bs = d->logical_block;
    int rc = kdisk_check(d, rep);
    if (rc)
        return rc;
    if (!g->from_backup || h->my_lba != d->capacity - 1)
        return kdisk_fail(rep, KDISK_EINVAL, "the primary GPT is in use or the backup is not at the end");
    if (!d->write || !d->flush)
        return kdisk_fail(rep, KDISK_EINVAL, "the disk is read-only");
    struct gpt_header at2 = *h;
    at2.array_lba = 2;
    const uint64_t prim = primary_area(d, &at2);
    const uint64_t ab = ((uint64_t)h->entries * h->entry_size + bs - 1) / bs;
    if (prim > h->first_usable || (prim + 1) * bs > KDISK_IO_BYTES)
        return kdisk_fail(rep, KDISK_EINVAL, "no room for the primary GPT's array before LBA %llu",
                          (unsigned long long)h->first_usable);
    uint8_t *pa = d->io, *hdr = d->io + prim * bs;
    if (kdisk_read(d, 0, (uint32_t)prim, pa, "the primary GPT", rep) ||
        kdisk_read(d, h->array_lba, (uint32_t)ab, pa + 2 * bs, "the backup GPT's array", rep) ||
        kdisk_read(d, h->my_lba, 1, hdr, "the backup GPT header", rep))
        return KDISK_EIO;
    memset(pa + 2 * bs + (size_t)h->entries * h->entry_size, 0,
           (size_t)(ab * bs - (uint64_t)h->entries * h->entry_size));
    if (crc32(pa + 2 * bs, (size_t)h->entries * h->entry_size) != h->array_crc)
        return kdisk_fail(rep, KDISK_EREFUSED, "the backup GPT's array changed since it was read");
    memcpy(pa + bs, hdr, bs);
    kdisk_put64(pa + bs + H_MY_LBA, 1);
    kdisk_put64(pa + bs + H_ALT_LBA, d->capacity - 1);
    kdisk_put64(pa + bs + H_ARRAY_LBA, 2);
    header_crc(pa + bs, h->header_size);
    unsigned used = 0;
    uint8_t *ee = NULL;
    for (unsigned i = 0; i < 4; i++) {
        uint8_t *r = pa + MBR_RECORDS + i * MBR_RECORD_SIZE;
        used += !kdisk_is_zero(r, MBR_RECORD_SIZE);
        if (r[R_TYPE] == MBR_TYPE_GPT && kdisk_le32(r + R_START) == 1)
            ee = r;
    }
    if (ee && used == 1)
        kdisk_put32(ee + R_SIZE, d->capacity - 1 > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)(d->capacity - 1));
    if (kdisk_write(d, 0, (uint32_t)prim, pa, "the primary GPT", rep))
        return KDISK_EIO;
    return kdisk_flush(d, "the primary GPT", rep);
}
