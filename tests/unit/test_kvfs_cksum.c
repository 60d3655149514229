/*
 * test_kvfs_cksum.c - layout v3's page checksums through the kernel's
 * stack (kcksum.h: the splitter, SQLite's cksumvfs, the WAL repair, kvfs)
 * on the fake disk, checked on the raw disk with pagesum.h: every database
 * and backup page and every WAL frame SQLite writes carries a valid
 * checksum; commits still in the WAL survive a power cut (the WAL repair);
 * a byte flipped inside a page's payload fails the store's check at open
 * and the newest backup replaces the database; one found at run time
 * fails the commit with SQLITE_IOERR_DATA; pagesum agrees with
 * cksumvfs, including on a page it rejects.
 */
#include "test.h"
#include "test_kvfs_util.h"
#include "test_store_util.h"

#include "platform/kernel/store/kcksum.h"
#include "platform/kernel/store/pagesum.h"

#include <sqlite3.h>
#include <stdlib.h>

/* cksumvfs.c (third-party) has no header. */
int sqlite3_register_cksumvfs(const char *unused);
int sqlite3_unregister_cksumvfs(void);

static store *open_ck(store_open_info *info)
{
    store_options opt = {.path = KV_PATH, .vfs = KV_SQL_VFS, .sync = STORE_SYNC_FULL,
                         .reserve_bytes = KCKSUM_RESERVE};
    char err[STORE_ERR_SIZE];
    store *s = store_open(&opt, info, err, sizeof err);

    if (s == NULL)
        fprintf(stderr, "  store_open: %s\n", err);
    return s;
}

static store_rc put(store *s, uint32_t n, size_t pad)
{
    return ts_put_retained(s, n, pad);
}

/* The bytes of a region's data (after its two header blocks), as read. */
static uint8_t *region_data(kv_env *e, enum kvfs_role role)
{
    return e->disk.cur + e->cfg.region[role].lba * e->disk.dev.topo.logical_block +
           2 * e->disk.dev.topo.physical_block;
}

/* Pages of the database file at d whose checksum fails; -1 when it is not
 * a database with 8 reserve bytes. */
static int bad_pages(const uint8_t *d)
{
    struct pagesum_db db;
    char why[80];
    int bad = 0;

    if (pagesum_db_parse(d, PAGESUM_DB_HEADER, &db, why, sizeof why) != 0 || db.reserve != 8 ||
        db.pages == 0)
        return -1;
    for (uint32_t i = 0; i < db.pages; i++)
        bad += !pagesum_page_ok(d + (size_t)i * db.page_size, db.page_size);
    return bad;
}

/* Frames of the WAL at w that continue its checksum chain; commit frames
 * among them in *commits. */
static int wal_chain(const uint8_t *w, int *commits)
{
    struct pagesum_wal_hdr h;
    char why[80];
    uint32_t s[2], commit;
    int n = 0;

    *commits = 0;
    if (pagesum_wal_parse(w, PAGESUM_WAL_HEADER, &h, why, sizeof why) != 0)
        return -1;
    s[0] = h.cksum[0];
    s[1] = h.cksum[1];
    for (const uint8_t *f = w + PAGESUM_WAL_HEADER;
         pagesum_wal_frame(&h, f, s, &commit) == 1; f += PAGESUM_WAL_FRAME_HEADER + h.page_size) {
        n++;
        *commits += commit != 0;
        if (!pagesum_page_ok(f + PAGESUM_WAL_FRAME_HEADER, h.page_size))
            return -2;
    }
    return n;
}

TEST(kvfs_cksum_database_pages_all_verify_after_a_checkpoint)
{
    kv_env e;
    store_open_info info;
    store *s;

    CHECK(kv_setup(&e, 512, 4096, 6 * 1024, 41));
    s = open_ck(&info);
    CHECK(s != NULL && info.created);
    for (uint32_t n = 1; n <= 40; n++)
        CHECK_EQ(put(s, n, n * 53 % 3000), STORE_OK);
    store_close(s); /* checkpoints: every page through the WAL into the file */
    CHECK_EQ(bad_pages(region_data(&e, KVFS_DB)), 0);
    CHECK(kv_integrity_ok(KV_PATH));
    kv_teardown(&e);
}

TEST(kvfs_cksum_wal_frames_survive_a_power_cut_before_a_checkpoint)
{
    kv_env e;
    store_open_info info;
    store *s;
    int commits = 0;

    CHECK(kv_setup(&e, 512, 4096, 6 * 1024, 42));
    s = open_ck(&info);
    CHECK(s != NULL);
    for (uint32_t n = 1; n <= 30; n++)
        CHECK_EQ(put(s, n, 700), STORE_OK);
    /* every frame checksummed, the chain unbroken over every commit */
    CHECK(wal_chain(region_data(&e, KVFS_LOG), &commits) > 30);
    CHECK(commits >= 30);
    /* the power goes with the commits only in the WAL */
    e.disk.fail_writes = e.disk.fail_flushes = true;
    store_close(s);
    fake_blk_cut(&e.disk);
    e.disk.fail_writes = e.disk.fail_flushes = false;
    CHECK(kv_remount(&e));
    s = open_ck(&info);
    CHECK(s != NULL && !info.check_failed && !info.created);
    store_close(s);
    CHECK_EQ(kv_query(KV_PATH, "SELECT count(*) FROM retained"), 30);
    CHECK_EQ(bad_pages(region_data(&e, KVFS_DB)), 0);
    kv_teardown(&e);
}

TEST(kvfs_cksum_flipped_payload_byte_fails_the_open_check_and_the_backup_is_restored)
{
    kv_env e;
    store_open_info info;
    store *s;

    CHECK(kv_setup(&e, 512, 4096, 6 * 1024, 43));
    s = open_ck(&info);
    CHECK(s != NULL);
    for (uint32_t n = 1; n <= 20; n++)
        CHECK_EQ(put(s, n, 1500), STORE_OK);
    CHECK_EQ(store_backup_run(s), STORE_OK);
    store_close(s);
    /* the backup's pages are checksummed too */
    CHECK_EQ(bad_pages(region_data(&e, KVFS_BACKUP_A)), 0);
    /* one byte inside the last page's payload: a value integrity_check does
     * not parse, so only the checksum can see it */
    uint8_t *d = region_data(&e, KVFS_DB);
    struct pagesum_db db;
    char why[80];
    CHECK_EQ(pagesum_db_parse(d, PAGESUM_DB_HEADER, &db, why, sizeof why), 0);
    size_t at = (size_t)(db.pages - 1) * db.page_size + db.page_size - 100;
    size_t disk_at = (size_t)(d - e.disk.cur) + at;
    e.disk.cur[disk_at] ^= 0x20;
    e.disk.durable[disk_at] ^= 0x20;
    CHECK_EQ(bad_pages(d), 1);
    /* and no copy of the page in the WAL to read instead: an empty log */
    uint8_t *w = region_data(&e, KVFS_LOG);
    memset(w, 0, PAGESUM_WAL_HEADER);
    memset(e.disk.durable + (w - e.disk.cur), 0, PAGESUM_WAL_HEADER);
    CHECK(kv_remount(&e));
    s = open_ck(&info);
    CHECK(s != NULL);
    CHECK(info.check_failed && info.restored && info.restored_from == 'a');
    store_close(s);
    CHECK_EQ(kv_query(KV_PATH, "SELECT count(*) FROM retained"), 20);
    CHECK_EQ(bad_pages(region_data(&e, KVFS_DB)), 0);
    kv_teardown(&e);
}

TEST(kvfs_cksum_page_damaged_at_run_time_fails_the_commit_with_ioerr_data)
{
    kv_env e;
    store_open_info info;
    store *s;

    CHECK(kv_setup(&e, 512, 4096, 6 * 1024, 44));
    s = open_ck(&info);
    CHECK(s != NULL);
    for (uint32_t n = 1; n <= 200; n++)
        CHECK_EQ(put(s, n, 900), STORE_OK);
    store_close(s);
    /* an empty log: every page comes from the database file */
    uint8_t *w = region_data(&e, KVFS_LOG);
    memset(w, 0, PAGESUM_WAL_HEADER);
    memset(e.disk.durable + (w - e.disk.cur), 0, PAGESUM_WAL_HEADER);
    CHECK(kv_remount(&e));
    store_options opt = {.path = KV_PATH, .vfs = KV_SQL_VFS, .sync = STORE_SYNC_FULL,
                         .reserve_bytes = KCKSUM_RESERVE, .cache_kib = 64};
    char err[STORE_ERR_SIZE];
    s = store_open(&opt, &info, err, sizeof err);
    CHECK(s != NULL && !info.check_failed);
    /* the disk goes bad under the open store: a byte in every page but the
     * first, past the 64 KiB the page cache keeps */
    uint8_t *d = region_data(&e, KVFS_DB);
    struct pagesum_db db;
    char why[80];
    CHECK_EQ(pagesum_db_parse(d, PAGESUM_DB_HEADER, &db, why, sizeof why), 0);
    CHECK(db.pages > 40);
    for (uint32_t p = 1; p < db.pages; p++)
        d[(size_t)p * db.page_size + db.page_size / 2] ^= 0x08;
    store_rc rc = STORE_OK;
    for (uint32_t n = 1; n <= 200 && rc == STORE_OK; n += 7)
        rc = put(s, n, 10); /* updates: each reads its leaf page */
    const char *text = NULL;
    CHECK(rc != STORE_OK);
    CHECK_EQ(store_last_error(s, &text), SQLITE_IOERR_DATA);
    store_close(s);
    kv_teardown(&e);
}

TEST(pagesum_agrees_with_cksumvfs_and_rejects_any_flipped_bit)
{
    uint8_t page[1024];

    for (size_t i = 0; i < sizeof page; i++)
        page[i] = (uint8_t)(i * 13 + 5);
    pagesum_compute(page, sizeof page - 8, page + sizeof page - 8);
    CHECK(pagesum_page_ok(page, sizeof page));
    for (size_t bit = 0; bit < sizeof page * 8; bit += 7) {
        page[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        CHECK(!pagesum_page_ok(page, sizeof page));
        page[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    CHECK(!pagesum_page_ok(page, 1000)); /* not a page size */
    /* cksumvfs's own verdict: its verify_checksum() SQL function */
    CHECK_EQ(sqlite3_register_cksumvfs(NULL), SQLITE_OK);
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    CHECK_EQ(sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    CHECK_EQ(sqlite3_prepare_v2(db, "SELECT verify_checksum(?1)", -1, &st, NULL), SQLITE_OK);
    for (int flip = 0; flip < 2; flip++) {
        page[300] ^= (uint8_t)flip;
        sqlite3_bind_blob(st, 1, page, sizeof page, SQLITE_STATIC);
        CHECK_EQ(sqlite3_step(st), SQLITE_ROW);
        CHECK_EQ(sqlite3_column_int(st, 0), pagesum_page_ok(page, sizeof page) ? 1 : 0);
        CHECK_EQ(sqlite3_column_int(st, 0), flip ? 0 : 1);
        sqlite3_reset(st);
        page[300] ^= (uint8_t)flip;
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    (void)sqlite3_unregister_cksumvfs();
}

TEST(pagesum_db_and_wal_headers_refuse_truncated_and_corrupt_input)
{
    uint8_t h[100] = "SQLite format 3";
    struct pagesum_db db;
    struct pagesum_wal_hdr w;
    char why[80];

    h[16] = 0x10; /* 4096 */
    h[20] = 8;
    CHECK_EQ(pagesum_db_parse(h, sizeof h, &db, why, sizeof why), 0);
    CHECK_EQ(db.page_size, 4096);
    CHECK_EQ(pagesum_db_parse(h, 99, &db, why, sizeof why), -1);
    h[16] = 0x11; /* 4352: not a power of two */
    CHECK_EQ(pagesum_db_parse(h, sizeof h, &db, why, sizeof why), -1);
    CHECK(strstr(why, "page size"));
    uint8_t wh[32] = {0x37, 0x7f, 0x06, 0x82, 0x00, 0x2d, 0xe2, 0x18, 0, 0, 0x10, 0};
    uint32_t s[2] = {0, 0};
    pagesum_wal(false, wh, 24, s);
    for (int i = 0; i < 4; i++) {
        wh[24 + i] = (uint8_t)(s[0] >> (24 - 8 * i));
        wh[28 + i] = (uint8_t)(s[1] >> (24 - 8 * i));
    }
    CHECK_EQ(pagesum_wal_parse(wh, sizeof wh, &w, why, sizeof why), 0);
    CHECK_EQ(pagesum_wal_parse(wh, 31, &w, why, sizeof why), -1);
    wh[13] ^= 1;
    CHECK_EQ(pagesum_wal_parse(wh, sizeof wh, &w, why, sizeof why), -2);
    CHECK(strstr(why, "checksum"));
}
