/*
 * payload.c - the install payload's parser and reader (payload.h,
 * docs/INSTALL.md). Pure functions over bytes: no I/O, no allocation, so the
 * kernel, the host tool and the unit tests share them.
 */
#include "payload.h"

#include "../disk/kdisk.h"
#include "../rng/sha256.h"

#include <stdio.h>
#include <string.h>

enum { MIB = 1 << 20 };

/* 1 when [off, off + len) lies inside [0, limit), without overflow. */
static int inside(uint64_t off, uint64_t len, uint64_t limit)
{
    return off <= limit && len <= limit - off;
}

const char *payload_kind_name(uint32_t kind)
{
    switch (kind) {
    case PAYLOAD_MBR_CODE:
        return "MBR boot code";
    case PAYLOAD_BIOS_BOOT:
        return "BIOS boot partition";
    case PAYLOAD_ESP:
        return "EFI system partition";
    default:
        return "unknown part";
    }
}

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(err, n, __VA_ARGS__);                                                             \
        return -1;                                                                                 \
    } while (0)

/* Where each kind must go and how big it may be, from the header's
 * partition sizes (klayout_partition's rule: BIOS boot at 1 MiB, the ESP
 * right after it). */
static int check_place(const struct payload *pl, const struct payload_part *pp, char *err,
                       size_t n)
{
    uint64_t where = 0, room = 0;
    switch (pp->kind) {
    case PAYLOAD_MBR_CODE:
        where = 0;
        room = PAYLOAD_MBR_CODE_BYTES;
        if (pp->size != PAYLOAD_MBR_CODE_BYTES)
            FAIL("MBR boot code of %llu bytes, not %u", (unsigned long long)pp->size,
                 (unsigned)PAYLOAD_MBR_CODE_BYTES);
        break;
    case PAYLOAD_BIOS_BOOT:
        where = MIB;
        room = pl->bios_bytes;
        break;
    case PAYLOAD_ESP:
        where = MIB + pl->bios_bytes;
        room = pl->esp_bytes;
        break;
    default:
        FAIL("part of unknown kind %u", (unsigned)pp->kind);
    }
    if (pp->disk_offset != where)
        FAIL("%s at byte %llu of the disk, not %llu", payload_kind_name(pp->kind),
             (unsigned long long)pp->disk_offset, (unsigned long long)where);
    if (pp->size == 0 || pp->size > room)
        FAIL("%s of %llu bytes does not fit its %llu", payload_kind_name(pp->kind),
             (unsigned long long)pp->size, (unsigned long long)room);
    if (pp->kind != PAYLOAD_MBR_CODE && pp->size % PAYLOAD_SECTOR)
        FAIL("%s of %llu bytes is not whole sectors", payload_kind_name(pp->kind),
             (unsigned long long)pp->size);
    return 0;
}

static int parse_extents(const struct payload *pl, const struct payload_part *pp, char *err,
                         size_t n)
{
    const char *what = payload_kind_name(pp->kind);
    if (pp->extent_count > PAYLOAD_MAX_EXTENTS)
        FAIL("%s: %u extents (at most %u)", what, (unsigned)pp->extent_count,
             (unsigned)PAYLOAD_MAX_EXTENTS);
    if (!inside(pp->extents, (uint64_t)pp->extent_count * PAYLOAD_EXTENT_BYTES, pl->len))
        FAIL("%s: extent table outside the payload", what);
    uint64_t end = 0;
    for (uint32_t i = 0; i < pp->extent_count; i++) {
        const uint8_t *e = pl->base + pp->extents + (uint64_t)i * PAYLOAD_EXTENT_BYTES;
        uint64_t off = kdisk_le64(e), len = kdisk_le64(e + 8), data = kdisk_le64(e + 16);
        if (len == 0)
            FAIL("%s: extent %u is empty", what, (unsigned)i);
        if (off < end)
            FAIL("%s: extent %u overlaps or precedes the one before", what, (unsigned)i);
        if (!inside(off, len, pp->size))
            FAIL("%s: extent %u runs past the part's %llu bytes", what, (unsigned)i,
                 (unsigned long long)pp->size);
        if (!inside(data, len, pl->len))
            FAIL("%s: extent %u's bytes lie outside the payload", what, (unsigned)i);
        end = off + len;
    }
    return 0;
}

int payload_parse(const uint8_t *p, uint64_t len, struct payload *out, char *err, size_t n)
{
    memset(out, 0, sizeof *out);
    if (len < PAYLOAD_HEADER_BYTES)
        FAIL("%llu bytes: shorter than the header", (unsigned long long)len);
    if (memcmp(p, PAYLOAD_MAGIC, 8))
        FAIL("not an install payload (bad magic)");
    uint32_t version = kdisk_le32(p + 8);
    if (version != PAYLOAD_VERSION)
        FAIL("format version %u, this release reads %u", (unsigned)version,
             (unsigned)PAYLOAD_VERSION);
    if (kdisk_le32(p + 12) != PAYLOAD_HEADER_BYTES)
        FAIL("header of %u bytes, not %u", (unsigned)kdisk_le32(p + 12),
             (unsigned)PAYLOAD_HEADER_BYTES);
    if (kdisk_le64(p + 40) != len)
        FAIL("%llu bytes, the header says %llu (cut short or padded)", (unsigned long long)len,
             (unsigned long long)kdisk_le64(p + 40));
    out->base = p;
    out->len = len;
    out->part_count = kdisk_le32(p + 16);
    out->bios_bytes = kdisk_le64(p + 24);
    out->esp_bytes = kdisk_le64(p + 32);
    if (out->part_count != PAYLOAD_MAX_PARTS)
        FAIL("%u parts, not %u", out->part_count, (unsigned)PAYLOAD_MAX_PARTS);
    if (!out->bios_bytes || out->bios_bytes % MIB || !out->esp_bytes || out->esp_bytes % MIB ||
        out->bios_bytes > 64ull * MIB || out->esp_bytes > 4096ull * MIB)
        FAIL("partition sizes %llu and %llu bytes: not whole MiB in range",
             (unsigned long long)out->bios_bytes, (unsigned long long)out->esp_bytes);
    if (!inside(PAYLOAD_HEADER_BYTES, (uint64_t)out->part_count * PAYLOAD_PART_BYTES, len))
        FAIL("part table outside the payload");
    unsigned seen = 0;
    for (unsigned i = 0; i < out->part_count; i++) {
        const uint8_t *e = p + PAYLOAD_HEADER_BYTES + i * PAYLOAD_PART_BYTES;
        struct payload_part *pp = &out->parts[i];
        pp->kind = kdisk_le32(e);
        pp->extent_count = kdisk_le32(e + 4);
        pp->size = kdisk_le64(e + 8);
        pp->disk_offset = kdisk_le64(e + 16);
        pp->extents = kdisk_le64(e + 24);
        memcpy(pp->sha256, e + 32, 32);
        if (pp->kind < PAYLOAD_MBR_CODE || pp->kind > PAYLOAD_ESP)
            FAIL("part %u of unknown kind %u", i, (unsigned)pp->kind);
        if (seen & 1u << pp->kind)
            FAIL("two parts of kind %s", payload_kind_name(pp->kind));
        seen |= 1u << pp->kind;
        if (check_place(out, pp, err, n) || parse_extents(out, pp, err, n))
            return -1;
    }
    /* The header's digest: the header with the digest field zero, the part
     * table, then each part's extent table in part order. */
    struct sha256 c;
    uint8_t hdr[PAYLOAD_HEADER_BYTES], got[SHA256_BYTES];
    memcpy(hdr, p, sizeof hdr);
    memset(hdr + 48, 0, 32);
    sha256_init(&c);
    sha256_update(&c, hdr, sizeof hdr);
    sha256_update(&c, p + PAYLOAD_HEADER_BYTES, (size_t)out->part_count * PAYLOAD_PART_BYTES);
    for (unsigned i = 0; i < out->part_count; i++)
        sha256_update(&c, p + out->parts[i].extents,
                      (size_t)out->parts[i].extent_count * PAYLOAD_EXTENT_BYTES);
    sha256_final(&c, got);
    if (memcmp(got, p + 48, 32))
        FAIL("header digest mismatch (a damaged payload)");
    return 0;
}

const struct payload_part *payload_part(const struct payload *pl, uint32_t kind)
{
    for (unsigned i = 0; i < pl->part_count; i++)
        if (pl->parts[i].kind == kind)
            return &pl->parts[i];
    return NULL;
}

void payload_read(const struct payload *pl, const struct payload_part *part, uint64_t offset,
                  uint8_t *buf, size_t len)
{
    memset(buf, 0, len);
    uint64_t end = offset + len;
    for (uint32_t i = 0; i < part->extent_count; i++) {
        const uint8_t *e = pl->base + part->extents + (uint64_t)i * PAYLOAD_EXTENT_BYTES;
        uint64_t eo = kdisk_le64(e), el = kdisk_le64(e + 8), ed = kdisk_le64(e + 16);
        if (eo >= end)
            break; /* extents are in order */
        if (eo + el <= offset)
            continue;
        uint64_t from = eo > offset ? eo : offset;
        uint64_t to = eo + el < end ? eo + el : end;
        memcpy(buf + (from - offset), pl->base + ed + (from - eo), (size_t)(to - from));
    }
}

int payload_check_parts(const struct payload *pl, uint8_t *buf, size_t bufsize, char *err,
                        size_t n)
{
    for (unsigned i = 0; i < pl->part_count; i++) {
        const struct payload_part *pp = &pl->parts[i];
        struct sha256 c;
        uint8_t got[SHA256_BYTES];
        sha256_init(&c);
        for (uint64_t off = 0; off < pp->size; off += bufsize) {
            size_t chunk = pp->size - off < bufsize ? (size_t)(pp->size - off) : bufsize;
            payload_read(pl, pp, off, buf, chunk);
            sha256_update(&c, buf, chunk);
        }
        sha256_final(&c, got);
        if (memcmp(got, pp->sha256, SHA256_BYTES))
            FAIL("%s: SHA-256 mismatch (a damaged payload)", payload_kind_name(pp->kind));
    }
    return 0;
}
