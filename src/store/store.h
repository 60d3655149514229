/*
 * store.h - durable storage on SQLite (SPEC D1, D5, D8): the whole public
 * face of src/store/.
 *
 * The store turns the broker core's journal batches (broker/journal.h) into
 * SQLite transactions and reads them back at start-up through the core's
 * broker_restore_*() calls. It is portable: it touches the disk only through
 * SQLite and its VFS (the OS file VFS in the Linux daemon, a raw-partition
 * VFS in the unikernel), reads no clock of its own and keeps no global state.
 *
 * A store is used by one thread at a time (the daemon's store thread). The
 * platform decides when to commit and when to take backup steps; the store
 * only does what it is asked, in bounded pieces.
 *
 * Durability: the database runs in WAL mode. With STORE_SYNC_FULL (the
 * default) store_apply() returns STORE_OK only after the WAL frames of the
 * transaction have been fsync'ed, so a commit it reports survives a power
 * cut (docs/STORE.md explains the choice).
 */
#ifndef TERN_STORE_H
#define TERN_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/broker.h"
#include "broker/journal.h"

typedef struct store store;

/* The schema version this release writes; older files are migrated. */
#define STORE_SCHEMA_VERSION 2u

/* Enough for any message the store writes into a caller's buffer. */
#define STORE_ERR_SIZE 256u

typedef enum store_sync {
    STORE_SYNC_FULL = 0, /* fsync the WAL at every commit: durable */
    STORE_SYNC_NORMAL,   /* fsync only at checkpoints: the last commits may be
                            lost on power loss (never corrupted) */
} store_sync;

/* Outcome of an operation; SQLite's result code is kept as well. */
typedef enum store_rc {
    STORE_OK = 0,
    STORE_EFULL,    /* SQLITE_FULL: disk (or quota) full */
    STORE_EIO,      /* SQLITE_IOERR_*: the device failed a read, write or sync */
    STORE_ECORRUPT, /* SQLITE_CORRUPT / SQLITE_NOTADB */
    STORE_EBATCH,   /* a batch the core produced did not decode (a bug) */
    STORE_ENOMEM,
    STORE_EOTHER,
} store_rc;

typedef uint64_t (*store_clock_fn)(void *ctx); /* monotonic microseconds */

typedef struct store_options {
    const char *path;            /* database file; backups are PATH.bak-a, PATH.bak-b */
    const char *vfs;             /* SQLite VFS name; NULL = the default one */
    store_sync sync;
    uint32_t backup_step_pages;  /* pages copied per backup step; 0 = 16 */
    broker_log_fn log;           /* may be NULL */
    void *log_ctx;
    store_clock_fn clock;        /* may be NULL: latencies then read 0 */
    void *clock_ctx;
    uint32_t cache_kib;          /* SQLite's page cache bound (PRAGMA cache_size) in
                                    KiB; 0 = SQLite's default (about 2 MiB) */
    uint8_t reserve_bytes;       /* bytes SQLite reserves at the end of each page of
                                    a database it creates (0 = none, the daemon);
                                    the kernel's layout v3 keeps page checksums
                                    there (8, store/kcksum.h). An existing file
                                    keeps its own; backups and restores copy it. */
    uint64_t max_db_bytes;       /* the most the database file can hold (the
                                    unikernel's database region); 0 = no bound.
                                    A commit that would grow the database past
                                    it fails (SQLITE_FULL) before it reaches the
                                    log, so every committed page can later be
                                    checkpointed into the file (room.c) */
} store_options;

/* What store_open() found. */
typedef struct store_open_info {
    bool created;           /* the file was new or empty */
    bool check_failed;      /* PRAGMA quick_check (or opening) failed */
    bool found_empty;       /* the file was empty (or missing) while a backup
                               held a valid copy: a restore cut short */
    bool restored;          /* the newest valid backup replaced the file, after
                               check_failed or found_empty */
    char restored_from;     /* 'a' or 'b' when restored */
    uint32_t schema_found;  /* schema version before migration (0 = new) */
    bool full;              /* the log could not be checkpointed into the
                               database for lack of room: opened anyway, to
                               serve what is stored (the log holds it); commits
                               that need room fail */
} store_open_info;

/*
 * Open or create the database: check it (PRAGMA quick_check); when that
 * fails, replace it with the newest backup that passes the same check; then
 * migrate the schema to STORE_SCHEMA_VERSION and prepare every statement.
 * An empty (or missing) file is a new store only when no backup holds a
 * valid copy: otherwise a restore was cut short (backup.c), and the newest
 * valid copy replaces it too. Refuses a file that is not a tern database,
 * one written by a newer release, and a failed check with no valid backup
 * (err says which). Returns NULL on failure with one line in err.
 */
store *store_open(const store_options *opt, store_open_info *info, char *err, size_t err_size);

/* Finish any backup, close the database (NULL is fine). */
void store_close(store *s);

/* What store_check() found in a file store_open() would accept. */
typedef struct store_check_info {
    bool empty;             /* an empty file: store_open() creates the schema */
    uint32_t schema_found;  /* else its schema version (older ones are migrated) */
} store_check_info;

/*
 * Without writing, locking or creating anything (check.c): would
 * store_open() accept the existing file at path as it is? It must be empty
 * or a tern database of a schema version this release reads that passes
 * PRAGMA quick_check. STORE_OK, or a refusal with one line in err ("PATH:
 * why"). For `ternd --check`; the caller checks first that the file exists
 * and that no daemon is using it.
 */
store_rc store_check(const char *path, const char *vfs, store_check_info *info, char *err,
                     size_t err_size);

/*
 * Apply n batches in one transaction and commit it (group commit). On any
 * failure nothing of the n batches is kept, the transaction is rolled back
 * and the store stays usable for the next call. Logs once when the store
 * starts failing and once when it works again.
 */
store_rc store_apply(store *s, const broker_store_batch *batches, size_t n);

/* The database file's room changed (the unikernel's database region grew
 * while serving): the bound of store_options.max_db_bytes becomes bytes
 * (0 = none). Between transactions only. */
store_rc store_set_max_db_bytes(store *s, uint64_t bytes);

/*
 * Call fn(ctx) about every `ops` SQLite virtual-machine instructions while
 * a statement of the store runs (sqlite3_progress_handler); fn NULL turns
 * it off. The work is never interrupted: fn is for a platform whose store
 * runs cooperatively (the unikernel's store thread) to give the CPU back
 * in the middle of a long commit or load.
 */
void store_set_progress(store *s, unsigned ops, void (*fn)(void *ctx), void *ctx);

/* PRAGMA integrity_check (the whole database, slow on a big one: for tests
 * and tools; store_open runs the quicker quick_check). STORE_OK when it
 * says "ok", else the first problem (or the error) in err. */
store_rc store_integrity_check(store *s, char *err, size_t err_size);

/* The last failure: SQLite's extended result code and a one-line text. */
int store_last_error(const store *s, const char **text);

/*
 * Rebuild the core from the database, in the order journal.h requires:
 * sessions, subscriptions, messages, queue entries (per session by seq),
 * inbound QoS 2 ids, wills, retained messages, then broker_restore_done().
 * Call broker_set_wall_clock() first (journal.h: recorded times). Messages
 * no queue entry references are deleted first. On failure (a read error or
 * a restore call refusing a row) returns non-OK with err naming the row.
 */
store_rc store_load(store *s, broker *b, char *err, size_t err_size);

/*
 * Backups (D5): two alternating copies made with SQLite's online backup API
 * a few pages per step, so commits go on between steps (on the same
 * connection: the copy picks up pages they change). begin picks the slot
 * holding the older copy; step copies backup_step_pages pages and sets
 * *done when the copy is complete and synced. The slot is emptied when a
 * copy begins, so a failed step abandons the copy and leaves the slot
 * empty; the other slot keeps the last complete copy.
 */
store_rc store_backup_begin(store *s);
store_rc store_backup_step(store *s, bool *done);
bool store_backup_running(const store *s);
void store_backup_cancel(store *s);
/* begin + steps until done: for tests and shutdown-free tools. */
store_rc store_backup_run(store *s);

/* Commit latencies are kept for the last STORE_LATENCY_WINDOW commits. */
#define STORE_LATENCY_WINDOW 1024u

typedef struct store_stats {
    uint64_t commits;          /* successful transactions */
    uint64_t batches;          /* batches committed */
    uint64_t records;          /* records committed */
    uint64_t bytes;            /* batch bytes committed */
    uint64_t failed_commits;   /* transactions that failed (batches dropped) */
    uint64_t errors_full;      /* of those: SQLITE_FULL */
    uint64_t errors_io;        /* of those: SQLITE_IOERR */
    uint64_t full_log_checkpoints; /* checkpoints after a full log (apply.c) */
    uint64_t failed_checkpoints; /* checkpoints that failed (room.c) */
    uint64_t last_commit_us;   /* latency of the last successful commit */
    uint64_t p50_commit_us;    /* over the window */
    uint64_t p99_commit_us;
    uint64_t max_commit_us;
    uint64_t backups_done;
    uint64_t backups_failed;
    uint64_t backup_longest_step_us;
    bool failing;              /* the last transaction failed */
    bool full;                 /* no room: the last transaction failed with
                                  SQLITE_FULL, or the last checkpoint did */
    bool restored_at_open;     /* the database was replaced by a backup at open */
    broker_disk_status disk;   /* filled by the platform (the kernel's disk), not the store */
} store_stats;

/* Sorts the latency window: cheap, but not for every commit. */
void store_get_stats(const store *s, store_stats *out);

/* Short name of a result, e.g. "disk full". */
const char *store_rc_text(store_rc rc);

#endif
