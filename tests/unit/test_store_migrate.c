/*
 * test_store_migrate.c - schema version 2 over a version-1 database: the
 * fixture tests/unit/data/store-v1.db, written by the version-1 store
 * (store-v1-gen.c beside it says how), is migrated at open with every row
 * kept and given the 5.0 columns' defaults, loads into the core so that
 * its clients find their sessions, queues and retained messages; and a
 * migration cut short by a failing write at any point leaves version 1
 * whole, migrated at the next open.
 */
#define _POSIX_C_SOURCE 200809L

#include "fake_client.h"
#include "test.h"
#include "test_store_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copy the fixture to e->path (the test writes into its copy only). */
static bool copy_fixture(const ts_env *e)
{
    const char *dir = getenv("TERN_TEST_DATA");
    char src[256];
    char buf[8192];
    size_t n;
    bool ok = true;

    snprintf(src, sizeof src, "%s/store-v1.db", dir ? dir : "tests/unit/data");
    FILE *in = fopen(src, "rb");
    FILE *out = fopen(e->path, "wb");
    if (!in || !out) {
        fprintf(stderr, "  cannot copy %s to %s\n", src, e->path);
        ok = false;
    }
    while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0)
        ok = fwrite(buf, 1, n, out) == n;
    if (in)
        fclose(in);
    if (out && fclose(out) != 0)
        ok = false;
    return ok;
}

/* What the fixture holds (store-v1-gen.c), read with plain SQLite: the
 * same in version 1 and after the migration. */
static bool fixture_rows_intact(const char *path)
{
    return ts_query(path, "SELECT count(*) FROM retained") == 2 &&
           ts_query(path, "SELECT count(*) FROM sessions") == 3 &&
           ts_query(path, "SELECT count(*) FROM subs") == 4 &&
           ts_query(path, "SELECT count(*) FROM messages") == 3 &&
           ts_query(path, "SELECT count(*) FROM queue") == 5 &&
           ts_query(path, "SELECT count(*) FROM inqos2") == 2 &&
           ts_query(path, "SELECT flags FROM sessions WHERE client_id = CAST('fx-op' AS BLOB)") ==
               1 &&
           ts_query(path, "SELECT packet_id FROM queue WHERE client_id = CAST('fx-sub' AS BLOB)"
                          " AND seq = 3") == 13 &&
           ts_query(path, "SELECT qos FROM subs WHERE filter = CAST('fx/q/#' AS BLOB)") == 2 &&
           ts_integrity_ok(path);
}

/* Columns a table has named name (0 or 1). */
static int64_t has_column(const char *path, const char *table, const char *name)
{
    char sql[160];

    snprintf(sql, sizeof sql, "SELECT count(*) FROM pragma_table_info('%s') WHERE name = '%s'",
             table, name);
    return ts_query(path, sql);
}

TEST(store_version_1_fixture_is_version_1_as_kept)
{
    ts_env e;

    CHECK(ts_init(&e));
    CHECK(copy_fixture(&e));
    CHECK_EQ(ts_query(e.path, "SELECT value FROM meta WHERE key = 'schema_version'"), 1);
    CHECK(fixture_rows_intact(e.path));
    CHECK_EQ(has_column(e.path, "retained", "props"), 0);
    ts_cleanup(&e);
}

TEST(store_version_1_file_migrates_to_version_2_keeping_every_row)
{
    ts_env e;

    CHECK(ts_init(&e));
    CHECK(copy_fixture(&e));
    CHECK(ts_open(&e, false));
    CHECK_EQ(e.info.schema_found, 1);
    CHECK(!e.info.created);
    CHECK_EQ(ts_log_count(&e, "schema version 2"), 1);
    ts_close(&e);
    CHECK_EQ(ts_query(e.path, "SELECT value FROM meta WHERE key = 'schema_version'"), 2);
    CHECK(fixture_rows_intact(e.path));
    /* The new columns, with what a version-1 row means in 5.0 terms. */
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM sessions"
                              " WHERE expiry_interval = 0 AND expiry_at = 0"),
             3);
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM subs WHERE options = 0 AND sub_id = 0"), 4);
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM messages"
                              " WHERE props = x'' AND expiry_at = 0"),
             3);
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM retained WHERE props = x'' AND expiry_at = 0"),
             2);
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM queue WHERE sub_id = 0 AND sub_ids = x''"), 5);
    CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM wills"), 0);
    /* Opened again: nothing more to migrate. */
    CHECK(ts_open(&e, false));
    CHECK_EQ(e.info.schema_found, 2);
    ts_cleanup(&e);
}

TEST(store_migrated_version_1_file_loads_its_sessions_queues_and_retained)
{
    ts_env e;
    fworld w;
    mqtt_packet pk;
    char err[STORE_ERR_SIZE];

    CHECK(ts_init(&e));
    CHECK(copy_fixture(&e));
    CHECK(ts_open(&e, false));
    fw_init_durable(&w, NULL);
    CHECK_EQ(store_load(e.s, w.b, err, sizeof err), STORE_OK);
    /* fx-sub resumes: its sent entries go out again in order (QoS 1 and
     * QoS 2 PUBLISH as duplicates, the released one as PUBREL), then the
     * queued one, with its retain flag. */
    fclient *s = fw_open_as(&w, "dev-client", false); /* the session's identity */
    fc_connect(&w, s, "fx-sub", false, 0);
    CHECK(fc_next_is(s, MQTT_CONNACK, &pk));
    CHECK(pk.u.connack.session_present);
    CHECK(fc_next_is(s, MQTT_PUBLISH, &pk));
    CHECK(fc_payload_is(&pk, "m1"));
    CHECK_EQ(pk.u.publish.packet_id, 11);
    CHECK(pk.u.publish.dup);
    CHECK(fc_next_is(s, MQTT_PUBLISH, &pk));
    CHECK(fc_payload_is(&pk, "m2"));
    CHECK_EQ(pk.u.publish.packet_id, 12);
    CHECK_EQ(pk.u.publish.qos, 2);
    CHECK(fc_next_is(s, MQTT_PUBREL, &pk));
    CHECK_EQ(pk.u.ack.packet_id, 13);
    CHECK_EQ(ts_commit_all(e.s, w.b), STORE_OK); /* the QoS 2 entry's packet id */
    fw_drain(&w);
    CHECK(fc_next_is(s, MQTT_PUBLISH, &pk));
    CHECK(fc_payload_is(&pk, "m4"));
    CHECK(pk.u.publish.retain);
    /* Its inbound QoS 2 id 7 is still awaiting PUBREL: answered PUBCOMP. */
    fc_ack(&w, s, MQTT_PUBREL, 7);
    CHECK_EQ(ts_commit_all(e.s, w.b), STORE_OK);
    fw_drain(&w);
    CHECK(fc_next_is(s, MQTT_PUBCOMP, &pk));
    CHECK_EQ(pk.u.ack.packet_id, 7);
    /* The retained messages are there for a new subscriber. */
    fclient *n = fw_connect_as(&w, "new", true);
    fc_subscribe(&w, n, 1, "fx/retained/#", 1);
    CHECK(fc_next_is(n, MQTT_SUBACK, &pk));
    CHECK(fc_next_is(n, MQTT_PUBLISH, &pk));
    CHECK(pk.u.publish.retain);
    CHECK(fc_next_is(n, MQTT_PUBLISH, &pk));
    CHECK(pk.u.publish.retain);
    CHECK(!fc_next(n, &pk));
    fw_free(&w);
    ts_cleanup(&e);
}

TEST(store_migration_cut_short_at_any_write_leaves_version_1_whole)
{
    uint32_t cuts = 0, failed_opens = 0;

    for (uint32_t nth = 1; nth < 500; nth++) {
        ts_env e;

        CHECK(ts_init(&e));
        CHECK(copy_fixture(&e));
        /* Register the fault VFS (and open once through it, which would
         * migrate): reopen a fresh copy with the nth write failing. */
        e.fault = store_fault_create("fault-migrate", NULL);
        CHECK(e.fault != NULL);
        store_fault_fail_nth(e.fault, STORE_FAULT_WRITE, nth, STORE_FAULT_CODE_IO);
        snprintf(e.vfs_name, sizeof e.vfs_name, "fault-migrate");
        bool opened = ts_open(&e, true);
        bool injected = store_fault_injected(e.fault) > 0;
        ts_close(&e);
        store_fault_destroy(e.fault);
        e.fault = NULL;
        if (!injected) {
            /* The migration has fewer writes than nth: it went through. */
            CHECK(opened);
            CHECK_EQ(ts_query(e.path, "SELECT value FROM meta WHERE key = 'schema_version'"), 2);
            ts_cleanup(&e);
            break;
        }
        cuts++;
        failed_opens += !opened;
        /* Whatever the write that failed, the file is version 1 as it was
         * or version 2 complete, never in between, and holds every row. */
        int64_t v = ts_query(e.path, "SELECT value FROM meta WHERE key = 'schema_version'");
        CHECK(v == 1 || v == 2);
        CHECK_EQ(has_column(e.path, "retained", "props"), v == 2 ? 1 : 0);
        CHECK_EQ(has_column(e.path, "queue", "sub_ids"), v == 2 ? 1 : 0);
        CHECK_EQ(ts_query(e.path, "SELECT count(*) FROM sqlite_schema WHERE name = 'wills'"),
                 v == 2 ? 1 : 0);
        CHECK(fixture_rows_intact(e.path));
        /* And the next open migrates it. */
        CHECK(ts_open(&e, false));
        ts_close(&e);
        CHECK_EQ(ts_query(e.path, "SELECT value FROM meta WHERE key = 'schema_version'"), 2);
        CHECK(fixture_rows_intact(e.path));
        ts_cleanup(&e);
    }
    CHECK(cuts > 0);
    CHECK(failed_opens > 0); /* a failed migration refuses to open, says what failed */
}
