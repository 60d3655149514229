/*
 * pmm.h - the physical page frame allocator: 4 KiB frames, single or
 * physically contiguous runs (for DMA rings). Frames are returned by their
 * physical address; 0 means out of memory (frame 0 is never handed out).
 * Not for use from interrupt handlers.
 */
#ifndef TERN_MM_PMM_H
#define TERN_MM_PMM_H

#include "bootinfo.h"

#include <stddef.h>
#include <stdint.h>

#include "arch/x86_64/spinlock.h"

void pmm_init(const struct boot_info *bi);
uint64_t pmm_alloc(void);
uint64_t pmm_alloc_contig(size_t pages);
void pmm_free(uint64_t phys);
void pmm_free_contig(uint64_t phys, size_t pages);
size_t pmm_free_count(void);
size_t pmm_total_count(void);
/* Highest physical address (exclusive) of usable memory. */
uint64_t pmm_limit(void);
/* The frame allocator lock's counters (spinlock.h). */
void pmm_lock_stats(struct spin_stats *out);

#endif
