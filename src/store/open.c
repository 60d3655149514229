/*
 * open.c - opening, checking and closing the database.
 *
 * Connection settings, and why:
 *   locking_mode = EXCLUSIVE  the broker is the only user of its database;
 *                 with the lock held for the connection's life, WAL keeps its
 *                 index in heap memory instead of a shared-memory file (no
 *                 xShm* methods needed, which the unikernel's VFS then need
 *                 not provide), and a second daemon pointed at the same file
 *                 fails at start instead of interleaving writes.
 *   journal_mode = WAL        one sequential append + one fsync per commit.
 *   synchronous = FULL        that fsync happens before COMMIT returns, so a
 *                 reported commit survives power loss (NORMAL defers it to
 *                 the next checkpoint). See docs/STORE.md for measurements.
 *   journal_size_limit        the WAL file is truncated back to 64 MiB after a
 *                 checkpoint that empties it, so one burst does not keep
 *                 disk space forever.
 *   persistent WAL            the WAL file is kept at its size when the store
 *                 closes (journal_size_limit is lifted for the close), and a
 *                 RESTART checkpoint at open makes the next commits write
 *                 from its start again. Overwriting blocks the file already
 *                 has makes fdatasync() a flush of data only; appending also
 *                 commits the file system's journal for the new size, which
 *                 measured 1-4 ms per commit on the development VM against
 *                 0.01-0.1 ms for overwrites (docs/STORE.md).
 */
#include "store/internal.h"

#include <stdlib.h>
#include <string.h>

enum { DEFAULT_BACKUP_STEP_PAGES = 16 };

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);

    if (p != NULL)
        memcpy(p, s, n);
    return p;
}

static char *dup_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix) + 1;
    char *p = malloc(n + m);

    if (p != NULL) {
        memcpy(p, s, n);
        memcpy(p + n, suffix, m);
    }
    return p;
}

static void put_err(char *err, size_t err_size, const char *path, const char *what)
{
    if (err_size > 0)
        (void)sqlite3_snprintf((int)err_size, err, "%s: %s", path, what);
}

/* Switch the connection to WAL; the pragma answers with the mode in force,
 * which is the first read of the file, so a file that is not a database
 * fails here. */
static store_rc enter_wal(store *s)
{
    sqlite3_stmt *st = NULL;
    const unsigned char *mode;
    store_rc out = STORE_OK;
    int rc = sqlite3_prepare_v2(s->db, "PRAGMA journal_mode = WAL", -1, &st, NULL);

    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        out = store_fail(s, sqlite3_extended_errcode(s->db), "PRAGMA journal_mode");
    } else {
        mode = sqlite3_column_text(st, 0);
        if (mode == NULL || strcmp((const char *)mode, "wal") != 0) {
            s->last_rc = SQLITE_ERROR;
            (void)sqlite3_snprintf((int)sizeof s->last_err, s->last_err,
                                   "cannot switch the journal to WAL");
            out = STORE_EOTHER;
        }
    }
    /* finalize repeats the step's error, handled above. */
    (void)sqlite3_finalize(st);
    return out;
}

/*
 * Reserve bytes at the end of every page (the kernel's page checksums,
 * store_options.reserve_bytes), before the WAL opens. Setting them takes
 * effect only on a file without pages; an existing one keeps its own.
 * The checksum layer (cksumvfs) learns that a file has checksums from page
 * 1 passing at offset 0 of the database file, and a WAL file inherits the
 * setting when it opens: in WAL mode page 1 may never pass there (a new
 * database's first page goes into the WAL; an existing one's newest copy
 * may be read from it), and pages would go to the WAL unchecksummed. So an
 * existing file's header is read once at offset 0 here, and a new file's
 * first page is written now, in rollback mode (user_version is unused and
 * stays 0; the file still counts as empty, is_empty).
 */
static store_rc reserve_pages(store *s)
{
    int reserve = s->opt.reserve_bytes;
    sqlite3_file *f = NULL;
    unsigned char hdr[100];
    int rc = sqlite3_file_control(s->db, "main", SQLITE_FCNTL_RESERVE_BYTES, &reserve);

    if (rc == SQLITE_OK)
        rc = sqlite3_file_control(s->db, "main", SQLITE_FCNTL_FILE_POINTER, &f);
    if (rc != SQLITE_OK || f == NULL || f->pMethods == NULL)
        return store_fail(s, rc != SQLITE_OK ? rc : SQLITE_ERROR, "SQLITE_FCNTL_RESERVE_BYTES");
    rc = f->pMethods->xRead(f, hdr, (int)sizeof hdr, 0);
    if (rc == SQLITE_IOERR_SHORT_READ)
        return store_exec(s, "PRAGMA user_version = 0");
    return rc == SQLITE_OK ? STORE_OK : store_fail(s, rc, "reading the database header");
}

/* Open the main connection and apply the settings above. */
static store_rc db_connect(store *s)
{
    char sync_sql[64], cache_sql[64];
    int64_t dummy = 0;
    int persist = 1;
    store_rc out;
    int rc;

    (void)sqlite3_snprintf((int)sizeof sync_sql, sync_sql, "PRAGMA synchronous = %s",
                           s->opt.sync == STORE_SYNC_NORMAL ? "NORMAL" : "FULL");
    /* A negative cache_size is a bound in KiB rather than in pages. */
    (void)sqlite3_snprintf((int)sizeof cache_sql, cache_sql, "PRAGMA cache_size = -%u",
                           s->opt.cache_kib);
    rc = sqlite3_open_v2(s->path, &s->db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX |
                             SQLITE_OPEN_EXRESCODE,
                         s->vfs);
    if (rc != SQLITE_OK) {
        out = store_fail(s, rc, "open");
        goto done;
    }
    if (sqlite3_extended_result_codes(s->db, 1) != SQLITE_OK) {
        out = store_fail(s, sqlite3_errcode(s->db), "extended result codes");
        goto done;
    }
    /* Exclusive before WAL: the WAL index then lives in heap memory. */
    out = store_exec(s, "PRAGMA locking_mode = EXCLUSIVE");
    if (out == STORE_OK && s->opt.reserve_bytes != 0)
        out = reserve_pages(s);
    if (out == STORE_OK)
        out = enter_wal(s);
    if (out == STORE_OK)
        out = store_exec(s, sync_sql);
    if (out == STORE_OK)
        out = store_exec(s, "PRAGMA journal_size_limit = 67108864");
    if (out == STORE_OK)
        out = store_exec(s, "PRAGMA temp_store = MEMORY");
    if (out == STORE_OK && s->opt.cache_kib > 0)
        out = store_exec(s, cache_sql);
    if (out != STORE_OK)
        goto done;
    rc = sqlite3_file_control(s->db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
    if (rc != SQLITE_OK) {
        out = store_fail(s, rc, "SQLITE_FCNTL_PERSIST_WAL");
        goto done;
    }
    /* Read something so an unreadable file fails now, not at first use. */
    if (!store_query_int(s->db, "SELECT count(*) FROM sqlite_schema", &dummy))
        out = store_fail(s, sqlite3_extended_errcode(s->db), "reading the schema");
    else
        out = store_room_setup(s);
done:
    return out;
}

static void disconnect(store *s)
{
    store_stmts_finalize(s);
    /* With a size limit set, closing truncates a persistent WAL to nothing;
     * without one it stays as large as it is (see the top of this file).
     * A failure only costs the next start some slower commits. */
    if (s->db != NULL &&
        sqlite3_exec(s->db, "PRAGMA journal_size_limit = -1", NULL, NULL, NULL) != SQLITE_OK)
        store_logf(s, BROKER_LOG_DEBUG, "store: journal_size_limit: %s", sqlite3_errmsg(s->db));
    if (s->db != NULL && sqlite3_close(s->db) != SQLITE_OK)
        store_logf(s, BROKER_LOG_WARN, "store: closing %s: %s", s->path, sqlite3_errmsg(s->db));
    s->db = NULL;
}

/* Connect and check; false when the file is damaged (or unreadable as a
 * database) and a backup should be tried. */
static bool connect_checked(store *s)
{
    if (db_connect(s) != STORE_OK) {
        store_logf(s, BROKER_LOG_ERROR, "store: %s: %s", s->path, s->last_err);
        return false;
    }
    if (!store_quick_check(s->db)) {
        store_logf(s, BROKER_LOG_ERROR, "store: %s: PRAGMA quick_check failed", s->path);
        return false;
    }
    return true;
}

static store *alloc_store(const store_options *opt)
{
    store *s = calloc(1, sizeof *s);

    if (s == NULL)
        return NULL;
    s->opt = *opt;
    s->path = dup_str(opt->path);
    s->vfs = opt->vfs != NULL ? dup_str(opt->vfs) : NULL;
    s->bak_path[0] = dup_suffix(opt->path, ".bak-a");
    s->bak_path[1] = dup_suffix(opt->path, ".bak-b");
    s->opt.path = s->path;
    s->opt.vfs = s->vfs;
    if (s->opt.backup_step_pages == 0)
        s->opt.backup_step_pages = DEFAULT_BACKUP_STEP_PAGES;
    s->bak_slot = -1;
    if (s->path == NULL || (opt->vfs != NULL && s->vfs == NULL) || s->bak_path[0] == NULL ||
        s->bak_path[1] == NULL) {
        store_close(s);
        return NULL;
    }
    return s;
}

/* A database with nothing in it: what a new file, and a restore cut short,
 * look like (schema.c takes the same test for "create the schema"). */
static bool is_empty(const store *s)
{
    int64_t app_id = -1, tables = -1;

    return store_query_int(s->db, "PRAGMA application_id", &app_id) &&
           store_query_int(s->db, "SELECT count(*) FROM sqlite_schema", &tables) &&
           app_id == 0 && tables == 0;
}

/* Replace the closed database with backup slot and connect again. */
static bool restore(store *s, int slot, int64_t gen, const char *why, store_open_info *info,
                    char *err, size_t err_size)
{
    if (store_backup_restore(s, slot, gen, why, err, err_size) != STORE_OK)
        return false;
    info->restored = true;
    info->restored_from = slot == 0 ? 'a' : 'b';
    s->st.restored_at_open = true;
    if (!connect_checked(s)) {
        put_err(err, err_size, s->path, "the restored copy failed its check");
        return false;
    }
    return true;
}

store *store_open(const store_options *opt, store_open_info *info, char *err, size_t err_size)
{
    store *s = alloc_store(opt);
    int64_t gen = 0;
    int slot;
    store_rc rc;

    memset(info, 0, sizeof *info);
    if (s == NULL) {
        put_err(err, err_size, opt->path, "out of memory");
        return NULL;
    }
    if (!connect_checked(s)) {
        /* A file that cannot even be opened (permissions, missing directory)
         * is not a case for a backup: say so. */
        if (s->last_rc == SQLITE_CANTOPEN || (s->last_rc & 0xff) == SQLITE_BUSY ||
            (s->last_rc & 0xff) == SQLITE_PERM || (s->last_rc & 0xff) == SQLITE_READONLY) {
            put_err(err, err_size, s->path, s->last_err);
            goto fail;
        }
        info->check_failed = true;
        disconnect(s);
        slot = store_backup_newest(s, &gen);
        if (slot < 0) {
            if (err_size > 0)
                (void)sqlite3_snprintf((int)err_size, err,
                                       "%s: the database is damaged and no backup passes its "
                                       "check (%s, %s); move the file away to start empty",
                                       s->path, s->bak_path[0], s->bak_path[1]);
            goto fail;
        }
        if (!restore(s, slot, gen, "is damaged", info, err, err_size))
            goto fail;
    } else if (is_empty(s) && (slot = store_backup_newest(s, &gen)) >= 0) {
        /* Not a new store: a restore was cut short (backup.c). */
        info->found_empty = true;
        disconnect(s);
        if (!restore(s, slot, gen, "is empty but a backup holds a valid copy (a restore "
                     "cut short, or the file was removed)", info, err, err_size))
            goto fail;
    }
    rc = store_schema_migrate(s, &info->schema_found, &info->created, err, err_size);
    if (rc != STORE_OK)
        goto fail;
    if (store_stmts_prepare(s) != STORE_OK) {
        put_err(err, err_size, s->path, s->last_err);
        goto fail;
    }
    /* Everything in the WAL into the database, and the next commit back at
     * the WAL's start (see the top of this file); a database without room
     * for it is served from the log (room.c). */
    if (store_room_open_checkpoint(s, info) != STORE_OK) {
        put_err(err, err_size, s->path, s->last_err);
        goto fail;
    }
    return s;

fail:
    store_close(s);
    return NULL;
}

void store_close(store *s)
{
    if (s == NULL)
        return;
    store_backup_cancel(s);
    disconnect(s);
    free(s->path);
    free(s->vfs);
    free(s->bak_path[0]);
    free(s->bak_path[1]);
    free(s);
}
