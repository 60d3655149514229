/*
 * grow.h - growing tern's disk layout in place when the disk (or the data
 * partition) became larger (issue 14, D3): at boot after klayout_open, and
 * live when the device reports a new capacity. Portable and I/O-free
 * apart from struct kdisk, like the rest of disk/.
 *
 * Three steps, each leaving a disk that opens as the old or the new state
 * after a power cut at any write (tests/unit/test_kgrow.c cuts at every
 * one): the GPT (gpt_grow: backup copy to the new end first, then the
 * primary), the backups emptied and their new places' headers zeroed, and
 * last the superblock update (ksuper_update into the other slot) that
 * switches to the grown region table. docs/DISK.md, "Growing".
 */
#ifndef TERN_DISK_GROW_H
#define TERN_DISK_GROW_H

#include "layout.h"

#include <stdint.h>

/* What a growth did. */
struct kgrow {
    int gpt_moved;         /* the backup GPT moved to the disk's new end */
    int part_grown;        /* the tern data partition grew */
    int layout_grown;      /* the superblock switched to a grown region table */
    uint64_t old_part_bytes, part_bytes;
    uint64_t old_db_bytes, db_bytes;
};

/*
 * Grow l (opened by klayout_open on d; d->capacity is the device's now)
 * as far as the disk allows: the GPT to the disk's end, the data
 * partition to the last whole MiB when no partition follows it (one that
 * does keeps its place, and the partition its size: a note says so), the
 * region table by ksuper_grow_plan. l is updated to what is on the disk.
 * Nothing to grow: KDISK_OK with out all zero but the sizes. Why a step
 * could not run goes into a note (the rest still runs). KDISK_OK,
 * KDISK_EIO (l describes what is on the disk as far as it is known: the
 * caller should reopen at the next boot), KDISK_EREFUSED.
 */
int klayout_grow(const struct kdisk *d, struct klayout *l, struct kgrow *out,
                 struct kdisk_report *rep);

#endif
