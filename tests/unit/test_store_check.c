/*
 * test_store_check.c - store_check(), the read-only look `ternd --check`
 * takes at a database: it accepts what store_open() accepts as it is (a
 * tern database, an empty file), refuses what store_open() refuses, and
 * creates, locks and changes nothing.
 */
#define _POSIX_C_SOURCE 200809L

#include "test.h"
#include "test_store_util.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a check must leave alone: the database's and its WAL's size and
 * mtime, and the absence of -shm and -journal files. */
typedef struct file_state {
    struct stat db, wal;
    bool has_wal;
} file_state;

static bool exists_with_suffix(const char *path, const char *suffix)
{
    char p[192];

    (void)snprintf(p, sizeof p, "%s%s", path, suffix);
    return access(p, F_OK) == 0;
}

static void snapshot(const char *path, file_state *fs)
{
    char wal[192];

    memset(fs, 0, sizeof *fs);
    (void)snprintf(wal, sizeof wal, "%s-wal", path);
    (void)stat(path, &fs->db);
    fs->has_wal = stat(wal, &fs->wal) == 0;
}

static bool same_stat(const struct stat *a, const struct stat *b)
{
    return a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
           a->st_mtim.tv_nsec == b->st_mtim.tv_nsec && a->st_ino == b->st_ino;
}

static bool unchanged(const char *path, const file_state *before)
{
    file_state now;

    snapshot(path, &now);
    return same_stat(&now.db, &before->db) && now.has_wal == before->has_wal &&
           (!now.has_wal || same_stat(&now.wal, &before->wal)) &&
           !exists_with_suffix(path, "-shm") && !exists_with_suffix(path, "-journal");
}

TEST(store_check_accepts_a_store_and_changes_nothing)
{
    ts_env e;
    jb j;
    broker_store_batch b;
    store_check_info info;
    file_state before;
    char err[STORE_ERR_SIZE] = "";

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    jb_init(&j, 1);
    jb_retain_set(&j, "a/b", "payload", 1);
    b = jb_batch(&j);
    CHECK_EQ(store_apply(e.s, &b, 1), STORE_OK);
    ts_close(&e);
    snapshot(e.path, &before);
    CHECK(before.has_wal); /* the store keeps its WAL file (persistent WAL) */
    CHECK_EQ(store_check(e.path, NULL, &info, err, sizeof err), STORE_OK);
    CHECK(!info.empty);
    CHECK_EQ(info.schema_found, STORE_SCHEMA_VERSION);
    CHECK(unchanged(e.path, &before));
    /* And the store still opens and holds its row. */
    CHECK(ts_open(&e, false));
    ts_close(&e);
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM retained"), 1);
    ts_cleanup(&e);
}

TEST(store_check_accepts_an_empty_file)
{
    ts_env e;
    store_check_info info;
    file_state before;
    char err[STORE_ERR_SIZE] = "";
    int fd;

    CHECK(ts_init(&e));
    fd = open(e.path, O_CREAT | O_WRONLY, 0600);
    CHECK(fd >= 0);
    close(fd);
    snapshot(e.path, &before);
    CHECK_EQ(store_check(e.path, NULL, &info, err, sizeof err), STORE_OK);
    CHECK(info.empty);
    CHECK(unchanged(e.path, &before));
    ts_cleanup(&e);
}

TEST(store_check_refuses_what_store_open_refuses)
{
    static const char *const cases[] = {"text", "other", "newer", "damaged"};
    static const char *const says[] = {
        "not an SQLite database",
        "not a tern database",
        "schema version 99 is newer than this release reads",
        "damaged",
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ts_env e;
        store_check_info info;
        file_state before;
        char err[STORE_ERR_SIZE] = "";

        CHECK(ts_init(&e));
        if (strcmp(cases[i], "text") == 0) {
            FILE *f = fopen(e.path, "w");

            CHECK(f != NULL);
            for (int n = 0; n < 200; n++)
                fputs("not a database, just some text\n", f);
            fclose(f);
        } else if (strcmp(cases[i], "other") == 0) {
            sqlite3 *db = NULL;

            CHECK(sqlite3_open(e.path, &db) == SQLITE_OK);
            CHECK(sqlite3_exec(db, "CREATE TABLE other(x)", NULL, NULL, NULL) == SQLITE_OK);
            CHECK(sqlite3_close(db) == SQLITE_OK);
        } else {
            CHECK(ts_open(&e, false));
            ts_close(&e);
            if (strcmp(cases[i], "newer") == 0) {
                ts_query(e.path, "UPDATE meta SET value = 99 WHERE key = 'schema_version'");
            } else {
                /* Junk over the fourth page's header (an index root). */
                uint8_t junk[256];
                int fd = open(e.path, O_WRONLY);

                memset(junk, 0xff, sizeof junk);
                CHECK(fd >= 0);
                CHECK(pwrite(fd, junk, sizeof junk, 3 * 4096) == (ssize_t)sizeof junk);
                close(fd);
            }
        }
        snapshot(e.path, &before);
        CHECK(store_check(e.path, NULL, &info, err, sizeof err) != STORE_OK);
        if (strstr(err, says[i]) == NULL || strncmp(err, e.path, strlen(e.path)) != 0) {
            fprintf(stderr, "  %s: %s\n", cases[i], err);
            CHECK(false);
        }
        CHECK(unchanged(e.path, &before));
        ts_cleanup(&e);
    }
}

TEST(store_check_reads_a_path_with_uri_characters)
{
    ts_env e;
    store_check_info info;
    char odd[192], err[STORE_ERR_SIZE] = "";

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    ts_close(&e);
    (void)snprintf(odd, sizeof odd, "%s/we%%ird?#name", e.dir);
    CHECK(rename(e.path, odd) == 0);
    CHECK_EQ(store_check(odd, NULL, &info, err, sizeof err), STORE_OK);
    CHECK_EQ(info.schema_found, STORE_SCHEMA_VERSION);
    CHECK(rename(odd, e.path) == 0);
    ts_cleanup(&e);
}
