/*
 * ksqlite.h - SQLite inside the kernel: its allocator, its limits and the
 * kernel's services for the store VFS (kvfs.h).
 *
 * Built with SQLITE_OS_OTHER (store/sqlite.mk): SQLite has no VFS of its
 * own, sqlite3_os_init() registers none, and the store's VFS becomes the
 * default when the disk is known (kvfs_register(fs, 1)).
 */
#ifndef TERN_KSTORE_KSQLITE_H
#define TERN_KSTORE_KSQLITE_H

#include <stddef.h>
#include <stdint.h>

#include "kvfs.h"

/*
 * Once, before any other SQLite call: SQLite allocates from the kernel heap
 * (kmalloc, so its memory is in $SYS/broker/memory/used) and keeps all its
 * memory under soft_limit bytes by evicting clean cache pages first (0: the
 * default, KSQLITE_SOFT_LIMIT). SQLite's result code.
 */
enum { KSQLITE_SOFT_LIMIT = 8 * 1024 * 1024 };
int ksqlite_init(uint64_t soft_limit);

/* The kernel's randomness, clock, sleep and console for a kvfs_env; wait
 * is left NULL (kvfs then polls every disk). */
void ksqlite_env(struct kvfs_env *env);

/* Bytes SQLite holds now (its own count). */
uint64_t ksqlite_memory_used(void);

#endif
