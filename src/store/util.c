/*
 * util.c - the store's small shared helpers: logging, error recording and
 * mapping, one-shot SQL, and the integrity check.
 *
 * Errors keep SQLite's extended result code next to the mapped store_rc,
 * because the daemon's log and the fault-injection tests must tell a full
 * disk (SQLITE_FULL) from a failing one (SQLITE_IOERR_*) precisely.
 */
#include "store/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void store_logf(const store *s, broker_log_level level, const char *fmt, ...)
{
    char line[320];
    va_list ap;

    if (s->opt.log == NULL)
        return;
    va_start(ap, fmt);
    (void)sqlite3_vsnprintf((int)sizeof line, line, fmt, ap);
    va_end(ap);
    s->opt.log(s->opt.log_ctx, level, line);
}

store_rc store_rc_from_sqlite(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_DONE:
    case SQLITE_ROW:
        return STORE_OK;
    case SQLITE_FULL:
        return STORE_EFULL;
    case SQLITE_IOERR:
        return rc == SQLITE_IOERR_NOMEM ? STORE_ENOMEM : STORE_EIO;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return STORE_ECORRUPT;
    case SQLITE_NOMEM:
        return STORE_ENOMEM;
    default:
        return STORE_EOTHER;
    }
}

store_rc store_fail(store *s, int rc, const char *what)
{
    /* sqlite3_errmsg describes the most recent failing call on db, which is
     * the one the caller reports; sqlite3_errstr(rc) covers a NULL db. */
    const char *msg = s->db != NULL ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc);

    s->last_rc = rc;
    (void)sqlite3_snprintf((int)sizeof s->last_err, s->last_err, "%s: %s (SQLite code %d)",
                           what, msg, rc);
    return rc == SQLITE_OK ? STORE_EOTHER : store_rc_from_sqlite(rc);
}

store_rc store_exec(store *s, const char *sql)
{
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);

    return rc == SQLITE_OK ? STORE_OK : store_fail(s, sqlite3_extended_errcode(s->db), sql);
}

bool store_query_int(sqlite3 *db, const char *sql, int64_t *out)
{
    sqlite3_stmt *st = NULL;
    bool ok = false;

    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        goto done;
    if (sqlite3_step(st) != SQLITE_ROW)
        goto done;
    *out = sqlite3_column_int64(st, 0);
    ok = true;
done:
    /* finalize repeats the step's error, already accounted for by ok. */
    (void)sqlite3_finalize(st);
    return ok;
}

bool store_quick_check(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    bool ok = false;

    if (sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &st, NULL) != SQLITE_OK)
        goto done;
    if (sqlite3_step(st) != SQLITE_ROW)
        goto done;
    {
        const unsigned char *text = sqlite3_column_text(st, 0);

        ok = text != NULL && strcmp((const char *)text, "ok") == 0;
    }
done:
    (void)sqlite3_finalize(st);
    return ok;
}

store_rc store_integrity_check(store *s, char *err, size_t err_size)
{
    sqlite3_stmt *st = NULL;
    store_rc out = STORE_EOTHER;
    int rc = sqlite3_prepare_v2(s->db, "PRAGMA integrity_check(1)", -1, &st, NULL);

    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *text = (const char *)sqlite3_column_text(st, 0);

        if (text != NULL && strcmp(text, "ok") == 0)
            out = STORE_OK;
        else
            (void)snprintf(err, err_size, "%s", text != NULL ? text : "no answer");
    } else {
        (void)snprintf(err, err_size, "%s", sqlite3_errmsg(s->db));
        out = rc == SQLITE_OK ? STORE_EOTHER : store_rc_from_sqlite(rc);
    }
    (void)sqlite3_finalize(st);
    return out;
}

static int progress_trampoline(void *ctx)
{
    const store *s = ctx;

    s->progress(s->progress_ctx);
    return 0; /* never interrupt the statement */
}

void store_set_progress(store *s, unsigned ops, void (*fn)(void *ctx), void *ctx)
{
    s->progress = fn;
    s->progress_ctx = ctx;
    sqlite3_progress_handler(s->db, fn != NULL ? (int)ops : 0,
                             fn != NULL ? progress_trampoline : NULL, s);
}

int store_last_error(const store *s, const char **text)
{
    if (text != NULL)
        *text = s->last_err;
    return s->last_rc;
}

const char *store_rc_text(store_rc rc)
{
    switch (rc) {
    case STORE_OK:
        return "ok";
    case STORE_EFULL:
        return "disk full";
    case STORE_EIO:
        return "I/O error";
    case STORE_ECORRUPT:
        return "database corrupt";
    case STORE_EBATCH:
        return "malformed batch";
    case STORE_ENOMEM:
        return "out of memory";
    case STORE_EOTHER:
        break;
    }
    return "SQLite error";
}
