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
 * Once, before any other SQLite call: SQLite allocates from a heap of its
 * own, sized from soft_limit (ksqlite.c says why; its memory is in
 * $SYS/broker/memory/used; the kernel heap, said on the console, when the
 * region cannot be had) and keeps all its memory under soft_limit bytes by
 * evicting clean cache pages first (0: the default, KSQLITE_SOFT_LIMIT).
 * SQLite's result code.
 */
enum { KSQLITE_SOFT_LIMIT = 8 * 1024 * 1024 };
int ksqlite_init(uint64_t soft_limit);

/*
 * SQLite's own heap (ksqlite.c says why) is this many times the soft
 * limit: 16 MiB with the default limit, set aside at the store's open.
 * Twice, because SQLite may overshoot a soft limit (dirty pages it cannot
 * evict, a large transaction) and the heap rounds small objects to a power
 * of two and large ones to whole pages (one 4 KiB database page with
 * SQLite's header takes two); past the region an allocation fails
 * (SQLITE_NOMEM, a failed commit) rather than taking the network's memory.
 */
#ifndef KSQLITE_HEAP_FACTOR
#define KSQLITE_HEAP_FACTOR 2
#endif

#ifdef TERN_TEST_HOOKS
/* Test builds (tern.test.sqlheap_kib=N): SQLite's heap is N KiB instead
 * of KSQLITE_HEAP_FACTOR times the soft limit, so a test can use it up.
 * Call before ksqlite_init. */
void ksqlite_test_heap_kib(uint32_t kib);
#endif

/* SQLite's heap's counters and its lock's; 0 when SQLite uses the kernel
 * heap (no region could be had; ksqlite_init not yet called). Either
 * pointer may be NULL. */
struct kmalloc_stats;
struct spin_stats;
int ksqlite_heap_stats(struct kmalloc_stats *st, struct spin_stats *lock);
/* Main loop: add SQLite's heap's counters to st (the kernel heap's), so
 * the memory figures ($SYS/broker/memory/used, telemetry) still count
 * SQLite; without waiting on the storage CPU (the last figures read when
 * it holds the heap's lock). */
void ksqlite_heap_add(struct kmalloc_stats *st);

/* The kernel's randomness, clock, sleep and console for a kvfs_env; wait
 * is left NULL (kvfs then polls every disk). */
void ksqlite_env(struct kvfs_env *env);

/* Bytes SQLite holds now (its own count). */
uint64_t ksqlite_memory_used(void);

#endif
