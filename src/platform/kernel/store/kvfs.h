/*
 * kvfs.h - tern's SQLite VFS over raw disk regions (SPEC D1): the whole
 * public face of the kernel's store VFS.
 *
 * The store (src/store) opens "<path>", and SQLite derives the other names
 * from it. Each maps onto a region of one block device (dev/blk.h):
 *
 *   <path>                 the database region
 *   <path>-wal             the log region (the WAL)
 *   <path>-journal         the log region too: the database's rollback
 *                          journal and its WAL are never in use at once
 *                          (the journal only while the store switches a new
 *                          file to WAL and while it restores a backup, after
 *                          deleting the WAL)
 *   <path>.bak-a, .bak-b   the backup regions
 *   <path>.bak-?-journal   nothing on disk: a backup region is marked
 *                          incomplete on disk before its first write and
 *                          complete after its data is flushed, which is what
 *                          the journal would have protected (docs/DISK.md)
 *   <path>.bak-?-wal       an always-empty file: reading a backup copy (its
 *                          header says WAL) opens one; nothing may commit
 *                          into it (writes fail)
 *
 * Every region starts with two header copies (region.h) holding the file's
 * logical size; xSync writes the header when it changed and flushes the
 * device. Any other name is refused (SQLITE_CANTOPEN); with SQLITE_TEMP_STORE=3
 * SQLite never asks for a temporary file.
 *
 * Waiting: kvfs submits one request at a time through blk_submit() and then
 * calls the wait hook until the request's completion ran. The hook must
 * make completions happen (poll the device, or yield to a loop that does);
 * without one kvfs calls blk_poll_all() in a loop. SQLite's calls into the
 * VFS therefore return only when the I/O is done: a store thread that
 * yields in the hook lets the main loop run meanwhile.
 *
 * One thread at a time (SQLITE_THREADSAFE=0 in the kernel); no global
 * state: each kvfs is one registered sqlite3_vfs over one disk.
 */
#ifndef TERN_KSTORE_KVFS_H
#define TERN_KSTORE_KVFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../dev/blk.h"

enum kvfs_role { KVFS_DB = 0, KVFS_LOG, KVFS_BACKUP_A, KVFS_BACKUP_B, KVFS_ROLES };

/* A region: logical blocks [lba, lba + blocks) of the device. Both must be
 * multiples of the physical block; a region needs at least three physical
 * blocks (two header copies and data). */
struct kvfs_region {
    uint64_t lba;
    uint64_t blocks;
};

/* What the platform provides besides the disk. */
struct kvfs_env {
    /* Return once done(arg) is true: the request in flight completed
     * (through the block layer's polling or interrupt, never through the
     * waiter). The store thread yields here (kthread_wait_until); NULL:
     * call blk_poll_all() until then. */
    void (*wait)(void *ctx, bool (*done)(void *arg), void *arg);
    /* Bytes for SQLite's randomness (WAL salts, never keys). */
    void (*random)(void *ctx, void *buf, size_t n);
    /* Unix time in milliseconds, 0 when unknown (SQLite's 'now'). */
    int64_t (*now_ms)(void *ctx);
    /* Sleep (or yield) for about us microseconds; SQLite rarely asks. */
    void (*sleep_us)(void *ctx, uint64_t us);
    /* One line about a failure, for the console; may be NULL. */
    void (*log)(void *ctx, const char *line);
    void *ctx;
};

struct kvfs_config {
    const char *vfs_name;     /* the name to register, e.g. "tern" */
    const char *path;         /* what the store opens, e.g. "/tern.db" */
    struct blk_dev *dev;
    struct kvfs_region region[KVFS_ROLES];
    struct kvfs_env env;
};

struct kvfs;

/*
 * Check the regions against the device, read their headers and allocate
 * the I/O buffers; does not write. NULL with one line in err (a region not
 * aligned or beyond the device, a header of a newer format or of another
 * region, an unreadable disk, out of memory).
 */
struct kvfs *kvfs_open(const struct kvfs_config *cfg, char *err, size_t err_size);

/* Register with SQLite (as the default VFS when make_default). SQLite's
 * result code. */
int kvfs_register(struct kvfs *fs, int make_default);

/* Unregister and free; no file may be open (NULL is fine). */
void kvfs_close(struct kvfs *fs);

struct kvfs_stats {
    uint64_t reads, writes, flushes;      /* requests completed */
    uint64_t rmw_reads;                   /* reads to complete a partial block */
    uint64_t header_writes;
    uint64_t io_errors;                   /* requests that failed */
    uint64_t discards;                    /* BLK_DISCARDs of space a durable header freed */
    uint64_t logical_size[KVFS_ROLES];    /* bytes, as SQLite sees them */
    uint64_t capacity[KVFS_ROLES];        /* bytes available to each file */
};
void kvfs_get_stats(const struct kvfs *fs, struct kvfs_stats *out);

#endif
