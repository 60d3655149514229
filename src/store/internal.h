/*
 * internal.h - what the files of src/store/ share: the store struct, the
 * cached statements and small helpers. Not included outside src/store/.
 */
#ifndef TERN_STORE_INTERNAL_H
#define TERN_STORE_INTERNAL_H

#include <sqlite3.h>

#include "store/store.h"

/* One prepared statement per record type, plus the transaction verbs. The
 * statements are prepared once at open (SQLITE_PREPARE_PERSISTENT). */
typedef enum store_stmt_id {
    ST_BEGIN,
    ST_COMMIT,
    ST_ROLLBACK,
    ST_RETAIN_SET,
    ST_RETAIN_DEL,
    ST_SESSION_PUT,
    ST_SESSION_DEL,
    ST_SESSION_DEL_SUBS,
    ST_SESSION_DEL_QUEUE,
    ST_SESSION_DEL_INQOS2,
    ST_SESSION_DEL_WILL,
    ST_SUB_PUT,
    ST_SUB_DEL,
    ST_MSG_PUT,
    ST_MSG_DEL,
    ST_QUEUE_PUT,
    ST_QUEUE_STATE,
    ST_QUEUE_DEL,
    ST_INQOS2_PUT,
    ST_INQOS2_DEL,
    ST_WILL_PUT,
    ST_WILL_DEL,
    ST_RESET_RETAINED, /* J_RESET: one DELETE per table */
    ST_RESET_SESSIONS,
    ST_RESET_SUBS,
    ST_RESET_MESSAGES,
    ST_RESET_QUEUE,
    ST_RESET_INQOS2,
    ST_RESET_WILLS,
    ST_COUNT,
} store_stmt_id;

struct store {
    sqlite3 *db;               /* owned */
    char *path;                /* owned copies of the options' strings */
    char *vfs;
    char *bak_path[2];         /* PATH.bak-a, PATH.bak-b */
    store_options opt;         /* path/vfs point at the copies above */
    sqlite3_stmt *stmt[ST_COUNT];

    int last_rc;               /* extended SQLite code of the last failure */
    char last_err[STORE_ERR_SIZE];
    uint64_t fail_streak;      /* failed transactions since the last success */
    bool commit_full;          /* the last transaction failed with SQLITE_FULL */
    bool checkpoint_full;      /* the last checkpoint found no room (room.c) */
    bool checkpoint_failed;    /* the last checkpoint failed otherwise */
    uint32_t checkpoint_retry; /* commits until a failed checkpoint is tried again */

    store_stats st;            /* counters; percentiles filled on demand */
    uint32_t lat_us[STORE_LATENCY_WINDOW]; /* ring of recent commit latencies */
    uint32_t lat_count, lat_next;

    void (*progress)(void *ctx); /* store_set_progress */
    void *progress_ctx;

    sqlite3 *bak_db;           /* backup in progress: destination, owned */
    sqlite3_backup *bak;       /* owned */
    int bak_slot;              /* 0 = a, 1 = b */
    uint64_t bak_gen;          /* generation the copy in progress carries */
};

/* Meta keys. */
#define STORE_META_SCHEMA "schema_version"
#define STORE_META_BACKUP_GEN "backup_gen"

/* 'tern' in ASCII, in PRAGMA application_id: marks tern databases. */
#define STORE_APPLICATION_ID 0x7465726e

/* Formatted log line through the options' callback (SQLite's formatter, so
 * no libc printf is needed on the unikernel). Its conversions differ from
 * printf's: no 'z' or 'j' size modifiers (%z is SQLite's own and frees its
 * argument), so sizes go through %llu with a cast. */
void store_logf(const store *s, broker_log_level level, const char *fmt, ...);

/* Record a failure: keep rc and "what: SQLite's message" as the last
 * error, and map rc to a store_rc. */
store_rc store_fail(store *s, int rc, const char *what);
store_rc store_rc_from_sqlite(int rc);

/* Run SQL without results (pragmas, schema); failure recorded as above. */
store_rc store_exec(store *s, const char *sql);

/* Read one integer from the first row of sql on db; false on error or no
 * row. */
bool store_query_int(sqlite3 *db, const char *sql, int64_t *out);

/* PRAGMA quick_check on db: true when it says "ok". */
bool store_quick_check(sqlite3 *db);

/* schema.c: create or migrate to STORE_SCHEMA_VERSION. */
store_rc store_schema_migrate(store *s, uint32_t *found, bool *created, char *err,
                              size_t err_size);

/* apply.c */
store_rc store_stmts_prepare(store *s);
void store_stmts_finalize(store *s);

/* backup.c, at open: the slot (0 = a, 1 = b) holding the newest copy that
 * passes quick_check and its generation, or -1 when neither does. */
int store_backup_newest(const store *s, int64_t *gen);
/* Replace the main file with slot's copy (generation gen, for the log);
 * why completes "PATH ..." in the logged line. */
store_rc store_backup_restore(store *s, int slot, int64_t gen, const char *why, char *err,
                              size_t err_size);

/* room.c: bound the database to opt.max_db_bytes and take over SQLite's
 * automatic checkpoint so that its failures are seen (after connecting). */
store_rc store_room_setup(store *s);
/* Record the outcome of a checkpoint (rc: SQLite's); logs when the store
 * runs out of room and when it has room again. */
void store_room_checkpointed(store *s, int rc, const char *when);
/* The checkpoint at open (RESTART). A database with no room for the log's
 * pages is opened anyway (info->full), so what is stored is served. */
store_rc store_room_open_checkpoint(store *s, store_open_info *info);

/* stats.c */
void store_stats_commit(store *s, uint64_t latency_us);
uint64_t store_now_us(const store *s);

#endif
