/*
 * tern-disk-migrate.c - moving a tern disk to the current layout (SPEC F2,
 * issue 14; tern-disk-migrate.h). Copy first, switch last: nothing the
 * layout in use needs is overwritten before one superblock write switches
 * to the new layout, so a power cut at any point leaves either the old
 * layout with its data or the new one with the same data.
 *
 *   1. checkpoint the WAL into the database region (SQLite's own protocol:
 *      the old layout stays valid throughout);
 *   2. empty backup B (durably: its header says size 0, the old layout
 *      with one backup fewer), then VACUUM INTO it a copy of the database
 *      whose pages carry checksums (8 reserve bytes, cksumvfs stacked on
 *      the kernel's kvfs), and sync it: backup B is now a valid backup that
 *      happens to carry checksums;
 *   3. check the copy: PRAGMA integrity_check through cksumvfs (every
 *      page's checksum) and the same content digest as the database; empty
 *      the log region durably (its checkpointed frames belong to the old
 *      database file and would be replayed onto the copy);
 *   4. switch: ksuper_update writes the slot not in use with generation + 1,
 *      the target layout version, and the database and backup B regions
 *      swapped in the region table; then flush. The old database region
 *      becomes backup B, a valid copy of the same data. Region headers name
 *      their role, and region.c accepts a database's header in a backup
 *      region and the reverse; kvfs relabels at its next header write.
 *
 * tests/tools/tdisk_migrate_cuts.c cuts the power at every write of a
 * migration (and fails writes), then checks the disk is one or the other.
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

/* Make the copy's data and size durable: kvfs's xSync on the file. */
static int sync_file(const char *path, char *err, size_t n)
{
    sqlite3_vfs *v = sqlite3_vfs_find(NULL); /* cksumvfs over kvfs */
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

static const struct kdisk_region *region_of(const struct klayout *l, uint32_t kind)
{
    return klayout_region(l, kind);
}

/* Steps 1-3 through SQLite. */
static int copy_database(struct blk_dev *d, const struct klayout *l, FILE *out, char *err,
                         size_t n)
{
    sqlite3 *db = NULL, *copy = NULL;
    uint8_t want[32], got[32];
    int64_t app = 0, tables = 0, busy = -1;
    int rc = TDISK_MIGRATE_EIO;
    struct kvfs *fs = tdisk_store_vfs_open(d, l->regions, l->region_count, err, n);
    if (!fs)
        return TDISK_MIGRATE_REFUSED;
    sqlite3_vfs *v = sqlite3_vfs_find(NULL); /* cksumvfs over kvfs */
    if (open_db(TDISK_DB_PATH, &db, err, n))
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
        fail(err, n, TDISK_MIGRATE_EIO, "checkpointing the WAL: %s", sqlite3_errmsg(db));
        goto out;
    }
    fprintf(out, "1. checkpointed the WAL into the database\n");
    if (tdisk_db_digest(db, want, err, n))
        goto out;
    if (v->xDelete(v, TDISK_BAK_B, 1) != SQLITE_OK) {
        fail(err, n, TDISK_MIGRATE_EIO, "emptying backup B failed");
        goto out;
    }
    int reserve = 8;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_RESERVE_BYTES, &reserve) != SQLITE_OK ||
        exec(db, "VACUUM INTO '" TDISK_BAK_B "'", err, n) || sync_file(TDISK_BAK_B, err, n))
        goto out;
    fprintf(out, "2. wrote a copy with page checksums into backup B and synced it\n");
    if (open_db(TDISK_BAK_B, &copy, err, n))
        goto out;
    sqlite3_stmt *st = NULL;
    const char *verdict = NULL;
    if (sqlite3_prepare_v2(copy, "PRAGMA integrity_check(1)", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        verdict = (const char *)sqlite3_column_text(st, 0);
    int ok = verdict && !strcmp(verdict, "ok");
    sqlite3_finalize(st);
    reserve = -1;
    (void)sqlite3_file_control(copy, "main", SQLITE_FCNTL_RESERVE_BYTES, &reserve);
    if (!ok || reserve != 8) {
        fail(err, n, TDISK_MIGRATE_EIO, "the copy in backup B does not check out (%s, %d "
             "reserve bytes): nothing was switched", ok ? "integrity ok" : "integrity_check "
             "fails", reserve);
        goto out;
    }
    if (tdisk_db_digest(copy, got, err, n))
        goto out;
    if (memcmp(want, got, sizeof want)) {
        fail(err, n, TDISK_MIGRATE_EIO, "the copy in backup B holds other rows than the "
             "database: nothing was switched");
        goto out;
    }
    fprintf(out, "3. the copy passes integrity_check with every page's checksum and holds the "
                 "same rows\n");
    rc = 0;
out:
    if (copy && sqlite3_close(copy) != SQLITE_OK && !rc)
        rc = fail(err, n, TDISK_MIGRATE_EIO, "closing the copy failed");
    if (db && sqlite3_close(db) != SQLITE_OK && !rc)
        rc = fail(err, n, TDISK_MIGRATE_EIO, "closing the database failed");
    /* The checkpointed WAL's frames were written against the old database
     * file; once the copy is the database they would be replayed onto it.
     * A truncating checkpoint does not make the log's size durable, so
     * empty it durably (kvfs: header with size 0, flushed) before the
     * switch. Both layouts are valid with an empty log. */
    if (!rc) {
        if (v->xDelete(v, TDISK_DB_PATH "-wal", 1) != SQLITE_OK)
            rc = fail(err, n, TDISK_MIGRATE_EIO, "emptying the WAL failed");
        else
            fprintf(out, "   emptied the log region\n");
    }
    tdisk_store_vfs_close(fs);
    return rc;
}

int tdisk_migrate(struct blk_dev *d, const struct tdisk_migrate_opts *opt, FILE *out, char *err,
                  size_t n)
{
    static struct klayout l;
    struct kdisk kd;
    struct kdisk_report rep;
    static const uint8_t unused_id[16];
    uint8_t *io = aligned_alloc(4096, KDISK_IO_BYTES);
    int rc;
    if (!io)
        return fail(err, n, TDISK_MIGRATE_EIO, "out of memory");
    tdisk_blk_kdisk(&kd, d, io);
    kdisk_report_clear(&rep);
    rc = klayout_open(&kd, 0, unused_id, &l, &rep);
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
    const struct ksuper *sb = &l.super.sb;
    if (sb->version > opt->target) {
        rc = fail(err, n, TDISK_MIGRATE_REFUSED, "layout v%u is newer than v%u", sb->version,
                  opt->target);
        goto done;
    }
    if (sb->version == opt->target && !opt->rewrite) {
        fprintf(out, "layout v%u is current: nothing to migrate\n", (unsigned)sb->version);
        rc = 0;
        goto done;
    }
    const struct kdisk_region *dbr = region_of(&l, KDISK_REGION_DB),
                              *bkb = region_of(&l, KDISK_REGION_BACKUP_B);
    fprintf(out,
            "plan (layout v%u generation %" PRIu64 " -> layout v%u):\n"
            "1. checkpoint the WAL into the database region (LBA %" PRIu64 ")\n"
            "2. empty backup B (LBA %" PRIu64 ") and write into it a copy of the database whose "
            "pages carry checksums (8 reserve bytes; VACUUM INTO through cksumvfs); sync\n"
            "3. check the copy: integrity_check with every page's checksum, the same rows; "
            "empty the (checkpointed) log region\n"
            "4. switch: superblock %c, generation %" PRIu64 ": layout v%u, the database region "
            "at LBA %" PRIu64 ", backup B (the old database) at LBA %" PRIu64 "; flush\n"
            "until step 4 the disk is a valid layout v%u with the same data (backup B holding "
            "no copy or the new one); after it a valid layout v%u\n",
            (unsigned)sb->version, sb->generation, (unsigned)opt->target, dbr->lba, bkb->lba,
            l.super.slot ? 'A' : 'B', sb->generation + 1, (unsigned)opt->target, bkb->lba,
            dbr->lba, (unsigned)sb->version, (unsigned)opt->target);
    if (!opt->apply) {
        fprintf(out, "dry run: nothing written (--apply migrates)\n");
        rc = 0;
        goto done;
    }
    rc = copy_database(d, &l, out, err, n);
    if (rc)
        goto done;
    struct ksuper next = *sb;
    next.version = opt->target;
    for (unsigned i = 0; i < next.region_count; i++)
        if (next.regions[i].kind == KDISK_REGION_DB)
            next.regions[i].kind = KDISK_REGION_BACKUP_B;
        else if (next.regions[i].kind == KDISK_REGION_BACKUP_B)
            next.regions[i].kind = KDISK_REGION_DB;
    kdisk_report_clear(&rep);
    int ur = ksuper_update(&kd, &l.geom, &l.super, &next, &rep);
    if (ur) {
        rc = fail(err, n, ur == KDISK_EIO ? TDISK_MIGRATE_EIO : TDISK_MIGRATE_REFUSED,
                  "the switch failed (the old layout is still in use): %s", rep.error);
        goto done;
    }
    fprintf(out, "4. switched: superblock %c, generation %" PRIu64 ", layout v%u\n",
            l.super.slot ? 'B' : 'A', l.super.sb.generation, (unsigned)l.super.sb.version);
    rc = 0;
done:
    free(io);
    return rc;
}
