/*
 * tdisk_migrate_cuts.c - fault injection for tern-disk's migration
 * (tools/disk/tern-disk-migrate.c) on the host tests' fake disk
 * (tests/unit/fake_blk.c: a volatile write cache, power cuts that keep,
 * lose or tear each unflushed write).
 *
 * A disk is partitioned, formatted and filled (tdisk_populate.c: rows, a
 * backup, a commit left in the WAL, telemetry) and the migration run once
 * to count its writes. Then, for every write N of it:
 *   cut   the power goes at write N (it and every later request fail and
 *         change nothing), then a power cut keeps, loses or tears each
 *         unflushed write at random; done with two random seeds;
 *   eio   write N fails (its blocks left old, new or torn) while the disk
 *         lives on: the migration must stop and report it; the disk is
 *         checked as it is, then after a power cut.
 * After each, the disk must pass tern-disk's whole verify (layout, region
 * headers, database and backups with integrity_check, telemetry) and be
 * either the old layout (database at its old region) or the new one
 * (database at backup B's old region, with page checksums), its database
 * holding exactly the rows it held before (content digest) - never
 * neither. Prints the tally; exit 0 when every case held.
 *
 *   tdisk-migrate-cuts [--quick]     (--quick: every third write only)
 */
#define _GNU_SOURCE

#include "tdisk_populate.h"

#include "../../tools/disk/tern-disk-migrate.h"
#include "../../tools/disk/tern-disk-sql.h"
#include "../unit/fake_blk.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { DISK_MIB = 32, LB = 512 };

/* The fake behind a blk_dev that counts writes and kills the power at one. */
struct cut_dev {
    struct blk_dev dev;
    struct fake_blk *f;
    uint64_t writes, die_at;
};

static int cut_submit(struct blk_dev *d, struct blk_req *req)
{
    struct cut_dev *c = d->drv;
    if (req->op == BLK_WRITE && ++c->writes == c->die_at)
        c->f->dead = true; /* this write and all later requests fail */
    return c->f->dev.ops->submit(&c->f->dev, req);
}

static int cut_poll(struct blk_dev *d)
{
    struct cut_dev *c = d->drv;
    return fake_blk_poll(c->f);
}

static const struct blk_ops cut_ops = {.submit = cut_submit, .poll = cut_poll};

static void cut_init(struct cut_dev *c, struct fake_blk *f, uint64_t die_at)
{
    memset(c, 0, sizeof *c);
    c->f = f;
    c->die_at = die_at;
    c->dev = f->dev;
    c->dev.ops = &cut_ops;
    c->dev.drv = c;
}

/* The fake back at the snapshot, alive, no faults armed. */
static void restore(struct fake_blk *f, const uint8_t *snap, size_t bytes, uint64_t seed)
{
    (void)fake_blk_cut(f); /* drops what is pending */
    memcpy(f->durable, snap, bytes);
    memcpy(f->cur, snap, bytes);
    f->dead = false;
    f->die_nth = f->fail_write_nth = f->fail_flush_nth = 0;
    f->fail_writes = f->fail_flushes = false;
    f->nq = 0;
    f->rng = seed;
}

struct state {
    bool ok;
    bool migrated;          /* the database is at backup B's old region */
    char why[600];
};

/* What verify and the digest say about bytes (the disk now). */
static void check(const uint8_t *bytes, size_t len, const char *tmp, uint64_t db_lba,
                  uint64_t bkb_lba, const uint8_t want[32], struct state *st)
{
    memset(st, 0, sizeof *st);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, bytes, len) != (ssize_t)len || close(fd)) {
        snprintf(st->why, sizeof st->why, "cannot write %s", tmp);
        return;
    }
    char err[300], *report = NULL;
    size_t report_len = 0;
    struct tdisk_image *im = tdisk_image_open(tmp, 0, false, err, sizeof err);
    if (!im) {
        snprintf(st->why, sizeof st->why, "%s", err);
        return;
    }
    FILE *mem = open_memstream(&report, &report_len);
    struct tdisk_out o = {.f = mem, .verbose = false};
    static struct tdisk_layout l;
    tdisk_walk_layout(im, &o, &l);
    if (l.usable) {
        tdisk_walk_db(im, &o, &l);
        tdisk_walk_telemetry(im, &o, &l);
    }
    fclose(mem);
    const struct kdisk_region *db = NULL;
    for (unsigned i = 0; i < l.region_count; i++)
        if (l.regions[i].kind == KDISK_REGION_DB)
            db = &l.regions[i];
    if (o.problems || o.io_errors || !l.usable || !db) {
        snprintf(st->why, sizeof st->why, "verify: %u problems, %u read errors%s:\n%s",
                 o.problems, o.io_errors, l.usable ? "" : ", no usable layout", report);
        goto out;
    }
    if (db->lba != db_lba && db->lba != bkb_lba) {
        snprintf(st->why, sizeof st->why, "the database is at LBA %llu, neither %llu nor %llu",
                 (unsigned long long)db->lba, (unsigned long long)db_lba,
                 (unsigned long long)bkb_lba);
        goto out;
    }
    st->migrated = db->lba == bkb_lba;
    struct kvfs *fs = tdisk_store_vfs_open(tdisk_image_blk(im, l.sb.physical_block), l.regions,
                                           l.region_count, err, sizeof err);
    sqlite3 *sq = NULL;
    uint8_t got[32];
    int reserve = -1;
    if (!fs) {
        snprintf(st->why, sizeof st->why, "kvfs: %s", err);
        goto out;
    }
    if (sqlite3_open_v2(TDISK_DB_PATH, &sq, SQLITE_OPEN_READWRITE, TDISK_CKSM_VFS) != SQLITE_OK ||
        sqlite3_exec(sq, "PRAGMA locking_mode = EXCLUSIVE", NULL, NULL, NULL) != SQLITE_OK ||
        tdisk_db_digest(sq, got, err, sizeof err)) {
        snprintf(st->why, sizeof st->why, "reading the database: %s", sq ? sqlite3_errmsg(sq) : "");
    } else if (memcmp(got, want, sizeof got)) {
        snprintf(st->why, sizeof st->why, "the database's rows differ from before");
    } else {
        (void)sqlite3_file_control(sq, "main", SQLITE_FCNTL_RESERVE_BYTES, &reserve);
        if (st->migrated && reserve != 8)
            snprintf(st->why, sizeof st->why, "migrated, but the database has %d reserve bytes",
                     reserve);
        else
            st->ok = true;
    }
    (void)sqlite3_db_config(sq, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    sqlite3_close(sq);
    tdisk_store_vfs_close(fs);
out:
    free(report);
    tdisk_image_close(im);
}

static int migrate(struct blk_dev *d, char *err, size_t n)
{
    struct tdisk_migrate_opts mo = {.apply = true, .target = KSUPER_VERSION, .rewrite = true};
    FILE *sink = fopen("/dev/null", "w");
    int rc = tdisk_migrate(d, &mo, sink, err, n);
    fclose(sink);
    return rc;
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    static struct fake_blk f;
    const size_t bytes = (size_t)DISK_MIB << 20;
    char err[300], tmp[] = "/dev/shm/tdisk-cuts-XXXXXX";
    int tfd = mkstemp(tmp);
    if (tfd < 0)
        return 1;
    close(tfd);
    fake_blk_init(&f, LB, LB, bytes / LB, 1);
    struct tdisk_populate p = {.partition = true, .retained = 40, .sessions = 5, .backup = true,
                               .wal = true, .tele = 50};
    if (tdisk_populate(&f.dev, &p, err, sizeof err)) {
        fprintf(stderr, "populate: %s\n", err);
        return 1;
    }
    uint8_t *snap = malloc(bytes);
    memcpy(snap, f.durable, bytes);

    /* The regions before, and the rows: from the disk as verify sees it. */
    struct state st;
    uint8_t want[32] = {0};
    {
        struct kdisk kd;
        static struct klayout l;
        struct kdisk_report rep;
        static const uint8_t id[16];
        uint8_t *io = aligned_alloc(4096, KDISK_IO_BYTES);
        tdisk_blk_kdisk(&kd, &f.dev, io);
        kdisk_report_clear(&rep);
        if (klayout_open(&kd, 0, id, &l, &rep)) {
            fprintf(stderr, "layout: %s\n", rep.error);
            return 1;
        }
        uint64_t db_lba = klayout_region(&l, KDISK_REGION_DB)->lba;
        uint64_t bkb_lba = klayout_region(&l, KDISK_REGION_BACKUP_B)->lba;
        free(io);
        /* The digest the check compares against: taken by the check's own
         * reading of the untouched disk (which must pass). */
        struct kvfs *fs = tdisk_store_vfs_open(&f.dev, l.regions, l.region_count, err, sizeof err);
        sqlite3 *sq = NULL;
        if (!fs || sqlite3_open_v2(TDISK_DB_PATH, &sq, SQLITE_OPEN_READWRITE, TDISK_CKSM_VFS) ||
            sqlite3_exec(sq, "PRAGMA locking_mode = EXCLUSIVE", NULL, NULL, NULL) ||
            tdisk_db_digest(sq, want, err, sizeof err)) {
            fprintf(stderr, "digest: %s\n", err);
            return 1;
        }
        (void)sqlite3_db_config(sq, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
        sqlite3_close(sq);
        tdisk_store_vfs_close(fs);
        restore(&f, snap, bytes, 1); /* reading may have written (WAL replay) */

        check(snap, bytes, tmp, db_lba, bkb_lba, want, &st);
        if (!st.ok || st.migrated) {
            fprintf(stderr, "the populated disk does not check out: %s\n", st.why);
            return 1;
        }
        /* A whole migration, counting its writes. */
        struct cut_dev c;
        cut_init(&c, &f, 0);
        if (migrate(&c.dev, err, sizeof err)) {
            fprintf(stderr, "the migration failed on a good disk: %s\n", err);
            return 1;
        }
        (void)fake_blk_cut(&f); /* all flushed: nothing pending to lose */
        check(f.cur, bytes, tmp, db_lba, bkb_lba, want, &st);
        if (!st.ok || !st.migrated) {
            fprintf(stderr, "after a whole migration: %s%s\n", st.ok ? "not migrated" : "",
                    st.why);
            return 1;
        }
        uint64_t total = c.writes;
        unsigned long cases = 0, old_state = 0, new_state = 0, failures = 0;
        for (uint64_t n = 1; n <= total; n += quick ? 3 : 1) {
            for (int variant = 0; variant < 3; variant++) {
                restore(&f, snap, bytes, n * 7 + (uint64_t)variant);
                cut_init(&c, &f, variant < 2 ? n : 0);
                if (variant == 2)
                    f.fail_write_nth = n;
                int rc = migrate(&c.dev, err, sizeof err);
                const char *name = variant < 2 ? "cut" : "eio";
                if (rc == 0 && variant == 2) {
                    printf("FAIL eio at write %llu: the migration did not report the failed "
                           "write\n", (unsigned long long)n);
                    failures++;
                }
                if (variant == 2) {
                    /* alive: the disk as it is, then after a cut */
                    check(f.cur, bytes, tmp, db_lba, bkb_lba, want, &st);
                    cases++;
                    if (!st.ok) {
                        printf("FAIL eio at write %llu (no cut): %s\n", (unsigned long long)n,
                               st.why);
                        failures++;
                    }
                }
                (void)fake_blk_cut(&f);
                check(f.cur, bytes, tmp, db_lba, bkb_lba, want, &st);
                cases++;
                if (!st.ok) {
                    printf("FAIL %s at write %llu of %llu (seed %d): %s\n", name,
                           (unsigned long long)n, (unsigned long long)total, variant, st.why);
                    failures++;
                } else if (st.migrated) {
                    new_state++;
                } else {
                    old_state++;
                }
            }
        }
        unlink(tmp);
        printf("migration cuts: %llu writes, %lu cases (cut with 2 seeds, failed write with "
               "and without a cut): %lu old layout with the same rows, %lu new layout with the "
               "same rows, %lu failures\n", (unsigned long long)total, cases, old_state,
               new_state, failures);
        free(snap);
        fake_blk_free(&f);
        return failures ? 1 : 0;
    }
}
