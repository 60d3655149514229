/*
 * region.h - the header that turns a raw disk region into a file for the
 * SQLite VFS (kvfs.c): its logical size, which file name owns it, and
 * whether its content is complete. Pure functions over byte buffers, so
 * the unit tests and a fuzz target can call them; docs/DISK.md, "Inside
 * the regions", is the byte-by-byte description.
 *
 * Two copies at the region's start, each in a physical block of its own;
 * a write goes to the copy the previous write did not use, and copies are
 * only written between device flushes, so a torn header write can damage
 * at most the copy being written: the other still names the state of the
 * last completed flush.
 */
#ifndef TERN_KSTORE_REGION_H
#define TERN_KSTORE_REGION_H

#include <stddef.h>
#include <stdint.h>

enum {
    RGN_HDR_BYTES = 64,   /* encoded header; the rest of its block is zero */
    RGN_HDR_COPIES = 2,
    RGN_VERSION = 1,
};

/* What a region is for (its kind in the region table). */
enum rgn_role {
    RGN_ROLE_DB = 1,      /* the database */
    RGN_ROLE_LOG = 2,     /* its WAL, or its rollback journal */
    RGN_ROLE_BACKUP = 3,  /* one backup copy */
};

/* Which file name currently holds the region's content. */
enum rgn_owner {
    RGN_OWNER_NONE = 0,   /* empty */
    RGN_OWNER_MAIN = 1,   /* the database or backup file itself */
    RGN_OWNER_WAL = 2,    /* "<db>-wal" */
    RGN_OWNER_JOURNAL = 3 /* "<db>-journal" */
};

struct rgn_hdr {
    uint32_t role;        /* enum rgn_role */
    uint32_t owner;       /* enum rgn_owner */
    uint32_t flags;       /* none defined yet: 0 */
    uint64_t seq;         /* incremented by every header write */
    uint64_t size;        /* logical file size, bytes */
    uint64_t lba;         /* the region it describes: a header found */
    uint64_t blocks;      /*   elsewhere is foreign */
};

/* Results of parsing one copy. */
enum rgn_parse {
    RGN_OK = 0,
    RGN_BLANK = -1,       /* no magic: never written by tern */
    RGN_TORN = -2,        /* magic, but the checksum fails */
    RGN_NEWER = -3,       /* a format version this release does not know */
    RGN_FOREIGN = -4,     /* valid, but for another region or role */
    RGN_BAD = -5,         /* valid checksum, impossible fields */
};

void rgn_hdr_encode(const struct rgn_hdr *h, uint8_t out[RGN_HDR_BYTES]);

/* Parse one copy, checking it belongs to region {lba, blocks} of role
 * whose data area holds capacity bytes. A copy naming RGN_ROLE_DB where
 * RGN_ROLE_BACKUP is asked for, or the reverse, belongs too (a migration
 * swaps those regions; out->role says which the copy names). A copy naming
 * the same start but fewer blocks is this region before the layout grew it
 * (disk/grow.h): accepted; more blocks or another start is RGN_FOREIGN. */
int rgn_hdr_parse(const uint8_t *buf, size_t len, uint32_t role, uint64_t lba,
                  uint64_t blocks, uint64_t capacity, struct rgn_hdr *out);

/*
 * The region's state from both copies' parse results: the valid copy with
 * the higher seq. Both blank, or one blank and one torn (the first header
 * write ever was cut), is an empty region: *out zeroed with role, lba and
 * blocks filled in, and *slot 1 so that the next write goes to copy 0.
 * Returns RGN_OK, or the worse copy's error when neither is usable
 * (RGN_NEWER before RGN_FOREIGN before RGN_BAD before RGN_TORN). *slot is
 * the copy out came from.
 */
int rgn_hdr_pick(const struct rgn_hdr h[RGN_HDR_COPIES], const int rc[RGN_HDR_COPIES],
                 uint32_t role, uint64_t lba, uint64_t blocks, struct rgn_hdr *out,
                 unsigned *slot);

/* Short text of a parse result. */
const char *rgn_parse_text(int rc);

#endif
