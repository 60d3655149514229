/*
 * apply.c - journal records to SQL: the cached statements and
 * store_apply(), which commits a group of batches as one transaction.
 *
 * Group commit is what makes durable acknowledgements affordable: the cost
 * of a commit is dominated by one fsync of the WAL, whatever the number of
 * records in it, so the platform hands over every batch waiting and they
 * share that fsync.
 *
 * Failure handling: any failing step abandons the whole group. SQLite may or
 * may not have rolled the transaction back itself (it does for some I/O
 * errors and SQLITE_FULL, not for others), so the connection is checked with
 * sqlite3_get_autocommit() and an explicit ROLLBACK issued when still inside
 * the transaction; the statements are reset, so the next call starts clean.
 * A ROLLBACK that fails is retried at the start of the next call.
 *
 * A full log: SQLite checkpoints (and so lets the next transaction write
 * the WAL from its start) only after a commit that succeeded. When a group
 * fails with SQLITE_FULL because the WAL cannot grow - it reached the end
 * of its region in the unikernel (kvfs.h), or the disk is full and the
 * file gets no more blocks in the daemon - no later commit could succeed
 * either: each would append after the same committed frames. So after
 * such a failure the store checkpoints (RESTART: every frame into the
 * database, and the next writer starts at the WAL's start), and the next
 * group, the core's rewrite of the failed one, gets the whole log.
 */
#include "store/internal.h"

#include <string.h>

static const char *const stmt_sql[ST_COUNT] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_RETAIN_SET] = "INSERT INTO retained(topic, payload, qos, props, expiry_at)"
                      " VALUES(?1, ?2, ?3, ?4, ?5)"
                      " ON CONFLICT(topic) DO UPDATE SET payload = excluded.payload,"
                      " qos = excluded.qos, props = excluded.props,"
                      " expiry_at = excluded.expiry_at",
    [ST_RETAIN_DEL] = "DELETE FROM retained WHERE topic = ?1",
    [ST_SESSION_PUT] = "INSERT INTO sessions(client_id, identity, flags, expiry_interval,"
                       " expiry_at) VALUES(?1, ?2, ?3, ?4, ?5)"
                       " ON CONFLICT(client_id) DO UPDATE SET identity = excluded.identity,"
                       " flags = excluded.flags, expiry_interval = excluded.expiry_interval,"
                       " expiry_at = excluded.expiry_at",
    [ST_SESSION_DEL] = "DELETE FROM sessions WHERE client_id = ?1",
    [ST_SESSION_DEL_SUBS] = "DELETE FROM subs WHERE client_id = ?1",
    [ST_SESSION_DEL_QUEUE] = "DELETE FROM queue WHERE client_id = ?1",
    [ST_SESSION_DEL_INQOS2] = "DELETE FROM inqos2 WHERE client_id = ?1",
    [ST_SESSION_DEL_WILL] = "DELETE FROM wills WHERE client_id = ?1",
    [ST_SUB_PUT] = "INSERT INTO subs(client_id, filter, qos, options, sub_id)"
                   " VALUES(?1, ?2, ?3, ?4, ?5)"
                   " ON CONFLICT(client_id, filter) DO UPDATE SET qos = excluded.qos,"
                   " options = excluded.options, sub_id = excluded.sub_id",
    [ST_SUB_DEL] = "DELETE FROM subs WHERE client_id = ?1 AND filter = ?2",
    /* A message id may come back after a restart dropped an unreferenced
     * message, so a put replaces. */
    [ST_MSG_PUT] = "INSERT OR REPLACE INTO messages(msg_id, topic, payload, qos, flags, props,"
                   " expiry_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [ST_MSG_DEL] = "DELETE FROM messages WHERE msg_id = ?1",
    [ST_QUEUE_PUT] = "INSERT OR REPLACE INTO queue(client_id, seq, msg_id, qos, flags, state,"
                     " packet_id, sub_id, sub_ids) VALUES(?1, ?2, ?3, ?4, ?5, 0, 0, ?6, ?7)",
    [ST_QUEUE_STATE] = "UPDATE queue SET state = ?3, packet_id = ?4"
                       " WHERE client_id = ?1 AND seq = ?2",
    [ST_QUEUE_DEL] = "DELETE FROM queue WHERE client_id = ?1 AND seq = ?2",
    [ST_INQOS2_PUT] = "INSERT OR IGNORE INTO inqos2(client_id, packet_id) VALUES(?1, ?2)",
    [ST_INQOS2_DEL] = "DELETE FROM inqos2 WHERE client_id = ?1 AND packet_id = ?2",
    [ST_WILL_PUT] = "INSERT INTO wills(client_id, topic, payload, qos, flags, props, expiry_at,"
                    " fire_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
                    " ON CONFLICT(client_id) DO UPDATE SET topic = excluded.topic,"
                    " payload = excluded.payload, qos = excluded.qos, flags = excluded.flags,"
                    " props = excluded.props, expiry_at = excluded.expiry_at,"
                    " fire_at = excluded.fire_at",
    [ST_WILL_DEL] = "DELETE FROM wills WHERE client_id = ?1",
    [ST_RESET_RETAINED] = "DELETE FROM retained",
    [ST_RESET_SESSIONS] = "DELETE FROM sessions",
    [ST_RESET_SUBS] = "DELETE FROM subs",
    [ST_RESET_MESSAGES] = "DELETE FROM messages",
    [ST_RESET_QUEUE] = "DELETE FROM queue",
    [ST_RESET_INQOS2] = "DELETE FROM inqos2",
    [ST_RESET_WILLS] = "DELETE FROM wills",
};

store_rc store_stmts_prepare(store *s)
{
    for (int i = 0; i < ST_COUNT; i++) {
        int rc = sqlite3_prepare_v3(s->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
                                    &s->stmt[i], NULL);

        if (rc != SQLITE_OK)
            return store_fail(s, rc, stmt_sql[i]);
    }
    return STORE_OK;
}

void store_stmts_finalize(store *s)
{
    for (int i = 0; i < ST_COUNT; i++) {
        /* finalize reports the statement's last step error, already seen. */
        (void)sqlite3_finalize(s->stmt[i]);
        s->stmt[i] = NULL;
    }
}

/* An empty byte string must bind as a zero-length BLOB, not NULL, and
 * SQLite reads a NULL pointer as NULL. */
static int bind_bytes(sqlite3_stmt *st, int col, journal_bytes b)
{
    static const uint8_t empty[1];

    return sqlite3_bind_blob(st, col, b.len > 0 ? (const void *)b.p : (const void *)empty,
                             (int)b.len, SQLITE_STATIC);
}

static int bind_u64(sqlite3_stmt *st, int col, uint64_t v)
{
    return sqlite3_bind_int64(st, col, (sqlite3_int64)v);
}

/* Step a bound statement that returns no rows, then reset it (which also
 * drops the views into the batch it was bound to). */
static int run(sqlite3_stmt *st, int bind_rc)
{
    int rc = bind_rc == SQLITE_OK ? sqlite3_step(st) : bind_rc;
    /* reset repeats the step's error; the step result is what counts. */
    int reset_rc = sqlite3_reset(st);

    if (rc == SQLITE_DONE)
        rc = SQLITE_OK;
    if (rc == SQLITE_OK && sqlite3_clear_bindings(st) != SQLITE_OK)
        rc = reset_rc != SQLITE_OK ? reset_rc : SQLITE_ERROR;
    return rc;
}

/* Fold bind results: the first failure wins. */
#define B(call)                                                                          \
    do {                                                                                 \
        if (brc == SQLITE_OK)                                                            \
            brc = (call);                                                                \
    } while (0)

static int apply_session_del(store *s, const journal_rec *r)
{
    static const store_stmt_id ids[] = {ST_SESSION_DEL, ST_SESSION_DEL_SUBS,
                                        ST_SESSION_DEL_QUEUE, ST_SESSION_DEL_INQOS2,
                                        ST_SESSION_DEL_WILL};
    int rc = SQLITE_OK;

    for (size_t i = 0; i < sizeof ids / sizeof ids[0] && rc == SQLITE_OK; i++)
        rc = run(s->stmt[ids[i]], bind_bytes(s->stmt[ids[i]], 1, r->client_id));
    return rc;
}

/* J_RESET: the core lost track of what the disk holds (a batch failed) and
 * rewrites its whole durable state after this record, in the same batch. */
static int apply_reset(store *s)
{
    int rc = SQLITE_OK;

    for (int i = ST_RESET_RETAINED; i <= ST_RESET_WILLS && rc == SQLITE_OK; i++)
        rc = run(s->stmt[i], SQLITE_OK);
    return rc;
}

/* One record: bind its fields to its statement and run it. */
static int apply_rec(store *s, const journal_rec *r)
{
    sqlite3_stmt *st;
    int brc = SQLITE_OK;

    switch (r->type) {
    case J_RETAIN_SET:
        st = s->stmt[ST_RETAIN_SET];
        B(bind_bytes(st, 1, r->topic));
        B(bind_bytes(st, 2, r->payload));
        B(sqlite3_bind_int(st, 3, r->qos));
        B(bind_bytes(st, 4, r->props));
        B(bind_u64(st, 5, r->expiry_at));
        break;
    case J_RETAIN_DEL:
        st = s->stmt[ST_RETAIN_DEL];
        B(bind_bytes(st, 1, r->topic));
        break;
    case J_SESSION_PUT:
        st = s->stmt[ST_SESSION_PUT];
        B(bind_bytes(st, 1, r->client_id));
        B(bind_bytes(st, 2, r->identity));
        B(sqlite3_bind_int(st, 3, r->flags));
        B(sqlite3_bind_int64(st, 4, r->expiry_interval));
        B(bind_u64(st, 5, r->expiry_at));
        break;
    case J_SESSION_DEL:
        return apply_session_del(s, r);
    case J_RESET:
        return apply_reset(s);
    case J_SUB_PUT:
        st = s->stmt[ST_SUB_PUT];
        B(bind_bytes(st, 1, r->client_id));
        B(bind_bytes(st, 2, r->topic));
        B(sqlite3_bind_int(st, 3, r->qos));
        B(sqlite3_bind_int(st, 4, r->options));
        B(sqlite3_bind_int64(st, 5, r->sub_id));
        break;
    case J_SUB_DEL:
        st = s->stmt[ST_SUB_DEL];
        B(bind_bytes(st, 1, r->client_id));
        B(bind_bytes(st, 2, r->topic));
        break;
    case J_MSG_PUT:
        st = s->stmt[ST_MSG_PUT];
        B(bind_u64(st, 1, r->msg_id));
        B(bind_bytes(st, 2, r->topic));
        B(bind_bytes(st, 3, r->payload));
        B(sqlite3_bind_int(st, 4, r->qos));
        B(sqlite3_bind_int(st, 5, r->flags));
        B(bind_bytes(st, 6, r->props));
        B(bind_u64(st, 7, r->expiry_at));
        break;
    case J_MSG_DEL:
        st = s->stmt[ST_MSG_DEL];
        B(bind_u64(st, 1, r->msg_id));
        break;
    case J_QUEUE_PUT:
        st = s->stmt[ST_QUEUE_PUT];
        B(bind_bytes(st, 1, r->client_id));
        B(bind_u64(st, 2, r->seq));
        B(bind_u64(st, 3, r->msg_id));
        B(sqlite3_bind_int(st, 4, r->qos));
        B(sqlite3_bind_int(st, 5, r->flags));
        B(sqlite3_bind_int64(st, 6, r->sub_id));
        B(bind_bytes(st, 7, r->sub_ids));
        break;
    case J_QUEUE_STATE:
        st = s->stmt[ST_QUEUE_STATE];
        B(bind_bytes(st, 1, r->client_id));
        B(bind_u64(st, 2, r->seq));
        B(sqlite3_bind_int(st, 3, r->state));
        B(sqlite3_bind_int(st, 4, r->packet_id));
        break;
    case J_QUEUE_DEL:
        st = s->stmt[ST_QUEUE_DEL];
        B(bind_bytes(st, 1, r->client_id));
        B(bind_u64(st, 2, r->seq));
        break;
    case J_INQOS2_PUT:
        st = s->stmt[ST_INQOS2_PUT];
        B(bind_bytes(st, 1, r->client_id));
        B(sqlite3_bind_int(st, 2, r->packet_id));
        break;
    case J_INQOS2_DEL:
        st = s->stmt[ST_INQOS2_DEL];
        B(bind_bytes(st, 1, r->client_id));
        B(sqlite3_bind_int(st, 2, r->packet_id));
        break;
    case J_WILL_PUT:
        st = s->stmt[ST_WILL_PUT];
        B(bind_bytes(st, 1, r->client_id));
        B(bind_bytes(st, 2, r->topic));
        B(bind_bytes(st, 3, r->payload));
        B(sqlite3_bind_int(st, 4, r->qos));
        B(sqlite3_bind_int(st, 5, r->flags));
        B(bind_bytes(st, 6, r->props));
        B(bind_u64(st, 7, r->expiry_at));
        B(bind_u64(st, 8, r->fire_at));
        break;
    case J_WILL_DEL:
        st = s->stmt[ST_WILL_DEL];
        B(bind_bytes(st, 1, r->client_id));
        break;
    default:
        return SQLITE_MISUSE; /* journal_next only returns known types */
    }
    return run(st, brc);
}

#undef B

/* Every record of one batch; *bad is set when the batch does not decode. */
static int apply_batch(store *s, const broker_store_batch *b, uint64_t *records, bool *bad)
{
    size_t pos = 0;
    journal_rec r;
    int got, rc = SQLITE_OK;

    while (rc == SQLITE_OK && (got = journal_next(b->data, b->len, &pos, &r)) != 0) {
        if (got < 0) {
            *bad = true;
            return SQLITE_MISUSE;
        }
        rc = apply_rec(s, &r);
        (*records)++;
    }
    return rc;
}

/* Leave no transaction open, whatever state a failure left. */
static void abandon(store *s)
{
    if (sqlite3_get_autocommit(s->db))
        return;
    if (run(s->stmt[ST_ROLLBACK], SQLITE_OK) != SQLITE_OK)
        store_logf(s, BROKER_LOG_WARN, "store: ROLLBACK failed: %s (retried next time)",
                   sqlite3_errmsg(s->db));
}

static void note_failure(store *s, store_rc rc, size_t n)
{
    s->st.failed_commits++;
    if (rc == STORE_EFULL)
        s->st.errors_full++;
    else if (rc == STORE_EIO)
        s->st.errors_io++;
    s->commit_full = rc == STORE_EFULL;
    if (s->fail_streak++ == 0)
        store_logf(s, BROKER_LOG_ERROR,
                   "store: commit of %llu batch(es) failed (%s): %s; their acknowledgements "
                   "are withheld and later batches retried",
                   (unsigned long long)n, store_rc_text(rc), s->last_err);
    s->st.failing = true;
}

static void note_success(store *s)
{
    if (s->fail_streak > 0)
        store_logf(s, BROKER_LOG_WARN, "store: commits succeed again after %llu failed",
                   (unsigned long long)s->fail_streak);
    s->fail_streak = 0;
    s->commit_full = false;
    s->st.failing = false;
}

/* After a group failed with SQLITE_FULL (see the top of this file). The
 * failure stays what the caller reports; the checkpoint only logs. */
static void checkpoint_after_full(store *s)
{
    int log_frames = 0, copied = 0;
    int rc;

    if (!sqlite3_get_autocommit(s->db))
        return; /* the ROLLBACK failed: retried first next time */
    rc = sqlite3_wal_checkpoint_v2(s->db, "main", SQLITE_CHECKPOINT_RESTART, &log_frames,
                                   &copied);
    if (rc == SQLITE_OK && log_frames > 0) {
        s->st.full_log_checkpoints++;
        store_logf(s, BROKER_LOG_INFO,
                   "store: checkpointed the %d log frames after a commit found the log "
                   "full: the next commit writes the log from its start",
                   log_frames);
    }
    store_room_checkpointed(s, rc, "after a full log");
}

store_rc store_apply(store *s, const broker_store_batch *batches, size_t n)
{
    uint64_t start = store_now_us(s), records = 0, bytes = 0;
    bool bad = false;
    store_rc out = STORE_OK;
    int rc;

    abandon(s); /* a ROLLBACK that failed last time */
    rc = run(s->stmt[ST_BEGIN], SQLITE_OK);
    if (rc != SQLITE_OK) {
        out = store_fail(s, rc, "BEGIN");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        rc = apply_batch(s, &batches[i], &records, &bad);
        if (rc != SQLITE_OK && bad) {
            s->last_rc = SQLITE_MISUSE;
            (void)sqlite3_snprintf((int)sizeof s->last_err, s->last_err,
                                   "batch %llu does not decode",
                                   (unsigned long long)batches[i].seq);
            out = STORE_EBATCH;
            goto done;
        }
        if (rc != SQLITE_OK) {
            out = store_fail(s, sqlite3_extended_errcode(s->db), "applying a record");
            goto done;
        }
        bytes += batches[i].len;
    }
    rc = run(s->stmt[ST_COMMIT], SQLITE_OK);
    if (rc != SQLITE_OK)
        out = store_fail(s, sqlite3_extended_errcode(s->db), "COMMIT");
done:
    if (out == STORE_OK) {
        s->st.commits++;
        s->st.batches += n;
        s->st.records += records;
        s->st.bytes += bytes;
        store_stats_commit(s, store_now_us(s) - start);
        note_success(s);
    } else {
        abandon(s);
        note_failure(s, out, n);
        if (out == STORE_EFULL)
            checkpoint_after_full(s);
    }
    return out;
}
