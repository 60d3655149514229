/*
 * test_kvfs.c - the kernel store VFS's regions as files, on the fake disk:
 * the region header's encoding and its refusals, bytes at any offset and
 * length read back after a remount, sizes durable only through xSync, only
 * whole physical blocks ever written, the capacity as SQLITE_FULL, names
 * that map to no region refused, the log region's two names exclusive,
 * device errors as SQLITE_IOERR_*, and a power cut keeping exactly what
 * the last sync made durable.
 */
#include "test.h"
#include "test_kvfs_util.h"

#include "platform/kernel/store/region.h"

#include <sqlite3.h>
#include <stdlib.h>

static sqlite3_file *open_file(const char *name, int flags, int *rc)
{
    sqlite3_vfs *vfs = sqlite3_vfs_find(KV_VFS);
    sqlite3_file *f = calloc(1, (size_t)vfs->szOsFile);

    *rc = vfs->xOpen(vfs, name, f, flags, NULL);
    if (*rc != SQLITE_OK) {
        free(f);
        return NULL;
    }
    return f;
}

static void close_file(sqlite3_file *f)
{
    if (f != NULL) {
        f->pMethods->xClose(f);
        free(f);
    }
}

static const int RW = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_MAIN_DB;

static void pattern(uint8_t *p, size_t n, uint64_t off, uint8_t salt)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)((off + i) * 31 + salt + ((off + i) >> 9));
}

TEST(kvfs_region_header_roundtrip_and_refusals)
{
    struct rgn_hdr h = {RGN_ROLE_LOG, RGN_OWNER_WAL, 0, 7, 12345, 2048, 4096}, got;
    struct rgn_hdr two[2];
    int rc2[2];
    unsigned slot = 9;
    uint8_t buf[RGN_HDR_BYTES];

    rgn_hdr_encode(&h, buf);
    CHECK_EQ(rgn_hdr_parse(buf, sizeof buf, RGN_ROLE_LOG, 2048, 4096, 1 << 20, &got), RGN_OK);
    CHECK(got.size == 12345 && got.seq == 7 && got.owner == RGN_OWNER_WAL);
    /* another region, another role, a size beyond the capacity */
    CHECK_EQ(rgn_hdr_parse(buf, sizeof buf, RGN_ROLE_LOG, 4096, 4096, 1 << 20, &got),
             RGN_FOREIGN);
    CHECK_EQ(rgn_hdr_parse(buf, sizeof buf, RGN_ROLE_DB, 2048, 4096, 1 << 20, &got),
             RGN_FOREIGN);
    CHECK_EQ(rgn_hdr_parse(buf, sizeof buf, RGN_ROLE_LOG, 2048, 4096, 1000, &got), RGN_BAD);
    /* the same region grown in place (same start, more blocks) is itself;
     * shrunk, it is not */
    CHECK_EQ(rgn_hdr_parse(buf, sizeof buf, RGN_ROLE_LOG, 2048, 8192, 1 << 20, &got), RGN_OK);
    CHECK(got.blocks == 4096);
    CHECK_EQ(rgn_hdr_parse(buf, sizeof buf, RGN_ROLE_LOG, 2048, 2048, 1 << 20, &got),
             RGN_FOREIGN);
    /* a database's header in a backup region and the reverse (a migration
     * swapped them); never a log's */
    struct rgn_hdr db = {RGN_ROLE_DB, RGN_OWNER_MAIN, 0, 3, 4096, 2048, 4096};
    rgn_hdr_encode(&db, buf);
    CHECK_EQ(rgn_hdr_parse(buf, sizeof buf, RGN_ROLE_BACKUP, 2048, 4096, 1 << 20, &got), RGN_OK);
    CHECK(got.role == RGN_ROLE_DB);
    CHECK_EQ(rgn_hdr_parse(buf, sizeof buf, RGN_ROLE_LOG, 2048, 4096, 1 << 20, &got), RGN_FOREIGN);
    db.role = RGN_ROLE_BACKUP;
    rgn_hdr_encode(&db, buf);
    CHECK_EQ(rgn_hdr_parse(buf, sizeof buf, RGN_ROLE_DB, 2048, 4096, 1 << 20, &got), RGN_OK);
    rgn_hdr_encode(&h, buf);
    /* a flipped bit anywhere is caught */
    for (size_t i = 0; i < sizeof buf; i++) {
        buf[i] ^= 0x10;
        int rc = rgn_hdr_parse(buf, sizeof buf, RGN_ROLE_LOG, 2048, 4096, 1 << 20, &got);
        CHECK(rc == RGN_TORN || (i < 8 && rc == RGN_BLANK));
        buf[i] ^= 0x10;
    }
    /* the newer of two valid copies wins; one torn: the other */
    rgn_hdr_encode(&h, buf);
    rc2[0] = rgn_hdr_parse(buf, sizeof buf, RGN_ROLE_LOG, 2048, 4096, 1 << 20, &two[0]);
    h.seq = 8;
    h.size = 1;
    rgn_hdr_encode(&h, buf);
    rc2[1] = rgn_hdr_parse(buf, sizeof buf, RGN_ROLE_LOG, 2048, 4096, 1 << 20, &two[1]);
    CHECK_EQ(rgn_hdr_pick(two, rc2, RGN_ROLE_LOG, 2048, 4096, &got, &slot), RGN_OK);
    CHECK(slot == 1 && got.size == 1);
    rc2[1] = RGN_TORN;
    CHECK_EQ(rgn_hdr_pick(two, rc2, RGN_ROLE_LOG, 2048, 4096, &got, &slot), RGN_OK);
    CHECK(slot == 0 && got.size == 12345);
    /* never written: empty; a first write torn: empty; both torn: refused */
    rc2[0] = RGN_BLANK;
    rc2[1] = RGN_BLANK;
    CHECK_EQ(rgn_hdr_pick(two, rc2, RGN_ROLE_LOG, 2048, 4096, &got, &slot), RGN_OK);
    CHECK(got.size == 0 && got.seq == 0 && slot == 1);
    rc2[0] = RGN_TORN;
    CHECK_EQ(rgn_hdr_pick(two, rc2, RGN_ROLE_LOG, 2048, 4096, &got, &slot), RGN_OK);
    rc2[1] = RGN_TORN;
    CHECK_EQ(rgn_hdr_pick(two, rc2, RGN_ROLE_LOG, 2048, 4096, &got, &slot), RGN_TORN);
    rc2[0] = RGN_OK;
    rc2[1] = RGN_NEWER;
    CHECK_EQ(rgn_hdr_pick(two, rc2, RGN_ROLE_LOG, 2048, 4096, &got, &slot), RGN_NEWER);
}

/* Random writes of any offset and length, mirrored in memory; after a sync
 * and a remount the file reads back exactly, and the disk never saw a
 * write of part of a physical block. */
static bool random_io_round(uint32_t lb, uint32_t pb, uint64_t seed)
{
    kv_env e;
    enum { SPAN = 300 * 1024 };
    uint8_t *mirror = calloc(1, SPAN), *buf = malloc(SPAN);
    uint64_t size = 0, r = seed;
    sqlite3_int64 got_size = 0;
    bool ok = false;
    int rc;
    sqlite3_file *f = NULL;

    if (!kv_setup(&e, lb, pb, 1024, seed))
        goto out;
    f = open_file(KV_PATH, RW, &rc);
    if (f == NULL)
        goto out;
    for (int i = 0; i < 200; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t off = (r >> 20) % (SPAN - 20000);
        size_t n = (size_t)((r >> 44) % 9000) + 1;

        pattern(mirror + off, n, off, (uint8_t)i);
        if (f->pMethods->xWrite(f, mirror + off, (int)n, (sqlite3_int64)off) != SQLITE_OK)
            goto out;
        if (off + n > size)
            size = off + n;
        if (i % 50 == 49 && f->pMethods->xSync(f, SQLITE_SYNC_FULL) != SQLITE_OK)
            goto out;
    }
    if (f->pMethods->xSync(f, SQLITE_SYNC_FULL) != SQLITE_OK)
        goto out;
    close_file(f);
    f = NULL;
    fake_blk_cut(&e.disk); /* nothing unflushed may matter */
    if (!kv_remount(&e) || (f = open_file(KV_PATH, RW, &rc)) == NULL)
        goto out;
    if (f->pMethods->xFileSize(f, &got_size) != SQLITE_OK || (uint64_t)got_size != size)
        goto out;
    if (f->pMethods->xRead(f, buf, (int)size, 0) != SQLITE_OK || memcmp(buf, mirror, size) != 0)
        goto out;
    /* a read past the end is short and zero-filled */
    memset(buf, 0xee, 100);
    if (f->pMethods->xRead(f, buf, 100, (sqlite3_int64)size - 50) != SQLITE_IOERR_SHORT_READ ||
        memcmp(buf, mirror + size - 50, 50) != 0 || buf[50] != 0 || buf[99] != 0)
        goto out;
    ok = e.disk.partial_block_writes == 0 && e.disk.writes > 0;
out:
    close_file(f);
    kv_teardown(&e);
    free(mirror);
    free(buf);
    return ok;
}

TEST(kvfs_bytes_at_any_offset_read_back_after_remount_whole_blocks_only)
{
    CHECK(random_io_round(512, 512, 1));
    CHECK(random_io_round(512, 4096, 2));
    CHECK(random_io_round(4096, 4096, 3));
}

TEST(kvfs_size_is_durable_only_through_sync)
{
    kv_env e;
    uint8_t data[5000];
    sqlite3_int64 size = -1;
    int rc;
    sqlite3_file *f;

    pattern(data, sizeof data, 0, 1);
    CHECK(kv_setup(&e, 512, 4096, 1024, 4));
    f = open_file(KV_PATH, RW, &rc);
    CHECK(f != NULL);
    CHECK_EQ(f->pMethods->xWrite(f, data, 3000, 0), SQLITE_OK);
    CHECK_EQ(f->pMethods->xSync(f, SQLITE_SYNC_FULL), SQLITE_OK);
    CHECK_EQ(f->pMethods->xWrite(f, data, 5000, 3000), SQLITE_OK);
    close_file(f);
    /* the power goes before the second write's sync */
    fake_blk_cut(&e.disk);
    CHECK(kv_remount(&e));
    f = open_file(KV_PATH, RW, &rc);
    CHECK(f != NULL);
    CHECK_EQ(f->pMethods->xFileSize(f, &size), SQLITE_OK);
    CHECK_EQ(size, 3000);
    CHECK_EQ(f->pMethods->xRead(f, data + 3000, 2000, 0), SQLITE_OK);
    CHECK_MEM(data + 3000, data, 2000);
    close_file(f);
    kv_teardown(&e);
}

TEST(kvfs_write_beyond_region_is_full_and_names_without_region_refused)
{
    kv_env e;
    uint8_t data[4096] = {1};
    int rc;
    sqlite3_file *f, *j;

    CHECK(kv_setup(&e, 512, 4096, 64, 5));
    /* the log region is 64 KiB: two header blocks, 56 KiB of data */
    f = open_file(KV_PATH "-wal", RW, &rc);
    CHECK(f != NULL);
    CHECK_EQ(f->pMethods->xWrite(f, data, 4096, 52 * 1024), SQLITE_OK);
    CHECK_EQ(f->pMethods->xWrite(f, data, 4096, 53 * 1024), SQLITE_FULL);
    CHECK_EQ(f->pMethods->xSync(f, SQLITE_SYNC_FULL), SQLITE_OK);
    /* while the WAL holds the region, its journal name cannot open */
    j = open_file(KV_PATH "-journal", RW, &rc);
    CHECK(j == NULL && rc == SQLITE_CANTOPEN);
    CHECK(strstr(e.log, "the log region holds the WAL") != NULL);
    close_file(f);
    CHECK(sqlite3_vfs_find(KV_VFS)->xDelete(sqlite3_vfs_find(KV_VFS), KV_PATH "-wal", 1) ==
          SQLITE_OK);
    j = open_file(KV_PATH "-journal", RW, &rc);
    CHECK(j != NULL);
    close_file(j);
    CHECK(open_file("/other.db", RW, &rc) == NULL && rc == SQLITE_CANTOPEN);
    CHECK(open_file(NULL, RW, &rc) == NULL && rc == SQLITE_CANTOPEN);
    /* a missing database without CREATE is a missing file */
    CHECK(open_file(KV_PATH ".bak-a", SQLITE_OPEN_READWRITE, &rc) == NULL);
    kv_teardown(&e);
}

TEST(kvfs_device_errors_are_sqlite_ioerrs_and_pass)
{
    kv_env e;
    uint8_t data[8192];
    int rc;
    sqlite3_file *f;

    pattern(data, sizeof data, 0, 3);
    CHECK(kv_setup(&e, 512, 4096, 1024, 6));
    e.cfg.env.wait = kv_wait; /* the hook instead of the default poll */
    CHECK(kv_remount(&e));
    f = open_file(KV_PATH, RW, &rc);
    CHECK(f != NULL);
    e.disk.fail_write_nth = 1;
    CHECK_EQ(f->pMethods->xWrite(f, data, 8192, 0), SQLITE_OK); /* held in the run */
    CHECK_EQ(f->pMethods->xSync(f, SQLITE_SYNC_FULL), SQLITE_IOERR_WRITE);
    CHECK_EQ(f->pMethods->xWrite(f, data, 8192, 0), SQLITE_OK);
    e.disk.fail_flush_nth = 1;
    CHECK_EQ(f->pMethods->xSync(f, SQLITE_SYNC_FULL), SQLITE_IOERR_FSYNC);
    /* the disk works again: so does the file */
    CHECK_EQ(f->pMethods->xWrite(f, data, 8192, 0), SQLITE_OK);
    CHECK_EQ(f->pMethods->xSync(f, SQLITE_SYNC_FULL), SQLITE_OK);
    close_file(f);
    CHECK(strstr(e.log, "write of") != NULL && strstr(e.log, "flush of") != NULL);
    e.disk.fail_writes = true;
    kv_teardown(&e);
}

/* A failed write of the run must not lose what earlier, successful xWrite
 * calls put into it: SQLite counts those bytes as written (a WAL commit
 * ends mid-block, the rest of that block is written after its sync and
 * joins the next commit's run). After the failure, a write next to them
 * and a sync must make them durable too. The fake disk's failed write
 * leaves each sector old or new at random: over 16 seeds, both. */
static bool failed_run_round(uint64_t seed)
{
    kv_env e;
    uint8_t first[100], second[100], got[200];
    int rc;
    bool ok = false;
    sqlite3_file *f = NULL;

    pattern(first, sizeof first, 0, 7);
    pattern(second, sizeof second, 100, 9);
    if (!kv_setup(&e, 512, 4096, 1024, seed) || (f = open_file(KV_PATH, RW, &rc)) == NULL)
        goto out;
    if (f->pMethods->xWrite(f, first, 100, 0) != SQLITE_OK) /* into the run */
        goto out;
    e.disk.fail_write_nth = 1;
    if (f->pMethods->xWrite(f, second, 100, 100) != SQLITE_OK || /* the same block */
        f->pMethods->xSync(f, SQLITE_SYNC_FULL) != SQLITE_IOERR_WRITE)
        goto out;
    /* SQLite retries the second write (the first one succeeded) */
    if (f->pMethods->xWrite(f, second, 100, 100) != SQLITE_OK ||
        f->pMethods->xSync(f, SQLITE_SYNC_FULL) != SQLITE_OK)
        goto out;
    close_file(f);
    f = NULL;
    fake_blk_cut(&e.disk);
    if (!kv_remount(&e) || (f = open_file(KV_PATH, RW, &rc)) == NULL ||
        f->pMethods->xRead(f, got, 200, 0) != SQLITE_OK)
        goto out;
    ok = memcmp(got, first, 100) == 0 && memcmp(got + 100, second, 100) == 0;
out:
    close_file(f);
    kv_teardown(&e);
    return ok;
}

TEST(kvfs_failed_run_write_keeps_the_bytes_of_earlier_writes)
{
    for (uint64_t seed = 1; seed <= 16; seed++)
        if (!failed_run_round(seed)) {
            fprintf(stderr, "  seed %llu\n", (unsigned long long)seed);
            CHECK(false);
        }
}
