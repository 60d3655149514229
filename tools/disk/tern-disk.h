/*
 * tern-disk.h - what the parts of the offline disk tool (SPEC F2,
 * tools/disk/tern-disk*.c) share; not for anyone else. The tool reads a
 * whole disk image, a block device or an image of tern's data partition
 * alone, and shows or checks every layer: GPT, superblocks, regions, their
 * kvfs headers, the database and its backups (through the kernel's own
 * VFS), the telemetry region. docs/DISK.md, "tern-disk", is its manual.
 *
 *   tern-disk-detect.c  pure: what an image is (whole disk or partition),
 *                       and the region header copies' verdicts (fuzzed)
 *   tern-disk-dev.c     the image as a struct kdisk and as a blk_dev for
 *                       kvfs; reads never change the image (writes land
 *                       in memory)
 *   tern-disk-layout.c  GPT copies, partitions, superblock slots, regions
 *   tern-disk-db.c      the database and backups through kvfs and SQLite
 *   tern-disk-tele.c    the telemetry journal through disk/tele.c
 *   tern-disk.c         the command line
 */
#ifndef TERN_TOOLS_TERN_DISK_H
#define TERN_TOOLS_TERN_DISK_H

#include "platform/kernel/dev/blk.h"
#include "platform/kernel/disk/layout.h"
#include "platform/kernel/store/region.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes (docs/DISK.md lists them). */
enum {
    TDISK_EXIT_OK = 0,       /* read, and (verify) no problem found */
    TDISK_EXIT_CORRUPT = 1,  /* verify found at least one problem */
    TDISK_EXIT_USAGE = 2,    /* bad command line */
    TDISK_EXIT_IO = 3,       /* the image cannot be opened or read */
};

/* ---- detection (tern-disk-detect.c: pure, fuzzed) ------------------------ */

enum tdisk_kind {
    TDISK_BLANK = 0,         /* all zero where a GPT or superblock would be */
    TDISK_WHOLE_DISK,        /* a protective MBR or a GPT header */
    TDISK_PARTITION,         /* tern's superblock at byte 0 or in slot B */
    TDISK_UNKNOWN,           /* anything else */
};

enum {
    TDISK_HEAD_BYTES = 8192, /* the image's first bytes detection looks at */
    TDISK_TAIL_BYTES = 4096, /* its last bytes (a backup GPT header) */
};

/* What the image's bytes say it is. head: its first bytes (up to
 * TDISK_HEAD_BYTES); slot_b: the bytes at KSUPER_SLOT_B (8 or more, or
 * NULL/0 when the image is shorter); tail: its last TDISK_TAIL_BYTES or
 * fewer. *logical_block: the block size a GPT was found with (512 or 4096;
 * 512 when nothing says). */
enum tdisk_kind tdisk_detect(const uint8_t *head, size_t head_len, const uint8_t *slot_b,
                             size_t slot_b_len, const uint8_t *tail, size_t tail_len,
                             uint32_t *logical_block);
const char *tdisk_kind_text(enum tdisk_kind k);

/* One region's two kvfs header copies (docs/DISK.md, "Inside the
 * regions"), judged as kvfs_io_load judges them. */
struct tdisk_rgn_view {
    int copy_rc[RGN_HDR_COPIES];        /* rgn_parse results */
    uint64_t copy_seq[RGN_HDR_COPIES];  /* valid copies only */
    int pick_rc;                          /* RGN_OK: state below is the region's */
    unsigned slot;                        /* the copy in use */
    uint32_t owner;
    uint64_t seq, size, capacity;
};

/* The kvfs role (region.h's rgn_role) of a region kind; 0 for kinds kvfs
 * does not hold (telemetry, later kinds). */
uint32_t tdisk_rgn_role(uint32_t kind);

/* Judge the copies c0 and c1 (each pb bytes: the region's first two
 * physical blocks) of a region {lba, blocks} of kind on a disk of
 * logical-block lb. 0, or -1 when the region is too small to hold them. */
int tdisk_rgn_examine(const uint8_t *c0, const uint8_t *c1, uint32_t lb, uint32_t pb,
                      uint32_t kind, uint64_t lba, uint64_t blocks, struct tdisk_rgn_view *out);

/* A region's kvfs header names the region's absolute LBA on the disk it
 * was written on. For a partition image, copy (len bytes, one header copy
 * of a region of kind that starts rel_lba blocks into the image) gives the
 * LBA the partition started at there: 0 and *base, or -1 when the copy
 * has no intact header of that kind's role. */
int tdisk_partition_base(const uint8_t *copy, size_t len, uint32_t kind, uint64_t rel_lba,
                         uint64_t *base);

/* ---- the image (tern-disk-dev.c) ----------------------------------------- */

struct tdisk_image;

/* Open path (read-only unless writable); detect it unless force_lb is
 * nonzero (then a whole disk of that logical block size). NULL with one
 * line in err. */
struct tdisk_image *tdisk_image_open(const char *path, uint32_t force_lb, bool writable,
                                     char *err, size_t err_size);
void tdisk_image_close(struct tdisk_image *im);
enum tdisk_kind tdisk_image_kind(const struct tdisk_image *im);
const char *tdisk_image_path(const struct tdisk_image *im);
/* The image as the layout code reads it (capacity, logical block). */
const struct kdisk *tdisk_image_kdisk(struct tdisk_image *im);
/* The image as a block device for kvfs, with the physical block the
 * store's regions were laid out with (the superblock's). Unless the image
 * was opened writable, writes go to memory, never to the image; reads see
 * them. */
struct blk_dev *tdisk_image_blk(struct tdisk_image *im, uint32_t physical_block);
/* Present the image as starting at block base of a larger disk (a
 * partition image, so that region headers naming absolute LBAs match);
 * blocks below base read as an error. */
void tdisk_image_set_base(struct tdisk_image *im, uint64_t base);
/* One request on any blk_dev, polled to completion: its blk status. */
int tdisk_blk_sync(struct blk_dev *d, enum blk_op op, uint64_t lba, uint32_t count, void *buf);
/* kd as a kdisk over d (reads, writes and flushes through tdisk_blk_sync;
 * io: KDISK_IO_BYTES, 512-aligned). */
void tdisk_blk_kdisk(struct kdisk *kd, struct blk_dev *d, uint8_t *io);
/* 1 when the image is a block device (not a file). */
int tdisk_image_is_blockdev(const struct tdisk_image *im);

/* ---- output -------------------------------------------------------------- */

/* Where findings go: inspect prints everything, verify only problems and
 * the summary; both count the problems. */
struct tdisk_out {
    FILE *f;
    bool verbose;
    unsigned problems;       /* inconsistencies: verify fails */
    unsigned io_errors;      /* reads that failed: exit TDISK_EXIT_IO */
};

void tdisk_info(struct tdisk_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A note verify prints too, but that is no problem (a state a power cut
 * legitimately leaves, which the next write repairs). */
void tdisk_note(struct tdisk_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tdisk_problem(struct tdisk_out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void tdisk_io_error(struct tdisk_out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- the layers ---------------------------------------------------------- */

/* The partition as tern-disk-layout.c found it, for the database layer. */
struct tdisk_layout {
    bool usable;                          /* a superblock in use: regions below */
    struct ksuper sb;
    uint64_t part_lba;                    /* the partition's first block */
    unsigned region_count;
    struct kdisk_region regions[KSUPER_MAX_REGIONS];
    struct tdisk_rgn_view views[KSUPER_MAX_REGIONS];
    bool view_ok[KSUPER_MAX_REGIONS];
};

/* GPT, partitions, superblocks, regions and their headers. */
void tdisk_walk_layout(struct tdisk_image *im, struct tdisk_out *o, struct tdisk_layout *out);
/* Database and backups (needs out->usable). */
void tdisk_walk_db(struct tdisk_image *im, struct tdisk_out *o, const struct tdisk_layout *l);
/* The telemetry region. */
void tdisk_walk_telemetry(struct tdisk_image *im, struct tdisk_out *o,
                          const struct tdisk_layout *l);

#endif
