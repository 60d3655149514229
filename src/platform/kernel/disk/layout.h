/*
 * layout.h - the glue of layout v3 (SPEC D2): given a disk, find tern's
 * data partition in the GPT (exactly one), read its superblocks (or format
 * it when blank and allowed), and hand out the regions as absolute LBA
 * extents for the store's VFS and the telemetry journal. Portable and
 * I/O-free apart from struct kdisk; the kernel adapter over blk.h is
 * blkdisk.h. docs/DISK.md describes the format and every refusal.
 */
#ifndef TERN_DISK_LAYOUT_H
#define TERN_DISK_LAYOUT_H

#include "gpt.h"
#include "kdisk.h"
#include "super.h"

#include <stdint.h>

/* One region of the data partition, in the disk's logical blocks. */
struct kdisk_region {
    uint32_t kind;    /* enum kdisk_region_kind */
    uint64_t lba;     /* first block, from the disk's start */
    uint64_t blocks;
};

enum klayout_flags {
    KLAYOUT_FORMAT = 1,   /* format a blank partition (else KDISK_EBLANK) */
};

struct klayout {
    struct gpt gpt;                       /* the table the partition came from */
    struct gpt_part part;                 /* tern's data partition */
    struct ksuper_geom geom;
    struct ksuper_state super;            /* the superblock in use */
    int formatted;                        /* 1 when this open formatted it */
    unsigned region_count;
    struct kdisk_region regions[KSUPER_MAX_REGIONS];
};

/* Open d's layout. KDISK_OK: out holds the partition and its regions, and
 * rep's notes say what must be shown (a GPT or superblock copy skipped, a
 * fresh format). KDISK_EBLANK (blank, flags lack KLAYOUT_FORMAT),
 * KDISK_EREFUSED (no usable GPT, no or several tern partitions, newer
 * layout, foreign data, no usable superblock: nothing was written),
 * KDISK_EINVAL (a blank partition too small to format), KDISK_EIO.
 * volume_id: 16 random bytes, used only when formatting. */
int klayout_open(const struct kdisk *d, unsigned flags, const uint8_t volume_id[16],
                 struct klayout *out, struct kdisk_report *rep);

/* l->regions from l->super and l->part (after an open or a growth). */
void klayout_set_regions(struct klayout *l, uint32_t logical_block);

/* 1 when p is of tern's data partition type (TERN_DATA_TYPE_GUID). */
int klayout_part_is_tern(const struct gpt_part *p);

/* The region of kind, or NULL. */
const struct kdisk_region *klayout_region(const struct klayout *l, uint32_t kind);

/* Partition a blank disk for tern (the image tool, tests, later the
 * installer): a GPT with, from 1 MiB on, a BIOS boot partition of
 * bios_bytes (GRUB's core.img for BIOS boots; rounded up to 1 MiB, 0 for
 * none), an EFI System Partition of esp_bytes (likewise), and tern's data
 * partition from the next MiB to the last whole MiB before the backup GPT.
 * All are 1 MiB-aligned. random: 64 bytes for the disk's and partitions'
 * GUIDs.
 * The data partition is not formatted: its first MiB is zeroed, so the
 * kernel finds it blank and formats it. KDISK_OK, KDISK_EINVAL, KDISK_EIO. */
int klayout_partition(const struct kdisk *d, uint64_t bios_bytes, uint64_t esp_bytes,
                      const uint8_t random[64], struct kdisk_report *rep);

#endif
