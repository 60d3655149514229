/*
 * test_kvfs_util.h - helpers for the kernel store VFS's host tests: a fake
 * disk (fake_blk.h) with the four regions on it, the VFS registered over
 * it with the page checksum stack over it, remounting after a simulated power cut, and SQL through the VFS.
 */
#ifndef TERN_TEST_KVFS_UTIL_H
#define TERN_TEST_KVFS_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "fake_blk.h"
#include "platform/kernel/store/kvfs.h"

#define KV_VFS "kvfs-test"
#define KV_PATH "/tern.db"
/* What the store and the queries open: SQLite's cksumvfs over tern's WAL
 * repair over the VFS (kcksum.h), as in the kernel. A file without reserve
 * bytes passes through it unchecked. */
#define KV_SQL_VFS "tern-cksum"

typedef struct kv_env {
    struct fake_blk disk;
    struct kvfs *fs;
    struct kvfs_config cfg;
    uint64_t rand_state;
    char err[256];
    char log[8192];       /* lines the VFS logged, newline-separated */
} kv_env;

/* A disk of lb/pb-byte blocks (32 MiB) with the database, log and backup
 * regions (8 MiB, log_kib KiB, 4 and 4 MiB, 1 MiB aligned), the VFS
 * mounted. The log region must hold SQLite's auto-checkpoint threshold
 * (1000 frames of a page and 24 bytes: 4.1 MiB) and the largest group, or
 * commits fail with SQLITE_FULL before a checkpoint can run. */
/* kvfs_env.random for a kv_env (ctx): a seeded generator, repeatable. */
void kv_env_random(void *ctx, void *buf, size_t n);
bool kv_setup(kv_env *e, uint32_t lb, uint32_t pb, uint32_t log_kib, uint64_t seed);
/* The same with a database region of db_kib KiB (at most 8 MiB). */
bool kv_setup_db(kv_env *e, uint32_t lb, uint32_t pb, uint32_t db_kib, uint32_t log_kib,
                 uint64_t seed);
/* A wait hook for cfg.env (ctx = the kv_env). */
void kv_wait(void *ctx, bool (*done)(void *arg), void *arg);
/* Unmount and mount again (after a power cut: the VFS's memory is lost). */
bool kv_remount(kv_env *e);
void kv_teardown(kv_env *e);

/* First column of the first row of sql on path through the VFS; -1 on error. */
int64_t kv_query(const char *path, const char *sql);
/* PRAGMA integrity_check through the VFS says ok. */
bool kv_integrity_ok(const char *path);

#endif
