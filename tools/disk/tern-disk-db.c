/*
 * tern-disk-db.c - tern-disk's look at the database and its two backups
 * (tern-disk.h) through the kernel's own store VFS (kvfs), so the files are
 * read exactly as the unikernel reads them: the WAL in the log region is
 * replayed, a hot journal rolled back. Those writes land in the image's
 * in-memory overlay (tern-disk-dev.c), never on the image, and the
 * connection is closed without a checkpoint.
 *
 * Per file: application id, schema version, pages, row counts of the
 * tables that matter to an operator, and PRAGMA integrity_check, whose
 * every complaint is a problem.
 */
#define _GNU_SOURCE

#include "tern-disk-sql.h"

#include "platform/kernel/rng/sha256.h"
#include "store/internal.h"
#include "store/store.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define TDISK_VFS "tern-disk"

enum { INTEGRITY_LINES = 20 };

/* ---- kvfs's environment ---------------------------------------------------- */

static void env_wait(void *ctx, bool (*done)(void *arg), void *arg)
{
    struct blk_dev *d = ctx;
    while (!done(arg))
        (void)d->ops->poll(d);
}

static void env_random(void *ctx, void *buf, size_t n)
{
    (void)ctx;
    /* Only WAL salts for writes that go to memory: any bytes would do. */
    if (getrandom(buf, n, 0) != (ssize_t)n)
        memset(buf, 0x5a, n);
}

static int64_t env_now_ms(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void tdisk_kvfs_env(struct kvfs_env *e, struct blk_dev *d)
{
    /* No sleep: nothing else uses the disk, so SQLite's waits for another
     * connection (it retries a failed WAL read with growing sleeps) would
     * only delay the report of a failing disk. */
    *e = (struct kvfs_env){.wait = env_wait, .random = env_random, .now_ms = env_now_ms,
                           .ctx = d};
}

struct kvfs *tdisk_store_vfs_open(struct blk_dev *d, const struct kdisk_region *regions,
                                  unsigned n, char *err, size_t err_size)
{
    static const uint32_t kinds[KVFS_ROLES] = {KDISK_REGION_DB, KDISK_REGION_WAL,
                                               KDISK_REGION_BACKUP_A, KDISK_REGION_BACKUP_B};
    struct kvfs_config c = {.vfs_name = TDISK_VFS, .path = TDISK_DB_PATH, .dev = d};
    for (int i = 0; i < KVFS_ROLES; i++) {
        unsigned j = 0;
        while (j < n && regions[j].kind != kinds[i])
            j++;
        if (j == n) {
            snprintf(err, err_size, "no %s region", ksuper_kind_name(kinds[i]));
            return NULL;
        }
        c.region[i] = (struct kvfs_region){regions[j].lba, regions[j].blocks};
    }
    tdisk_kvfs_env(&c.env, d);
    struct kvfs *fs = kvfs_open(&c, err, err_size);
    if (!fs)
        return NULL;
    if (kvfs_register(fs, 0) != SQLITE_OK || kcksum_stack(TDISK_VFS) != SQLITE_OK ||
        sqlite3_vfs_register(sqlite3_vfs_find(TDISK_CKSM_VFS), 1) != SQLITE_OK) {
        snprintf(err, err_size, "SQLite refused the VFS");
        tdisk_store_vfs_close(fs);
        return NULL;
    }
    return fs;
}

void tdisk_store_vfs_close(struct kvfs *fs)
{
    kcksum_unstack();
    kvfs_close(fs);
}

/* ---- queries --------------------------------------------------------------- */

bool tdisk_q_int(sqlite3 *db, const char *sql, int64_t *out)
{
    sqlite3_stmt *st = NULL;
    bool ok = false;
    *out = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        *out = sqlite3_column_int64(st, 0);
        ok = true;
    }
    sqlite3_finalize(st);
    return ok;
}

static void hash_u64(struct sha256 *h, uint64_t v)
{
    uint8_t b[8];
    kdisk_put64(b, v);
    sha256_update(h, b, sizeof b);
}

int tdisk_db_digest(sqlite3 *db, uint8_t out[32], char *err, size_t err_size)
{
    struct sha256 h;
    sqlite3_stmt *tables = NULL;
    int rc = sqlite3_prepare_v2(db, "SELECT name FROM sqlite_schema WHERE type = 'table' AND "
                                    "name NOT LIKE 'sqlite_%' ORDER BY name", -1, &tables, NULL);
    sha256_init(&h);
    while (rc == SQLITE_OK && (rc = sqlite3_step(tables)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(tables, 0);
        char sql[300];
        sqlite3_stmt *probe = NULL, *rows = NULL;
        snprintf(sql, sizeof sql, "SELECT * FROM \"%s\"", name);
        if ((rc = sqlite3_prepare_v2(db, sql, -1, &probe, NULL)) != SQLITE_OK)
            break;
        int cols = sqlite3_column_count(probe);
        sqlite3_finalize(probe);
        size_t used = strlen(sql);
        for (int c = 0; c < cols && used + 8 < sizeof sql; c++) {
            int w = snprintf(sql + used, sizeof sql - used, "%s%d", c ? ", " : " ORDER BY ", c + 1);
            used += w > 0 ? (size_t)w : 0;
        }
        if ((rc = sqlite3_prepare_v2(db, sql, -1, &rows, NULL)) != SQLITE_OK)
            break;
        sha256_update(&h, name, strlen(name) + 1);
        while ((rc = sqlite3_step(rows)) == SQLITE_ROW)
            for (int c = 0; c < cols; c++) {
                int type = sqlite3_column_type(rows, c);
                hash_u64(&h, (uint64_t)type);
                if (type == SQLITE_INTEGER) {
                    hash_u64(&h, (uint64_t)sqlite3_column_int64(rows, c));
                } else if (type != SQLITE_NULL) {
                    const void *p = sqlite3_column_blob(rows, c);
                    int n = sqlite3_column_bytes(rows, c);
                    hash_u64(&h, (uint64_t)n);
                    if (n > 0)
                        sha256_update(&h, p, (size_t)n);
                }
            }
        if (rc != SQLITE_DONE) /* the message before finalize resets it */
            snprintf(err, err_size, "reading the rows of %s: %s", name, sqlite3_errmsg(db));
        sqlite3_finalize(rows);
        if (rc != SQLITE_DONE) {
            sqlite3_finalize(tables);
            return -1;
        }
        rc = SQLITE_OK;
    }
    if (rc != SQLITE_DONE)
        snprintf(err, err_size, "reading the rows: %s", sqlite3_errmsg(db));
    sqlite3_finalize(tables);
    if (rc != SQLITE_DONE)
        return -1;
    sha256_final(&h, out);
    return 0;
}

static bool has_table(sqlite3 *db, const char *name)
{
    char sql[128];
    int64_t n;
    snprintf(sql, sizeof sql, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND "
             "name = '%s'", name);
    return tdisk_q_int(db, sql, &n) && n == 1;
}

/* PRAGMA integrity_check: every line but "ok" is a problem. */
static void integrity(sqlite3 *db, struct tdisk_out *o, const char *what)
{
    sqlite3_stmt *st = NULL;
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA integrity_check(%d)", INTEGRITY_LINES);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        tdisk_problem(o, "%s: integrity_check cannot run: %s", what, sqlite3_errmsg(db));
        return;
    }
    int rc, lines = 0;
    bool clean = false;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *line = (const char *)sqlite3_column_text(st, 0);
        lines++;
        if (line && !strcmp(line, "ok") && lines == 1)
            clean = true;
        else
            tdisk_problem(o, "%s: integrity_check: %s", what, line ? line : "(null)");
    }
    if (rc != SQLITE_DONE)
        tdisk_problem(o, "%s: integrity_check failed: %s", what, sqlite3_errmsg(db));
    else if (clean)
        tdisk_info(o, "    integrity_check: ok");
    sqlite3_finalize(st);
}

/* Look at one file kvfs serves: the database or a backup; a layout from v3
 * on wants its pages checksummed. */
static void check_file(struct tdisk_out *o, const char *path, const char *what, uint32_t layout)
{
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, TDISK_CKSM_VFS);
    if (rc != SQLITE_OK) {
        tdisk_problem(o, "%s: cannot open it: %s", what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close(db);
        return;
    }
    (void)sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    int64_t app_id = 0, tables = 0, version = 0, page_size = 0, pages = 0, freelist = 0;
    /* The store's own pragma: WAL's index then lives in memory (kvfs has no
     * shared memory). */
    if (sqlite3_exec(db, "PRAGMA locking_mode = EXCLUSIVE", NULL, NULL, NULL) != SQLITE_OK ||
        !tdisk_q_int(db, "PRAGMA application_id", &app_id) ||
        !tdisk_q_int(db, "SELECT count(*) FROM sqlite_schema", &tables)) {
        tdisk_problem(o, "%s: unreadable: %s", what, sqlite3_errmsg(db));
        goto out;
    }
    if (app_id == 0 && tables == 0) {
        tdisk_info(o, "    empty (no tables yet)");
        goto out;
    }
    if (app_id != STORE_APPLICATION_ID) {
        tdisk_problem(o, "%s: not a tern database (application id 0x%08" PRIx64 ")", what,
                      (uint64_t)app_id);
        goto out;
    }
    if (!tdisk_q_int(db, "SELECT value FROM meta WHERE key = '" STORE_META_SCHEMA "'", &version) ||
        version < 1) {
        tdisk_problem(o, "%s: tern database without a valid schema version", what);
        goto out;
    }
    tdisk_q_int(db, "PRAGMA page_size", &page_size);
    tdisk_q_int(db, "PRAGMA page_count", &pages);
    tdisk_q_int(db, "PRAGMA freelist_count", &freelist);
    tdisk_info(o, "    schema %" PRId64 "%s, %" PRId64 " pages of %" PRId64 " bytes (%" PRId64
               " free)", version, version > STORE_SCHEMA_VERSION ? " (newer than this tool)" : "",
               pages, page_size, freelist);
    if (version > STORE_SCHEMA_VERSION)
        tdisk_problem(o, "%s: schema version %" PRId64 " is newer than this tool reads (%u)", what,
                      version, STORE_SCHEMA_VERSION);
    static const char *const counted[] = {"retained", "sessions", "subs", "messages", "queue",
                                          "wills"};
    char line[256] = "    rows:";
    size_t used = strlen(line);
    for (size_t i = 0; i < sizeof counted / sizeof counted[0]; i++) {
        char sql[64];
        int64_t n;
        if (!has_table(db, counted[i]))
            continue;
        snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", counted[i]);
        if (!tdisk_q_int(db, sql, &n)) {
            tdisk_problem(o, "%s: counting %s: %s", what, counted[i], sqlite3_errmsg(db));
            continue;
        }
        int w = snprintf(line + used, sizeof line - used, " %s %" PRId64, counted[i], n);
        used += w > 0 && (size_t)w < sizeof line - used ? (size_t)w : 0;
    }
    tdisk_info(o, "%s", line);
    int64_t gen;
    if (tdisk_q_int(db, "SELECT value FROM meta WHERE key = '" STORE_META_BACKUP_GEN "'", &gen))
        tdisk_info(o, "    backup generation %" PRId64, gen);
    int reserve = -1;
    (void)sqlite3_file_control(db, "main", SQLITE_FCNTL_RESERVE_BYTES, &reserve);
    tdisk_info(o, "    page checksums: %s", reserve == KCKSUM_RESERVE
                                                 ? "yes (8 reserve bytes, all verified)" : "no");
    /* A backup without them is what a migration cut before its last step
     * leaves (and what it or the kernel's next backup replaces): a note. */
    if (layout > TDISK_V2 && reserve != KCKSUM_RESERVE && !strcmp(what, "database"))
        tdisk_problem(o, "%s: layout v%u, but its pages carry no checksums (%d reserve bytes)",
                      what, (unsigned)layout, reserve);
    else if (layout > TDISK_V2 && reserve != KCKSUM_RESERVE)
        tdisk_note(o, "%s: no page checksums (a migration cut short left it): `tern-disk "
                   "migrate --apply` or the kernel's next backup replaces it", what);
    integrity(db, o, what);
    uint8_t digest[32];
    char derr[200];
    if (tdisk_db_digest(db, digest, derr, sizeof derr))
        tdisk_problem(o, "%s: %s", what, derr);
    else
        tdisk_info(o, "    content digest %02x%02x%02x%02x%02x%02x%02x%02x", digest[0], digest[1],
                   digest[2], digest[3], digest[4], digest[5], digest[6], digest[7]);
out:
    if (sqlite3_close(db) != SQLITE_OK)
        tdisk_problem(o, "%s: closing: %s", what, sqlite3_errmsg(db));
}

static const struct tdisk_rgn_view *view_of(const struct tdisk_layout *l, uint32_t kind,
                                            const struct kdisk_region **r)
{
    for (unsigned i = 0; i < l->region_count; i++)
        if (l->regions[i].kind == kind) {
            *r = &l->regions[i];
            return l->view_ok[i] ? &l->views[i] : NULL;
        }
    *r = NULL;
    return NULL;
}

void tdisk_walk_db(struct tdisk_image *im, struct tdisk_out *o, const struct tdisk_layout *l)
{
    static const uint32_t kinds[KVFS_ROLES] = {KDISK_REGION_DB, KDISK_REGION_WAL,
                                               KDISK_REGION_BACKUP_A, KDISK_REGION_BACKUP_B};
    const struct tdisk_rgn_view *v[KVFS_ROLES];
    for (int i = 0; i < KVFS_ROLES; i++) {
        const struct kdisk_region *r;
        v[i] = view_of(l, kinds[i], &r);
        if (!v[i]) {
            tdisk_info(o, "database: not read (the %s region's headers are unusable)",
                       ksuper_kind_name(kinds[i]));
            return;
        }
    }
    char err[200];
    struct blk_dev *d = tdisk_image_blk(im, l->sb.physical_block);
    struct kvfs *fs = tdisk_store_vfs_open(d, l->regions, l->region_count, err, sizeof err);
    if (!fs) {
        tdisk_problem(o, "the store's VFS refuses the regions: %s", err);
        return;
    }
    const struct tdisk_rgn_view *log = v[KVFS_LOG];
    tdisk_info(o, "log: %s, %" PRIu64 " bytes", log->owner == RGN_OWNER_WAL ? "WAL"
               : log->owner == RGN_OWNER_JOURNAL ? "rollback journal (hot: rolled back on open)"
               : "empty", log->size);
    if (v[KVFS_DB]->size == 0 && log->size == 0) {
        /* A freshly formatted layout: the store creates its database the
         * first time it opens (an empty region is a missing file to kvfs). */
        tdisk_info(o, "database: none yet (created when the store first opens)");
    } else {
        tdisk_info(o, "database (%" PRIu64 " bytes):", v[KVFS_DB]->size);
        check_file(o, TDISK_DB_PATH, "database", l->sb.version);
    }
    static const char *const bak[2] = {TDISK_BAK_A, TDISK_BAK_B};
    for (int i = 0; i < 2; i++) {
        const struct tdisk_rgn_view *bv = v[KVFS_BACKUP_A + i];
        char what[16];
        snprintf(what, sizeof what, "backup %c", 'A' + i);
        if (bv->size == 0) {
            tdisk_info(o, "%s: no copy", what);
            continue;
        }
        tdisk_info(o, "%s (%" PRIu64 " bytes):", what, bv->size);
        check_file(o, bak[i], what, l->sb.version);
    }
    tdisk_store_vfs_close(fs);
}
