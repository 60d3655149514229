/*
 * test_kvfs_util.c - the helpers of test_kvfs_util.h.
 */
#include "test_kvfs_util.h"

#include "platform/kernel/store/kcksum.h"

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

enum { MIB = 1024 * 1024 };

void kv_env_random(void *ctx, void *buf, size_t n)
{
    kv_env *e = ctx;
    uint8_t *p = buf;

    for (size_t i = 0; i < n; i++) {
        e->rand_state = e->rand_state * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (uint8_t)(e->rand_state >> 56);
    }
}

static int64_t env_now_ms(void *ctx)
{
    (void)ctx;
    return (int64_t)time(NULL) * 1000;
}

static void env_log(void *ctx, const char *line)
{
    kv_env *e = ctx;
    size_t have = strlen(e->log), n = strlen(line);

    if (have + n + 2 < sizeof e->log) {
        memcpy(e->log + have, line, n);
        e->log[have + n] = '\n';
        e->log[have + n + 1] = '\0';
    }
}

static bool mount(kv_env *e)
{
    e->fs = kvfs_open(&e->cfg, e->err, sizeof e->err);
    if (e->fs == NULL) {
        fprintf(stderr, "  kvfs_open: %s\n", e->err);
        return false;
    }
    if (kvfs_register(e->fs, 0) != SQLITE_OK) {
        kvfs_close(e->fs);
        e->fs = NULL;
        return false;
    }
    /* The checksum stack over it, as the kernel stacks it (kdisk_store.c). */
    if (kcksum_stack(KV_VFS) != SQLITE_OK) {
        fprintf(stderr, "  kcksum_stack failed\n");
        kvfs_close(e->fs);
        e->fs = NULL;
        return false;
    }
    return true;
}

static void unmount(kv_env *e)
{
    kcksum_unstack();
    kvfs_close(e->fs);
    e->fs = NULL;
}

bool kv_setup(kv_env *e, uint32_t lb, uint32_t pb, uint32_t log_kib, uint64_t seed)
{
    return kv_setup_db(e, lb, pb, 8 * 1024, log_kib, seed);
}

bool kv_setup_db(kv_env *e, uint32_t lb, uint32_t pb, uint32_t db_kib, uint32_t log_kib,
                 uint64_t seed)
{
    uint64_t per_mib = MIB / lb;
    uint64_t lba = per_mib; /* the first MiB stays free, as for a GPT */

    memset(e, 0, sizeof *e);
    fake_blk_init(&e->disk, lb, pb, 32 * per_mib, seed);
    e->rand_state = seed;
    e->cfg.vfs_name = KV_VFS;
    e->cfg.path = KV_PATH;
    e->cfg.dev = &e->disk.dev;
    e->cfg.region[KVFS_DB] = (struct kvfs_region){lba, (uint64_t)db_kib * 1024 / lb};
    lba += (uint64_t)(db_kib * 1024 + MIB - 1) / MIB * per_mib;
    e->cfg.region[KVFS_LOG] = (struct kvfs_region){lba, (uint64_t)log_kib * 1024 / lb};
    lba += (uint64_t)(log_kib * 1024 + MIB - 1) / MIB * per_mib;
    e->cfg.region[KVFS_BACKUP_A] = (struct kvfs_region){lba, 4 * per_mib};
    lba += 4 * per_mib;
    e->cfg.region[KVFS_BACKUP_B] = (struct kvfs_region){lba, 4 * per_mib};
    /* No wait hook: the VFS's default, blk_poll_all() (the fake's). */
    e->cfg.env = (struct kvfs_env){
        .random = kv_env_random, .now_ms = env_now_ms, .log = env_log, .ctx = e};
    return mount(e);
}

void kv_wait(void *ctx, bool (*done)(void *arg), void *arg)
{
    kv_env *e = ctx;

    while (!done(arg))
        (void)fake_blk_poll(&e->disk);
}

bool kv_remount(kv_env *e)
{
    unmount(e);
    return mount(e);
}

void kv_teardown(kv_env *e)
{
    unmount(e);
    fake_blk_free(&e->disk);
}

int64_t kv_query(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int64_t v = -1;

    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, KV_SQL_VFS) == SQLITE_OK &&
        sqlite3_exec(db, "PRAGMA locking_mode = EXCLUSIVE", NULL, NULL, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

bool kv_integrity_ok(const char *path)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    bool ok = false;

    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, KV_SQL_VFS) == SQLITE_OK &&
        sqlite3_exec(db, "PRAGMA locking_mode = EXCLUSIVE", NULL, NULL, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        const unsigned char *t = sqlite3_column_text(st, 0);

        ok = t != NULL && strcmp((const char *)t, "ok") == 0;
        if (!ok)
            fprintf(stderr, "  integrity_check: %s\n", t != NULL ? (const char *)t : "(null)");
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return ok;
}
