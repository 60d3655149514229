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
#include "disk/grow.h"
#include "disk/layout.h"
#include "install/bootdisk.h"
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
    struct blk_dev *dev;
    struct blkdisk bd;
    struct klayout layout;
    struct kvfs *fs;
    store *st;
    struct kscrub *scrub;
    squeue_store inner;          /* the store's own calls */
    squeue_store q;              /* inner, with the disk's growth around it */
    bool backup_open;            /* a backup copy runs: its region must not move */
    bool backup_wish;            /* the backups moved (growth): one is wanted now */
    uint64_t next_check_ns;      /* the next look at the device's capacity (polled) */
    bool cfg_looked;             /* the capacity was looked at once since open */
    uint32_t cfg_seen;           /* the device's cfg_changes at that look */
    bool shrink_said;            /* a smaller capacity was reported (said once) */
    broker_disk_status disk;     /* for $SYS */
} ds;

/* How often the store thread asks the device for its capacity, at most,
 * when the device raises no configuration-change interrupt. */
#define KDISK_CAPACITY_CHECK_NS 1000000000ull

static _Noreturn void halt_store(const char *disk, const char *why)
{
    kprintf("tern: store: %s: %s\n", disk, why);
    kprintf("tern: store: refusing to serve without the configured durable store; halted\n");
    cpu_halt_forever();
}

/* A refusal on disk d: a device that is (or turned out) read-only says so
 * first, in words an operator acts on (SPEC A4: a read-only medium halts,
 * it never resets). */
static _Noreturn void halt_disk(const struct blk_dev *d, const char *why)
{
    if (d->topo.read_only)
        kprintf("tern: store: %s: read-only medium: the device is write-protected and tern "
                "keeps its data on it; attach it writable\n", d->name);
    halt_store(d->name, why);
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

int kdisk_store_disk_matches(const struct blk_dev *d, const tern_config_disk *want)
{
    return kind_matches(d, want);
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

/* ---- growth (disk/grow.h) ------------------------------------------------- */

static void disk_status_update(void)
{
    const uint32_t lb = ds.bd.disk.logical_block;
    ds.disk.disk_bytes = ds.bd.disk.capacity * lb;
    ds.disk.partition_bytes = ds.layout.geom.bytes;
    ds.disk.database_bytes = klayout_region(&ds.layout, KDISK_REGION_DB)->blocks * lb;
}

/* Grow the layout as far as the disk allows and say what happened. 0, or
 * -1 after an I/O error (said; the disk is the old or the new layout). */
static int grow_layout(const char *when)
{
    struct kdisk_report rep;
    struct kgrow g;
    kdisk_report_clear(&rep);
    int rc = klayout_grow(&ds.bd.disk, &ds.layout, &g, &rep);
    for (unsigned i = 0; i < rep.note_count; i++)
        kprintf("tern: store: %s: %s\n", ds.dev->name, rep.notes[i]);
    if (rc) {
        kprintf("tern: store: %s: growth %s failed: %s\n", ds.dev->name, when, rep.error);
        return -1;
    }
    if (g.gpt_moved || g.layout_grown) {
        ds.disk.growths++;
        snprintf(ds.disk.last_growth, sizeof ds.disk.last_growth,
                 "%s: disk %llu MiB, partition %llu -> %llu MiB, database %llu -> %llu MiB", when,
                 (unsigned long long)(ds.bd.disk.capacity * ds.bd.disk.logical_block >> 20),
                 (unsigned long long)(g.old_part_bytes >> 20), (unsigned long long)(g.part_bytes >> 20),
                 (unsigned long long)(g.old_db_bytes >> 20), (unsigned long long)(g.db_bytes >> 20));
        kprintf("tern: store: %s: grew %s%s\n", ds.dev->name, ds.disk.last_growth,
                g.layout_grown ? "; the backups moved behind the database: a backup is made "
                                 "now" : "");
        /* Until then there is no copy to restore from: one at once, even
         * of an unchanged database (w_take_backup_wish). */
        ds.backup_wish |= g.layout_grown;
    }
    disk_status_update();
    return 0;
}

/* The VFS's regions from the layout (klayout_open accepts only layouts
 * with every kind present). */
static void map_regions(struct kvfs_region out[KVFS_ROLES])
{
    static const uint32_t kind[KVFS_ROLES] = {KDISK_REGION_DB, KDISK_REGION_WAL,
                                              KDISK_REGION_BACKUP_A, KDISK_REGION_BACKUP_B};
    for (int i = 0; i < KVFS_ROLES; i++) {
        const struct kdisk_region *r = klayout_region(&ds.layout, kind[i]);
        out[i] = (struct kvfs_region){r->lba, r->blocks};
    }
}

/* Whether the device's capacity is worth a look: once after open, then
 * after each configuration-change interrupt (blk_dev.cfg_irq), or once a
 * second when the device has none. */
static bool capacity_look_due(uint64_t now)
{
    if (ds.dev->cfg_irq)
        return !ds.cfg_looked || ds.dev->cfg_changes != ds.cfg_seen;
    return now >= ds.next_check_ns;
}

/* On the store thread, between units (kstore.c's upkeep, when
 * capacity_look_due even while idle) and before a commit or a backup
 * starts: nothing of the store's is in flight then, and no backup copy is
 * open. A device that grew (virtio-blk's capacity) grows the layout while
 * serving, and the VFS takes the new extents. */
static bool grow_live(void)
{
    uint64_t now = clock_mono_ns();
    if (ds.backup_open || !capacity_look_due(now))
        return false;
    ds.next_check_ns = now + KDISK_CAPACITY_CHECK_NS;
    /* Taken before the read: a change during it is looked at next time. */
    ds.cfg_seen = ds.dev->cfg_changes;
    ds.cfg_looked = true;
    int r = blk_recheck_capacity(ds.dev);
    if (r < 0 && !ds.shrink_said)
        kprintf("tern: store: %s: the device reports a smaller capacity; ignored (a disk is "
                "never shrunk under its data)\n", ds.dev->name);
    ds.shrink_said = r < 0;
    if (r <= 0)
        return false;
    if (ds.dev->cfg_irq) /* the owner's, since the storage core took the disks */
        kprintf("tern: store: %s: capacity change interrupt taken on CPU %u, the disks' "
                "owner CPU %u\n", ds.dev->name, ds.dev->cfg_cpu, blk_owner());
    ds.bd.disk.capacity = ds.dev->topo.capacity;
    uint64_t generation = ds.layout.super.sb.generation;
    if (grow_layout("while serving") != 0 && generation == ds.layout.super.sb.generation) {
        disk_status_update();
        return true; /* the superblock did not switch: the old extents still hold */
    }
    struct kvfs_region regions[KVFS_ROLES];
    char err[160];
    map_regions(regions);
    if (kvfs_set_regions(ds.fs, regions, err, sizeof err) != 0)
        halt_store(ds.dev->name, err); /* the next boot opens the grown layout */
    /* The database may now fill its grown region (wip-bootro's bound). */
    struct kvfs_stats vs;
    kvfs_get_stats(ds.fs, &vs);
    if (store_set_max_db_bytes(ds.st, vs.capacity[KVFS_DB]) != STORE_OK)
        kprintf("tern: store: %s: the database's new bound was not taken; it stays at the "
                "old region's size until the next boot\n", ds.dev->name);
    return true;
}

static store_rc w_apply(void *ctx, const broker_store_batch *batches, size_t n)
{
    (void)ctx;
    (void)grow_live(); /* the commit refreshes the stats */
    return ds.inner.apply(ds.inner.ctx, batches, n);
}

static store_rc w_backup_begin(void *ctx)
{
    (void)ctx;
    (void)grow_live();
    store_rc rc = ds.inner.backup_begin(ds.inner.ctx);
    ds.backup_open = rc == STORE_OK;
    return rc;
}

static store_rc w_backup_step(void *ctx, bool *done)
{
    (void)ctx;
    store_rc rc = ds.inner.backup_step(ds.inner.ctx, done);
    if (rc != STORE_OK || *done)
        ds.backup_open = false; /* as the queue sees it: the copy ended */
    return rc;
}

static void w_get_stats(void *ctx, store_stats *out)
{
    (void)ctx;
    ds.inner.get_stats(ds.inner.ctx, out);
    out->disk = ds.disk;
}

/* An idle store thread wakes for it (kstore.c): the main loop re-checks
 * this each turn, and a configuration interrupt makes it take a turn. */
static bool w_upkeep_due(void *ctx)
{
    (void)ctx;
    return !ds.backup_open && capacity_look_due(clock_mono_ns());
}

static bool w_upkeep(void *ctx)
{
    (void)ctx;
    return grow_live();
}

static bool w_take_backup_wish(void *ctx)
{
    (void)ctx;
    bool wish = ds.backup_wish;
    ds.backup_wish = false;
    return wish;
}

static store_rc w_load(void *ctx, broker *b, char *err, size_t err_size)
{
    (void)ctx;
    return ds.inner.load(ds.inner.ctx, b, err, err_size);
}

/* ---- opening -------------------------------------------------------------- */

static void open_layout(struct blk_dev *d)
{
    struct kdisk_report rep;
    uint8_t volume_id[16];
    if (blkdisk_open(d, &ds.bd))
        halt_disk(d, "no memory for the disk's I/O buffer");
    if (rng_bytes(volume_id, sizeof volume_id))
        halt_disk(d, "no random volume id (entropy not seeded)");
    kdisk_report_clear(&rep);
    int rc = klayout_open(&ds.bd.disk, KLAYOUT_FORMAT, volume_id, &ds.layout, &rep);
    for (unsigned i = 0; i < rep.note_count; i++)
        kprintf("tern: store: %s: %s\n", d->name, rep.notes[i]);
    if (rc)
        halt_disk(d, rep.error);
    ds.dev = d;
    disk_status_update();
    /* A disk larger than its layout grows before anything opens it; a
     * failed growth leaves the old or the new layout: go on with it. */
    (void)grow_layout("at boot");
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
    if (bootdisk())
        kprintf("tern: store: data partition #%u \"%s\" %s\n", (unsigned)l->part.index,
                l->part.name, bootdisk() == d ? "on the same disk" : "on another disk than the "
                "boot disk");
    /* Which data partition, by what names it outlives this machine: the
     * partition's unique GUID and the disk's model (the installed boot,
     * SPEC A3, says where its data lives). */
    char guid[GPT_GUID_TEXT];
    gpt_guid_text(&l->part.guid, guid);
    kprintf("tern: store: data partition: %s%s%s%s partition #%u \"%s\" %s, %llu MiB\n",
            d->name, d->model[0] ? " (" : "", d->model, d->model[0] ? ")" : "",
            (unsigned)l->part.index, l->part.name, guid,
            (unsigned long long)((l->part.last - l->part.first + 1) * d->topo.logical_block >> 20));
}

static void open_vfs(struct blk_dev *d)
{
    char err[160];
    struct kvfs_config c = {.vfs_name = "tern", .path = KDISK_DB_PATH, .dev = d};
    map_regions(c.region);
    ksqlite_env(&c.env);
    c.env.wait = vfs_wait;
    ds.fs = kvfs_open(&c, err, sizeof err);
    if (!ds.fs)
        halt_disk(d, err);
    if (kvfs_register(ds.fs, 1) != 0)
        halt_disk(d, "SQLite refused the disk's VFS");
    /* Layout v3: page checksums (cksumvfs and tern's WAL shims) over it. */
    if (kcksum_stack("tern") != 0)
        halt_disk(d, "SQLite refused the page checksum VFS");
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
    struct kvfs_stats vs;
    kvfs_get_stats(ds.fs, &vs);
    opt.max_db_bytes = vs.capacity[KVFS_DB]; /* commits never outgrow the region */
    uint64_t t0 = clock_mono_ns();
    ds.st = store_open(&opt, &info, err, sizeof err);
    if (!ds.st)
        halt_disk(d, err);
    /* "empty": a restore cut short left it so, and a backup replaced it. */
    kprintf("tern: store: database %s: quick_check %s%s%s, schema %u, opened in %llu ms\n",
            info.created ? "created" : info.found_empty ? "empty" : "found",
            info.check_failed ? "failed" : "ok",
            info.restored ? "; replaced by backup " : "",
            info.restored ? (info.restored_from == 'a' ? "a" : "b") : "",
            (unsigned)(info.schema_found ? info.schema_found : STORE_SCHEMA_VERSION),
            (unsigned long long)((clock_mono_ns() - t0) / 1000000));
    if (info.full)
        kprintf("tern: store: %s: the database region is full: serving what is stored; "
                "acknowledgements that need a commit are withheld until it has room\n",
                d->name);
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
        halt_disk(d, why);
    /* SQLite's soft heap limit follows store.cache_size: the main
     * connection's cache, a backup's small one, and room for statements
     * and a large transaction's dirty pages; never below the default. */
    uint64_t soft = (uint64_t)cfg->store_cache_kib * 1024 * 2 + (4u << 20);
    if (ksqlite_init(soft < KSQLITE_SOFT_LIMIT ? KSQLITE_SOFT_LIMIT : soft) != 0)
        halt_disk(d, "SQLite did not initialise");
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
    ds.scrub = kscrub_start(d, &ds.layout, cfg->store_scrub_rate_kib, cfg->store_scrub_interval_s);
    kstore_bind_store(&ds.inner, ds.st);
    ds.q = (squeue_store){.apply = w_apply, .backup_begin = w_backup_begin,
                          .backup_step = w_backup_step, .get_stats = w_get_stats,
                          .load = w_load, .ctx = &ds, .upkeep_due = w_upkeep_due,
                          .upkeep = w_upkeep, .take_backup_wish = w_take_backup_wish};
    return &ds.q;
}

struct kscrub *kdisk_store_scrubber(void)
{
    return ds.scrub;
}
