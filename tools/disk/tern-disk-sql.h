/*
 * tern-disk-sql.h - the SQLite side tern-disk's parts share (tern-disk-db.c
 * defines it; the migration and the tests' fixture and cut harness use it):
 * the store's files on a disk's regions through the kernel's VFS (kvfs)
 * with SQLite's cksumvfs stacked on it, so pages with checksums (8 reserve
 * bytes) are verified when read and computed when written; and a digest of
 * a database's content to prove two copies hold the same rows.
 */
#ifndef TERN_TOOLS_TERN_DISK_SQL_H
#define TERN_TOOLS_TERN_DISK_SQL_H

#include "tern-disk.h"

#include "platform/kernel/store/kvfs.h"

#include <sqlite3.h>

#define TDISK_DB_PATH "/tern.db"
#define TDISK_BAK_A TDISK_DB_PATH ".bak-a"
#define TDISK_BAK_B TDISK_DB_PATH ".bak-b"
/* The name cksumvfs registers itself under (ext/misc/cksumvfs.c). */
#define TDISK_CKSM_VFS "cksmvfs"

/* cksumvfs.c, compiled with SQLITE_CKSUMVFS_STATIC. */
int sqlite3_register_cksumvfs(const char *unused);
int sqlite3_unregister_cksumvfs(void);

/* kvfs's environment for a host tool: waits poll d itself. */
void tdisk_kvfs_env(struct kvfs_env *e, struct blk_dev *d);

/*
 * kvfs over the database, log and backup regions of regions[0..n) on d,
 * registered as SQLite's default VFS with cksumvfs on top (open files with
 * TDISK_CKSM_VFS). One at a time. NULL with one line in err.
 */
struct kvfs *tdisk_store_vfs_open(struct blk_dev *d, const struct kdisk_region *regions,
                                  unsigned n, char *err, size_t err_size);
/* Unregister cksumvfs and the kvfs and free it (no file may be open). */
void tdisk_store_vfs_close(struct kvfs *fs);

/* SHA-256 over every row of every table of db (tables by name, rows in
 * the order of all their columns), the value types and bytes included:
 * two databases with the same digest hold the same data. 0, or -1 with
 * SQLite's message in err. */
int tdisk_db_digest(sqlite3 *db, uint8_t out[32], char *err, size_t err_size);

/* One integer from sql; false when the query fails. */
bool tdisk_q_int(sqlite3 *db, const char *sql, int64_t *out);

#endif
