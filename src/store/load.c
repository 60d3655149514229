/*
 * load.c - store_load(): read the database back into a fresh core.
 *
 * The order is the one journal.h requires: sessions before anything that
 * belongs to them, messages before the queue rows that reference them, queue
 * rows per session in seq order (the queue table's key is (client_id, seq),
 * so a scan in key order gives exactly that), then inbound QoS 2 ids,
 * delayed wills and retained messages, and finally broker_restore_done().
 *
 * Messages no queue row references (left behind when a restart dropped
 * them in the core, which then never deletes them) are deleted first, in
 * their own commit, so they do not accumulate across restarts.
 */
#include "store/internal.h"

#include <string.h>

/* One table's scan: SQL and a callback per row. */
typedef int (*row_fn)(broker *b, sqlite3_stmt *st);

static const uint8_t *blob(sqlite3_stmt *st, int col, size_t *len)
{
    /* Order matters: sqlite3_column_bytes after sqlite3_column_blob. */
    const uint8_t *p = sqlite3_column_blob(st, col);

    *len = (size_t)sqlite3_column_bytes(st, col);
    return p;
}

static uint8_t col_u8(sqlite3_stmt *st, int col)
{
    return (uint8_t)sqlite3_column_int(st, col);
}

/* Unsigned values stored as their signed bit pattern (schema.c). */
static uint64_t col_u64(sqlite3_stmt *st, int col)
{
    return (uint64_t)sqlite3_column_int64(st, col);
}

/* A u32 column; a value out of range (only in a damaged file) reads as
 * UINT32_MAX, which the core refuses where it must. */
static uint32_t col_u32(sqlite3_stmt *st, int col)
{
    sqlite3_int64 v = sqlite3_column_int64(st, col);

    return v >= 0 && v <= (sqlite3_int64)UINT32_MAX ? (uint32_t)v : UINT32_MAX;
}

static int row_session(broker *b, sqlite3_stmt *st)
{
    size_t idlen, ilen;
    const uint8_t *id = blob(st, 0, &idlen);
    const uint8_t *identity = blob(st, 1, &ilen);

    return broker_restore_session(b, id, idlen, identity, ilen, (col_u8(st, 2) & 1u) != 0,
                                  col_u32(st, 3), col_u64(st, 4));
}

static int row_sub(broker *b, sqlite3_stmt *st)
{
    size_t idlen, flen;
    const uint8_t *id = blob(st, 0, &idlen);
    const uint8_t *filter = blob(st, 1, &flen);

    return broker_restore_sub(b, id, idlen, filter, flen, col_u8(st, 2), col_u8(st, 3),
                              col_u32(st, 4));
}

static int row_msg(broker *b, sqlite3_stmt *st)
{
    size_t tlen, plen, prlen;
    const uint8_t *topic = blob(st, 1, &tlen);
    const uint8_t *payload = blob(st, 2, &plen);
    const uint8_t *props = blob(st, 5, &prlen);

    return broker_restore_msg(b, col_u64(st, 0), topic, tlen, payload, plen, col_u8(st, 3),
                              (col_u8(st, 4) & 1u) != 0, props, prlen, col_u64(st, 6));
}

static int row_queue(broker *b, sqlite3_stmt *st)
{
    size_t idlen, slen;
    const uint8_t *id = blob(st, 0, &idlen);
    const uint8_t *sub_ids = blob(st, 8, &slen);

    return broker_restore_queued(b, id, idlen, col_u64(st, 1), col_u64(st, 2), col_u8(st, 3),
                                 (col_u8(st, 4) & 1u) != 0, col_u8(st, 5),
                                 (uint16_t)sqlite3_column_int(st, 6), col_u32(st, 7), sub_ids,
                                 slen);
}

static int row_inqos2(broker *b, sqlite3_stmt *st)
{
    size_t idlen;
    const uint8_t *id = blob(st, 0, &idlen);

    return broker_restore_inqos2(b, id, idlen, (uint16_t)sqlite3_column_int(st, 1));
}

static int row_will(broker *b, sqlite3_stmt *st)
{
    size_t idlen, tlen, plen, prlen;
    const uint8_t *id = blob(st, 0, &idlen);
    const uint8_t *topic = blob(st, 1, &tlen);
    const uint8_t *payload = blob(st, 2, &plen);
    const uint8_t *props = blob(st, 5, &prlen);

    return broker_restore_will(b, id, idlen, topic, tlen, payload, plen, col_u8(st, 3),
                               (col_u8(st, 4) & 1u) != 0, props, prlen, col_u64(st, 6),
                               col_u64(st, 7));
}

static int row_retained(broker *b, sqlite3_stmt *st)
{
    size_t tlen, plen, prlen;
    const uint8_t *topic = blob(st, 0, &tlen);
    const uint8_t *payload = blob(st, 1, &plen);
    const uint8_t *props = blob(st, 3, &prlen);

    return broker_restore_retained(b, topic, tlen, payload, plen, col_u8(st, 2), props, prlen,
                                   col_u64(st, 4));
}

typedef struct scan {
    const char *what;
    const char *sql;
    row_fn fn;
} scan;

static const scan scans[] = {
    {"session",
     "SELECT client_id, identity, flags, expiry_interval, expiry_at FROM sessions"
     " ORDER BY client_id",
     row_session},
    {"subscription",
     "SELECT client_id, filter, qos, options, sub_id FROM subs ORDER BY client_id, filter",
     row_sub},
    {"message",
     "SELECT msg_id, topic, payload, qos, flags, props, expiry_at FROM messages"
     " ORDER BY msg_id",
     row_msg},
    {"queue entry",
     "SELECT client_id, seq, msg_id, qos, flags, state, packet_id, sub_id, sub_ids FROM queue"
     " ORDER BY client_id, seq",
     row_queue},
    {"inbound QoS 2 id", "SELECT client_id, packet_id FROM inqos2 ORDER BY client_id, packet_id",
     row_inqos2},
    {"will",
     "SELECT client_id, topic, payload, qos, flags, props, expiry_at, fire_at FROM wills"
     " ORDER BY client_id",
     row_will},
    {"retained message",
     "SELECT topic, payload, qos, props, expiry_at FROM retained ORDER BY topic",
     row_retained},
};

static store_rc run_scan(store *s, broker *b, const scan *sc, uint64_t *rows, char *err,
                         size_t err_size)
{
    sqlite3_stmt *st = NULL;
    store_rc out = STORE_OK;
    int rc = sqlite3_prepare_v2(s->db, sc->sql, -1, &st, NULL);

    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (sc->fn(b, st) != 0) {
            if (err_size > 0)
                (void)sqlite3_snprintf((int)err_size, err,
                                       "%s: the core refused %s row %llu (out of memory, or "
                                       "inconsistent data)",
                                       s->path, sc->what, (unsigned long long)*rows + 1);
            out = STORE_EOTHER;
            break;
        }
        (*rows)++;
        rc = SQLITE_OK;
    }
    if (out == STORE_OK && rc != SQLITE_DONE) {
        out = store_fail(s, sqlite3_extended_errcode(s->db), sc->what);
        if (err_size > 0)
            (void)sqlite3_snprintf((int)err_size, err, "%s: reading: %s", s->path, s->last_err);
    }
    /* finalize repeats the step error handled above. */
    (void)sqlite3_finalize(st);
    return out;
}

store_rc store_load(store *s, broker *b, char *err, size_t err_size)
{
    uint64_t rows[sizeof scans / sizeof scans[0]] = {0};
    store_rc rc;

    rc = store_exec(s, "DELETE FROM messages WHERE msg_id NOT IN (SELECT msg_id FROM queue)");
    if (rc != STORE_OK) {
        if (err_size > 0)
            (void)sqlite3_snprintf((int)err_size, err, "%s: %s", s->path, s->last_err);
        return rc;
    }
    if (sqlite3_changes(s->db) > 0)
        store_logf(s, BROKER_LOG_INFO, "store: dropped %d unreferenced message(s)",
                   sqlite3_changes(s->db));
    /* One read transaction: every scan sees the same snapshot. */
    rc = store_exec(s, "BEGIN");
    if (rc != STORE_OK && err_size > 0)
        (void)sqlite3_snprintf((int)err_size, err, "%s: %s", s->path, s->last_err);
    for (size_t i = 0; rc == STORE_OK && i < sizeof scans / sizeof scans[0]; i++)
        rc = run_scan(s, b, &scans[i], &rows[i], err, err_size);
    if (!sqlite3_get_autocommit(s->db) &&
        sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        store_logf(s, BROKER_LOG_WARN, "store: ending the load transaction: %s",
                   sqlite3_errmsg(s->db));
    if (rc != STORE_OK)
        return rc;
    broker_restore_done(b);
    store_logf(s, BROKER_LOG_INFO,
               "store: loaded %llu session(s), %llu subscription(s), %llu message(s), "
               "%llu queue entries, %llu inbound QoS 2 id(s), %llu will(s), "
               "%llu retained message(s)",
               (unsigned long long)rows[0], (unsigned long long)rows[1],
               (unsigned long long)rows[2], (unsigned long long)rows[3],
               (unsigned long long)rows[4], (unsigned long long)rows[5],
               (unsigned long long)rows[6]);
    return STORE_OK;
}
