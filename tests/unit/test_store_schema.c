/*
 * test_store_schema.c - opening the database: a new or empty file gets the
 * current schema, a reopened file keeps its data, and files the store must
 * not write into (another program's, a newer release's) are refused.
 */
#define _POSIX_C_SOURCE 200809L

#include "test.h"
#include "test_store_util.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

TEST(store_new_file_gets_the_current_schema)
{
    ts_env e;

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    CHECK(e.info.created);
    CHECK_EQ(e.info.schema_found, 0);
    CHECK(!e.info.check_failed);
    ts_close(&e);
    CHECK_EQ(ts_query(e.path, "SELECT value FROM meta WHERE key = 'schema_version'"),
             STORE_SCHEMA_VERSION);
    CHECK_EQ(ts_query(e.path, "PRAGMA application_id"), 0x7465726e);
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM sqlite_schema WHERE type = 'table'"), 8);
    /* WAL is recorded in the file header: every later open uses it. */
    CHECK_EQ(ts_query(e.path, "SELECT journal_mode = 'wal' FROM pragma_journal_mode"), 1);
    ts_cleanup(&e);
}

TEST(store_reopen_finds_the_version_and_keeps_rows)
{
    ts_env e;
    jb j;
    broker_store_batch b;

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    jb_init(&j, 1);
    jb_retain_set(&j, "a/b", "payload", 1);
    b = jb_batch(&j);
    CHECK_EQ(store_apply(e.s, &b, 1), STORE_OK);
    ts_close(&e);
    CHECK(ts_open(&e, false));
    CHECK(!e.info.created);
    CHECK_EQ(e.info.schema_found, STORE_SCHEMA_VERSION);
    ts_close(&e);
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM retained"), 1);
    ts_cleanup(&e);
}

TEST(store_empty_file_is_migrated_from_nothing)
{
    ts_env e;
    int fd;

    CHECK(ts_init(&e));
    fd = open(e.path, O_CREAT | O_WRONLY, 0600);
    CHECK(fd >= 0);
    close(fd);
    CHECK(ts_open(&e, false));
    CHECK(e.info.created);
    ts_close(&e);
    CHECK_EQ(ts_query(e.path, "SELECT value FROM meta WHERE key = 'schema_version'"),
             STORE_SCHEMA_VERSION);
    ts_cleanup(&e);
}

TEST(store_refuses_another_programs_database)
{
    ts_env e;

    CHECK(ts_init(&e));
    {
        sqlite3 *db = NULL;

        CHECK(sqlite3_open(e.path, &db) == SQLITE_OK);
        CHECK(sqlite3_exec(db, "CREATE TABLE other(x)", NULL, NULL, NULL) == SQLITE_OK);
        CHECK(sqlite3_close(db) == SQLITE_OK);
    }
    CHECK(!ts_open(&e, false));
    CHECK(strstr(e.err, "not a tern database") != NULL);
    /* Untouched: no tern table was added. */
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM sqlite_schema"), 1);
    ts_cleanup(&e);
}

TEST(store_refuses_a_schema_newer_than_this_release)
{
    ts_env e;

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    ts_close(&e);
    ts_query(e.path, "UPDATE meta SET value = 99 WHERE key = 'schema_version'");
    CHECK(!ts_open(&e, false));
    CHECK(strstr(e.err, "newer release") != NULL);
    ts_cleanup(&e);
}

TEST(store_refuses_a_second_opener_of_the_same_file)
{
    ts_env e;
    store_open_info info;
    store_options opt;
    char err[STORE_ERR_SIZE];

    CHECK(ts_init(&e));
    CHECK(ts_open(&e, false));
    memset(&opt, 0, sizeof opt);
    opt.path = e.path;
    /* The first store holds the exclusive lock: a second daemon on the same
     * file must fail at start, not interleave writes. */
    CHECK(store_open(&opt, &info, err, sizeof err) == NULL);
    CHECK(!info.restored);
    ts_cleanup(&e);
}
