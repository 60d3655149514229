/*
 * kdisk_store.c - the durable store on the machine's own disk (see
 * kdisk_store.h): disk choice, layout, VFS, store_open, console lines.
 *
 * Order matters for "nothing is written before it is accepted": the GPT is
 * only read to choose the disk, klayout_open refuses foreign or newer
 * layouts before it formats, and store_open writes only into regions the
 * layout handed out.
 */
#include "store/kdisk_store.h"

#include "bootconf.h"
#include "clock.h"
#include "console.h"
#include "dev/blk.h"
#include "disk/blkdisk.h"
#include "disk/gpt.h"
#include "disk/layout.h"
#include "kthread.h"
#include "mm/kmalloc.h"
#include "rng/entropy.h"
#include "store/kcksum.h"
#include "store/kscrub.h"
#include "store/ksqlite.h"
#include "store/kstore.h"
#include "store/ktele.h"
#include "store/kvfs.h"
#include "store/store.h"
#include "version.h"

#include "arch/x86_64/cpu.h"

#include <stdio.h>
#include <string.h>

/* The path the store opens; kvfs maps it and its companions onto regions. */
#define KDISK_DB_PATH "/tern.db"

/* Boot-time state of the one store (like the one broker in serve.c). */
static struct {
    struct blkdisk bd;
    struct klayout layout;
    struct kvfs *fs;
    store *st;
    squeue_store q;
    struct kscrub *scrub;
} ds;

static _Noreturn void halt_store(const char *disk, const char *why)
{
    kprintf("tern: store: %s: %s\n", disk, why);
    kprintf("tern: store: refusing to serve without the configured durable store; halted\n");
    cpu_halt_forever();
}

/* ---- choosing the disk --------------------------------------------------- */

/* "virtio-blk 00:04.0" / "virtio-scsi 00:05.0 0:0": the PCI address part. */
static int name_has_pci(const char *name, const tern_config_disk *want)
{
    char addr[16];
    snprintf(addr, sizeof addr, " %02x:%02x.%u", want->bus, want->dev, (unsigned)want->fn);
    const char *p = strstr(name, addr);
    return p && (p[strlen(addr)] == '\0' || p[strlen(addr)] == ' ');
}

static int kind_matches(const struct blk_dev *d, const tern_config_disk *want)
{
    switch (want->kind) {
    case TERN_DISK_VIRTIO_BLK:
        return !strncmp(d->name, "virtio-blk ", 11);
    case TERN_DISK_VIRTIO_SCSI:
        return !strncmp(d->name, "virtio-scsi ", 12);
    case TERN_DISK_PCI:
        return name_has_pci(d->name, want);
    default:
        return 1;
    }
}

/* 1 when d's GPT (either copy) lists a tern data partition. Reads only. */
static int has_tern_partition(struct blk_dev *d)
{
    struct blkdisk bd;
    struct kdisk_report rep;
    struct gpt *g = kmalloc(sizeof *g);
    int found = 0;
    if (!g || blkdisk_open(d, &bd)) {
        kfree(g);
        return 0;
    }
    kdisk_report_clear(&rep);
    if (gpt_read(&bd.disk, g, &rep) == KDISK_OK)
        for (unsigned i = 0; i < g->count; i++)
            found |= klayout_part_is_tern(&g->parts[i]);
    blkdisk_close(&bd);
    kfree(g);
    return found;
}

/* The disk to use, NULL for RAM only (said why); halts on a refusal. */
static struct blk_dev *choose_disk(const tern_config *cfg)
{
    const tern_config_disk *want = &cfg->store_disk;
    struct blk_dev *pick = NULL;
    char names[160] = "";
    unsigned candidates = 0;
    for (unsigned i = 0; i < blk_count(); i++) {
        struct blk_dev *d = blk_get(i);
        if (!kind_matches(d, want))
            continue;
        if (want->kind == TERN_DISK_AUTO && !has_tern_partition(d))
            continue;
        if (candidates++ == 0)
            pick = d;
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", d->name);
    }
    if (candidates == 0) {
        if (want->kind != TERN_DISK_AUTO)
            bootconf_refuse_key(cfg, "store.disk", "no such disk");
        kprintf("tern: store: no disk with a tern data partition (%u disks): retained "
                "messages and sessions live in memory only\n", blk_count());
        return NULL;
    }
    if (candidates > 1 && want->kind == TERN_DISK_AUTO) {
        char why[240];
        snprintf(why, sizeof why, "several disks hold a tern data partition (%s): name one "
                 "with store.disk", names);
        halt_store("store.disk = auto", why);
    }
    return pick;
}

/* ---- the VFS's environment: the store thread yields on disk waits ------ */

static int poll_disks(void) { return blk_poll_all(); }

static void vfs_wait(void *ctx, bool (*done)(void *arg), void *arg)
{
    (void)ctx;
    kthread_wait_until(done, arg, poll_disks);
}

static void store_log(void *ctx, broker_log_level level, const char *msg)
{
    (void)ctx;
    if (level == BROKER_LOG_DEBUG)
        return;
    kprintf("tern: store: %s: %s\n", broker_log_level_name(level), msg);
}

static uint64_t store_clock_us(void *ctx)
{
    (void)ctx;
    return clock_mono_ns() / 1000;
}

static void map_region(struct kvfs_config *c, enum kvfs_role role, uint32_t kind)
{
    const struct kdisk_region *r = klayout_region(&ds.layout, kind);
    /* klayout_open accepts only layouts with every kind present. */
    c->region[role] = (struct kvfs_region){r->lba, r->blocks};
}

/* ---- opening -------------------------------------------------------------- */

static void open_layout(struct blk_dev *d)
{
    struct kdisk_report rep;
    uint8_t volume_id[16];
    if (blkdisk_open(d, &ds.bd))
        halt_store(d->name, "no memory for the disk's I/O buffer");
    if (rng_bytes(volume_id, sizeof volume_id))
        halt_store(d->name, "no random volume id (entropy not seeded)");
    kdisk_report_clear(&rep);
    int rc = klayout_open(&ds.bd.disk, KLAYOUT_FORMAT, volume_id, &ds.layout, &rep);
    for (unsigned i = 0; i < rep.note_count; i++)
        kprintf("tern: store: %s: %s\n", d->name, rep.notes[i]);
    if (rc)
        halt_store(d->name, rep.error);
    const struct klayout *l = &ds.layout;
    const struct kdisk_region *db = klayout_region(l, KDISK_REGION_DB);
    const struct kdisk_region *wal = klayout_region(l, KDISK_REGION_WAL);
    kprintf("tern: store: %s: partition #%u, layout v%u generation %llu (superblock %c)%s; "
            "database %llu MiB, log %llu MiB\n",
            d->name, (unsigned)l->part.index, (unsigned)l->super.sb.version,
            (unsigned long long)l->super.sb.generation, l->super.slot ? 'B' : 'A',
            l->formatted ? ", formatted now" : "",
            (unsigned long long)(db->blocks * d->topo.logical_block >> 20),
            (unsigned long long)(wal->blocks * d->topo.logical_block >> 20));
}

static void open_vfs(struct blk_dev *d)
{
    char err[160];
    struct kvfs_config c = {.vfs_name = "tern", .path = KDISK_DB_PATH, .dev = d};
    map_region(&c, KVFS_DB, KDISK_REGION_DB);
    map_region(&c, KVFS_LOG, KDISK_REGION_WAL);
    map_region(&c, KVFS_BACKUP_A, KDISK_REGION_BACKUP_A);
    map_region(&c, KVFS_BACKUP_B, KDISK_REGION_BACKUP_B);
    ksqlite_env(&c.env);
    c.env.wait = vfs_wait;
    ds.fs = kvfs_open(&c, err, sizeof err);
    if (!ds.fs)
        halt_store(d->name, err);
    if (kvfs_register(ds.fs, 1) != 0)
        halt_store(d->name, "SQLite refused the disk's VFS");
    /* Layout v3: page checksums (cksumvfs and tern's WAL shims) over it. */
    if (kcksum_stack("tern") != 0)
        halt_store(d->name, "SQLite refused the page checksum VFS");
}

static void open_database(const tern_config *cfg, struct blk_dev *d, int integrity)
{
    char err[STORE_ERR_SIZE];
    store_open_info info;
    store_options opt = {
        .path = KDISK_DB_PATH,
        .vfs = KCKSUM_VFS,
        .reserve_bytes = KCKSUM_RESERVE,
        .sync = cfg->store_sync == TERN_STORE_SYNC_NORMAL ? STORE_SYNC_NORMAL : STORE_SYNC_FULL,
        .cache_kib = cfg->store_cache_kib,
        .log = store_log,
        .clock = store_clock_us,
    };
    uint64_t t0 = clock_mono_ns();
    ds.st = store_open(&opt, &info, err, sizeof err);
    if (!ds.st)
        halt_store(d->name, err);
    /* "empty": a restore cut short left it so, and a backup replaced it. */
    kprintf("tern: store: database %s: quick_check %s%s%s, schema %u, opened in %llu ms\n",
            info.created ? "created" : info.found_empty ? "empty" : "found",
            info.check_failed ? "failed" : "ok",
            info.restored ? "; replaced by backup " : "",
            info.restored ? (info.restored_from == 'a' ? "a" : "b") : "",
            (unsigned)(info.schema_found ? info.schema_found : STORE_SCHEMA_VERSION),
            (unsigned long long)((clock_mono_ns() - t0) / 1000000));
    if (integrity) {
        store_rc rc = store_integrity_check(ds.st, err, sizeof err);
        kprintf("tern: store: integrity_check %s%s%s\n", rc == STORE_OK ? "ok" : "FAILED",
                rc == STORE_OK ? "" : ": ", rc == STORE_OK ? "" : err);
    }
}

const squeue_store *kdisk_store_open(const tern_config *cfg, int integrity)
{
    if (cfg->store_disk.kind == TERN_DISK_NONE) {
        kprintf("tern: store: store.disk = none: retained messages and sessions live in "
                "memory only\n");
        return NULL;
    }
    struct blk_dev *d = choose_disk(cfg);
    if (!d)
        return NULL;
    const char *why;
    if (!blk_durable_ok(d, &why))
        halt_store(d->name, why);
    /* SQLite's soft heap limit follows store.cache_size: the main
     * connection's cache, a backup's small one, and room for statements
     * and a large transaction's dirty pages; never below the default. */
    uint64_t soft = (uint64_t)cfg->store_cache_kib * 1024 * 2 + (4u << 20);
    if (ksqlite_init(soft < KSQLITE_SOFT_LIMIT ? KSQLITE_SOFT_LIMIT : soft) != 0)
        halt_store(d->name, "SQLite did not initialise");
    open_layout(d);
    /* The journal's boot record is durable before the broker serves; a
     * journal that cannot be used is said and does not stop the store. */
    const struct ktele_boot tb = {
        .release = TERN_VERSION, .mode = 1, .disk = d->name,
        .partition_bytes = (ds.layout.part.last - ds.layout.part.first + 1) * d->topo.logical_block,
    };
    (void)ktele_open(d, &ds.layout, &tb, cfg->telemetry_interval_s);
    open_vfs(d);
    open_database(cfg, d, integrity);
    kstore_bind_store(&ds.q, ds.st);
    ds.scrub = kscrub_start(d, &ds.layout, cfg->store_scrub_rate_kib, cfg->store_scrub_interval_s);
    return &ds.q;
}

struct kscrub *kdisk_store_scrubber(void)
{
    return ds.scrub;
}
