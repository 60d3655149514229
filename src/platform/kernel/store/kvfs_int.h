/*
 * kvfs_int.h - what kvfs.c (the SQLite side) and kvfs_io.c (the disk side)
 * share; not for anyone else.
 */
#ifndef TERN_KSTORE_KVFS_INT_H
#define TERN_KSTORE_KVFS_INT_H

#include "kvfs.h"
#include "region.h"

#include <sqlite3.h>
#include <stdbool.h>

enum {
    KVFS_BUF_BYTES = 64 * 1024,   /* write run and read buffer, each */
    KVFS_RAM_MAX = 256 * 1024,    /* a backup's rollback journal in memory */
    KVFS_NAME_MAX = 31,
    KVFS_PATH_MAX = 255,
};

/* One region as a file. */
struct kvfs_rgn {
    uint32_t role;          /* enum rgn_role */
    uint64_t lba, blocks;   /* the whole region, logical blocks */
    uint64_t data_lba;      /* first data block, after the header copies */
    uint64_t capacity;      /* data bytes */
    struct rgn_hdr hdr;     /* what the newest header copy on disk says */
    unsigned slot;          /* which copy that is */
    uint64_t size;          /* logical size now */
    uint32_t owner;         /* enum rgn_owner now */
};

/* A file kept in memory (a backup's rollback journal). */
struct kvfs_ram {
    uint8_t *data;
    size_t size, cap;
};

struct kvfs {
    sqlite3_vfs vfs;        /* registered; pAppData points back here */
    char name[KVFS_NAME_MAX + 1];
    char path[KVFS_PATH_MAX + 1];
    size_t path_len;
    struct blk_dev *dev;
    uint32_t lb, pb;        /* logical and physical block bytes */
    uint32_t xfer;          /* largest request, bytes (a multiple of pb) */
    struct kvfs_env env;
    struct kvfs_rgn rgn[KVFS_ROLES];
    struct kvfs_ram bak_journal[2];
    bool persist_wal;
    bool registered;
    bool unflushed;         /* a write completed since the last flush */
    unsigned opened[KVFS_ROLES]; /* files open on each region (kvfs_set_regions) */
    /* The write run: whole physical blocks [run_first, run_first + run_n)
     * of region run_rgn's data area, complete in memory, not yet written. */
    int run_rgn;            /* -1: empty */
    uint64_t run_first;
    uint32_t run_n;
    uint8_t *run, *rbuf;    /* KVFS_BUF_BYTES each, 4096-aligned */
    void *run_mem, *rbuf_mem;
    struct kvfs_stats st;
};

/* kvfs_io.c: SQLite result codes (SQLITE_OK, SQLITE_IOERR_*, SQLITE_FULL). */
int kvfs_io_load(struct kvfs *fs, int r, char *err, size_t err_size);
int kvfs_io_read(struct kvfs *fs, int r, uint64_t off, size_t n, void *dst);
int kvfs_io_write(struct kvfs *fs, int r, uint64_t off, size_t n, const void *src);
int kvfs_io_truncate(struct kvfs *fs, int r, uint64_t size);
int kvfs_io_flush_run(struct kvfs *fs);
/* Empty the file, durably (xDelete). */
int kvfs_io_delete(struct kvfs *fs, int r);
/* Make the region's data and header durable (xSync). */
int kvfs_io_sync(struct kvfs *fs, int r);
void kvfs_logf(const struct kvfs *fs, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
