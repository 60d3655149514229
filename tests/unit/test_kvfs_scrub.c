/*
 * test_kvfs_scrub.c - the scrubber (store/scrub.h) over a real layout v3
 * disk: the fake disk partitioned and formatted by the layout code, the
 * store writing through the checksum stack and kvfs into its regions, a
 * backup taken. A clean disk passes with no finding; a byte flipped in
 * each region kind (superblock slot, GPT copy, region header, database
 * page payload, backup page, WAL frame inside the log) is found and named;
 * the WAL's stale tail is not damage, nor a break seen after the store
 * restarted the log in the middle of a pass.
 */
#include "test.h"
#include "test_kvfs_util.h"
#include "test_store_util.h"

#include "platform/kernel/disk/layout.h"
#include "platform/kernel/store/kcksum.h"
#include "platform/kernel/store/pagesum.h"
#include "platform/kernel/store/scrub.h"

#include <sqlite3.h>
#include <stdlib.h>

enum { MIB = 1024 * 1024 };

typedef struct sd {
    kv_env e;
    struct kdisk disk;
    struct klayout layout;
    unsigned findings;
    char names[1024];          /* "region: what" lines of the pass */
} sd;

static int sd_read(void *ctx, uint64_t lba, uint32_t count, void *buf)
{
    struct fake_blk *f = ctx;
    memcpy(buf, f->cur + lba * 512, (size_t)count * 512);
    return 0;
}

static int sd_write(void *ctx, uint64_t lba, uint32_t count, const void *buf)
{
    struct fake_blk *f = ctx;
    memcpy(f->cur + lba * 512, buf, (size_t)count * 512);
    memcpy(f->durable + lba * 512, buf, (size_t)count * 512);
    return 0;
}

static int64_t env_now_ms(void *ctx)
{
    (void)ctx;
    return 1700000000000;
}

static int sd_flush(void *ctx)
{
    (void)ctx;
    return 0;
}

static void on_finding(void *ctx, const struct scrub_finding *f)
{
    sd *d = ctx;
    size_t have = strlen(d->names);
    d->findings++;
    snprintf(d->names + have, sizeof d->names - have, "%s@%llu: %s\n", f->region,
             (unsigned long long)f->offset, f->what);
}

static store_rc put(store *s, uint32_t n, size_t pad)
{
    return ts_put_retained(s, n, pad);
}

/* 64 MiB, 512/4096-byte blocks, layout v3 formatted, a store with data in
 * its database, WAL and backup A. */
static bool sd_setup(sd *d)
{
    static uint8_t random64[64] = {1, 2, 3};
    struct kdisk_report rep;
    store_open_info info;
    char err[STORE_ERR_SIZE];

    memset(d, 0, sizeof *d);
    fake_blk_init(&d->e.disk, 512, 4096, 64 * MIB / 512, 7);
    d->disk = (struct kdisk){.read = sd_read, .write = sd_write, .flush = sd_flush,
                             .ctx = &d->e.disk, .logical_block = 512, .physical_block = 4096,
                             .capacity = 64 * MIB / 512};
    d->disk.io = aligned_alloc(4096, KDISK_IO_BYTES);
    kdisk_report_clear(&rep);
    if (d->disk.io == NULL || klayout_partition(&d->disk, 0, 0, random64, &rep) != 0) {
        fprintf(stderr, "  klayout_partition: %s\n", rep.error);
        return false;
    }
    kdisk_report_clear(&rep);
    if (klayout_open(&d->disk, KLAYOUT_FORMAT, random64, &d->layout, &rep) != 0) {
        fprintf(stderr, "  klayout_open: %s\n", rep.error);
        return false;
    }
    static const uint32_t kinds[KVFS_ROLES] = {KDISK_REGION_DB, KDISK_REGION_WAL,
                                               KDISK_REGION_BACKUP_A, KDISK_REGION_BACKUP_B};
    d->e.cfg.vfs_name = KV_VFS;
    d->e.cfg.path = KV_PATH;
    d->e.cfg.dev = &d->e.disk.dev;
    d->e.rand_state = 99;
    d->e.cfg.env = (struct kvfs_env){.random = kv_env_random, .now_ms = env_now_ms, .ctx = &d->e};
    for (int r = 0; r < KVFS_ROLES; r++) {
        const struct kdisk_region *g = klayout_region(&d->layout, kinds[r]);
        d->e.cfg.region[r] = (struct kvfs_region){g->lba, g->blocks};
    }
    d->e.fs = kvfs_open(&d->e.cfg, d->e.err, sizeof d->e.err);
    if (d->e.fs == NULL || kvfs_register(d->e.fs, 0) != SQLITE_OK ||
        kcksum_stack(KV_VFS) != SQLITE_OK) {
        fprintf(stderr, "  mounting the regions: %s\n", d->e.err);
        return false;
    }
    store_options opt = {.path = KV_PATH, .vfs = KV_SQL_VFS, .sync = STORE_SYNC_FULL,
                         .reserve_bytes = KCKSUM_RESERVE};
    store *s = store_open(&opt, &info, err, sizeof err);
    if (s == NULL) {
        fprintf(stderr, "  store_open: %s\n", err);
        return false;
    }
    bool ok = true;
    for (uint32_t n = 1; n <= 30 && ok; n++)
        ok = put(s, n, n * 91 % 3000) == STORE_OK;
    ok = ok && store_backup_run(s) == STORE_OK;
    for (uint32_t n = 31; n <= 40 && ok; n++)
        ok = put(s, n, 1200) == STORE_OK;
    store_close(s); /* checkpointed; the WAL keeps its frames */
    if (!ok)
        fprintf(stderr, "  a commit or the backup failed\n");
    return ok;
}

static void sd_teardown(sd *d)
{
    kcksum_unstack();
    kvfs_close(d->e.fs);
    free(d->disk.io);
    fake_blk_free(&d->e.disk);
}

/* One whole pass in steps of 16 KiB; the findings it reported, or 999
 * when the pass did not end or took a single step (a pass must spread
 * over steps, not be one long read). */
static unsigned sd_pass(sd *d)
{
    struct scrub s;
    unsigned steps = 0;
    d->findings = 0;
    d->names[0] = '\0';
    scrub_init(&s, &d->disk, &d->layout, on_finding, d);
    while (!scrub_step(&s, 16 * 1024) && steps < 100000)
        steps++;
    bool ok = s.passes == 1 && steps > 3 && scrub_progress(&s) == 100;
    if (!ok)
        fprintf(stderr, "  pass: %llu passes, %u steps, %u%%\n", (unsigned long long)s.passes, steps, scrub_progress(&s));
    scrub_free(&s);
    return ok ? d->findings : 999;
}

TEST(scrub_clean_layout_v3_disk_passes_without_findings)
{
    sd d;
    CHECK(sd_setup(&d));
    unsigned n = sd_pass(&d);
    if (n)
        fprintf(stderr, "%s", d.names);
    CHECK_EQ(n, 0);
    sd_teardown(&d);
}

/* Flip one byte at absolute offset off, run a pass, restore. */
static void flip_expect(sd *d, uint64_t off, const char *want)
{
    d->e.disk.cur[off] ^= 0x04;
    unsigned n = sd_pass(d);
    d->e.disk.cur[off] ^= 0x04;
    if (n == 0 || strstr(d->names, want) == NULL)
        fprintf(stderr, "  flipped byte %llu: wanted \"%s\", got:\n%s",
                (unsigned long long)off, want, d->names);
    CHECK(n >= 1 && strstr(d->names, want) != NULL);
}

static uint64_t region_byte(sd *d, uint32_t kind)
{
    return klayout_region(&d->layout, kind)->lba * 512;
}

TEST(scrub_finds_a_flipped_byte_in_every_region_kind_and_names_it)
{
    sd d;
    CHECK(sd_setup(&d));
    uint64_t part = d.layout.part.first * 512;
    flip_expect(&d, part + 100, "superblock A@0: CRC32 mismatch");
    flip_expect(&d, part + KSUPER_SLOT_B + 40, "superblock B@0: CRC32 mismatch");
    flip_expect(&d, 512 + 60, "GPT primary@0: header");
    flip_expect(&d, d.layout.gpt.hdr.alternate_lba * 512 - 512 * 10, "GPT backup@");
    /* a region header copy (the database's second) */
    flip_expect(&d, region_byte(&d, KDISK_REGION_DB) + 4096 + 30, "database@4096: region header copy 1");
    /* a database page's payload: its second page, near its end */
    uint64_t db = region_byte(&d, KDISK_REGION_DB) + 2 * 4096;
    flip_expect(&d, db + 4096 + 4000, "database@4096: page 2: checksum mismatch");
    uint64_t bak = region_byte(&d, KDISK_REGION_BACKUP_A) + 2 * 4096;
    flip_expect(&d, bak + 3 * 4096 + 2000, "backup A@12288: page 4: checksum mismatch");
    /* a WAL frame inside the log: frame 2's page */
    uint64_t wal = region_byte(&d, KDISK_REGION_WAL) + 2 * 4096;
    flip_expect(&d, wal + 32 + (4096 + 24) + 24 + 500, "WAL@4152: frame 2 breaks the checksum chain");
    sd_teardown(&d);
}

/* A telemetry journal in the layout's region: n records, synced. */
static bool sd_journal(sd *d, unsigned n)
{
    const struct kdisk_region *r = klayout_region(&d->layout, KDISK_REGION_TELEMETRY);
    struct tele_geom g;
    struct tele t;
    struct kdisk_report rep;
    char why[128];
    uint8_t *seg = malloc(TELE_SEG_BYTES);
    bool ok = seg != NULL && tele_geom_init(&g, d->layout.super.sb.volume_id, r->lba, r->blocks,
                                            512, 4096, why, sizeof why) == 0;
    kdisk_report_clear(&rep);
    ok = ok && tele_open(&t, &d->disk, &g, seg, NULL, NULL, &rep) == KDISK_OK;
    t.boot = 1;
    for (unsigned i = 0; ok && i < n; i++) {
        uint8_t payload[16] = {0};
        payload[8] = (uint8_t)i;
        ok = tele_append(&t, TELE_K_STORE, 1, 1700000000000 + i, payload, sizeof payload,
                         &rep) == KDISK_OK;
    }
    ok = ok && tele_sync(&t, &rep) == KDISK_OK;
    free(seg);
    return ok;
}

TEST(scrub_finds_damage_in_the_telemetry_journal_heads_segments_and_records)
{
    sd d;
    CHECK(sd_setup(&d));
    CHECK(sd_journal(&d, 20));
    CHECK_EQ(sd_pass(&d), 0); /* a clean journal */
    uint64_t tel = region_byte(&d, KDISK_REGION_TELEMETRY);
    struct tele_geom g;
    char why[128];
    const struct kdisk_region *r = klayout_region(&d.layout, KDISK_REGION_TELEMETRY);
    CHECK_EQ(tele_geom_init(&g, d.layout.super.sb.volume_id, r->lba, r->blocks, 512, 4096, why,
                            sizeof why), 0);
    flip_expect(&d, tel + 20, "telemetry@0: head copy 0");
    uint64_t seg = tele_slot_lba(&g, tele_slot(&g, 1)) * 512;
    flip_expect(&d, seg + 40, "segment 1: ");
    /* record 5's payload (records of 24 + 16 bytes from byte 64) */
    flip_expect(&d, seg + 64 + 5 * 40 + 30, "segment 1: record 6 fails its check");
    sd_teardown(&d);
}

TEST(scrub_wal_frames_of_an_older_generation_after_the_log_are_not_damage)
{
    sd d;
    CHECK(sd_setup(&d));
    uint64_t wal = region_byte(&d, KDISK_REGION_WAL) + 2 * 4096;
    struct pagesum_wal_hdr h;
    char why[64];
    CHECK_EQ(pagesum_wal_parse(d.e.disk.cur + wal, 32, &h, why, sizeof why), 0);
    uint64_t frame = h.page_size + 24, frames = 0;
    while (wal + 32 + (frames + 1) * frame <= (uint64_t)d.e.disk.dev.topo.capacity * 512 &&
           memcmp(d.e.disk.cur + wal + 32 + frames * frame + 8, d.e.disk.cur + wal + 16, 8) == 0)
        frames++;
    CHECK(frames > 4);
    /* frames 3.. as an earlier generation left them: other salts */
    for (uint64_t i = 2; i < frames; i++)
        d.e.disk.cur[wal + 32 + i * frame + 8] ^= 0x01;
    unsigned n = sd_pass(&d);
    if (n)
        fprintf(stderr, "%s", d.names);
    CHECK_EQ(n, 0);
    /* but one frame with other salts inside the log is damage */
    for (uint64_t i = 3; i < frames; i++)
        d.e.disk.cur[wal + 32 + i * frame + 8] ^= 0x01;
    CHECK_EQ(sd_pass(&d), 1);
    CHECK(strstr(d.names, "WAL@") && strstr(d.names, "frame 3 breaks the checksum chain"));
    /* ...unless the log's header has new salts by the time the break
     * would be reported: the store restarted the log between two steps of
     * the pass (not one generation any more) */
    struct scrub sc;
    d.findings = 0;
    d.names[0] = '\0';
    scrub_init(&sc, &d.disk, &d.layout, on_finding, &d);
    unsigned guard = 0;
    while (sc.phase != SCRUB_PH_WAL && guard++ < 10000)
        (void)scrub_step(&sc, 4096);
    CHECK_EQ(sc.phase, SCRUB_PH_WAL);
    (void)scrub_step(&sc, 4096); /* the WAL's header and its first frame */
    uint8_t *hdr = d.e.disk.cur + wal;
    hdr[17] ^= 0x40; /* the store restarts the log: new salts, resealed */
    uint32_t ck[2] = {0, 0};
    pagesum_wal(h.big_endian, hdr, 24, ck);
    for (int i = 0; i < 4; i++) {
        hdr[24 + i] = (uint8_t)(ck[0] >> (24 - 8 * i));
        hdr[28 + i] = (uint8_t)(ck[1] >> (24 - 8 * i));
    }
    while (!scrub_step(&sc, 4096) && guard++ < 20000)
        ;
    scrub_free(&sc);
    if (d.findings)
        fprintf(stderr, "%s", d.names);
    CHECK_EQ(d.findings, 0);
    sd_teardown(&d);
}
