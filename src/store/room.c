/*
 * room.c - the room the database has, and the checkpoints that need it.
 *
 * In WAL mode a commit only appends to the log; its pages reach the
 * database file later, at a checkpoint. A database file that cannot grow
 * (the unikernel's database region, docs/DISK.md; a full disk in the
 * daemon) therefore fails at the checkpoint, not at the commit: SQLite's
 * automatic checkpoint ignores that failure, commits went on being
 * acknowledged into the log, and the checkpoint at the next open failed
 * ("database or disk is full") - the kernel halted instead of serving what
 * it had (a 64 MiB disk filled with 100,000 retained topics). Three things
 * here keep that from happening and make it visible:
 *
 *   - PRAGMA max_page_count bounds the database to opt.max_db_bytes, so a
 *     commit that would grow it past its region fails (SQLITE_FULL) before
 *     it reaches the log: its acknowledgements are withheld (ADR-019) and
 *     every committed page fits the file at the next checkpoint.
 *   - SQLite's automatic checkpoint (1000 frames) is replaced by the same
 *     checkpoint run from a WAL hook, whose result is recorded: a checkpoint
 *     that finds no room is logged when it starts and stops, counted, and
 *     makes the store "full" ($SYS/broker/store/state).
 *   - The checkpoint at open tolerates no room: the log holds every
 *     committed page and SQLite reads them from it, so the store opens and
 *     serves what is stored; commits that need room fail until it has room.
 */
#include "store/internal.h"

/* SQLite's own threshold for its automatic checkpoint (frames in the log);
 * after a failed checkpoint, the first commit that follows failed commits
 * (the disk may have recovered) and then every ROOM_RETRY_COMMITS-th one
 * tries again below it, so the store does not stay "full" once there is
 * room, nor copy the log at every commit while there is none. */
enum { ROOM_AUTOCHECKPOINT_FRAMES = 1000, ROOM_RETRY_COMMITS = 64 };

static bool is_full(int rc)
{
    return (rc & 0xff) == SQLITE_FULL;
}

void store_room_checkpointed(store *s, int rc, const char *when)
{
    if (rc == SQLITE_OK) {
        if (s->checkpoint_full || s->checkpoint_failed)
            store_logf(s, BROKER_LOG_WARN, "store: checkpoint %s succeeded: the database has "
                       "room again", when);
        s->checkpoint_full = s->checkpoint_failed = false;
        return;
    }
    s->st.failed_checkpoints++;
    s->checkpoint_retry = ROOM_RETRY_COMMITS;
    if (is_full(rc) && !s->checkpoint_full)
        store_logf(s, BROKER_LOG_ERROR,
                   "store: checkpoint %s failed: no room in the database for the log's pages "
                   "(%s); what is committed stays in the log and is served; commits that "
                   "need room fail", when, sqlite3_errstr(rc));
    else if (!is_full(rc) && !s->checkpoint_failed)
        store_logf(s, BROKER_LOG_WARN, "store: checkpoint %s failed: %s (SQLite code %d)",
                   when, sqlite3_errstr(rc), rc);
    s->checkpoint_full = is_full(rc);
    s->checkpoint_failed = !is_full(rc);
}

/* After every commit (SQLite's sqlite3_wal_hook): what the default hook
 * does, with the result kept. The commit itself succeeded whatever the
 * checkpoint does, so the hook always answers SQLITE_OK. */
static int wal_hook(void *ctx, sqlite3 *db, const char *name, int frames)
{
    store *s = ctx;
    bool stuck = s->checkpoint_full || s->checkpoint_failed;

    /* fail_streak: this commit ends a run of failed ones (apply.c counts
     * it as a success only after the hook). */
    if (frames >= ROOM_AUTOCHECKPOINT_FRAMES ||
        (stuck && (s->fail_streak > 0 || s->checkpoint_retry == 0 || --s->checkpoint_retry == 0)))
        store_room_checkpointed(s, sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE,
                                                             NULL, NULL),
                                "after a commit");
    return SQLITE_OK;
}

store_rc store_room_setup(store *s)
{
    int64_t page = 0, got = 0;
    char sql[64];

    (void)sqlite3_wal_hook(s->db, wal_hook, s);
    if (s->opt.max_db_bytes == 0)
        return STORE_OK;
    if (!store_query_int(s->db, "PRAGMA page_size", &page) || page <= 0)
        return store_fail(s, sqlite3_extended_errcode(s->db), "PRAGMA page_size");
    /* Never below the pages the database has (SQLite keeps those): a file
     * that is already larger only cannot grow. */
    (void)sqlite3_snprintf((int)sizeof sql, sql, "PRAGMA max_page_count = %llu",
                           (unsigned long long)(s->opt.max_db_bytes / (uint64_t)page));
    if (!store_query_int(s->db, sql, &got))
        return store_fail(s, sqlite3_extended_errcode(s->db), "PRAGMA max_page_count");
    return STORE_OK;
}

store_rc store_set_max_db_bytes(store *s, uint64_t bytes)
{
    if (!s || bytes == s->opt.max_db_bytes)
        return STORE_OK;
    s->opt.max_db_bytes = bytes;
    return store_room_setup(s);
}

store_rc store_room_open_checkpoint(store *s, store_open_info *info)
{
    int frames = 0, copied = 0;
    int rc = sqlite3_wal_checkpoint_v2(s->db, "main", SQLITE_CHECKPOINT_RESTART, &frames,
                                       &copied);

    if (rc == SQLITE_OK || !is_full(rc)) {
        if (rc != SQLITE_OK)
            return store_fail(s, rc, "PRAGMA wal_checkpoint(RESTART)");
        return STORE_OK;
    }
    info->full = true;
    store_room_checkpointed(s, rc, "at open");
    store_logf(s, BROKER_LOG_ERROR,
               "store: %s: the database is full: %d log frames could not be checkpointed "
               "into it; serving what is stored, read-mostly, until it has room (a larger "
               "disk or database region)", s->path, frames);
    return STORE_OK;
}
