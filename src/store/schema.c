/*
 * schema.c - the database schema and its migrations.
 *
 * The version lives in the meta table (key 'schema_version'); PRAGMA
 * application_id marks the file as tern's so a stray SQLite file is refused
 * instead of being written into. Each migration takes the file from version
 * N-1 to N inside one transaction with the version bump, so a crash during a
 * migration leaves the old version intact.
 *
 * Table shapes: strings are BLOBs (client ids, topics and filters are bytes
 * as received, compared with memcmp). Small fixed rows with a natural key are
 * WITHOUT ROWID tables (the key is the b-tree key, no second index). Rows
 * holding payloads (retained, messages) stay rowid tables: WITHOUT ROWID
 * stores whole rows in interior b-tree cells, which large rows make slow.
 * Message bodies are stored once and shared by the queue rows referencing
 * them. Unsigned 64-bit ids and sequence numbers are stored as their signed
 * bit pattern (SQLite integers are signed); sequence numbers stay far below
 * 2^63, so ORDER BY seq keeps their order.
 */
#include "store/internal.h"

#include <string.h>

typedef struct migration {
    uint32_t to;     /* version after this step */
    const char *sql; /* runs inside the migration transaction */
} migration;

static const char schema_v1[] =
    "CREATE TABLE meta("
    "  key TEXT PRIMARY KEY,"
    "  value INTEGER NOT NULL"
    ") WITHOUT ROWID;"
    "CREATE TABLE retained("
    "  topic BLOB NOT NULL UNIQUE,"
    "  payload BLOB NOT NULL,"
    "  qos INTEGER NOT NULL"
    ");"
    "CREATE TABLE sessions("
    "  client_id BLOB PRIMARY KEY,"
    "  identity BLOB NOT NULL,"
    "  flags INTEGER NOT NULL"
    ") WITHOUT ROWID;"
    "CREATE TABLE subs("
    "  client_id BLOB NOT NULL,"
    "  filter BLOB NOT NULL,"
    "  qos INTEGER NOT NULL,"
    "  PRIMARY KEY(client_id, filter)"
    ") WITHOUT ROWID;"
    "CREATE TABLE messages("
    "  msg_id INTEGER PRIMARY KEY,"
    "  topic BLOB NOT NULL,"
    "  payload BLOB NOT NULL,"
    "  qos INTEGER NOT NULL,"
    "  flags INTEGER NOT NULL"
    ");"
    "CREATE TABLE queue("
    "  client_id BLOB NOT NULL,"
    "  seq INTEGER NOT NULL,"
    "  msg_id INTEGER NOT NULL,"
    "  qos INTEGER NOT NULL,"
    "  flags INTEGER NOT NULL,"
    "  state INTEGER NOT NULL,"
    "  packet_id INTEGER NOT NULL,"
    "  PRIMARY KEY(client_id, seq)"
    ") WITHOUT ROWID;"
    /* store_load deletes messages no queue row references. */
    "CREATE INDEX queue_by_msg ON queue(msg_id);"
    "CREATE TABLE inqos2("
    "  client_id BLOB NOT NULL,"
    "  packet_id INTEGER NOT NULL,"
    "  PRIMARY KEY(client_id, packet_id)"
    ") WITHOUT ROWID;"
    "INSERT INTO meta(key, value) VALUES('" STORE_META_BACKUP_GEN "', 0);";

/*
 * Version 2: what MQTT 5.0 needs to survive a restart (docs/STORE.md says
 * what each column means). Only columns with constant defaults are added,
 * which SQLite does without rewriting a row, so the migration of a large
 * file is as quick as of a small one; the defaults are what a version-1
 * row means in 5.0 terms: no properties, no expiry, no options, no
 * identifiers, and an expiry interval "not recorded" (journal.h: the 3.1.1
 * value applies). Times are as journal.h records them (wall-clock ms, or
 * ms left with bit 63 set, which SQLite shows as a negative number).
 */
static const char schema_v2[] =
    "ALTER TABLE retained ADD COLUMN props BLOB NOT NULL DEFAULT x'';"
    "ALTER TABLE retained ADD COLUMN expiry_at INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE sessions ADD COLUMN expiry_interval INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE sessions ADD COLUMN expiry_at INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE subs ADD COLUMN options INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE subs ADD COLUMN sub_id INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE messages ADD COLUMN props BLOB NOT NULL DEFAULT x'';"
    "ALTER TABLE messages ADD COLUMN expiry_at INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE queue ADD COLUMN sub_id INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE queue ADD COLUMN sub_ids BLOB NOT NULL DEFAULT x'';"
    /* A will holds a payload: a rowid table, like retained. */
    "CREATE TABLE wills("
    "  client_id BLOB NOT NULL UNIQUE,"
    "  topic BLOB NOT NULL,"
    "  payload BLOB NOT NULL,"
    "  qos INTEGER NOT NULL,"
    "  flags INTEGER NOT NULL,"
    "  props BLOB NOT NULL,"
    "  expiry_at INTEGER NOT NULL,"
    "  fire_at INTEGER NOT NULL"
    ");";

/* Index i takes the file from version i to i + 1. */
static const migration migrations[] = {
    {1, schema_v1},
    {2, schema_v2},
};

#define MIGRATION_COUNT (sizeof migrations / sizeof migrations[0])

_Static_assert(MIGRATION_COUNT == STORE_SCHEMA_VERSION, "one migration per schema version");

static void put_err(char *err, size_t err_size, const char *path, const char *what)
{
    if (err_size > 0)
        (void)sqlite3_snprintf((int)err_size, err, "%s: %s", path, what);
}

/* The version recorded in the file, 0 for a new (empty) file. Refuses a
 * file that holds something other than a tern database. */
static store_rc read_version(store *s, uint32_t *version, char *err, size_t err_size)
{
    int64_t app_id = 0, tables = 0, v = 0;

    if (!store_query_int(s->db, "PRAGMA application_id", &app_id) ||
        !store_query_int(s->db, "SELECT count(*) FROM sqlite_schema", &tables)) {
        store_rc rc = store_fail(s, sqlite3_extended_errcode(s->db), "reading the schema");

        put_err(err, err_size, s->path, s->last_err);
        return rc;
    }
    if (app_id == 0 && tables == 0) {
        *version = 0;
        return STORE_OK;
    }
    if (app_id != STORE_APPLICATION_ID) {
        put_err(err, err_size, s->path, "not a tern database (another program's SQLite file?)");
        return STORE_EOTHER;
    }
    if (!store_query_int(s->db, "SELECT value FROM meta WHERE key = '" STORE_META_SCHEMA "'",
                         &v) ||
        v < 1 || v > UINT32_MAX) {
        put_err(err, err_size, s->path, "tern database without a valid schema version");
        return STORE_ECORRUPT;
    }
    *version = (uint32_t)v;
    return STORE_OK;
}

/* One migration step with its version bump, atomically. */
static store_rc migrate_step(store *s, const migration *m)
{
    char bump[160];
    store_rc rc;

    rc = store_exec(s, "BEGIN IMMEDIATE");
    if (rc != STORE_OK)
        return rc;
    (void)sqlite3_snprintf((int)sizeof bump, bump,
                           "INSERT INTO meta(key, value) VALUES('" STORE_META_SCHEMA "', %u)"
                           " ON CONFLICT(key) DO UPDATE SET value = excluded.value;"
                           "PRAGMA application_id = %d;",
                           m->to, STORE_APPLICATION_ID);
    rc = store_exec(s, m->sql);
    if (rc == STORE_OK)
        rc = store_exec(s, bump);
    if (rc == STORE_OK)
        rc = store_exec(s, "COMMIT");
    if (rc != STORE_OK && !sqlite3_get_autocommit(s->db) &&
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL) != SQLITE_OK)
        store_logf(s, BROKER_LOG_WARN, "store: rollback of a failed migration failed: %s",
                   sqlite3_errmsg(s->db));
    return rc;
}

store_rc store_schema_migrate(store *s, uint32_t *found, bool *created, char *err,
                              size_t err_size)
{
    uint32_t version = 0;
    store_rc rc = read_version(s, &version, err, err_size);

    if (rc != STORE_OK)
        return rc;
    *found = version;
    *created = version == 0;
    if (version > STORE_SCHEMA_VERSION) {
        char what[120];

        (void)sqlite3_snprintf((int)sizeof what, what,
                               "schema version %u is newer than this release reads (%u): "
                               "a newer release of tern is needed",
                               version, STORE_SCHEMA_VERSION);
        put_err(err, err_size, s->path, what);
        return STORE_EOTHER;
    }
    for (uint32_t v = version; v < STORE_SCHEMA_VERSION; v++) {
        rc = migrate_step(s, &migrations[v]);
        if (rc != STORE_OK) {
            put_err(err, err_size, s->path, s->last_err);
            return rc;
        }
        store_logf(s, BROKER_LOG_INFO, "store: %s: schema version %u", s->path, migrations[v].to);
    }
    return STORE_OK;
}
