/*
 * test_store_util.h - helpers for the store's unit tests: a scratch
 * directory per test, opening the store there (optionally through the
 * fault VFS), committing a broker's batches, hand-made journal records in
 * the core's encoding, and read-only peeks into the file with plain SQLite.
 */
#ifndef TERN_TEST_STORE_UTIL_H
#define TERN_TEST_STORE_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/journal.h"
#include "store/faultvfs.h"
#include "store/store.h"

typedef struct ts_env {
    char dir[64];
    char path[128];        /* DIR/t.db */
    store *s;
    store_fault *fault;    /* when opened through the fault VFS */
    char vfs_name[32];
    store_open_info info;
    char err[STORE_ERR_SIZE];
    char log[4096];        /* every line the store logged, newline-separated */
} ts_env;

/* A fresh scratch directory; false on failure. */
bool ts_init(ts_env *e);
/* Open (or reopen) e->path; with_fault registers a fault VFS first (once). */
bool ts_open(ts_env *e, bool with_fault);
void ts_close(ts_env *e);
/* Close, unregister the fault VFS, remove the directory and its files. */
void ts_cleanup(ts_env *e);

/* Take every batch the broker has and commit them in one store_apply, then
 * report the outcome to the broker in order. */
store_rc ts_commit_all(store *s, broker *b);

/* Occurrences of text in what the store logged. */
int ts_log_count(const ts_env *e, const char *text);

/* Monotonic microseconds, for store_options.clock. */
uint64_t ts_clock_us(void *ctx);

/* First column of the first row of sql on the file at path, opened with
 * plain SQLite while no store has it open; -1 on error. */
int64_t ts_query(const char *path, const char *sql);
/* PRAGMA integrity_check says ok. */
bool ts_integrity_ok(const char *path);

/* What ts_full_log_run did: groups committed, and those that failed with
 * STORE_EFULL (small: one retained message; big: about 60% of the log). */
typedef struct ts_full_log {
    uint32_t small_ok, small_full, big_ok, big_full;
} ts_full_log;

/*
 * Commit into a store whose log holds log_bytes, far below SQLite's
 * auto-checkpoint (1000 frames), so only a checkpoint after a full log
 * lets commits go on: 400 small groups (topics "f/N"), each that fails
 * with STORE_EFULL followed by one that must succeed; then 6 big groups
 * (topics "big/G/I", 60% of the log each), each that fails with
 * STORE_EFULL applied again and must then succeed. False, with a line on
 * stderr, on any other result or when the log never filled.
 */
bool ts_full_log_run(store *s, size_t log_bytes, ts_full_log *out);

/* A batch built by hand, in journal.h's encoding. */
typedef struct jb {
    uint8_t data[16384];
    size_t len;
    uint32_t records;
    uint64_t seq;
} jb;

void jb_init(jb *j, uint64_t seq);
void jb_retain_set(jb *j, const char *topic, const char *payload, uint8_t qos);
void jb_retain_del(jb *j, const char *topic);
void jb_session_put(jb *j, const char *cid, const char *identity, uint8_t flags);
void jb_session_del(jb *j, const char *cid);
void jb_sub_put(jb *j, const char *cid, const char *filter, uint8_t qos);
void jb_sub_del(jb *j, const char *cid, const char *filter);
void jb_msg_put(jb *j, uint64_t msg_id, const char *topic, const char *payload, uint8_t qos,
                uint8_t flags);
void jb_msg_del(jb *j, uint64_t msg_id);
void jb_queue_put(jb *j, const char *cid, uint64_t seq, uint64_t msg_id, uint8_t qos,
                  uint8_t flags);
void jb_queue_state(jb *j, const char *cid, uint64_t seq, uint8_t state, uint16_t packet_id);
void jb_queue_del(jb *j, const char *cid, uint64_t seq);
void jb_inqos2(jb *j, const char *cid, uint16_t packet_id, bool put);
void jb_reset(jb *j);
/* The same records with their MQTT 5.0 fields (journal.h); the calls
 * above write the 5.0 fields' defaults. */
void jb_retain_set5(jb *j, const char *topic, const char *payload, uint8_t qos,
                    const uint8_t *props, size_t props_len, uint64_t expiry_at);
void jb_session_put5(jb *j, const char *cid, const char *identity, uint8_t flags,
                     uint32_t expiry_interval, uint64_t expiry_at);
void jb_sub_put5(jb *j, const char *cid, const char *filter, uint8_t qos, uint8_t options,
                 uint32_t sub_id);
void jb_msg_put5(jb *j, uint64_t msg_id, const char *topic, const char *payload, uint8_t qos,
                 uint8_t flags, const uint8_t *props, size_t props_len, uint64_t expiry_at);
void jb_queue_put5(jb *j, const char *cid, uint64_t seq, uint64_t msg_id, uint8_t qos,
                   uint8_t flags, uint32_t sub_id, const uint32_t *more, size_t nmore);
void jb_will_put(jb *j, const char *cid, const char *topic, const char *payload, uint8_t qos,
                 uint8_t flags, const uint8_t *props, size_t props_len, uint64_t expiry_at,
                 uint64_t fire_at);
void jb_will_del(jb *j, const char *cid);
broker_store_batch jb_batch(const jb *j);

/* One batch setting retained "t/<n>" to the payload "<n>" padded with pad
 * 'x's (at most 4000), committed with store_apply: the kvfs tests' filler. */
store_rc ts_put_retained(store *s, uint32_t n, size_t pad);

#endif
