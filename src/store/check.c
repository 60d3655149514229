/*
 * check.c - a read-only look at a database file, for `ternd --check`: would
 * store_open() accept it as it is?
 *
 * The file is opened as an immutable URI (mode=ro&immutable=1): SQLite then
 * takes no lock, creates no -shm or -journal file, never touches the WAL
 * (an ordinary read-only open creates PATH-shm, and deletes PATH-wal next
 * to an empty database) and cannot write. The price: what only the WAL
 * holds (commits since the last checkpoint, after a crash) is not seen.
 * The schema and the application id are written when the file is created
 * and checkpointed at once by store_open(), so they are always in the main
 * file; a check of a file left by a crash in the middle of a checkpoint can
 * report damage that the WAL would have repaired.
 *
 * The caller makes sure the file exists and that no running daemon holds
 * it (an immutable reader does not see the writer's locks).
 */
#include "store/internal.h"

#include <string.h>

static void put_err(char *err, size_t err_size, const char *path, const char *what)
{
    if (err_size > 0)
        (void)sqlite3_snprintf((int)err_size, err, "%s: %s", path, what);
}

/* "file:PATH?mode=ro&immutable=1", with the characters a URI path may not
 * hold as they are (%, ?, #) escaped; an absolute path gets an empty
 * authority (file:///...) so one starting with // is not read as a host. */
static char *immutable_uri(const char *path)
{
    static const char hex[] = "0123456789ABCDEF";
    static const char tail[] = "?mode=ro&immutable=1";
    size_t n = strlen(path);
    char *uri = sqlite3_malloc64((sqlite3_uint64)n * 3 + sizeof "file://" + sizeof tail);
    char *p = uri;

    if (uri == NULL)
        return NULL;
    memcpy(p, "file:", 5);
    p += 5;
    if (path[0] == '/') {
        memcpy(p, "//", 2);
        p += 2;
    }
    for (const char *c = path; *c != '\0'; c++) {
        if (*c == '%' || *c == '?' || *c == '#') {
            *p++ = '%';
            *p++ = hex[(unsigned char)*c >> 4];
            *p++ = hex[(unsigned char)*c & 15];
        } else {
            *p++ = *c;
        }
    }
    memcpy(p, tail, sizeof tail);
    return uri;
}

/* SQLite's message for a failed read, as the cause. */
static void read_failed(sqlite3 *db, const char *path, char *err, size_t err_size)
{
    int rc = sqlite3_extended_errcode(db);
    char what[STORE_ERR_SIZE];

    if ((rc & 0xff) == SQLITE_NOTADB)
        (void)sqlite3_snprintf((int)sizeof what, what, "not an SQLite database");
    else if ((rc & 0xff) == SQLITE_CORRUPT)
        (void)sqlite3_snprintf((int)sizeof what, what, "damaged database (%s)",
                               sqlite3_errmsg(db));
    else
        (void)sqlite3_snprintf((int)sizeof what, what, "cannot read it: %s (SQLite code %d)",
                               sqlite3_errmsg(db), rc);
    put_err(err, err_size, path, what);
}

store_rc store_check(const char *path, const char *vfs, store_check_info *info, char *err,
                     size_t err_size)
{
    char *uri = immutable_uri(path);
    sqlite3 *db = NULL;
    int64_t app_id = 0, tables = 0, version = 0;
    store_rc out = STORE_EOTHER;
    int rc;

    memset(info, 0, sizeof *info);
    if (uri == NULL) {
        put_err(err, err_size, path, "out of memory");
        return STORE_ENOMEM;
    }
    rc = sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                         vfs);
    sqlite3_free(uri);
    if (rc != SQLITE_OK) {
        char what[STORE_ERR_SIZE];

        (void)sqlite3_snprintf((int)sizeof what, what, "cannot open it: %s",
                               db != NULL ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        put_err(err, err_size, path, what);
        out = store_rc_from_sqlite(rc);
        goto done;
    }
    /* The first read of the file: a file that is not a database fails here. */
    if (!store_query_int(db, "PRAGMA application_id", &app_id) ||
        !store_query_int(db, "SELECT count(*) FROM sqlite_schema", &tables)) {
        read_failed(db, path, err, err_size);
        out = store_rc_from_sqlite(sqlite3_extended_errcode(db));
        goto done;
    }
    if (app_id == 0 && tables == 0) {
        info->empty = true; /* store_open() creates the schema */
        out = STORE_OK;
        goto done;
    }
    /* The refusals of store_open() (schema.c), in the same words. */
    if (app_id != STORE_APPLICATION_ID) {
        put_err(err, err_size, path, "not a tern database (another program's SQLite file?)");
        goto done;
    }
    if (!store_query_int(db, "SELECT value FROM meta WHERE key = '" STORE_META_SCHEMA "'",
                         &version) ||
        version < 1 || version > UINT32_MAX) {
        put_err(err, err_size, path, "tern database without a valid schema version");
        out = STORE_ECORRUPT;
        goto done;
    }
    info->schema_found = (uint32_t)version;
    if (version > STORE_SCHEMA_VERSION) {
        char what[120];

        (void)sqlite3_snprintf((int)sizeof what, what,
                               "schema version %u is newer than this release reads (%u): "
                               "a newer release of tern is needed",
                               (unsigned)version, STORE_SCHEMA_VERSION);
        put_err(err, err_size, path, what);
        goto done;
    }
    if (!store_quick_check(db)) {
        put_err(err, err_size, path,
                "damaged: PRAGMA quick_check fails (at start the daemon replaces it with "
                "the newest backup that passes, or refuses to start without one)");
        out = STORE_ECORRUPT;
        goto done;
    }
    out = STORE_OK;
done:
    if (db != NULL)
        (void)sqlite3_close(db); /* read-only, nothing prepared: cannot fail */
    return out;
}
