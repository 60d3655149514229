/*
 * test_store_util.c - helpers for the store's unit tests (see
 * test_store_util.h). The record encoder here is written from journal.h's
 * description; the core's journal_next() decodes it in every test, so a
 * mismatch with the core's encoding shows up as a failed apply.
 */
#define _POSIX_C_SOURCE 200809L

#include "test_store_util.h"

#include <dirent.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

bool ts_init(ts_env *e)
{
    memset(e, 0, sizeof *e);
    strcpy(e->dir, "/tmp/tern-store-XXXXXX");
    if (mkdtemp(e->dir) == NULL)
        return false;
    snprintf(e->path, sizeof e->path, "%s/t.db", e->dir);
    return true;
}

/* The store's log callback: keep the lines (so tests can check them, and
 * every format string is exercised under the sanitizers). */
static void keep_log(void *ctx, broker_log_level level, const char *msg)
{
    ts_env *e = ctx;
    size_t used = strlen(e->log);

    (void)level;
    snprintf(e->log + used, sizeof e->log - used, "%s\n", msg);
}

int ts_log_count(const ts_env *e, const char *text)
{
    int n = 0;

    for (const char *p = strstr(e->log, text); p != NULL; p = strstr(p + 1, text))
        n++;
    return n;
}

bool ts_open(ts_env *e, bool with_fault)
{
    store_options opt;

    if (with_fault && e->fault == NULL) {
        /* Unique per test: the name is registered process-wide. */
        snprintf(e->vfs_name, sizeof e->vfs_name, "fault-%s", e->dir + 16);
        e->fault = store_fault_create(e->vfs_name, NULL);
        if (e->fault == NULL)
            return false;
    }
    memset(&opt, 0, sizeof opt);
    opt.path = e->path;
    opt.vfs = e->fault != NULL ? e->vfs_name : NULL;
    opt.sync = STORE_SYNC_FULL;
    opt.clock = ts_clock_us;
    opt.log = keep_log;
    opt.log_ctx = e;
    e->s = store_open(&opt, &e->info, e->err, sizeof e->err);
    if (e->s == NULL)
        fprintf(stderr, "  store_open: %s\n", e->err);
    return e->s != NULL;
}

void ts_close(ts_env *e)
{
    store_close(e->s);
    e->s = NULL;
}

void ts_cleanup(ts_env *e)
{
    DIR *d;
    struct dirent *de;

    ts_close(e);
    store_fault_destroy(e->fault);
    e->fault = NULL;
    d = opendir(e->dir);
    if (d != NULL) {
        while ((de = readdir(d)) != NULL) {
            char p[400];

            if (de->d_name[0] == '.')
                continue;
            snprintf(p, sizeof p, "%s/%s", e->dir, de->d_name);
            (void)unlink(p);
        }
        (void)closedir(d);
    }
    (void)rmdir(e->dir);
}

store_rc ts_commit_all(store *s, broker *b)
{
    broker_store_batch batches[16];
    size_t n = 0;
    store_rc rc;

    while (n < 16 && broker_store_take(b, &batches[n]))
        n++;
    if (n == 0)
        return STORE_OK;
    rc = store_apply(s, batches, n);
    for (size_t i = 0; i < n; i++)
        broker_store_done(b, batches[i].seq, rc == STORE_OK);
    return rc;
}

uint64_t ts_clock_us(void *ctx)
{
    struct timespec ts;

    (void)ctx;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int64_t ts_query(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int64_t v = -1;

    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

bool ts_integrity_ok(const char *path)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    bool ok = false;

    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        ok = strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0;
    sqlite3_finalize(st);
    sqlite3_close(db);
    return ok;
}

/* ---- encoder ------------------------------------------------------------ */

static void put_uint(jb *j, uint64_t v, unsigned n)
{
    for (unsigned i = n; i-- > 0;)
        j->data[j->len++] = (uint8_t)(v >> (8 * i));
}

static void put_str(jb *j, const char *s)
{
    size_t n = strlen(s);

    put_uint(j, n, 4);
    memcpy(j->data + j->len, s, n);
    j->len += n;
}

static void begin(jb *j, journal_type t)
{
    if (j->len + 1024 > sizeof j->data)
        abort(); /* test batches are small */
    put_uint(j, (uint64_t)t, 1);
    j->records++;
}

void jb_init(jb *j, uint64_t seq)
{
    j->len = 0;
    j->records = 0;
    j->seq = seq;
}

/* A byte string of n bytes (not NUL-terminated). */
static void put_raw(jb *j, const void *p, size_t n)
{
    put_uint(j, n, 4);
    if (n)
        memcpy(j->data + j->len, p, n);
    j->len += n;
}

void jb_retain_set(jb *j, const char *topic, const char *payload, uint8_t qos)
{
    jb_retain_set5(j, topic, payload, qos, NULL, 0, 0);
}

void jb_retain_set5(jb *j, const char *topic, const char *payload, uint8_t qos,
                    const uint8_t *props, size_t props_len, uint64_t expiry_at)
{
    begin(j, J_RETAIN_SET);
    put_str(j, topic);
    put_str(j, payload);
    put_uint(j, qos, 1);
    put_raw(j, props, props_len);
    put_uint(j, expiry_at, 8);
}

void jb_retain_del(jb *j, const char *topic)
{
    begin(j, J_RETAIN_DEL);
    put_str(j, topic);
}

void jb_session_put(jb *j, const char *cid, const char *identity, uint8_t flags)
{
    jb_session_put5(j, cid, identity, flags, 0, 0);
}

void jb_session_put5(jb *j, const char *cid, const char *identity, uint8_t flags,
                     uint32_t expiry_interval, uint64_t expiry_at)
{
    begin(j, J_SESSION_PUT);
    put_str(j, cid);
    put_str(j, identity);
    put_uint(j, flags, 1);
    put_uint(j, expiry_interval, 4);
    put_uint(j, expiry_at, 8);
}

void jb_session_del(jb *j, const char *cid)
{
    begin(j, J_SESSION_DEL);
    put_str(j, cid);
}

void jb_sub_put(jb *j, const char *cid, const char *filter, uint8_t qos)
{
    jb_sub_put5(j, cid, filter, qos, 0, 0);
}

void jb_sub_put5(jb *j, const char *cid, const char *filter, uint8_t qos, uint8_t options,
                 uint32_t sub_id)
{
    begin(j, J_SUB_PUT);
    put_str(j, cid);
    put_str(j, filter);
    put_uint(j, qos, 1);
    put_uint(j, options, 1);
    put_uint(j, sub_id, 4);
}

void jb_sub_del(jb *j, const char *cid, const char *filter)
{
    begin(j, J_SUB_DEL);
    put_str(j, cid);
    put_str(j, filter);
}

void jb_msg_put(jb *j, uint64_t msg_id, const char *topic, const char *payload, uint8_t qos,
                uint8_t flags)
{
    jb_msg_put5(j, msg_id, topic, payload, qos, flags, NULL, 0, 0);
}

void jb_msg_put5(jb *j, uint64_t msg_id, const char *topic, const char *payload, uint8_t qos,
                 uint8_t flags, const uint8_t *props, size_t props_len, uint64_t expiry_at)
{
    begin(j, J_MSG_PUT);
    put_uint(j, msg_id, 8);
    put_str(j, topic);
    put_str(j, payload);
    put_uint(j, qos, 1);
    put_uint(j, flags, 1);
    put_raw(j, props, props_len);
    put_uint(j, expiry_at, 8);
}

void jb_msg_del(jb *j, uint64_t msg_id)
{
    begin(j, J_MSG_DEL);
    put_uint(j, msg_id, 8);
}

void jb_queue_put(jb *j, const char *cid, uint64_t seq, uint64_t msg_id, uint8_t qos,
                  uint8_t flags)
{
    jb_queue_put5(j, cid, seq, msg_id, qos, flags, 0, NULL, 0);
}

void jb_queue_put5(jb *j, const char *cid, uint64_t seq, uint64_t msg_id, uint8_t qos,
                   uint8_t flags, uint32_t sub_id, const uint32_t *more, size_t nmore)
{
    begin(j, J_QUEUE_PUT);
    put_str(j, cid);
    put_uint(j, seq, 8);
    put_uint(j, msg_id, 8);
    put_uint(j, qos, 1);
    put_uint(j, flags, 1);
    put_uint(j, sub_id, 4);
    put_uint(j, nmore * 4, 4);
    for (size_t i = 0; i < nmore; i++)
        put_uint(j, more[i], 4);
}

void jb_queue_state(jb *j, const char *cid, uint64_t seq, uint8_t state, uint16_t packet_id)
{
    begin(j, J_QUEUE_STATE);
    put_str(j, cid);
    put_uint(j, seq, 8);
    put_uint(j, state, 1);
    put_uint(j, packet_id, 2);
}

void jb_queue_del(jb *j, const char *cid, uint64_t seq)
{
    begin(j, J_QUEUE_DEL);
    put_str(j, cid);
    put_uint(j, seq, 8);
}

void jb_inqos2(jb *j, const char *cid, uint16_t packet_id, bool put)
{
    begin(j, put ? J_INQOS2_PUT : J_INQOS2_DEL);
    put_str(j, cid);
    put_uint(j, packet_id, 2);
}

void jb_reset(jb *j)
{
    begin(j, J_RESET);
}

void jb_will_put(jb *j, const char *cid, const char *topic, const char *payload, uint8_t qos,
                 uint8_t flags, const uint8_t *props, size_t props_len, uint64_t expiry_at,
                 uint64_t fire_at)
{
    begin(j, J_WILL_PUT);
    put_str(j, cid);
    put_str(j, topic);
    put_str(j, payload);
    put_uint(j, qos, 1);
    put_uint(j, flags, 1);
    put_raw(j, props, props_len);
    put_uint(j, expiry_at, 8);
    put_uint(j, fire_at, 8);
}

void jb_will_del(jb *j, const char *cid)
{
    begin(j, J_WILL_DEL);
    put_str(j, cid);
}

broker_store_batch jb_batch(const jb *j)
{
    broker_store_batch b = {j->seq, j->data, j->len, j->records};

    return b;
}

/* One group: count batches of one retained message each, payload bytes
 * long, topics PREFIX/I. */
static store_rc apply_retained(store *s, const char *prefix, uint64_t seq, uint32_t count,
                               size_t payload)
{
    static jb j[64];
    static char text[12000];
    broker_store_batch b[64];

    if (count > 64 || payload >= sizeof text)
        return STORE_EOTHER;
    memset(text, 'p', payload);
    text[payload] = '\0';
    for (uint32_t i = 0; i < count; i++) {
        char topic[48];

        snprintf(topic, sizeof topic, "%s/%u", prefix, i);
        jb_init(&j[i], seq + i);
        jb_retain_set(&j[i], topic, text, 1);
        b[i] = jb_batch(&j[i]);
    }
    return store_apply(s, b, count);
}

bool ts_full_log_run(store *s, size_t log_bytes, ts_full_log *out)
{
    enum { BIG_PAYLOAD = 10000 };
    uint32_t big_count = (uint32_t)(log_bytes * 6 / 10 / BIG_PAYLOAD);
    bool after_full = false;
    store_rc rc;

    memset(out, 0, sizeof *out);
    for (uint32_t n = 0; n < 400; n++) {
        char prefix[32];

        snprintf(prefix, sizeof prefix, "f/%u", n);
        rc = apply_retained(s, prefix, n + 1, 1, 200);
        if (rc == STORE_OK) {
            out->small_ok++;
            after_full = false;
            continue;
        }
        if (rc != STORE_EFULL || after_full) {
            fprintf(stderr, "  small group %u: %s%s\n", n, store_rc_text(rc),
                    after_full ? " right after a full log" : "");
            return false;
        }
        out->small_full++;
        after_full = true;
    }
    for (uint32_t g = 0; g < 6; g++) {
        char prefix[32];

        snprintf(prefix, sizeof prefix, "big/%u", g);
        rc = apply_retained(s, prefix, 1000 + 100 * g, big_count, BIG_PAYLOAD);
        if (rc == STORE_EFULL) {
            out->big_full++;
            rc = apply_retained(s, prefix, 1000 + 100 * g, big_count, BIG_PAYLOAD);
        }
        if (rc != STORE_OK) {
            fprintf(stderr, "  big group %u of %u KiB: %s\n", g,
                    (unsigned)(big_count * BIG_PAYLOAD / 1024), store_rc_text(rc));
            return false;
        }
        out->big_ok++;
    }
    if (out->small_full < 2 || out->big_full < 1) {
        fprintf(stderr, "  the log filled %u and %u times: too large for this test\n",
                out->small_full, out->big_full);
        return false;
    }
    return true;
}

store_rc ts_put_retained(store *s, uint32_t n, size_t pad)
{
    char topic[32], payload[4096];
    jb j;

    if (pad > 4000)
        pad = 4000;
    snprintf(topic, sizeof topic, "t/%u", n);
    size_t len = (size_t)snprintf(payload, sizeof payload, "%u", n);
    memset(payload + len, 'x', pad);
    payload[len + pad] = '\0';
    jb_init(&j, n);
    jb_retain_set(&j, topic, payload, 1);
    broker_store_batch b = jb_batch(&j);
    return store_apply(s, &b, 1);
}
