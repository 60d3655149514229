/*
 * test_kgrow.c - growing the layout in place (disk/grow.c) on a memory
 * disk: a disk that grew gets its backup GPT at the new end, the data
 * partition to the last whole MiB, the database grown over its backups'
 * old space and the backups moved behind it, with every other region's
 * bytes (and the database's header and data) untouched; a second growth
 * writes nothing. A power cut at every write of a growth (nothing of the
 * write kept, one sector kept, all but a sector kept), losing every subset
 * of the writes not yet flushed, leaves a disk that opens as the old or
 * the new layout with the data intact, never neither, and a growth at the
 * next boot finishes the job. A partition followed by another keeps its
 * size; a disk grown by too little keeps its GPT; both say why.
 */
#include "test.h"

#include "mem_disk.h"
#include "platform/kernel/disk/grow.h"

#include <stdio.h>
#include <stdlib.h>

enum { MIB = 1048576 };

static const uint8_t random64[64] = {
    0x31, 0x41, 0x59, 0x26, 0x53, 0x58, 0x97, 0x93, 0x23, 0x84, 0x62, 0x64, 0x33, 0x83, 0x27, 0x95,
    0x02, 0x88, 0x41, 0x97, 0x16, 0x93, 0x99, 0x37, 0x51, 0x05, 0x82, 0x09, 0x74, 0x94, 0x45, 0x92,
    0x30, 0x78, 0x16, 0x40, 0x62, 0x86, 0x20, 0x89, 0x98, 0x62, 0x80, 0x34, 0x82, 0x53, 0x42, 0x11,
};

/* A formatted disk of mib MiB and the bytes planted in its regions. */
struct world {
    struct mem_disk m;
    struct klayout *l;
    struct kdisk_report rep;
};

static uint8_t mark(uint64_t off, uint32_t kind) { return (uint8_t)(off * 7 + kind * 13 + 1); }

/* Fill the partition's space with junk, and the first 64 KiB of every
 * region (its header blocks and the start of its data) with a pattern
 * naming the region and the offset. */
static void plant(struct world *w)
{
    /* junk everywhere past the superblocks first: a region's space holds
     * whatever the disk held before */
    const uint64_t from = w->l->geom.start + KSUPER_AREA, to = w->l->geom.start + w->l->geom.bytes;
    for (uint64_t k = from; k < to; k++)
        *mem_disk_at(&w->m, k) = (uint8_t)(k * 131 + 0x5a);
    for (unsigned i = 0; i < w->l->region_count; i++) {
        const struct kdisk_region *r = &w->l->regions[i];
        uint64_t off = r->lba * w->m.disk.logical_block;
        for (uint64_t k = 0; k < 65536; k++)
            *mem_disk_at(&w->m, off + k) = mark(k, r->kind);
    }
}

/* Are region kind's first 64 KiB (at the start l gives it) still planted?
 * With skip_headers, only the bytes after its two header blocks. */
static int planted(struct world *w, const struct klayout *l, uint32_t kind)
{
    const struct kdisk_region *r = klayout_region(l, kind);
    uint64_t off = r->lba * w->m.disk.logical_block;
    for (uint64_t k = 0; k < 65536; k++)
        if (*mem_disk_at(&w->m, off + k) != mark(k, kind))
            return 0;
    return 1;
}

/* Are region kind's two header blocks zero (an empty region)? */
static int headers_zero(struct world *w, const struct klayout *l, uint32_t kind)
{
    const struct kdisk_region *r = klayout_region(l, kind);
    return kdisk_is_zero(mem_disk_at(&w->m, r->lba * w->m.disk.logical_block),
                         2 * (size_t)w->m.disk.physical_block);
}

/* Each header copy of region kind as planted or with its header sector
 * zeroed (whole or the start a torn write reached), the data as planted. */
static int copies_planted_or_zeroed(struct world *w, const struct klayout *l, uint32_t kind)
{
    const struct kdisk_region *r = klayout_region(l, kind);
    const uint64_t off = r->lba * w->m.disk.logical_block, pb = w->m.disk.physical_block;
    for (uint64_t k = 2 * pb; k < 65536; k++)
        if (*mem_disk_at(&w->m, off + k) != mark(k, kind))
            return 0;
    for (uint64_t c = 0; c < 2; c++) {
        int zero = kdisk_is_zero(mem_disk_at(&w->m, off + c * pb), 512), planted_copy = 1;
        for (uint64_t k = c * pb; k < (c + 1) * pb && planted_copy; k++)
            planted_copy = *mem_disk_at(&w->m, off + k) == mark(k, kind);
        if (!zero && !planted_copy)
            return 0;
    }
    return 1;
}

static int world_init(struct world *w, uint32_t lb, uint32_t pb, uint64_t mib)
{
    memset(w, 0, sizeof *w);
    w->l = calloc(1, sizeof *w->l);
    kdisk_report_clear(&w->rep);
    if (!w->l || mem_disk_init(&w->m, lb, pb, mib * MIB / lb) ||
        klayout_partition(&w->m.disk, 0, MIB, random64, &w->rep) ||
        klayout_open(&w->m.disk, KLAYOUT_FORMAT, random64, w->l, &w->rep))
        return -1;
    plant(w);
    return 0;
}

static void world_free(struct world *w)
{
    mem_disk_free(&w->m);
    free(w->l);
}

static int reopen(struct world *w, struct klayout *l)
{
    kdisk_report_clear(&w->rep);
    return klayout_open(&w->m.disk, 0, random64, l, &w->rep);
}

static int grow(struct world *w, struct klayout *l, struct kgrow *g)
{
    kdisk_report_clear(&w->rep);
    return klayout_grow(&w->m.disk, l, g, &w->rep);
}

static int same_regions(const struct klayout *a, const struct klayout *b)
{
    return a->region_count == b->region_count &&
           memcmp(a->regions, b->regions, sizeof a->regions) == 0;
}

/* The data every state must keep: WAL and telemetry whole, the database's
 * header blocks and data start. */
static int data_intact(struct world *w, const struct klayout *l)
{
    return planted(w, l, KDISK_REGION_WAL) && planted(w, l, KDISK_REGION_TELEMETRY) &&
           planted(w, l, KDISK_REGION_DB);
}

static void check_clean_growth(uint32_t lb, uint32_t pb)
{
    struct world w;
    struct kgrow g;
    CHECK_EQ(world_init(&w, lb, pb, 32), 0);
    struct klayout *old = calloc(1, sizeof *old), *l = calloc(1, sizeof *l);
    CHECK(old && l);
    *old = *w.l;
    CHECK_EQ(mem_disk_grow(&w.m, 48ull * MIB / lb), 0);
    const uint64_t cap = w.m.disk.capacity, mib = MIB / lb;

    CHECK_EQ(reopen(&w, l), KDISK_OK);
    CHECK(same_regions(l, old));
    unsigned writes = w.m.writes;
    CHECK_EQ(grow(&w, l, &g), KDISK_OK);
    CHECK(g.gpt_moved && g.part_grown && g.layout_grown);
    CHECK_EQ(w.rep.note_count, 0);
    CHECK(g.part_bytes > g.old_part_bytes && g.db_bytes > g.old_db_bytes);
    CHECK_EQ(w.m.writes - writes, 2 + 4 + 4 + 1); /* GPT x2, old and new backup headers, superblock */

    struct klayout *again = calloc(1, sizeof *again);
    CHECK(again);
    CHECK_EQ(reopen(&w, again), KDISK_OK);
    CHECK_EQ(w.rep.note_count, 0);                 /* both GPT copies and superblocks agree */
    CHECK(same_regions(again, l));
    CHECK_EQ(again->gpt.hdr.alternate_lba, cap - 1);
    CHECK_EQ(again->part.last + 1, (again->gpt.hdr.last_usable + 1) / mib * mib);
    CHECK_EQ(again->super.sb.partition_bytes, g.part_bytes);
    CHECK_EQ(again->super.sb.generation, old->super.sb.generation + 1);
    /* the protective MBR covers the grown disk */
    const uint8_t *rec = mem_disk_at(&w.m, 446);
    CHECK_EQ(kdisk_le32(rec + 12), cap - 1);
    /* the database kept its start and grew over the old backups; the
     * backups sit behind it, empty; WAL and telemetry did not move */
    const struct kdisk_region *db = klayout_region(again, KDISK_REGION_DB);
    CHECK_EQ(db->lba, klayout_region(old, KDISK_REGION_DB)->lba);
    CHECK_EQ(klayout_region(again, KDISK_REGION_BACKUP_A)->lba, db->lba + db->blocks);
    CHECK_EQ(klayout_region(again, KDISK_REGION_BACKUP_A)->blocks, db->blocks);
    CHECK_EQ(klayout_region(again, KDISK_REGION_BACKUP_B)->lba, db->lba + 2 * db->blocks);
    CHECK(data_intact(&w, again));
    CHECK(headers_zero(&w, again, KDISK_REGION_BACKUP_A));
    CHECK(headers_zero(&w, again, KDISK_REGION_BACKUP_B));
    CHECK(headers_zero(&w, old, KDISK_REGION_BACKUP_A));

    /* nothing left to grow: nothing written */
    writes = w.m.writes;
    CHECK_EQ(grow(&w, again, &g), KDISK_OK);
    CHECK(!g.gpt_moved && !g.part_grown && !g.layout_grown);
    CHECK_EQ(w.m.writes, writes);
    world_free(&w);
    free(old);
    free(l);
    free(again);
}

TEST(kgrow_disk_grown_moves_gpt_grows_partition_and_database_512)
{
    check_clean_growth(512, 512);
}

TEST(kgrow_disk_grown_moves_gpt_grows_partition_and_database_512_logical_4096_physical)
{
    check_clean_growth(512, 4096);
}

TEST(kgrow_disk_grown_moves_gpt_grows_partition_and_database_4096)
{
    check_clean_growth(4096, 4096);
}

/*
 * One cut: write number cut of the growth keeps tear bytes, then the
 * power goes; of the writes since the last flush those in keep survive.
 * Returns NULL when the disk then opens as the old or the new layout with
 * the data intact and a second growth reaches the clean result, else what
 * went wrong. *unflushed: how many writes were not flushed at the cut.
 */
static const char *cut_once(struct world *w, const uint8_t *image, const struct klayout *old,
                            const struct klayout *grown, unsigned cut, size_t tear, uint64_t keep,
                            unsigned *unflushed)
{
    static struct klayout l, after;
    struct kgrow g;
    mem_disk_restore(&w->m, image);
    w->m.writes = 0;
    w->m.track_unflushed = 1;
    w->m.tear_write = (int)cut;
    w->m.tear_bytes = tear;
    if (reopen(w, &l) != KDISK_OK)
        return "the grown disk does not open before the growth";
    w->m.writes = 0;
    if (grow(w, &l, &g) != KDISK_EIO)
        return "the cut growth did not fail";
    *unflushed = w->m.unflushed;
    mem_disk_lose_unflushed(&w->m, keep);
    w->m.track_unflushed = 0;
    if (reopen(w, &l) != KDISK_OK)
        return w->rep.error[0] ? w->rep.error : "neither layout opens";
    int is_old = same_regions(&l, old), is_new = same_regions(&l, grown);
    if (!is_old && !is_new)
        return "the layout is neither the old nor the grown one";
    if (!data_intact(w, &l))
        return "the WAL, telemetry or database bytes changed";
    if (is_old) {
        /* a backup is as it was, emptied, or has lost one header copy
         * (the other, an earlier state of the slot, decides: grow.c says
         * why that is a valid state) */
        for (uint32_t k = KDISK_REGION_BACKUP_A; k <= KDISK_REGION_BACKUP_B; k++)
            if (!copies_planted_or_zeroed(w, &l, k))
                return "an old backup is neither intact nor empty";
    } else if (!headers_zero(w, &l, KDISK_REGION_BACKUP_A) ||
               !headers_zero(w, &l, KDISK_REGION_BACKUP_B)) {
        return "a grown layout's backup is not empty";
    }
    /* the next boot finishes the growth */
    if (grow(w, &l, &g) != KDISK_OK || reopen(w, &after) != KDISK_OK)
        return "the growth at the next boot failed";
    if (w->rep.note_count)
        return w->rep.notes[0]; /* a GPT copy or a superblock left damaged */
    if (!same_regions(&after, grown) || after.gpt.hdr.alternate_lba != w->m.disk.capacity - 1 ||
        after.part.last != grown->part.last || !data_intact(w, &after))
        return "the growth at the next boot did not reach the grown layout";
    return NULL;
}

static void check_cuts(uint32_t lb, uint32_t pb)
{
    struct world w;
    struct kgrow g;
    CHECK_EQ(world_init(&w, lb, pb, 32), 0);
    struct klayout *old = calloc(1, sizeof *old), *grown = calloc(1, sizeof *grown);
    CHECK(old && grown);
    *old = *w.l;
    CHECK_EQ(mem_disk_grow(&w.m, 48ull * MIB / lb), 0);
    uint8_t *image = malloc(w.m.bytes);
    CHECK(image);
    memcpy(image, w.m.data, w.m.bytes);
    CHECK_EQ(reopen(&w, grown), KDISK_OK);
    w.m.writes = 0;
    CHECK_EQ(grow(&w, grown, &g), KDISK_OK);
    const unsigned total = w.m.writes;
    CHECK(total >= 11);
    const size_t tears[] = {0, lb, 16 * 1024};
    unsigned runs = 0;
    for (unsigned cut = 1; cut <= total; cut++)
        for (unsigned t = 0; t < sizeof tears / sizeof tears[0]; t++) {
            unsigned unflushed = 0;
            for (uint64_t keep = 0; keep < (UINT64_C(1) << unflushed) || keep == 0; keep++) {
                const char *why = cut_once(&w, image, old, grown, cut, tears[t], keep, &unflushed);
                if (why)
                    fprintf(stderr, "  %u/%u: cut at write %u of %u, %zu bytes kept, keep mask %llx: %s\n",
                            lb, pb, cut, total, tears[t], (unsigned long long)keep, why);
                CHECK(why == NULL);
                runs++;
            }
        }
    CHECK(runs >= total * 3);
    free(image);
    free(old);
    free(grown);
    world_free(&w);
}

TEST(kgrow_power_cut_at_every_write_leaves_old_or_grown_layout_512)
{
    check_cuts(512, 512);
}

TEST(kgrow_power_cut_at_every_write_leaves_old_or_grown_layout_512_logical_4096_physical)
{
    check_cuts(512, 4096);
}

TEST(kgrow_power_cut_at_every_write_leaves_old_or_grown_layout_4096)
{
    check_cuts(4096, 4096);
}

TEST(kgrow_partition_followed_by_another_keeps_its_size)
{
    struct mem_disk m;
    struct kdisk_report rep;
    struct kgrow g;
    struct klayout *l = calloc(1, sizeof *l);
    CHECK(l);
    CHECK_EQ(mem_disk_init(&m, 512, 512, 64ull * MIB / 512), 0);
    const uint64_t mib = MIB / 512;
    struct gpt_guid disk;
    struct gpt_new_part parts[2] = {
        {.first = mib, .last = 41 * mib - 1, .name = "tern-data"},
        {.first = 41 * mib, .last = 42 * mib - 1, .name = "other"},
    };
    gpt_guid_random(&disk, random64);
    gpt_guid_parse(TERN_DATA_TYPE_GUID, &parts[0].type);
    gpt_guid_parse(GPT_ESP_TYPE_GUID, &parts[1].type);
    gpt_guid_random(&parts[0].guid, random64 + 16);
    gpt_guid_random(&parts[1].guid, random64 + 32);
    kdisk_report_clear(&rep);
    CHECK_EQ(gpt_write(&m.disk, &disk, parts, 2, &rep), KDISK_OK);
    CHECK_EQ(klayout_open(&m.disk, KLAYOUT_FORMAT, random64, l, &rep), KDISK_OK);
    const uint64_t old_last = l->part.last;
    CHECK_EQ(mem_disk_grow(&m, 96ull * MIB / 512), 0);
    kdisk_report_clear(&rep);
    CHECK_EQ(klayout_open(&m.disk, 0, random64, l, &rep), KDISK_OK);
    kdisk_report_clear(&rep);
    CHECK_EQ(klayout_grow(&m.disk, l, &g, &rep), KDISK_OK);
    CHECK(g.gpt_moved && !g.part_grown && !g.layout_grown);
    CHECK_EQ(rep.note_count, 1);
    CHECK(strstr(rep.notes[0], "partition #2 \"other\" at LBA 83968 follows the tern data partition"));
    kdisk_report_clear(&rep);
    CHECK_EQ(klayout_open(&m.disk, 0, random64, l, &rep), KDISK_OK);
    CHECK_EQ(rep.note_count, 0);
    CHECK_EQ(l->part.last, old_last);
    CHECK_EQ(l->gpt.hdr.alternate_lba, m.disk.capacity - 1);
    CHECK_EQ(l->gpt.count, 2);
    CHECK_EQ(l->gpt.parts[1].last, 42 * mib - 1);
    mem_disk_free(&m);
    free(l);
}

TEST(kgrow_disk_grown_by_too_little_keeps_its_gpt_and_says_why)
{
    struct world w;
    struct kgrow g;
    CHECK_EQ(world_init(&w, 512, 512, 32), 0);
    CHECK_EQ(mem_disk_grow(&w.m, w.m.disk.capacity + 16), 0);
    CHECK_EQ(reopen(&w, w.l), KDISK_OK);
    unsigned writes = w.m.writes;
    CHECK_EQ(grow(&w, w.l, &g), KDISK_OK);
    CHECK(!g.gpt_moved && !g.layout_grown);
    CHECK_EQ(w.m.writes, writes);
    CHECK_EQ(w.rep.note_count, 1);
    CHECK(strstr(w.rep.notes[0], "grew by 16 blocks: too little"));
    world_free(&w);
}

TEST(kgrow_read_only_disk_is_not_grown)
{
    struct world w;
    struct kgrow g;
    CHECK_EQ(world_init(&w, 512, 512, 32), 0);
    CHECK_EQ(mem_disk_grow(&w.m, 48ull * MIB / 512), 0);
    CHECK_EQ(reopen(&w, w.l), KDISK_OK);
    mem_disk_read_only(&w.m);
    CHECK_EQ(grow(&w, w.l, &g), KDISK_OK);
    CHECK(!g.gpt_moved && !g.layout_grown);
    world_free(&w);
}

/* The grown table: database and backups a third each of the space from
 * the database's start (docs/DISK.md's example), WAL and telemetry kept;
 * a growth too small to gain an align changes nothing; a table with
 * another region behind the database is not grown, and says which. */
TEST(kgrow_plan_thirds_from_the_database_start_and_refusals)
{
    struct ksuper_geom g = {.start = MIB, .bytes = 62ull * MIB, .logical_block = 512,
                            .physical_block = 512};
    static const uint8_t vol[16] = {1};
    struct ksuper cur, next;
    char why[KDISK_MSG_MAX];
    CHECK_EQ(ksuper_plan(&g, vol, &cur, why, sizeof why), 0);
    cur.generation = 2;
    CHECK_EQ(cur.regions[2].kind, KDISK_REGION_DB);
    CHECK_EQ(cur.regions[2].offset, 10ull * MIB);
    CHECK_EQ(cur.regions[2].length, 17ull * MIB);
    CHECK_EQ(ksuper_grow_plan(&cur, &g, &next, why, sizeof why), 1);
    g.bytes = 63ull * MIB;                       /* gains less than an align each */
    CHECK_EQ(ksuper_grow_plan(&cur, &g, &next, why, sizeof why), 1);
    g.bytes = 190ull * MIB;
    CHECK_EQ(ksuper_grow_plan(&cur, &g, &next, why, sizeof why), 0);
    CHECK_EQ(next.partition_bytes, 190ull * MIB);
    CHECK_EQ(next.generation, 2);
    CHECK_MEM(&next.regions[0], &cur.regions[0], 2 * sizeof cur.regions[0]); /* WAL, telemetry */
    CHECK_EQ(next.regions[2].offset, 10ull * MIB);
    CHECK_EQ(next.regions[2].length, 60ull * MIB);
    CHECK_EQ(next.regions[3].offset, 70ull * MIB);
    CHECK_EQ(next.regions[4].offset, 130ull * MIB);
    CHECK_EQ(next.regions[4].length, 60ull * MIB);
    g.bytes = 318ull * MIB;
    CHECK_EQ(ksuper_grow_plan(&next, &g, &next, why, sizeof why), 0);
    CHECK_EQ(next.regions[2].length, 102ull * MIB);

    struct ksuper odd = cur;                     /* telemetry behind the backups */
    odd.regions[1].offset = 61ull * MIB;
    g.bytes = 190ull * MIB;
    CHECK_EQ(ksuper_grow_plan(&odd, &g, &next, why, sizeof why), -1);
    CHECK(strstr(why, "the telemetry region (bytes 63963136+1048576) lies past the database"));
    odd = cur;                                   /* a backup before the database */
    odd.regions[3].offset = 0;
    CHECK_EQ(ksuper_grow_plan(&odd, &g, &next, why, sizeof why), -1);
    CHECK(strstr(why, "backup A region"));
    g.bytes = 32ull * MIB;                       /* smaller than the layout */
    CHECK_EQ(ksuper_grow_plan(&cur, &g, &next, why, sizeof why), -1);
    CHECK(strstr(why, "smaller than its layout"));
}
