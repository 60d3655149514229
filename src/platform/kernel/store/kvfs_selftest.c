/*
 * kvfs_selftest.c - proof that the freestanding SQLite links and runs in
 * the kernel (test builds only): on a RAM disk (dev/ramdisk.h, 512-byte
 * logical and 4 KiB physical blocks, a volatile cache that needs flushes),
 * the daemon's store (src/store) opens through the VFS (kvfs.h) as the
 * default VFS, commits batches, makes a backup, closes; the VFS is mounted
 * again from the disk alone and the store reopens with every row, passing
 * integrity_check. One line with the figures, or a panic naming the step.
 */
#ifdef TERN_TEST_HOOKS

#include "kvfs_selftest.h"

#include "kvfs.h"
#include "ksqlite.h"

#include "../console.h"
#include "../dev/ramdisk.h"
#include "../mm/kmalloc.h"
#include "../panic.h"
#include "store/store.h"

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

enum {
    MIB_BLOCKS = 2048, /* 512-byte blocks per MiB */
    DISK_MIB = 24,
    COMMITS = 40,
};

#define PATH "/tern.db"

/* One J_RETAIN_SET record in the journal's encoding (journal.h): type,
 * then length-prefixed (4 bytes, big-endian) topic and payload, qos, and
 * MQTT 5.0's fields: an empty property block and expiry 0 (never). */
static size_t put_str(uint8_t *p, const char *s)
{
    size_t n = strlen(s);

    for (unsigned i = 0; i < 4; i++)
        p[i] = (uint8_t)(n >> (8 * (3 - i)));
    memcpy(p + 4, s, n);
    return 4 + n;
}

static size_t retain_record(uint8_t *p, const char *topic, const char *payload)
{
    size_t n = 0;

    p[n++] = J_RETAIN_SET;
    n += put_str(p + n, topic);
    n += put_str(p + n, payload);
    p[n++] = 1;
    n += put_str(p + n, "");
    memset(p + n, 0, 8);
    return n + 8;
}

static struct kvfs *mount(struct ramdisk *rd)
{
    struct kvfs_config cfg = {.vfs_name = "tern", .path = PATH, .dev = &rd->dev};
    char err[160];
    struct kvfs *fs;

    cfg.region[KVFS_DB] = (struct kvfs_region){1 * MIB_BLOCKS, 8 * MIB_BLOCKS};
    cfg.region[KVFS_LOG] = (struct kvfs_region){9 * MIB_BLOCKS, 6 * MIB_BLOCKS};
    cfg.region[KVFS_BACKUP_A] = (struct kvfs_region){15 * MIB_BLOCKS, 4 * MIB_BLOCKS};
    cfg.region[KVFS_BACKUP_B] = (struct kvfs_region){19 * MIB_BLOCKS, 4 * MIB_BLOCKS};
    ksqlite_env(&cfg.env);
    fs = kvfs_open(&cfg, err, sizeof err);
    if (fs == NULL) {
        kprintf("selftest kvfs: %s\n", err);
        panic("selftest kvfs: mounting the regions failed");
    }
    if (kvfs_register(fs, 1) != SQLITE_OK)
        panic("selftest kvfs: registering the VFS failed");
    return fs;
}

static store *open_store(bool want_created)
{
    store_options opt = {.path = PATH, .sync = STORE_SYNC_FULL};
    store_open_info info;
    char err[STORE_ERR_SIZE];
    store *s = store_open(&opt, &info, err, sizeof err);

    if (s == NULL) {
        kprintf("selftest kvfs: %s\n", err);
        panic("selftest kvfs: store_open failed");
    }
    if (info.created != want_created || info.check_failed)
        panic("selftest kvfs: store_open found the wrong state");
    return s;
}

static int64_t query(const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int64_t v = -1;

    if (sqlite3_open_v2(PATH, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
        sqlite3_exec(db, "PRAGMA locking_mode = EXCLUSIVE", NULL, NULL, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_type(st, 0) == SQLITE_TEXT
                ? strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0
                : sqlite3_column_int64(st, 0);
    (void)sqlite3_finalize(st);
    (void)sqlite3_close(db);
    return v;
}

void kvfs_selftest(void)
{
    struct blk_topology topo = {.logical_block = 512, .physical_block = 4096,
                                .capacity = (uint64_t)DISK_MIB * MIB_BLOCKS,
                                .write_cache = true, .flush = true};
    static struct ramdisk rd; /* registered with the block layer for good */
    uint8_t *rec = kmalloc(4096);
    void *mem = kzalloc((size_t)DISK_MIB << 20);
    struct kvfs_stats st;
    struct kvfs *fs;
    store *s;

    if (rec == NULL || mem == NULL)
        panic("selftest kvfs: no memory for the RAM disk");
    int rc = ksqlite_init(0);
    if (rc != SQLITE_OK) {
        kprintf("selftest kvfs: %s (%d)\n", sqlite3_errstr(rc), rc);
        panic("selftest kvfs: SQLite's initialisation failed");
    }
    if (ramdisk_init(&rd, &topo, mem, "ramdisk-kvfs") != 0 || blk_register(&rd.dev) != 0)
        panic("selftest kvfs: RAM disk");
    fs = mount(&rd);
    s = open_store(true);
    for (unsigned i = 0; i < COMMITS; i++) {
        char topic[32], payload[600];
        broker_store_batch b;

        snprintf(topic, sizeof topic, "selftest/%u", i);
        memset(payload, 'a' + (int)(i % 26), sizeof payload - 1);
        payload[sizeof payload - 1] = '\0';
        b = (broker_store_batch){i + 1, rec, retain_record(rec, topic, payload), 1};
        if (store_apply(s, &b, 1) != STORE_OK)
            panic("selftest kvfs: store_apply failed");
        if (i == COMMITS / 2 && store_backup_run(s) != STORE_OK)
            panic("selftest kvfs: backup failed");
    }
    store_close(s);
    kvfs_close(fs);
    /* From the disk alone, as after a reboot. */
    fs = mount(&rd);
    s = open_store(false);
    store_close(s);
    if (query("SELECT count(*) FROM retained") != COMMITS)
        panic("selftest kvfs: rows missing after remounting");
    if (query("PRAGMA integrity_check") != 1)
        panic("selftest kvfs: integrity_check failed");
    kvfs_get_stats(fs, &st);
    kprintf("selftest kvfs: ok: %u commits, %llu writes, %llu flushes, %llu reads, "
            "sqlite memory high-water %llu KiB\n",
            (unsigned)COMMITS, (unsigned long long)st.writes, (unsigned long long)st.flushes,
            (unsigned long long)st.reads,
            (unsigned long long)(sqlite3_memory_highwater(0) >> 10));
    kvfs_close(fs);
    kfree(rec);
}

#endif
