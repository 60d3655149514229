/*
 * backup.c - the two alternating backup copies (SPEC D5) and the restore
 * from them at open.
 *
 * Which copy is newer: every backup first bumps 'backup_gen' in the main
 * database's meta table (a one-row commit), then copies the database, so
 * each complete copy carries its own generation. A new backup overwrites the
 * slot with the lower generation (or one that does not hold a readable
 * copy); the other slot always keeps the last complete copy.
 *
 * Crash safety of a copy: the slot is emptied first (its file deleted through
 * the VFS), then the backup API writes the copy inside one write transaction
 * that stays open across steps, in rollback-journal mode with synchronous =
 * FULL. A copy interrupted by a crash or an error leaves the slot empty (the
 * journal of a new file holds no pages, so it rolls back to nothing) and the
 * other slot keeps the last complete copy; a finished copy is synced before
 * backup_finish returns. Starting from an empty file is what keeps the copy
 * in rollback-journal mode (a copy of a WAL database says WAL in its
 * header, and writing into an existing one would go through its own WAL)
 * and its journal small: the unikernel keeps a backup's journal in memory
 * (src/platform/kernel/store/kvfs.h).
 *
 * Restoring (at open): the main file and its journals are deleted, then the
 * copy is written into the empty file in one transaction, in normal (not
 * exclusive) locking mode so that its commit deletes the rollback journal
 * (exclusive mode would only zero the journal's header and leave the file
 * until the connection closes: the unikernel keeps the journal in the log
 * region, and a power cut in that window left a journal there that kept
 * the WAL from opening at the next boot). A crash in the middle leaves an
 * empty database (its journal holds no pages), which store_open then
 * restores again: a main file that is empty while a slot holds a valid
 * copy is never taken for a new store, or the backups that followed would
 * overwrite both slots with copies of nothing.
 *
 * The copy is made from the store's own connection, a few pages per step.
 * SQLite updates pages already copied when that connection commits changes
 * to them, so commits run between steps and the copy stays a consistent
 * image of the newest commit when it finishes.
 */
#include "store/internal.h"

#include <string.h>

static int delete_files(const store *s, const char *base);

/* Open a backup slot with the settings a copy needs. */
static int open_slot(const store *s, int slot, sqlite3 **db)
{
    int rc = sqlite3_open_v2(s->bak_path[slot], db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX |
                                 SQLITE_OPEN_EXRESCODE,
                             s->vfs);

    if (rc == SQLITE_OK)
        rc = sqlite3_exec(*db,
                          "PRAGMA locking_mode = EXCLUSIVE;"
                          "PRAGMA synchronous = FULL;"
                          "PRAGMA cache_size = 64;",
                          NULL, NULL, NULL);
    return rc;
}

static void close_db(const store *s, sqlite3 *db, const char *path)
{
    if (db != NULL && sqlite3_close(db) != SQLITE_OK)
        store_logf(s, BROKER_LOG_WARN, "store: closing %s: %s", path, sqlite3_errmsg(db));
}

/* The generation held by a slot, or -1 when it holds no readable copy.
 * With check, the copy must also pass quick_check. A missing file is
 * opened without being created. */
static int64_t slot_gen(const store *s, int slot, bool check)
{
    sqlite3 *db = NULL;
    int64_t gen = -1;
    int rc = sqlite3_open_v2(s->bak_path[slot], &db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE,
                             s->vfs);

    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, "PRAGMA locking_mode = EXCLUSIVE", NULL, NULL, NULL);
    if (rc == SQLITE_OK && (!check || store_quick_check(db)) &&
        !store_query_int(db, "SELECT value FROM meta WHERE key = '" STORE_META_BACKUP_GEN "'",
                         &gen))
        gen = -1;
    close_db(s, db, s->bak_path[slot]);
    return gen;
}

bool store_backup_running(const store *s)
{
    return s->bak != NULL;
}

void store_backup_cancel(store *s)
{
    if (s->bak != NULL) {
        /* finish rolls the destination back; its result is the copy's
         * last error, which is why it is being cancelled. */
        (void)sqlite3_backup_finish(s->bak);
        s->bak = NULL;
    }
    close_db(s, s->bak_db, s->bak_slot >= 0 ? s->bak_path[s->bak_slot] : "backup");
    s->bak_db = NULL;
    s->bak_slot = -1;
}

/* The backup in progress failed with SQLite code rc: count, log, drop it
 * (the slot holds no copy now; the other slot keeps the last one). */
static store_rc backup_failed(store *s, int rc, const char *msg)
{
    s->last_rc = rc;
    (void)sqlite3_snprintf((int)sizeof s->last_err, s->last_err, "backup to %s: %s",
                           s->bak_path[s->bak_slot], msg);
    store_logf(s, BROKER_LOG_WARN, "store: %s; the other slot keeps the last complete copy", s->last_err);
    s->st.backups_failed++;
    store_backup_cancel(s);
    return store_rc_from_sqlite(rc);
}

store_rc store_backup_begin(store *s)
{
    int64_t gen[2], next = 0;
    store_rc out = STORE_OK;
    int rc;

    if (s->bak != NULL)
        goto done; /* one at a time */
    gen[0] = slot_gen(s, 0, false);
    gen[1] = slot_gen(s, 1, false);
    rc = sqlite3_exec(s->db,
                      "UPDATE meta SET value = value + 1 WHERE key = '" STORE_META_BACKUP_GEN "'",
                      NULL, NULL, NULL);
    if (rc != SQLITE_OK || !store_query_int(s->db,
                                            "SELECT value FROM meta WHERE key = '"
                                            STORE_META_BACKUP_GEN "'",
                                            &next)) {
        out = store_fail(s, sqlite3_extended_errcode(s->db), "backup generation");
        goto done;
    }
    s->bak_slot = gen[1] < gen[0] ? 1 : 0;
    s->bak_gen = (uint64_t)next;
    rc = delete_files(s, s->bak_path[s->bak_slot]);
    if (rc == SQLITE_OK)
        rc = open_slot(s, s->bak_slot, &s->bak_db);
    if (rc == SQLITE_OK) {
        s->bak = sqlite3_backup_init(s->bak_db, "main", s->db, "main");
        if (s->bak == NULL)
            rc = sqlite3_extended_errcode(s->bak_db);
    }
    if (rc != SQLITE_OK) {
        out = backup_failed(s, rc, s->bak_db != NULL ? sqlite3_errmsg(s->bak_db)
                                                     : sqlite3_errstr(rc));
        goto done;
    }
    store_logf(s, BROKER_LOG_INFO, "store: backup %llu to %s started",
               (unsigned long long)s->bak_gen, s->bak_path[s->bak_slot]);
done:
    return out;
}

store_rc store_backup_step(store *s, bool *done)
{
    uint64_t start = store_now_us(s), took;
    store_rc out = STORE_OK;
    int rc, pages;

    *done = false;
    if (s->bak == NULL) {
        out = STORE_EOTHER;
        goto out;
    }
    rc = sqlite3_backup_step(s->bak, (int)s->opt.backup_step_pages);
    took = store_now_us(s) - start;
    if (took > s->st.backup_longest_step_us)
        s->st.backup_longest_step_us = took;
    if (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
        goto out; /* more to copy (busy/locked: try again next step) */
    if (rc != SQLITE_DONE) {
        out = backup_failed(s, rc, sqlite3_errstr(rc));
        goto out;
    }
    pages = sqlite3_backup_pagecount(s->bak);
    rc = sqlite3_backup_finish(s->bak);
    s->bak = NULL;
    if (rc != SQLITE_OK) {
        out = backup_failed(s, rc, sqlite3_errstr(rc));
        goto out;
    }
    s->st.backups_done++;
    *done = true;
    store_logf(s, BROKER_LOG_INFO, "store: backup %llu to %s complete (%d pages)",
               (unsigned long long)s->bak_gen, s->bak_path[s->bak_slot], pages);
    store_backup_cancel(s); /* closes the destination */
out:
    return out;
}

store_rc store_backup_run(store *s)
{
    bool done = false;
    store_rc rc = store_backup_begin(s);

    while (rc == STORE_OK && !done)
        rc = store_backup_step(s, &done);
    return rc;
}

/* Remove a file and its journals through the VFS, so a copy into it starts
 * from an empty file. A file that is not there is fine. */
static int delete_files(const store *s, const char *base)
{
    static const char *const suffixes[] = {"", "-wal", "-journal", "-shm"};
    sqlite3_vfs *vfs = sqlite3_vfs_find(s->vfs);
    char path[4096];
    int rc = SQLITE_OK;

    if (vfs == NULL)
        return SQLITE_ERROR;
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0] && rc == SQLITE_OK; i++) {
        int exists = 0;

        (void)sqlite3_snprintf((int)sizeof path, path, "%s%s", base, suffixes[i]);
        rc = vfs->xAccess(vfs, path, SQLITE_ACCESS_EXISTS, &exists);
        if (rc == SQLITE_OK && exists)
            rc = vfs->xDelete(vfs, path, 1);
    }
    return rc;
}

/* Copy backup slot into the (now empty) main file in one go. */
static int copy_into_main(const store *s, int slot)
{
    sqlite3 *src = NULL, *dst = NULL;
    sqlite3_backup *b;
    int rc = sqlite3_open_v2(s->bak_path[slot], &src,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE,
                             s->vfs);

    if (rc == SQLITE_OK)
        rc = sqlite3_exec(src, "PRAGMA locking_mode = EXCLUSIVE", NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_open_v2(s->path, &dst,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX |
                                 SQLITE_OPEN_EXRESCODE,
                             s->vfs);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(dst, "PRAGMA synchronous = FULL", NULL, NULL, NULL);
    if (rc == SQLITE_OK) {
        b = sqlite3_backup_init(dst, "main", src, "main");
        if (b == NULL) {
            rc = sqlite3_extended_errcode(dst);
        } else {
            rc = sqlite3_backup_step(b, -1);
            /* finish reports the copy's error, if any, after DONE too. */
            int frc = sqlite3_backup_finish(b);

            rc = rc == SQLITE_DONE ? frc : rc;
        }
    }
    close_db(s, dst, s->path);
    close_db(s, src, s->bak_path[slot]);
    return rc;
}

int store_backup_newest(const store *s, int64_t *gen_out)
{
    int64_t gen[2] = {slot_gen(s, 0, true), slot_gen(s, 1, true)};
    int slot = gen[1] > gen[0] ? 1 : 0;

    if (gen[slot] < 0)
        return -1;
    *gen_out = gen[slot];
    return slot;
}

store_rc store_backup_restore(store *s, int slot, int64_t gen, const char *why, char *err,
                              size_t err_size)
{
    int rc;

    store_logf(s, BROKER_LOG_ERROR,
               "store: %s %s; restoring backup %lld from %s (changes committed after that "
               "backup are lost)",
               s->path, why, (long long)gen, s->bak_path[slot]);
    rc = delete_files(s, s->path);
    if (rc == SQLITE_OK)
        rc = copy_into_main(s, slot);
    if (rc != SQLITE_OK) {
        if (err_size > 0)
            (void)sqlite3_snprintf((int)err_size, err, "%s: restoring from %s failed: %s",
                                   s->path, s->bak_path[slot], sqlite3_errstr(rc));
        return store_rc_from_sqlite(rc);
    }
    return STORE_OK;
}
