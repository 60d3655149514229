/*
 * faultvfs.h - a fault-injecting SQLite VFS for tests (SPEC H4): it wraps
 * another VFS (the default one unless named) and makes chosen writes or
 * syncs fail, to show that a failed commit leaves the database consistent,
 * that the store recovers, and that the broker withholds acknowledgements.
 *
 * TEST-ONLY. The daemon registers it only under its test hook, which only
 * TERN_TEST_HOOKS builds have (see docs/STORE.md, TERN_TEST_STORE_FAULT);
 * production never opens a database through it.
 *
 * Each store_fault registers its own VFS under a name the caller picks, so
 * several can coexist; it keeps its state in its own struct (no globals).
 * Not thread-safe: arm and query it from the thread that uses the database.
 */
#ifndef TERN_STORE_FAULTVFS_H
#define TERN_STORE_FAULTVFS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct store_fault store_fault;

/* SQLite's codes for the two faults the daemon's test hook injects (values
 * fixed by SQLite's API; faultvfs.c checks them), so callers need not
 * include sqlite3.h. */
#define STORE_FAULT_CODE_FULL 13 /* SQLITE_FULL */
#define STORE_FAULT_CODE_IO 778  /* SQLITE_IOERR_WRITE */

typedef enum store_fault_op {
    STORE_FAULT_WRITE = 0, /* xWrite and xTruncate */
    STORE_FAULT_SYNC,      /* xSync */
    STORE_FAULT_OP_COUNT,
} store_fault_op;

/* Register a VFS called name wrapping the VFS called base (NULL = the
 * default). NULL on failure (name taken, no memory). */
store_fault *store_fault_create(const char *name, const char *base);
/* Unregister and free; every database using it must be closed first. */
void store_fault_destroy(store_fault *f);

/* The n-th (1 = the next) operation of kind op from now fails with code
 * (an SQLite result code such as SQLITE_FULL or SQLITE_IOERR_WRITE); n = 0
 * disarms. One-shot. */
void store_fault_fail_nth(store_fault *f, store_fault_op op, uint32_t n, int code);
/* While on, every write and sync fails with code. */
void store_fault_fail_all(store_fault *f, bool on, int code);
/* A write-ahead log may not grow past bytes (0 = no limit): a write or
 * truncate that would end beyond fails with SQLITE_FULL, as on a full
 * disk, where a file can rewrite the blocks it has but get no more.
 * Counted as injected. */
void store_fault_limit_wal(store_fault *f, uint64_t bytes);
/* Operations of kind op seen so far, and faults injected. */
uint64_t store_fault_count(const store_fault *f, store_fault_op op);
uint64_t store_fault_injected(const store_fault *f);

#endif
