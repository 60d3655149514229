/*
 * tern-disk-migrate.c - moving a tern disk from layout v2 to the current
 * layout v3 (database pages with checksums; SPEC F2, issue 14;
 * tern-disk-migrate.h). Copy first, switch last: nothing the old layout
 * needs is overwritten before one superblock write switches to the new
 * one, so a power cut at any point leaves either the old layout with its
 * data or the new one with the same data.
 *
 *   1. checkpoint the WAL into the database region (SQLite's own protocol);
 *   2. empty backup B (durably: its header says size 0; the old layout with
 *      one backup fewer), then VACUUM INTO it a copy of the database whose
 *      pages carry checksums (8 reserve bytes; the kernel's checksum stack,
 *      store/kcksum.h, over kvfs), synced: a valid backup that happens to
 *      carry checksums;
 *   3. check the copy: integrity_check reading every page through the
 *      checksums, and the same content digest as the database; then empty
 *      the log region durably (its checkpointed frames belong to the old
 *      database file and would be replayed onto the copy);
 *   4. switch: ksuper_update writes the slot not in use with generation + 1,
 *      layout v3, and the database and backup B regions swapped in the
 *      region table; flush. The old database region is now backup B, a
 *      valid (unchecksummed) copy of the same data. Region headers name
 *      their role; region.c accepts a database's header in a backup region
 *      and the reverse, and kvfs relabels at its next header write;
 *   5. the other slot (still v2) is rewritten as v3 (generation + 2);
 *   6. on v3: backup B (the old database) and backup A (a v2 copy) are
 *      emptied and a checksummed copy goes into backup A, checked.
 * A v2 disk is read through tdisk_lift (tern-disk.h). A disk cut between
 * steps 4 and 6 is v3: migrate finishes steps 5 and 6.
 *
 * tests/tools/tdisk_migrate_cuts.c cuts the power at every write of a
 * migration (and fails each write), then checks the disk is one or the
 * other.
 */
#include "tern-disk-migrate.h"

#include "tern-disk-sql.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *err, size_t n, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t n, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
    return rc;
}

static int exec(sqlite3 *db, const char *sql, char *err, size_t n)
{
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK)
        return 0;
    return fail(err, n, TDISK_MIGRATE_EIO, "%s: %s", sql, sqlite3_errmsg(db));
}

static int open_db(const char *path, sqlite3 **db, char *err, size_t n)
{
    int rc = sqlite3_open_v2(path, db, SQLITE_OPEN_READWRITE, TDISK_CKSM_VFS);
    if (rc != SQLITE_OK) {
        fail(err, n, TDISK_MIGRATE_EIO, "opening %s: %s", path,
             *db ? sqlite3_errmsg(*db) : sqlite3_errstr(rc));
        sqlite3_close(*db);
        *db = NULL;
        return TDISK_MIGRATE_EIO;
    }
    (void)sqlite3_db_config(*db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    /* As the store runs (kvfs has no shared memory for a WAL index). */
    return exec(*db, "PRAGMA locking_mode = EXCLUSIVE", err, n) ||
                   exec(*db, "PRAGMA synchronous = FULL", err, n)
               ? TDISK_MIGRATE_EIO
               : 0;
}

static int close_db(sqlite3 *db, int rc, char *err, size_t n)
{
    if (db && sqlite3_close(db) != SQLITE_OK && !rc)
        return fail(err, n, TDISK_MIGRATE_EIO, "closing a database failed");
    return rc;
}

/* Empty a file of the store durably (kvfs: size 0 in its header, flushed). */
static int empty_file(const char *path, char *err, size_t n)
{
    sqlite3_vfs *v = sqlite3_vfs_find(TDISK_CKSM_VFS);
    if (v->xDelete(v, path, 1) != SQLITE_OK)
        return fail(err, n, TDISK_MIGRATE_EIO, "emptying %s failed", path);
    return 0;
}

/* Make a file's data and size durable: kvfs's xSync on it. */
static int sync_file(const char *path, char *err, size_t n)
{
    sqlite3_vfs *v = sqlite3_vfs_find(TDISK_CKSM_VFS);
    sqlite3_file *f = calloc(1, (size_t)v->szOsFile);
    int out_flags = 0, rc = SQLITE_NOMEM;
    if (f) {
        rc = v->xOpen(v, path, f, SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_READWRITE, &out_flags);
        if (rc == SQLITE_OK) {
            rc = f->pMethods->xSync(f, SQLITE_SYNC_FULL);
            int rc2 = f->pMethods->xClose(f);
            rc = rc == SQLITE_OK ? rc2 : rc;
        }
    }
    free(f);
    return rc == SQLITE_OK ? 0 : fail(err, n, TDISK_MIGRATE_EIO, "syncing %s: %s", path,
                                      sqlite3_errstr(rc));
}

/* Empty path, VACUUM db INTO it with page checksums, sync, and check the
 * copy: integrity_check through the checksums, 8 reserve bytes, rows
 * whose digest is want. */
static int copy_into(sqlite3 *db, const char *path, const uint8_t want[32], char *err, size_t n)
{
    char sql[64];
    int reserve = KCKSUM_RESERVE;
    if (empty_file(path, err, n))
        return TDISK_MIGRATE_EIO;
    snprintf(sql, sizeof sql, "VACUUM INTO '%s'", path);
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_RESERVE_BYTES, &reserve) != SQLITE_OK ||
        exec(db, sql, err, n) || sync_file(path, err, n))
        return TDISK_MIGRATE_EIO;
    sqlite3 *copy = NULL;
    uint8_t got[32];
    int rc = open_db(path, &copy, err, n);
    if (rc)
        return close_db(copy, rc, err, n);
    sqlite3_stmt *st = NULL;
    const char *verdict = NULL;
    if (sqlite3_prepare_v2(copy, "PRAGMA integrity_check(1)", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        verdict = (const char *)sqlite3_column_text(st, 0);
    int ok = verdict && !strcmp(verdict, "ok");
    sqlite3_finalize(st);
    reserve = -1;
    (void)sqlite3_file_control(copy, "main", SQLITE_FCNTL_RESERVE_BYTES, &reserve);
    if (!ok || reserve != KCKSUM_RESERVE)
        rc = fail(err, n, TDISK_MIGRATE_EIO, "the copy in %s does not check out (%s, %d reserve "
                  "bytes)", path, ok ? "integrity ok" : "integrity_check fails", reserve);
    else if (tdisk_db_digest(copy, got, err, n))
        rc = TDISK_MIGRATE_EIO;
    else if (memcmp(want, got, sizeof got))
        rc = fail(err, n, TDISK_MIGRATE_EIO, "the copy in %s holds other rows than the "
                  "database", path);
    return close_db(copy, rc, err, n);
}

/* Steps 1-3, on the old layout's regions. */
static int copy_database(struct blk_dev *d, const struct kdisk_region *regions, unsigned count,
                         uint8_t want[32], FILE *out, char *err, size_t n)
{
    sqlite3 *db = NULL;
    int64_t app = 0, tables = 0, busy = -1;
    int rc;
    struct kvfs *fs = tdisk_store_vfs_open(d, regions, count, err, n);
    if (!fs)
        return TDISK_MIGRATE_REFUSED;
    if ((rc = open_db(TDISK_DB_PATH, &db, err, n)))
        goto out;
    if (!tdisk_q_int(db, "PRAGMA application_id", &app) ||
        !tdisk_q_int(db, "SELECT count(*) FROM sqlite_schema", &tables)) {
        rc = fail(err, n, TDISK_MIGRATE_REFUSED, "the database cannot be read: %s",
                  sqlite3_errmsg(db));
        goto out;
    }
    if (tables && app != 0x7465726e) {
        rc = fail(err, n, TDISK_MIGRATE_REFUSED, "the database is not a tern database");
        goto out;
    }
    if (!tdisk_q_int(db, "PRAGMA wal_checkpoint(TRUNCATE)", &busy) || busy != 0) {
        rc = fail(err, n, TDISK_MIGRATE_EIO, "checkpointing the WAL: %s", sqlite3_errmsg(db));
        goto out;
    }
    fprintf(out, "1. checkpointed the WAL into the database\n");
    if (tdisk_db_digest(db, want, err, n)) {
        rc = TDISK_MIGRATE_EIO;
        goto out;
    }
    if ((rc = copy_into(db, TDISK_BAK_B, want, err, n)))
        goto out;
    fprintf(out, "2. wrote a copy with page checksums into backup B and synced it\n"
                 "3. the copy passes integrity_check through every page's checksum and holds "
                 "the same rows\n");
out:
    rc = close_db(db, rc, err, n);
    if (!rc && !(rc = empty_file(TDISK_DB_PATH "-wal", err, n)))
        fprintf(out, "   emptied the log region\n");
    tdisk_store_vfs_close(fs);
    return rc;
}

/* Step 6, on the new layout's regions. */
static int renew_backups(struct blk_dev *d, const struct kdisk_region *regions, unsigned count,
                         const uint8_t want[32], FILE *out, char *err, size_t n)
{
    sqlite3 *db = NULL;
    uint8_t got[32];
    struct kvfs *fs = tdisk_store_vfs_open(d, regions, count, err, n);
    if (!fs)
        return TDISK_MIGRATE_REFUSED;
    int rc = open_db(TDISK_DB_PATH, &db, err, n);
    if (!rc && tdisk_db_digest(db, got, err, n))
        rc = TDISK_MIGRATE_EIO;
    if (!rc && memcmp(got, want, sizeof got))
        rc = fail(err, n, TDISK_MIGRATE_EIO, "the database after the switch holds other rows");
    if (!rc)
        rc = empty_file(TDISK_BAK_B, err, n);
    if (!rc)
        rc = copy_into(db, TDISK_BAK_A, want, err, n);
    rc = close_db(db, rc, err, n);
    tdisk_store_vfs_close(fs);
    if (!rc)
        fprintf(out, "6. emptied backup B (the old database) and wrote a copy with page "
                     "checksums into backup A\n");
    return rc;
}

static void swap_kinds(uint32_t *kind)
{
    if (*kind == KDISK_REGION_DB)
        *kind = KDISK_REGION_BACKUP_B;
    else if (*kind == KDISK_REGION_BACKUP_B)
        *kind = KDISK_REGION_DB;
}

/* On v3: does a backup hold a copy without page checksums (a migration cut
 * before step 6)? */
static int stale_backups(struct blk_dev *d, const struct klayout *l, int *stale, char *err,
                         size_t n)
{
    static const char *const bak[2] = {TDISK_BAK_A, TDISK_BAK_B};
    struct kvfs *fs = tdisk_store_vfs_open(d, l->regions, l->region_count, err, n);
    struct kvfs_stats ks;
    int rc = 0;
    if (!fs)
        return TDISK_MIGRATE_REFUSED;
    kvfs_get_stats(fs, &ks);
    for (int i = 0; i < 2 && !rc; i++) {
        sqlite3 *db = NULL;
        int reserve = -1;
        if (ks.logical_size[KVFS_BACKUP_A + i] == 0)
            continue;
        rc = open_db(bak[i], &db, err, n);
        int64_t pages = 0;
        if (!rc && !tdisk_q_int(db, "PRAGMA page_count", &pages))
            rc = fail(err, n, TDISK_MIGRATE_EIO, "reading %s: %s", bak[i], sqlite3_errmsg(db));
        if (!rc)
            (void)sqlite3_file_control(db, "main", SQLITE_FCNTL_RESERVE_BYTES, &reserve);
        *stale |= !rc && reserve != KCKSUM_RESERVE;
        rc = close_db(db, rc, err, n);
    }
    tdisk_store_vfs_close(fs);
    return rc;
}

/* The tern partition's first LBA from d's GPT (so its slots can be lifted). */
static int find_partition(const struct kdisk *d, uint64_t *first, char *err, size_t n)
{
    static struct gpt g;
    struct kdisk_report rep;
    kdisk_report_clear(&rep);
    int rc = gpt_read(d, &g, &rep);
    if (rc)
        return fail(err, n, rc == KDISK_EIO ? TDISK_MIGRATE_EIO : TDISK_MIGRATE_REFUSED, "%s",
                    rep.error);
    for (unsigned i = 0; i < g.count; i++)
        if (klayout_part_is_tern(&g.parts[i])) {
            *first = g.parts[i].first;
            return 0;
        }
    return fail(err, n, TDISK_MIGRATE_REFUSED, "no tern data partition");
}

int tdisk_migrate(struct blk_dev *d, const struct tdisk_migrate_opts *opt, FILE *out, char *err,
                  size_t n)
{
    static struct klayout l;
    struct kdisk kd;
    struct tdisk_lift lf;
    struct kdisk_report rep;
    static const uint8_t unused_id[16];
    uint8_t want[32];
    uint64_t first = 0;
    uint8_t *io = aligned_alloc(4096, KDISK_IO_BYTES);
    int rc;
    if (!io)
        return fail(err, n, TDISK_MIGRATE_EIO, "out of memory");
    tdisk_blk_kdisk(&kd, d, io);
    if ((rc = find_partition(&kd, &first, err, n)))
        goto done;
    tdisk_lift_init(&lf, &kd, first);
    kdisk_report_clear(&rep);
    rc = klayout_open(&lf.kd, 0, unused_id, &l, &rep);
    if (rc == KDISK_EBLANK) {
        fprintf(out, "the tern partition is blank: nothing to migrate\n");
        rc = 0;
        goto done;
    }
    if (rc) {
        rc = fail(err, n, rc == KDISK_EIO ? TDISK_MIGRATE_EIO : TDISK_MIGRATE_REFUSED, "%s",
                  rep.error);
        goto done;
    }
    const unsigned use = l.super.slot;
    const uint32_t version = lf.lifted[use] ? TDISK_V2 : l.super.sb.version;
    const struct ksuper *sb = &l.super.sb;
    int stale = 0;
    if (version == KSUPER_VERSION && (rc = stale_backups(d, &l, &stale, err, n)))
        goto done;
    if (version == KSUPER_VERSION && !lf.lifted[!use] && !stale) {
        fprintf(out, "layout v%u is current: nothing to migrate\n", (unsigned)version);
        rc = 0;
        goto done;
    }
    const struct kdisk_region *dbr = klayout_region(&l, KDISK_REGION_DB),
                              *bkb = klayout_region(&l, KDISK_REGION_BACKUP_B);
    if (version == TDISK_V2)
        fprintf(out,
                "plan (layout v2 generation %" PRIu64 " -> layout v%u):\n"
                "1. checkpoint the WAL into the database region (LBA %" PRIu64 ")\n"
                "2. empty backup B (LBA %" PRIu64 ") and write into it a copy of the database "
                "whose pages carry checksums (8 reserve bytes; VACUUM INTO through the kernel's "
                "checksum stack); sync\n"
                "3. check the copy: integrity_check through every page's checksum, the same "
                "rows; empty the (checkpointed) log region\n"
                "4. switch: superblock %c, generation %" PRIu64 ": layout v%u, the database "
                "region at LBA %" PRIu64 ", backup B (the old database) at LBA %" PRIu64
                "; flush\n"
                "5. superblock %c, generation %" PRIu64 ": the same (no v2 slot left)\n"
                "6. empty backup B (the old database) and backup A, write a checked copy with "
                "page checksums into backup A\n"
                "until step 4 the disk is a valid layout v2 with the same data; from it on a "
                "valid layout v%u with the same data\n",
                sb->generation, (unsigned)KSUPER_VERSION, dbr->lba, bkb->lba, use ? 'A' : 'B',
                sb->generation + 1, (unsigned)KSUPER_VERSION, bkb->lba, dbr->lba,
                use ? 'B' : 'A', sb->generation + 2, (unsigned)KSUPER_VERSION);
    else
        fprintf(out, "plan: finish a migration cut short: superblock %c rewritten as v%u (step "
                     "5), then step 6 (backups with page checksums)\n", use ? 'A' : 'B',
                (unsigned)KSUPER_VERSION);
    if (!opt->apply) {
        fprintf(out, "dry run: nothing written (--apply migrates)\n");
        rc = 0;
        goto done;
    }
    struct kdisk_region regions[KSUPER_MAX_REGIONS];
    memcpy(regions, l.regions, sizeof regions);
    if (version == TDISK_V2) {
        if ((rc = copy_database(d, regions, l.region_count, want, out, err, n)))
            goto done;
        struct ksuper next = *sb;
        next.version = KSUPER_VERSION;
        for (unsigned i = 0; i < next.region_count; i++)
            swap_kinds(&next.regions[i].kind);
        for (unsigned i = 0; i < l.region_count; i++)
            swap_kinds(&regions[i].kind);
        kdisk_report_clear(&rep);
        if (ksuper_update(&lf.kd, &l.geom, &l.super, &next, &rep)) {
            rc = fail(err, n, TDISK_MIGRATE_EIO, "the switch failed (layout v2 is still in "
                      "use): %s", rep.error);
            goto done;
        }
        fprintf(out, "4. switched: superblock %c, generation %" PRIu64 ", layout v%u\n",
                l.super.slot ? 'B' : 'A', l.super.sb.generation, (unsigned)l.super.sb.version);
    } else {
        /* v3 in use: its database's rows are the reference */
        struct kvfs *fs = tdisk_store_vfs_open(d, regions, l.region_count, err, n);
        sqlite3 *db = NULL;
        if (!fs) {
            rc = TDISK_MIGRATE_REFUSED;
            goto done;
        }
        rc = open_db(TDISK_DB_PATH, &db, err, n);
        if (!rc && tdisk_db_digest(db, want, err, n))
            rc = TDISK_MIGRATE_EIO;
        rc = close_db(db, rc, err, n);
        tdisk_store_vfs_close(fs);
        if (rc)
            goto done;
    }
    struct ksuper same = l.super.sb;
    kdisk_report_clear(&rep);
    if (ksuper_update(&lf.kd, &l.geom, &l.super, &same, &rep)) {
        rc = fail(err, n, TDISK_MIGRATE_EIO, "rewriting the other superblock failed (layout "
                  "v%u is in use): %s", (unsigned)KSUPER_VERSION, rep.error);
        goto done;
    }
    fprintf(out, "5. superblock %c rewritten: generation %" PRIu64 ", layout v%u\n",
            l.super.slot ? 'B' : 'A', l.super.sb.generation, (unsigned)l.super.sb.version);
    rc = renew_backups(d, regions, l.region_count, want, out, err, n);
done:
    free(io);
    return rc;
}
