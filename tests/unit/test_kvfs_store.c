/*
 * test_kvfs_store.c - the daemon's store (src/store), unchanged, through
 * the kernel's VFS on the fake disk: commits survive a remount; power cuts
 * at random requests (many seeds, several cuts each, unflushed writes kept,
 * lost or torn) never lose an acknowledged commit and always leave a
 * database that opens and passes integrity_check; disk errors and a full
 * log region fail only their group (STORE_EIO, STORE_EFULL) and the store
 * goes on, a log region that filled up is checkpointed so the next group
 * commits; backups alternate between the backup regions and a damaged
 * database is restored from the newest, also when a power cut interrupted
 * the latest copy.
 */
#include "test.h"
#include "test_kvfs_util.h"
#include "test_store_util.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

enum { MIB_BYTES = 1024 * 1024 };

/* Open the store; a failure is said on stderr unless quiet (an open the
 * test cuts short on purpose). */
static store *open_store_q(store_open_info *info, bool quiet)
{
    store_options opt = {
        .path = KV_PATH, .vfs = KV_SQL_VFS, .sync = STORE_SYNC_FULL, .reserve_bytes = 8};
    char err[STORE_ERR_SIZE];
    store *s = store_open(&opt, info, err, sizeof err);

    if (s == NULL && (!quiet || getenv("KV_DEBUG")))
        fprintf(stderr, "  store_open: %s\n", err);
    return s;
}

static store *open_store(store_open_info *info)
{
    return open_store_q(info, false);
}

/* One batch setting topic "t/<n>" (payload n, padded) and "last" to n. */
static store_rc put(store *s, uint32_t n, size_t pad)
{
    char topic[32], payload[4096];
    broker_store_batch b;
    jb j;

    if (pad >= sizeof payload - 16)
        pad = sizeof payload - 16;
    snprintf(topic, sizeof topic, "t/%u", n);
    size_t len = (size_t)snprintf(payload, sizeof payload, "%u", n);

    memset(payload + len, 'x', pad);
    payload[len + pad] = '\0';
    jb_init(&j, n);
    jb_retain_set(&j, topic, payload, 1);
    snprintf(payload, sizeof payload, "%u", n);
    jb_retain_set(&j, "last", payload, 1);
    b = jb_batch(&j);
    store_rc rc = store_apply(s, &b, 1);
    if (rc != STORE_OK && getenv("KV_DEBUG")) {
        const char *t;
        int code = store_last_error(s, &t);
        fprintf(stderr, "  put %u: %d %s\n", n, code, t);
    }
    return rc;
}

static int64_t has(uint32_t n)
{
    char sql[128];

    snprintf(sql, sizeof sql, "SELECT count(*) FROM retained WHERE topic = CAST('t/%u' AS BLOB)", n);
    return kv_query(KV_PATH, sql);
}

static int64_t last_value(void)
{
    return kv_query(KV_PATH, "SELECT CAST(CAST(payload AS TEXT) AS INTEGER) FROM retained "
                             "WHERE topic = CAST('last' AS BLOB)");
}

TEST(kvfs_store_commits_survive_remount)
{
    kv_env e;
    store_open_info info;
    store *s;

    CHECK(kv_setup(&e, 512, 4096, 6 * 1024, 11));
    s = open_store(&info);
    CHECK(s != NULL && info.created);
    for (uint32_t n = 1; n <= 60; n++)
        CHECK_EQ(put(s, n, n * 37 % 3000), STORE_OK);
    store_close(s);
    CHECK(kv_remount(&e));
    s = open_store(&info);
    CHECK(s != NULL && !info.created && !info.check_failed);
    store_close(s);
    CHECK_EQ(kv_query(KV_PATH, "SELECT count(*) FROM retained"), 61);
    CHECK_EQ(last_value(), 60);
    CHECK(kv_integrity_ok(KV_PATH));
    CHECK_EQ(e.disk.partial_block_writes, 0);
    kv_teardown(&e);
}

/* A database region the layout grew in place (disk/grow.h: same start,
 * more blocks) opens with its data, fills past its old end, and its
 * header then names the new length: a region shrunk back to the old
 * length is refused as another region's. */
TEST(kvfs_store_database_region_grown_in_place_keeps_its_data)
{
    kv_env e;
    store_open_info info;
    store *s;
    const uint64_t per_mib = MIB_BYTES / 512;

    CHECK(kv_setup(&e, 512, 4096, 6 * 1024, 21));
    const struct kvfs_region full = e.cfg.region[KVFS_DB];
    e.cfg.region[KVFS_DB].blocks = 2 * per_mib;       /* the layout before growth */
    CHECK(kv_remount(&e));
    s = open_store(&info);
    CHECK(s != NULL && info.created);
    uint32_t n = 1;
    while (n <= 2000 && put(s, n, 3000) == STORE_OK)
        n++;
    CHECK(n < 2000);                                  /* 2 MiB filled up */
    store_close(s);
    uint32_t stored = n - 1;

    e.cfg.region[KVFS_DB] = full;                     /* grown: same start, 8 MiB */
    CHECK(kv_remount(&e));
    s = open_store(&info);
    CHECK(s != NULL && !info.created && !info.check_failed);
    for (uint32_t k = 0; k < 400; k++)
        CHECK_EQ(put(s, stored + 1 + k, 3000), STORE_OK);
    store_close(s);
    CHECK_EQ(has(1), 1);
    CHECK_EQ(last_value(), stored + 400);
    CHECK(kv_integrity_ok(KV_PATH));

    e.cfg.region[KVFS_DB].blocks = 2 * per_mib;       /* shrunk back: refused */
    CHECK(!kv_remount(&e));
    CHECK(strstr(e.err, "another region") != NULL);
    kv_teardown(&e);
}

/* The grown layout's backups move past the old ones (23 and 27 MiB), their
 * headers zeroed first as disk/grow.c does. */
static void move_backups_past_the_old_ones(kv_env *e, struct kvfs_region *grown)
{
    const uint64_t per_mib = MIB_BYTES / 512;
    grown[KVFS_BACKUP_A].lba = 23 * per_mib;
    grown[KVFS_BACKUP_B].lba = 27 * per_mib;
    for (int r = KVFS_BACKUP_A; r <= KVFS_BACKUP_B; r++) {
        size_t off = (size_t)grown[r].lba * 512;
        memset(e->disk.durable + off, 0, 8192);
        memset(e->disk.cur + off, 0, 8192);
    }
}

/* While the store is open (its database file open, no backup copy), the
 * VFS takes a grown layout (kvfs_set_regions, as the kernel's live disk
 * growth does): the database region grows in place and keeps its data,
 * the backups move to freshly zeroed places and fill there; what the VFS
 * would have to shrink, or move while open, is refused. */
TEST(kvfs_store_takes_grown_regions_while_open)
{
    kv_env e;
    store_open_info info;
    store *s;
    char err[160];
    const uint64_t per_mib = MIB_BYTES / 512;

    CHECK(kv_setup(&e, 512, 4096, 6 * 1024, 23));
    struct kvfs_region grown[KVFS_ROLES];
    memcpy(grown, e.cfg.region, sizeof grown);
    e.cfg.region[KVFS_DB].blocks = 2 * per_mib;       /* before the growth */
    CHECK(kv_remount(&e));
    s = open_store(&info);
    CHECK(s != NULL && info.created);
    uint32_t n = 1;
    for (; n <= 100; n++)
        CHECK_EQ(put(s, n, 3000), STORE_OK);
    CHECK_EQ(store_backup_run(s), STORE_OK);
    move_backups_past_the_old_ones(&e, grown);
    struct kvfs_region shrunk[KVFS_ROLES];
    memcpy(shrunk, grown, sizeof shrunk);
    shrunk[KVFS_DB].blocks = per_mib;
    CHECK_EQ(kvfs_set_regions(e.fs, shrunk, err, sizeof err), -1);
    CHECK(strstr(err, "cannot shrink") != NULL);
    CHECK_EQ(kvfs_set_regions(e.fs, grown, err, sizeof err), 0);
    for (; n <= 700; n++)                             /* past the old 2 MiB */
        CHECK_EQ(put(s, n, 3000), STORE_OK);
    CHECK_EQ(store_backup_run(s), STORE_OK);
    struct kvfs_stats st;
    kvfs_get_stats(e.fs, &st);
    CHECK(st.logical_size[KVFS_DB] > 2 * MIB_BYTES);
    CHECK(st.logical_size[KVFS_BACKUP_A] > 0 || st.logical_size[KVFS_BACKUP_B] > 0);
    store_close(s);
    memcpy(e.cfg.region, grown, sizeof grown);
    CHECK(kv_remount(&e));
    s = open_store(&info);
    CHECK(s != NULL && !info.created && !info.check_failed);
    store_close(s);
    CHECK_EQ(has(1), 1);
    CHECK_EQ(last_value(), 700);
    CHECK(kv_integrity_ok(KV_PATH));
    CHECK(kv_integrity_ok(KV_PATH ".bak-a") || kv_integrity_ok(KV_PATH ".bak-b"));
    kv_teardown(&e);
}

/* The store's page bound (store_options.max_db_bytes, the database region's
 * size in the kernel) follows a region grown while open
 * (store_set_max_db_bytes, as kdisk_store.c's live growth calls it): before
 * it, commits past the old region fail with no room; after it, they fit. */
TEST(kvfs_store_page_bound_follows_a_database_region_grown_while_open)
{
    kv_env e;
    store_open_info info;
    char err[STORE_ERR_SIZE];
    const uint64_t per_mib = MIB_BYTES / 512;

    CHECK(kv_setup(&e, 512, 4096, 6 * 1024, 23));
    struct kvfs_region grown[KVFS_ROLES];
    memcpy(grown, e.cfg.region, sizeof grown);
    e.cfg.region[KVFS_DB].blocks = 2 * per_mib;
    CHECK(kv_remount(&e));
    struct kvfs_stats st;
    kvfs_get_stats(e.fs, &st);
    store_options opt = {.path = KV_PATH, .vfs = KV_SQL_VFS, .sync = STORE_SYNC_FULL,
                         .reserve_bytes = 8, .max_db_bytes = st.capacity[KVFS_DB]};
    store *s = store_open(&opt, &info, err, sizeof err);
    CHECK(s != NULL);
    uint32_t n = 1;
    store_rc rc = STORE_OK;
    for (; n <= 1000 && rc == STORE_OK; n++)
        rc = put(s, n, 3000);
    CHECK(rc != STORE_OK); /* the 2 MiB region is full */
    move_backups_past_the_old_ones(&e, grown);
    CHECK_EQ(kvfs_set_regions(e.fs, grown, err, sizeof err), 0);
    kvfs_get_stats(e.fs, &st);
    CHECK(st.capacity[KVFS_DB] > 4 * MIB_BYTES);
    CHECK_EQ(store_set_max_db_bytes(s, st.capacity[KVFS_DB]), STORE_OK);
    for (uint32_t k = 0; k < 200; k++, n++)
        CHECK_EQ(put(s, n, 3000), STORE_OK);
    store_close(s);
    CHECK(kv_integrity_ok(KV_PATH));
    kv_teardown(&e);
}

/* Seeds x cuts: commit until the power goes at a random request, cut,
 * remount, reopen; everything acknowledged must be there. Backups run now
 * and then, so cuts also land inside copies. */
static bool powercut_seed(uint64_t seed, uint32_t lb, uint32_t pb, uint64_t *cuts_done)
{
    kv_env e;
    store_open_info info;
    store *s = NULL;
    uint32_t acked = 0, next = 1;
    uint64_t r = seed * 0x9E3779B97F4A7C15ull + 1;
    bool ok = false;

    if (!kv_setup(&e, lb, pb, 6 * 1024, seed))
        return false;
    for (int cut = 0; cut < 4; cut++) {
        s = open_store(&info);
        if (s == NULL)
            goto out;
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        e.disk.die_nth = 1 + (r >> 33) % 400;
        while (!e.disk.dead) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            if ((r >> 40) % 16 == 0 && !store_backup_running(s))
                (void)store_backup_begin(s);
            if (store_backup_running(s)) {
                bool done;
                (void)store_backup_step(s, &done);
            }
            if (put(s, next, (size_t)((r >> 20) % 3000)) == STORE_OK)
                acked = next;
            else if (!e.disk.dead)
                goto out; /* a failure that is not the power cut */
            next++;
        }
        store_close(s);
        s = NULL;
        fake_blk_cut(&e.disk);
        (*cuts_done)++;
        if (!kv_remount(&e))
            goto out;
        /* the store must open (recovering the WAL), and hold every
         * acknowledged commit; 'last' is the last acknowledged one or the
         * one in flight when the power went */
        s = open_store(&info);
        if (s == NULL)
            goto out;
        store_close(s);
        s = NULL;
        for (uint32_t n = 1; n <= acked; n++)
            if (has(n) != 1) {
                fprintf(stderr, "  seed %llu cut %d: acknowledged t/%u missing\n",
                        (unsigned long long)seed, cut, n);
                goto out;
            }
        int64_t last = last_value();
        if (!kv_integrity_ok(KV_PATH) || (acked > 0 && last != acked && last != acked + 1)) {
            fprintf(stderr, "  seed %llu cut %d: last %lld, acked %u\n",
                    (unsigned long long)seed, cut, (long long)last, acked);
            goto out;
        }
        /* what was not acknowledged may be there; number on past it */
        next = (uint32_t)(last > 0 ? last : 0) + 1;
        if (next <= acked)
            next = acked + 1;
    }
    ok = e.disk.partial_block_writes == 0;
    if (getenv("KV_DEBUG"))
        fprintf(stderr, "  seed %llu: acked %u, cuts %llu, unflushed writes kept %llu, lost "
                "%llu, torn %llu\n", (unsigned long long)seed, acked,
                (unsigned long long)e.disk.cuts, (unsigned long long)e.disk.kept_writes,
                (unsigned long long)e.disk.lost_writes, (unsigned long long)e.disk.torn_writes);
out:
    store_close(s);
    kv_teardown(&e);
    return ok;
}

TEST(kvfs_store_power_cuts_keep_every_acknowledged_commit)
{
    uint64_t cuts = 0;

    for (uint64_t seed = 1; seed <= 12; seed++) {
        if (!powercut_seed(seed, 512, 4096, &cuts)) {
            fprintf(stderr, "  seed %llu (512/4096)\n", (unsigned long long)seed);
            CHECK(false);
        }
    }
    for (uint64_t seed = 100; seed <= 103; seed++)
        CHECK(powercut_seed(seed, 4096, 4096, &cuts));
    CHECK_EQ(cuts, 16 * 4);
}

TEST(kvfs_store_disk_errors_and_full_log_fail_only_their_group)
{
    kv_env e;
    store_open_info info;
    broker_store_batch b[40];
    jb *j = calloc(40, sizeof *j);
    char payload[15000];
    store *s;

    CHECK(kv_setup(&e, 512, 4096, 256, 12));
    s = open_store(&info);
    CHECK(s != NULL);
    CHECK_EQ(put(s, 1, 10), STORE_OK);
    e.disk.fail_write_nth = 1;
    CHECK_EQ(put(s, 2, 10), STORE_EIO);
    CHECK_EQ(put(s, 3, 10), STORE_OK);
    e.disk.fail_flush_nth = 1;
    CHECK_EQ(put(s, 4, 10), STORE_EIO);
    CHECK_EQ(put(s, 5, 10), STORE_OK);
    /* one group larger than the 256 KiB log region */
    memset(payload, 'y', sizeof payload - 1);
    payload[sizeof payload - 1] = '\0';
    for (int i = 0; i < 40; i++) {
        char topic[32];

        snprintf(topic, sizeof topic, "big/%d", i);
        jb_init(&j[i], (uint64_t)(100 + i));
        jb_retain_set(&j[i], topic, payload, 1);
        b[i] = jb_batch(&j[i]);
    }
    CHECK_EQ(store_apply(s, b, 40), STORE_EFULL);
    CHECK_EQ(put(s, 6, 10), STORE_OK);
    store_close(s);
    free(j);
    CHECK_EQ(has(1) + has(3) + has(5) + has(6), 4);
    CHECK_EQ(has(2) + has(4), 0);
    CHECK_EQ(kv_query(KV_PATH, "SELECT count(*) FROM retained WHERE topic LIKE 'big/%'"), 0);
    CHECK(kv_integrity_ok(KV_PATH));
    kv_teardown(&e);
}

/* A log region of 1 MiB, far below SQLite's auto-checkpoint: a group
 * that finds the region full fails, the store checkpoints, and the next
 * group (small, or the same large one again) succeeds. */
TEST(kvfs_store_full_log_region_is_checkpointed_so_the_next_group_commits)
{
    enum { LOG_KIB = 1024 };
    kv_env e;
    store_open_info info;
    ts_full_log r;
    store_stats st;
    store *s;

    CHECK(kv_setup(&e, 512, 4096, LOG_KIB, 14));
    s = open_store(&info);
    CHECK(s != NULL);
    CHECK(ts_full_log_run(s, LOG_KIB * 1024, &r));
    store_get_stats(s, &st);
    CHECK_EQ(st.full_log_checkpoints, r.small_full + r.big_full);
    store_close(s);
    CHECK(kv_integrity_ok(KV_PATH));
    CHECK_EQ(kv_query(KV_PATH, "SELECT count(*) FROM retained WHERE topic LIKE 'f/%'"),
             r.small_ok);
    CHECK_EQ(kv_query(KV_PATH, "SELECT count(*) FROM retained WHERE topic LIKE 'big/%'"),
             (int64_t)r.big_ok * (LOG_KIB * 1024 * 6 / 10 / 10000));
    CHECK_EQ(e.disk.partial_block_writes, 0);
    kv_teardown(&e);
}

/* The failing disk, then a power cut: a commit acknowledged after a
 * failed one is on the disk. (The failed group's write held the tail of
 * the previous commit's padding frame: losing it broke the WAL's checksum
 * chain before the next commit, which recovery then dropped.) */
TEST(kvfs_store_commit_after_a_failed_write_survives_a_power_cut)
{
    for (uint64_t seed = 20; seed < 36; seed++) {
        kv_env e;
        store_open_info info;
        store *s;

        CHECK(kv_setup(&e, 512, 4096, 6 * 1024, seed));
        s = open_store(&info);
        CHECK(s != NULL);
        for (uint32_t n = 1; n <= 3; n++)
            CHECK_EQ(put(s, n, (size_t)(seed - 20) * 37), STORE_OK);
        e.disk.fail_write_nth = 1;
        CHECK_EQ(put(s, 4, 10), STORE_EIO);
        CHECK_EQ(put(s, 5, 10), STORE_OK);
        e.disk.fail_writes = true; /* the power goes: nothing written after it */
        e.disk.fail_flushes = true;
        store_close(s);
        fake_blk_cut(&e.disk);
        e.disk.fail_writes = e.disk.fail_flushes = false;
        CHECK(kv_remount(&e));
        s = open_store(&info);
        CHECK(s != NULL && !info.check_failed);
        store_close(s);
        CHECK_EQ(has(1) + has(2) + has(3) + has(5), 4);
        CHECK_EQ(has(4), 0);
        CHECK_EQ(last_value(), 5);
        CHECK(kv_integrity_ok(KV_PATH));
        kv_teardown(&e);
    }
}

/* Overwrite the database region's data with garbage, on the disk. */
static void damage_db(kv_env *e)
{
    const struct kvfs_region *r = &e->cfg.region[KVFS_DB];
    uint32_t lb = e->disk.dev.topo.logical_block;
    uint64_t skip = 2 * e->disk.dev.topo.physical_block; /* keep the headers */

    for (uint64_t i = skip; i < skip + 64 * 1024; i++) {
        e->disk.durable[r->lba * lb + i] = (uint8_t)(i * 7 + 1);
        e->disk.cur[r->lba * lb + i] = (uint8_t)(i * 7 + 1);
    }
}

TEST(kvfs_store_backups_alternate_and_restore_the_newest_after_damage)
{
    kv_env e;
    store_open_info info;
    store *s;
    bool done = false;

    CHECK(kv_setup(&e, 512, 4096, 6 * 1024, 13));
    s = open_store(&info);
    CHECK(s != NULL);
    for (uint32_t n = 1; n <= 20; n++)
        CHECK_EQ(put(s, n, 2000), STORE_OK);
    CHECK_EQ(store_backup_run(s), STORE_OK); /* generation 1 into a */
    for (uint32_t n = 21; n <= 40; n++)
        CHECK_EQ(put(s, n, 2000), STORE_OK);
    CHECK_EQ(store_backup_run(s), STORE_OK); /* generation 2 into b */
    for (uint32_t n = 41; n <= 50; n++)
        CHECK_EQ(put(s, n, 2000), STORE_OK);
    /* a third copy (into a) cut by the power halfway */
    CHECK_EQ(store_backup_begin(s), STORE_OK);
    CHECK_EQ(store_backup_step(s, &done), STORE_OK);
    CHECK(!done);
    e.disk.die_nth = 3;
    (void)store_backup_step(s, &done);
    (void)put(s, 51, 10);
    store_close(s);
    fake_blk_cut(&e.disk);
    damage_db(&e);
    CHECK(kv_remount(&e));
    s = open_store(&info);
    CHECK(s != NULL);
    CHECK(info.check_failed && info.restored);
    CHECK_EQ(info.restored_from, 'b');
    store_close(s);
    CHECK_EQ(has(40), 1);
    CHECK_EQ(has(41), 0);
    CHECK(kv_integrity_ok(KV_PATH));
    /* and a fresh copy after the restore goes to the emptied slot a */
    s = open_store(&info);
    CHECK(s != NULL && !info.restored);
    CHECK_EQ(store_backup_run(s), STORE_OK);
    store_close(s);
    CHECK_EQ(kv_query(KV_PATH ".bak-a", "SELECT count(*) FROM retained"), 41);
    CHECK(kv_integrity_ok(KV_PATH ".bak-a"));
    kv_teardown(&e);
}

/* The power goes at every device request of a restore in turn (the
 * database damaged, two backups): whatever the cut leaves - the database
 * still damaged, or emptied by the restore's first steps - the next boot
 * restores the newest backup again instead of starting a new store. */
TEST(kvfs_store_power_cut_during_a_restore_is_restored_at_the_next_boot)
{
    kv_env e;
    store_open_info info;
    store *s;
    uint8_t *snap;
    size_t bytes;
    int empties = 0, cuts = 0;

    CHECK(kv_setup(&e, 512, 4096, 6 * 1024, 15));
    s = open_store(&info);
    CHECK(s != NULL);
    for (uint32_t n = 1; n <= 20; n++)
        CHECK_EQ(put(s, n, 2000), STORE_OK);
    CHECK_EQ(store_backup_run(s), STORE_OK);
    for (uint32_t n = 21; n <= 40; n++)
        CHECK_EQ(put(s, n, 2000), STORE_OK);
    CHECK_EQ(store_backup_run(s), STORE_OK); /* b holds 1..40 */
    CHECK_EQ(put(s, 41, 2000), STORE_OK);
    store_close(s);
    fake_blk_cut(&e.disk);
    damage_db(&e);
    bytes = (size_t)(e.disk.dev.topo.capacity * e.disk.dev.topo.logical_block);
    snap = malloc(bytes);
    CHECK(snap != NULL);
    memcpy(snap, e.disk.durable, bytes);
    for (uint64_t die = 1; die < 100000; die++) {
        memcpy(e.disk.durable, snap, bytes);
        memcpy(e.disk.cur, snap, bytes);
        if (!kv_remount(&e))
            break;
        e.disk.die_nth = die;
        e.log[0] = '\0';
        s = open_store_q(&info, true);
        if (!e.disk.dead) {
            /* the restore ran to its end before the power went */
            if (s == NULL || !info.restored)
                break;
            store_close(s);
            s = NULL;
            empties = -empties - 1; /* mark: finished */
            break;
        }
        store_close(s);
        s = NULL;
        fake_blk_cut(&e.disk);
        cuts++;
        e.log[0] = '\0';
        if (!kv_remount(&e))
            break;
        /* restored again, or complete: the cut came after the copy's
         * commit */
        s = open_store(&info);
        if (s == NULL || info.created) {
            fprintf(stderr, "  power cut at request %llu: %s\n", (unsigned long long)die,
                    s == NULL ? "does not open" : "opens as a new store");
            if (getenv("KV_DEBUG"))
                fprintf(stderr, "%s", e.log);
            break;
        }
        empties += info.found_empty;
        store_close(s);
        s = NULL;
        if (has(40) != 1 || has(41) != 0 || !kv_integrity_ok(KV_PATH)) {
            fprintf(stderr, "  power cut at request %llu: wrong content\n",
                    (unsigned long long)die);
            break;
        }
    }
    free(snap);
    store_close(s);
    kv_teardown(&e);
    if (getenv("KV_DEBUG"))
        fprintf(stderr, "  %d cuts, %d left the database empty\n", cuts, -empties - 1);
    CHECK(empties < 0);      /* ran to a restore the power did not cut */
    CHECK(-empties - 1 > 0); /* some cuts left the database empty */
    CHECK(cuts > 10);
}
