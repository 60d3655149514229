/*
 * diskspan.h - where the disk write test (diskbench.h) may write: the
 * largest span of a disk that no partition covers, from its checked GPT
 * (disk/gpt.h) and its MBR. Pure and I/O-free, unit-tested on the host.
 *
 * Conservative by design, because a mistake here destroys data:
 *   - only inside the GPT's usable range, and never within the blocks the
 *     primary or backup header and entry array occupy (even if the header
 *     claims a usable range that reaches them);
 *   - a table read from its backup copy (the primary damaged) is refused:
 *     repair it first;
 *   - every MBR record other than the protective 0xEE one (a hybrid MBR)
 *     counts as covered space too;
 *   - a partition that ends before it starts, lies outside the usable
 *     range, or overlaps another makes the whole table refused;
 *   - the span is cut to the alignment (at least the physical block, so
 *     no device read-modify-write touches a partition's block; the caller
 *     passes 1 MiB) and must hold at least min_bytes.
 * A disk without a valid GPT is refused by the caller (gpt_read failed):
 * without a table nothing says which space is free.
 */
#ifndef TERN_DIAG_DISKSPAN_H
#define TERN_DIAG_DISKSPAN_H

#include "../disk/gpt.h"

#include <stddef.h>
#include <stdint.h>

/* Inclusive logical block range. */
struct diskspan {
    uint64_t first, last;
};

enum { DISKSPAN_MBR_RECORDS = 4 };

/* The ranges of lba0's MBR records other than empty (type 0) and
 * protective (0xEE) ones, clipped to capacity; how many (0..4). lba0 is at
 * least 512 bytes; without the 0x55AA signature there are none. */
unsigned diskspan_mbr_ranges(const uint8_t *lba0, uint64_t capacity,
                             struct diskspan out[DISKSPAN_MBR_RECORDS]);

/* The largest free span of a disk of capacity blocks of logical_block
 * bytes with table g (as gpt_read gives it) and the further covered
 * ranges extra[0..n_extra) (diskspan_mbr_ranges): its first and last LBA
 * in *out, start and length multiples of align_bytes (a power of two,
 * >= logical_block), at least min_bytes long. 0, or -1 with the reason in
 * why (no room, a table refused). */
int diskspan_free(const struct gpt *g, const struct diskspan *extra, unsigned n_extra,
                  uint64_t capacity, uint32_t logical_block, uint32_t align_bytes,
                  uint64_t min_bytes, struct diskspan *out, char *why, size_t why_size);

#endif
