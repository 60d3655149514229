/*
 * mem_disk.h - a struct kdisk in memory for the layout tests
 * (test_kgpt.c, test_ksuper.c, test_klayout.c): counts its calls, fails a
 * chosen read or write, and can cut the power in the middle of a write
 * (only its first tear_bytes reach the medium, then every later write and
 * flush fails), so torn superblock updates can be replayed exactly.
 */
#ifndef TERN_TEST_MEM_DISK_H
#define TERN_TEST_MEM_DISK_H

#include "platform/kernel/disk/kdisk.h"

#include <stddef.h>
#include <stdint.h>

struct mem_disk {
    struct kdisk disk;
    uint8_t *data;              /* capacity * logical_block bytes */
    size_t bytes;
    unsigned reads, writes, flushes;
    uint64_t fail_read_lba;     /* a read touching it fails (UINT64_MAX: none) */
    int fail_write;             /* the write with this number (1-based) fails; 0: none */
    int tear_write;             /* the write with this number is torn; 0: none */
    size_t tear_bytes;          /* how much of it reaches the medium */
    int dead;                   /* power is off: writes and flushes fail */
    int track_unflushed;        /* keep an undo record of unflushed writes */
    unsigned unflushed;         /* writes since the last successful flush */
    struct mem_disk_undo *undo; /* their undo records, oldest first */
    uint8_t *dirty;             /* per 64 KiB of the disk: written since mem_disk_restore */
};

enum { MEM_DISK_UNDO_MAX = 64 };

/* 0, or -1 when out of memory. The disk starts all zero. */
int mem_disk_init(struct mem_disk *m, uint32_t logical, uint32_t physical, uint64_t capacity);
void mem_disk_free(struct mem_disk *m);
/* The disk loses its write call (and flush), as a read-only device. */
void mem_disk_read_only(struct mem_disk *m);
/* The disk grows to capacity blocks (zeros added at the end). 0 or -1. */
int mem_disk_grow(struct mem_disk *m, uint64_t capacity);
/* A power cut's loss: of the writes since the last flush, keep those
 * whose bit (1 << i, i counted from the oldest) is set in keep, undo the
 * rest; then power comes back (no failures armed, nothing unflushed). */
void mem_disk_lose_unflushed(struct mem_disk *m, uint64_t keep);

/* Put back the bytes of image (a copy of the whole disk) wherever the
 * disk was written since the last call (the first call copies it all). */
void mem_disk_restore(struct mem_disk *m, const uint8_t *image);

/* Bytes at byte offset off. */
uint8_t *mem_disk_at(struct mem_disk *m, uint64_t off);

#endif
