/*
 * super.h - layout v3 inside the tern data partition (SPEC D2; v2 plus page
 * checksums inside the database files): an A/B pair of superblocks, each
 * holding a region table, and the regions they describe (database, WAL, two database backups, telemetry journal).
 * Portable and I/O-free apart from struct kdisk; the parsers are pure and
 * fuzzed (fuzz_disk). docs/DISK.md has the format byte by byte.
 *
 * Reading: the valid superblock with the highest generation wins; when the
 * other slot is unusable the report says so. Refused, with the reason and
 * nothing written: a newer layout version, data that is not tern's at the
 * partition's start (foreign), no usable superblock. A partition whose
 * first MiB is all zero is blank (KDISK_EBLANK): the caller formats it.
 * Updating writes the older slot with generation + 1, then flushes, so a
 * write torn by a power cut leaves the other slot valid.
 */
#ifndef TERN_DISK_SUPER_H
#define TERN_DISK_SUPER_H

#include "kdisk.h"

#include <stddef.h>
#include <stdint.h>

#define KSUPER_MAGIC "tern-sb" /* 8 bytes with its NUL */

enum {
    KSUPER_VERSION = 3,                 /* the layout version this release reads and writes:
                                         * v3 = v2's superblock and regions, the database
                                         * and backup files' pages carrying checksums
                                         * (docs/DISK.md); v2 is refused as older */
    KSUPER_MAGIC_LEN = 8,
    KSUPER_BYTES = 512,                 /* a v2/v3 superblock; its CRC covers all of it */
    KSUPER_READ_BYTES = 4096,           /* read from each slot: any size a later version may declare */
    KSUPER_SLOT_A = 0,                  /* slot offsets from the partition's start, bytes */
    KSUPER_SLOT_B = 512 * 1024,
    KSUPER_AREA = 1024 * 1024,          /* the superblocks' share of the partition's start */
    KSUPER_BLANK_SCAN = 1024 * 1024,    /* bytes that must read as zero for "blank" */
    KSUPER_MAX_REGIONS = 12,
    KSUPER_ALIGN_MIN = 1024 * 1024,     /* regions start and end on this (or the optimal I/O size) */
    KSUPER_ALIGN_MAX = 16 * 1024 * 1024,
};

/* Region kinds, as stored in the region table. */
enum kdisk_region_kind {
    KDISK_REGION_DB = 1,         /* the SQLite database */
    KDISK_REGION_WAL = 2,        /* its write-ahead log (or rollback journal) */
    KDISK_REGION_BACKUP_A = 3,   /* database backups, written alternately */
    KDISK_REGION_BACKUP_B = 4,
    KDISK_REGION_TELEMETRY = 5,  /* the telemetry journal (issue 14) */
    KDISK_REGION_KINDS = 5,      /* kinds 1..KDISK_REGION_KINDS must all be present */
};

/* The sizing rule (ksuper_plan), in bytes; docs/DISK.md explains it. */
#define KSUPER_TELEMETRY_MIN (UINT64_C(1) << 20)
#define KSUPER_TELEMETRY_MAX (UINT64_C(256) << 20)
#define KSUPER_WAL_MIN (UINT64_C(8) << 20)
#define KSUPER_WAL_MAX (UINT64_C(256) << 20)
#define KSUPER_DB_MIN (UINT64_C(4) << 20)

struct ksuper_region {
    uint32_t kind;                      /* enum kdisk_region_kind, or a later kind */
    uint32_t flags;                     /* 0 in v2 and v3 */
    uint64_t offset, length;            /* bytes from the partition's start */
};

/* A decoded superblock. */
struct ksuper {
    uint32_t version;
    uint64_t generation;                /* >= 1; the higher of two valid slots wins */
    uint8_t volume_id[16];              /* random at format, never changed */
    uint32_t logical_block, physical_block; /* the device's, at format */
    uint32_t align;                     /* bytes the regions were aligned to */
    uint64_t partition_bytes;           /* the partition's size the layout was made for */
    unsigned region_count;
    struct ksuper_region regions[KSUPER_MAX_REGIONS];
};

/* The partition as found on the disk now. */
struct ksuper_geom {
    uint64_t start;                     /* bytes from the disk's start */
    uint64_t bytes;                     /* the partition's size */
    uint32_t logical_block, physical_block, optimal_io;
};

/* What one slot holds. */
enum ksuper_slot_state {
    KSUPER_VALID = 0,
    KSUPER_BLANK,       /* all zero */
    KSUPER_FOREIGN,     /* non-zero, not tern's magic */
    KSUPER_CORRUPT,     /* tern's magic, but a bad CRC or field */
    KSUPER_NEWER,       /* a later layout version (CRC good) */
    KSUPER_OLDER,       /* an earlier layout version (CRC good) */
};

/* The slot (0 = A, 1 = B) a superblock was read from or written to. */
struct ksuper_state {
    struct ksuper sb;
    unsigned slot;
};

/* "database", "WAL", ... or "kind N". */
const char *ksuper_kind_name(uint32_t kind);

/* Decode one slot's bytes (len >= KSUPER_BYTES; up to KSUPER_READ_BYTES
 * are looked at). Returns a slot state; why says why for anything but
 * KSUPER_VALID and KSUPER_BLANK. A VALID superblock has passed every check
 * that needs no knowledge of the partition (docs/DISK.md). */
enum ksuper_slot_state ksuper_decode(const uint8_t *buf, size_t len, struct ksuper *out, char *why,
                                     size_t why_size);

/* Encode sb (its version must be KSUPER_VERSION) into KSUPER_BYTES bytes. */
void ksuper_encode(const struct ksuper *sb, uint8_t out[KSUPER_BYTES]);

/* Does a decoded superblock fit the partition as found (not shrunk, every
 * region on the device's physical blocks)? 0, or -1 with why. */
int ksuper_check(const struct ksuper *sb, const struct ksuper_geom *g, char *why, size_t why_size);

/* The region table a fresh format gives g (generation 0: format sets it),
 * by the sizing rule. 0, or -1 with why (the partition is too small). */
int ksuper_plan(const struct ksuper_geom *g, const uint8_t volume_id[16], struct ksuper *out,
                char *why, size_t why_size);

/*
 * Growth: the region table for cur's partition grown to g (g->bytes >=
 * cur->partition_bytes; same start). The database keeps its start and
 * grows over the space its backups held and into the added space; the
 * backups move behind it; every other region (WAL, telemetry, later
 * kinds) keeps its place and size. The database and each backup get a
 * third of the space from the database's start to the partition's last
 * aligned point (the sizing rule with WAL and telemetry as they are),
 * rounded down to align. 0: next filled (generation as cur's; the caller
 * updates); 1: nothing grows (the database would not gain an align); -1
 * with why: the table does not allow it (a region other than the backups
 * lies past the database, the backups lie before it).
 */
int ksuper_grow_plan(const struct ksuper *cur, const struct ksuper_geom *g, struct ksuper *next,
                     char *why, size_t why_size);

/* Read both slots and decide. KDISK_OK (out is the winner; notes say what
 * was wrong with the other slot), KDISK_EBLANK, KDISK_EREFUSED, KDISK_EIO. */
int ksuper_read(const struct kdisk *d, const struct ksuper_geom *g, struct ksuper_state *out,
                struct kdisk_report *rep);

/* Format a partition ksuper_read found blank: zero the first KDISK_IO_BYTES
 * of every region, write slot A (generation 1), flush, slot B (generation
 * 2), flush. KDISK_OK, KDISK_EINVAL (too small, misaligned), KDISK_EIO. */
int ksuper_format(const struct kdisk *d, const struct ksuper_geom *g, const uint8_t volume_id[16],
                  struct ksuper_state *out, struct kdisk_report *rep);

/* Write next (its generation is set to cur's + 1) into the slot cur was
 * not read from, and flush; cur then describes it. KDISK_OK, KDISK_EINVAL
 * (next does not pass the checks a reader would make), KDISK_EIO (cur
 * unchanged: the old slot is still valid). */
int ksuper_update(const struct kdisk *d, const struct ksuper_geom *g, struct ksuper_state *cur,
                  const struct ksuper *next, struct kdisk_report *rep);

#endif
