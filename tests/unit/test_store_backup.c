/*
 * test_store_backup.c - the A/B backup copies (SPEC D5): alternation by
 * generation, copies made in small steps while commits go on, and the
 * restore of the newest valid copy when the database fails its check.
 */
#define _POSIX_C_SOURCE 200809L

#include "test.h"
#include "test_store_util.h"

#include <fcntl.h>
#include <unistd.h>

static char *bak(const ts_env *e, char slot, char *buf, size_t n)
{
    snprintf(buf, n, "%s.bak-%c", e->path, slot);
    return buf;
}

static int64_t gen_of(const char *path)
{
    return ts_query(path, "SELECT value FROM meta WHERE key = 'backup_gen'");
}

static bool add_retained(ts_env *e, uint64_t seq, int count)
{
    jb j;
    broker_store_batch b;

    jb_init(&j, seq);
    for (int i = 0; i < count; i++) {
        char topic[32];

        snprintf(topic, sizeof topic, "t/%llu/%d", (unsigned long long)seq, i);
        jb_retain_set(&j, topic, "0123456789012345678901234567890123456789", 1);
    }
    b = jb_batch(&j);
    return store_apply(e->s, &b, 1) == STORE_OK;
}

/* Overwrite the middle of the file so that quick_check fails. The WAL a
 * clean close leaves behind holds copies of recently written pages (all
 * already in the file), which would mask the damage: remove it. */
static bool damage(const char *path)
{
    char junk[4096], wal[200];
    int fd;
    bool ok;

    snprintf(wal, sizeof wal, "%s-wal", path);
    (void)unlink(wal);
    fd = open(path, O_WRONLY);
    if (fd < 0)
        return false;
    memset(junk, 0x5a, sizeof junk);
    ok = pwrite(fd, junk, sizeof junk, 4096 * 2) == (ssize_t)sizeof junk;
    return close(fd) == 0 && ok;
}

TEST(store_backups_alternate_between_two_slots_by_generation)
{
    ts_env e;
    char a[160], b[160];
    store_stats st;

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    CHECK(add_retained(&e, 1, 3));
    CHECK_EQ(store_backup_run(e.s), STORE_OK);
    CHECK(add_retained(&e, 2, 3));
    CHECK_EQ(store_backup_run(e.s), STORE_OK);
    CHECK(add_retained(&e, 3, 3));
    CHECK_EQ(store_backup_run(e.s), STORE_OK);
    store_get_stats(e.s, &st);
    CHECK_EQ(st.backups_done, 3);
    ts_close(&e);
    bak(&e, 'a', a, sizeof a);
    bak(&e, 'b', b, sizeof b);
    CHECK_EQ(gen_of(a), 3); /* 1 was overwritten by 3 */
    CHECK_EQ(gen_of(b), 2);
    CHECK_EQ(ts_query(a, "SELECT count(*) FROM retained"), 9);
    CHECK_EQ(ts_query(b, "SELECT count(*) FROM retained"), 6);
    CHECK(ts_integrity_ok(a));
    ts_cleanup(&e);
}

TEST(store_backup_in_small_steps_includes_commits_made_during_the_copy)
{
    ts_env e;
    char a[160];
    bool done = false;
    int steps = 0;
    uint64_t seq = 100;

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    for (uint64_t i = 1; i <= 40; i++)
        CHECK(add_retained(&e, i, 100)); /* ~70 pages: several steps of 16 */
    CHECK_EQ(store_backup_begin(&*e.s), STORE_OK);
    CHECK(store_backup_running(e.s));
    while (!done) {
        CHECK_EQ(store_backup_step(e.s, &done), STORE_OK);
        CHECK(add_retained(&e, seq++, 5)); /* commits between steps */
        steps++;
        CHECK(steps < 1000);
    }
    CHECK(steps > 2);
    CHECK(!store_backup_running(e.s));
    ts_close(&e);
    bak(&e, 'a', a, sizeof a);
    CHECK(ts_integrity_ok(a));
    /* Everything committed up to the last step, at least. */
    CHECK(ts_query(a, "SELECT count(*) FROM retained") >= 40 * 100 + (steps - 1) * 5);
    ts_cleanup(&e);
}

TEST(store_damaged_database_is_replaced_by_the_newest_valid_backup)
{
    ts_env e;
    char b[160];

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    for (uint64_t i = 1; i <= 10; i++)
        CHECK(add_retained(&e, i, 20));
    CHECK_EQ(store_backup_run(e.s), STORE_OK); /* a: 200 rows */
    CHECK(add_retained(&e, 11, 20));
    CHECK_EQ(store_backup_run(e.s), STORE_OK); /* b: 220 rows */
    CHECK(add_retained(&e, 12, 20));          /* lost with the damage */
    ts_close(&e);
    CHECK(damage(e.path));
    CHECK(ts_open(&e, false));
    CHECK(e.info.check_failed);
    CHECK(e.info.restored);
    CHECK_EQ(e.info.restored_from, 'b');
    CHECK(add_retained(&e, 13, 1)); /* and it works */
    ts_close(&e);
    CHECK(ts_integrity_ok(e.path));
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM retained"), 221);

    /* With b damaged too, the older valid copy is used. */
    CHECK(damage(e.path));
    CHECK(damage(bak(&e, 'b', b, sizeof b)));
    CHECK(ts_open(&e, false));
    CHECK_EQ(e.info.restored_from, 'a');
    ts_close(&e);
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM retained"), 200);
    ts_cleanup(&e);
}

TEST(store_damaged_database_without_valid_backup_is_refused_untouched)
{
    ts_env e;

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    for (uint64_t i = 1; i <= 10; i++)
        CHECK(add_retained(&e, i, 20));
    ts_close(&e);
    CHECK(damage(e.path));
    CHECK(!ts_open(&e, false));
    CHECK(strstr(e.err, "no backup passes its check") != NULL);
    CHECK(access(e.path, F_OK) == 0); /* left for the operator */
    ts_cleanup(&e);
}

/* Ten groups of 20 retained messages, backed up into a (200 rows), one more
 * group backed up into b (220 rows), and one that no backup holds. */
static bool two_backups(ts_env *e)
{
    for (uint64_t i = 1; i <= 10; i++)
        if (!add_retained(e, i, 20))
            return false;
    if (store_backup_run(e->s) != STORE_OK || !add_retained(e, 11, 20) ||
        store_backup_run(e->s) != STORE_OK || !add_retained(e, 12, 20))
        return false;
    ts_close(e);
    return true;
}

/* Empty the database file the way a restore cut short leaves it. */
static bool empty_file(const char *path)
{
    char wal[200];

    snprintf(wal, sizeof wal, "%s-wal", path);
    (void)unlink(wal);
    return truncate(path, 0) == 0;
}

/* The data-loss hole of a restore cut short: the main file is empty (or
 * gone), which must not be taken for a new store while a backup holds a
 * valid copy (the next backups would overwrite both slots with copies of
 * nothing): the newest valid copy replaces it, and open says so. */
TEST(store_empty_database_with_a_valid_backup_is_restored_not_recreated)
{
    ts_env e;
    store_stats st;

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    CHECK(two_backups(&e));
    CHECK(empty_file(e.path));
    CHECK(ts_open(&e, false));
    CHECK(e.info.found_empty && e.info.restored && !e.info.created && !e.info.check_failed);
    CHECK_EQ(e.info.restored_from, 'b');
    store_get_stats(e.s, &st);
    CHECK(st.restored_at_open);
    CHECK(ts_log_count(&e, "is empty but a backup holds a valid copy") == 1);
    ts_close(&e);
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM retained"), 220);

    /* A missing file is the same case. */
    CHECK(unlink(e.path) == 0);
    CHECK(ts_open(&e, false));
    CHECK(e.info.found_empty && e.info.restored);
    ts_close(&e);
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM retained"), 220);
    ts_cleanup(&e);
}

/* Restores that fail at every write in turn (the fault VFS: a disk error
 * or a crash in the middle): the next open restores again and finds
 * everything the newest backup holds, whether the failure left the main
 * file damaged or empty. */
TEST(store_restore_cut_short_at_any_write_is_restored_at_the_next_open)
{
    ts_env e;
    bool hit = true;
    int empties = 0;

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, true));
    CHECK(two_backups(&e));
    for (uint32_t n = 1; hit && n < 200; n++) {
        uint64_t before = store_fault_injected(e.fault);
        bool opened;

        CHECK(damage(e.path));
        store_fault_fail_nth(e.fault, STORE_FAULT_WRITE, n, STORE_FAULT_CODE_IO);
        opened = ts_open(&e, true);
        store_fault_fail_nth(e.fault, STORE_FAULT_WRITE, 0, 0);
        hit = store_fault_injected(e.fault) > before;
        if (opened) {
            CHECK(e.info.check_failed && e.info.restored);
            ts_close(&e);
        } else {
            CHECK(hit);
            CHECK(ts_open(&e, true));
            CHECK(e.info.restored && !e.info.created);
            empties += e.info.found_empty;
            ts_close(&e);
        }
        CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM retained"), 220);
    }
    CHECK(!hit);      /* ran past the restore's last write */
    CHECK(empties > 0); /* and some failures left the file empty */
    ts_cleanup(&e);
}

/* The new-store case is unchanged: an empty file whose backup slots hold
 * nothing valid (here: text) is created, not restored. */
TEST(store_empty_database_without_a_valid_backup_is_a_new_store)
{
    ts_env e;
    char a[160];
    FILE *f;

    CHECK(ts_init(&e));
    f = fopen(bak(&e, 'a', a, sizeof a), "w");
    CHECK(f != NULL);
    CHECK(fputs("not a database\n", f) >= 0 && fclose(f) == 0);
    f = fopen(e.path, "w");
    CHECK(f != NULL && fclose(f) == 0);
    CHECK(ts_open(&e, false));
    CHECK(e.info.created && !e.info.restored && !e.info.found_empty && !e.info.check_failed);
    ts_cleanup(&e);
}
