/*
 * tdisk_populate.c - see tdisk_populate.h. The store is opened as the
 * unikernel opens it (store_open through kvfs, here with cksumvfs on top,
 * which leaves a database without checksums alone); rows go in with plain
 * SQL in the store's schema, which is all tern-disk looks at.
 */
#include "tdisk_populate.h"

#include "../../tools/disk/tern-disk-sql.h"
#include "platform/kernel/disk/crc32.h"
#include "platform/kernel/disk/tele.h"
#include "store/internal.h"
#include "store/store.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

static int say(char *err, size_t n, const char *what, const char *why)
{
    snprintf(err, n, "%s: %s", what, why);
    return -1;
}

static int exec(sqlite3 *db, const char *sql, char *err, size_t n)
{
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK)
        return 0;
    return say(err, n, sql, sqlite3_errmsg(db));
}

/* n records through the kernel's journal writer (disk/tele.c). */
static int write_tele(const struct kdisk *d, const struct klayout *l, long count, char *err,
                      size_t n)
{
    const struct kdisk_region *r = klayout_region(l, KDISK_REGION_TELEMETRY);
    struct tele_geom g;
    struct tele *t = calloc(1, sizeof *t);
    uint8_t *seg = aligned_alloc(4096, TELE_SEG_BYTES);
    struct kdisk_report rep;
    char why[KDISK_MSG_MAX];
    int rc = -1;
    kdisk_report_clear(&rep);
    if (!t || !seg)
        say(err, n, "telemetry", "out of memory");
    else if (tele_geom_init(&g, l->super.sb.volume_id, r->lba, r->blocks, d->logical_block,
                            l->super.sb.physical_block, why, sizeof why))
        say(err, n, "telemetry", why);
    else if (tele_open(t, d, &g, seg, NULL, NULL, &rep))
        say(err, n, "telemetry", rep.error);
    else {
        t->boot = 1;
        rc = 0;
        for (long i = 0; i < count && !rc; i++) {
            uint8_t payload[64];
            memset(payload, (int)i, sizeof payload);
            if (tele_append(t, TELE_K_STATS, 1, 1700000000000 + i * 1000, payload,
                            sizeof payload, &rep))
                rc = say(err, n, "telemetry", rep.error);
        }
        if (!rc && tele_sync(t, &rep))
            rc = say(err, n, "telemetry", rep.error);
    }
    free(seg);
    free(t);
    return rc;
}

/* Both superblock slots of the formatted partition at part_lba rewritten as
 * layout v2 (the same bytes but the version; CRC over 512 bytes with its
 * field taken as zero): the layout an older release formatted. */
static int make_v2(const struct kdisk *d, uint64_t part_lba, char *err, size_t n)
{
    struct kdisk_report rep;
    static const uint32_t off[2] = {KSUPER_SLOT_A, KSUPER_SLOT_B};
    const uint32_t per = d->physical_block / d->logical_block;
    kdisk_report_clear(&rep);
    for (unsigned s = 0; s < 2; s++) {
        uint64_t lba = part_lba + off[s] / d->logical_block;
        if (kdisk_read(d, lba, per, d->io, "a superblock", &rep))
            return say(err, n, "v2", rep.error);
        kdisk_put32(d->io + 8, TDISK_V2);
        kdisk_put32(d->io + 16, 0);
        kdisk_put32(d->io + 16, crc32(d->io, KSUPER_BYTES));
        if (kdisk_write(d, lba, per, d->io, "a superblock", &rep))
            return say(err, n, "v2", rep.error);
    }
    return kdisk_flush(d, "the superblocks", &rep) ? say(err, n, "v2", rep.error) : 0;
}

static int fill(sqlite3 *db, const struct tdisk_populate *p, char *err, size_t n)
{
    char sql[256];
    if (exec(db, "BEGIN", err, n))
        return -1;
    for (long i = 0; i < p->retained; i++) {
        snprintf(sql, sizeof sql, "INSERT INTO retained(topic, payload, qos) VALUES "
                 "(CAST('t/%ld' AS BLOB), randomblob(200), 1)", i);
        if (exec(db, sql, err, n))
            return -1;
    }
    for (long i = 0; i < p->sessions; i++) {
        snprintf(sql, sizeof sql, "INSERT INTO sessions(client_id, identity, flags) VALUES "
                 "(CAST('c%ld' AS BLOB), x'', 0); INSERT INTO subs(client_id, filter, qos) "
                 "VALUES (CAST('c%ld' AS BLOB), CAST('t/#' AS BLOB), 1)", i, i);
        if (exec(db, sql, err, n))
            return -1;
    }
    return exec(db, "COMMIT", err, n) || exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", err, n);
}

int tdisk_populate(struct blk_dev *d, const struct tdisk_populate *p, char *err, size_t n)
{
    static struct klayout l;
    struct kdisk kd;
    struct kdisk_report rep;
    uint8_t random[64];
    uint8_t *io = aligned_alloc(4096, KDISK_IO_BYTES);
    int rc = -1;
    if (!io || getrandom(random, sizeof random, 0) != (ssize_t)sizeof random) {
        free(io);
        return say(err, n, "populate", "no memory or randomness");
    }
    tdisk_blk_kdisk(&kd, d, io);
    kdisk_report_clear(&rep);
    if (p->partition && klayout_partition(&kd, 0, 0, random, &rep)) {
        say(err, n, "partitioning", rep.error);
        goto out;
    }
    if (klayout_open(&kd, KLAYOUT_FORMAT, random, &l, &rep)) {
        say(err, n, "formatting", rep.error);
        goto out;
    }
    if (p->v2 && make_v2(&kd, l.part.first, err, n))
        goto out;
    if (p->format_only) {
        rc = 0; /* as the kernel leaves a partition it formatted before its store opens */
        goto out;
    }
    struct kvfs *fs = tdisk_store_vfs_open(d, l.regions, l.region_count, err, n);
    if (!fs)
        goto out;
    /* As the kernel's store opens it: v3 creates the database with page
     * checksums. */
    store_options opt = {.path = TDISK_DB_PATH, .vfs = TDISK_CKSM_VFS, .sync = STORE_SYNC_FULL,
                         .reserve_bytes = p->v2 ? 0 : KCKSUM_RESERVE};
    store_open_info info;
    char serr[STORE_ERR_SIZE];
    store *s = store_open(&opt, &info, serr, sizeof serr);
    if (!s) {
        say(err, n, "store_open", serr);
        tdisk_store_vfs_close(fs);
        goto out;
    }
    rc = fill(s->db, p, err, n);
    if (!rc && p->backup && store_backup_run(s) != STORE_OK)
        rc = say(err, n, "backup", "store_backup_run failed");
    if (!rc && p->wal) {
        rc = exec(s->db, "INSERT INTO retained(topic, payload, qos) VALUES "
                         "(CAST('in/wal' AS BLOB), x'01', 0)", err, n);
        (void)sqlite3_db_config(s->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    }
    store_close(s);
    tdisk_store_vfs_close(fs);
    if (!rc && p->tele)
        rc = write_tele(&kd, &l, p->tele, err, n);
    if (!rc && kdisk_flush(&kd, "the disk", &rep))
        rc = say(err, n, "flush", rep.error);
out:
    free(io);
    return rc;
}
