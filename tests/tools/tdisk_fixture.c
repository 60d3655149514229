/*
 * tdisk_fixture.c - makes the images tern-disk's tests read (test_tern_disk.py):
 * formats the blank tern partition of a disk image made by tern-mkdisk
 * through the kernel's layout code, then opens the daemon's store on it
 * through the kernel's store VFS (kvfs), exactly as the unikernel does, and
 * writes rows with the store's own schema. No image is checked in.
 *
 *   tdisk-fixture IMAGE RETAINED SESSIONS [--backup] [--wal] [--tele N]
 *       RETAINED retained messages, SESSIONS sessions with one subscription
 *       each; --backup copies the database into backup A afterwards; --wal
 *       writes one more retained message after that and leaves it in the
 *       WAL (the connection is closed without a checkpoint); --tele writes
 *       N records into the telemetry journal with the kernel's writer.
 */
#include "../../tools/disk/tern-disk.h"

#include "platform/kernel/disk/tele.h"
#include "platform/kernel/store/kvfs.h"
#include "store/internal.h"
#include "store/store.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

static void wait_poll(void *ctx, bool (*done)(void *arg), void *arg)
{
    struct blk_dev *d = ctx;
    while (!done(arg))
        (void)d->ops->poll(d);
}

static void rnd(void *ctx, void *buf, size_t n)
{
    (void)ctx;
    if (getrandom(buf, n, 0) != (ssize_t)n)
        abort();
}

static int die(const char *what, const char *why)
{
    fprintf(stderr, "tdisk-fixture: %s: %s\n", what, why);
    return 1;
}

static int exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        fprintf(stderr, "tdisk-fixture: %s: %s\n", sql, msg);
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

/* n records through the kernel's journal writer (disk/tele.c). */
static int write_tele(const struct kdisk *d, const struct klayout *l, long n)
{
    const struct kdisk_region *r = klayout_region(l, KDISK_REGION_TELEMETRY);
    struct tele_geom g;
    static struct tele t;
    static uint8_t seg[TELE_SEG_BYTES] __attribute__((aligned(4096)));
    struct kdisk_report rep;
    char why[KDISK_MSG_MAX];
    kdisk_report_clear(&rep);
    if (tele_geom_init(&g, l->super.sb.volume_id, r->lba, r->blocks, d->logical_block,
                       l->super.sb.physical_block, why, sizeof why))
        return die("telemetry", why);
    if (tele_open(&t, d, &g, seg, NULL, NULL, &rep))
        return die("telemetry", rep.error);
    t.boot = 1;
    for (long i = 0; i < n; i++) {
        uint8_t payload[64];
        memset(payload, (int)i, sizeof payload);
        if (tele_append(&t, TELE_K_STATS, 1, 1700000000000 + i * 1000, payload, sizeof payload,
                        &rep))
            return die("telemetry", rep.error);
    }
    if (tele_sync(&t, &rep))
        return die("telemetry", rep.error);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return die("usage", "tdisk-fixture IMAGE RETAINED SESSIONS [--backup] [--wal]");
    const char *path = argv[1];
    long retained = atol(argv[2]), sessions = atol(argv[3]);
    bool backup = false, wal = false;
    long tele = 0;
    for (int i = 4; i < argc; i++) {
        backup |= !strcmp(argv[i], "--backup");
        wal |= !strcmp(argv[i], "--wal");
        if (!strcmp(argv[i], "--tele") && i + 1 < argc)
            tele = atol(argv[++i]);
    }
    char err[300];
    struct tdisk_image *im = tdisk_image_open(path, 0, true, err, sizeof err);
    if (!im)
        return die(path, err);
    static struct klayout l;
    struct kdisk_report rep;
    uint8_t volume_id[16];
    rnd(NULL, volume_id, sizeof volume_id);
    kdisk_report_clear(&rep);
    if (klayout_open(tdisk_image_kdisk(im), KLAYOUT_FORMAT, volume_id, &l, &rep))
        return die(path, rep.error);
    struct blk_dev *d = tdisk_image_blk(im, l.super.sb.physical_block);
    struct kvfs_config c = {.vfs_name = "fixture", .path = "/tern.db", .dev = d};
    static const uint32_t kinds[KVFS_ROLES] = {KDISK_REGION_DB, KDISK_REGION_WAL,
                                               KDISK_REGION_BACKUP_A, KDISK_REGION_BACKUP_B};
    for (int i = 0; i < KVFS_ROLES; i++) {
        const struct kdisk_region *r = klayout_region(&l, kinds[i]);
        c.region[i] = (struct kvfs_region){r->lba, r->blocks};
    }
    c.env = (struct kvfs_env){.wait = wait_poll, .random = rnd, .ctx = d};
    struct kvfs *fs = kvfs_open(&c, err, sizeof err);
    if (!fs || kvfs_register(fs, 0) != SQLITE_OK)
        return die(path, fs ? "SQLite refused the VFS" : err);
    store_options opt = {.path = "/tern.db", .vfs = "fixture", .sync = STORE_SYNC_FULL};
    store_open_info info;
    store *s = store_open(&opt, &info, err, sizeof err);
    if (!s)
        return die(path, err);
    char sql[256];
    if (exec(s->db, "BEGIN"))
        return 1;
    for (long i = 0; i < retained; i++) {
        snprintf(sql, sizeof sql, "INSERT INTO retained(topic, payload, qos) VALUES "
                 "(CAST('t/%ld' AS BLOB), randomblob(200), 1)", i);
        if (exec(s->db, sql))
            return 1;
    }
    for (long i = 0; i < sessions; i++) {
        snprintf(sql, sizeof sql, "INSERT INTO sessions(client_id, identity, flags) VALUES "
                 "(CAST('c%ld' AS BLOB), x'', 0); INSERT INTO subs(client_id, filter, qos) "
                 "VALUES (CAST('c%ld' AS BLOB), CAST('t/#' AS BLOB), 1)", i, i);
        if (exec(s->db, sql))
            return 1;
    }
    if (exec(s->db, "COMMIT") || exec(s->db, "PRAGMA wal_checkpoint(TRUNCATE)"))
        return 1;
    if (backup && store_backup_run(s) != STORE_OK)
        return die(path, "backup failed");
    if (wal) {
        if (exec(s->db, "INSERT INTO retained(topic, payload, qos) VALUES "
                        "(CAST('in/wal' AS BLOB), x'01', 0)"))
            return 1;
        (void)sqlite3_db_config(s->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    }
    store_close(s);
    kvfs_close(fs);
    if (tele && write_tele(tdisk_image_kdisk(im), &l, tele))
        return 1;
    tdisk_image_close(im);
    printf("%s: formatted, %ld retained, %ld sessions%s%s, %ld telemetry records\n", path,
           retained, sessions, backup ? ", backup A" : "", wal ? ", one commit left in the WAL" : "",
           tele);
    return 0;
}
