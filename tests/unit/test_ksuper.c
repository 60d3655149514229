/*
 * test_ksuper.c - the tern partition's A/B superblocks (disk/super.c): the
 * decoder's verdicts (blank, foreign, corrupt, newer, older, every field
 * check), the sizing rule (equal database and backups, bounded WAL and
 * telemetry, alignment on the disk), and the protocol on a memory disk:
 * blank -> format -> read back, updates alternate slots, a torn update
 * leaves the other slot in use and is reported, one corrupt slot is
 * reported and skipped, both corrupt, foreign data, a newer version and a
 * shrunk partition are refused without a write.
 */
#include "test.h"

#include "mem_disk.h"
#include "platform/kernel/disk/crc32.h"
#include "platform/kernel/disk/super.h"

enum { MIB = 1048576 };

static const uint8_t vol[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

/* A partition of mib MiB at 1 MiB on a memory disk of mib + 2 MiB. */
static int part_disk(struct mem_disk *m, struct ksuper_geom *g, uint32_t logical, uint32_t physical,
                     uint64_t mib)
{
    *g = (struct ksuper_geom){.start = MIB, .bytes = mib * MIB, .logical_block = logical,
                              .physical_block = physical};
    return mem_disk_init(m, logical, physical, (mib + 2) * MIB / logical);
}

/* ksuper_read with a fresh report. */
static int read_sb(struct mem_disk *m, const struct ksuper_geom *g, struct ksuper_state *st,
                   struct kdisk_report *rep)
{
    kdisk_report_clear(rep);
    return ksuper_read(&m->disk, g, st, rep);
}

static uint8_t *slot(struct mem_disk *m, const struct ksuper_geom *g, unsigned s)
{
    return mem_disk_at(m, g->start + (s ? KSUPER_SLOT_B : KSUPER_SLOT_A));
}

/* A valid encoded superblock for a 64 MiB partition. */
static void sample(uint8_t buf[KSUPER_READ_BYTES], struct ksuper *sb)
{
    struct ksuper_geom g = {.start = MIB, .bytes = 64 * MIB, .logical_block = 512, .physical_block = 4096};
    char why[KDISK_MSG_MAX];
    memset(buf, 0, KSUPER_READ_BYTES);
    if (ksuper_plan(&g, vol, sb, why, sizeof why) == 0) {
        sb->generation = 7;
        ksuper_encode(sb, buf);
    }
}

/* Re-seal an edited superblock's CRC (over its declared size). */
static void reseal(uint8_t *buf)
{
    kdisk_put32(buf + 16, 0);
    kdisk_put32(buf + 16, crc32(buf, kdisk_le32(buf + 12)));
}

TEST(ksuper_encode_decode_round_trip)
{
    uint8_t buf[KSUPER_READ_BYTES], again[KSUPER_BYTES];
    struct ksuper sb, back;
    char why[KDISK_MSG_MAX];
    sample(buf, &sb);
    CHECK_EQ(ksuper_decode(buf, sizeof buf, &back, why, sizeof why), KSUPER_VALID);
    CHECK_EQ(back.generation, 7);
    CHECK_EQ(back.region_count, 5);
    CHECK_MEM(back.volume_id, vol, 16);
    ksuper_encode(&back, again);
    CHECK_MEM(again, buf, KSUPER_BYTES);
    CHECK_MEM(buf, "tern-sb", 8);
    CHECK_EQ(kdisk_le32(buf + 8), KSUPER_VERSION);
}

TEST(ksuper_decode_tells_blank_foreign_corrupt_newer_older)
{
    uint8_t buf[KSUPER_READ_BYTES];
    struct ksuper sb;
    char why[KDISK_MSG_MAX];
    memset(buf, 0, sizeof buf);
    CHECK_EQ(ksuper_decode(buf, sizeof buf, &sb, why, sizeof why), KSUPER_BLANK);
    buf[4000] = 1; /* zero superblock bytes, data later in the block */
    CHECK_EQ(ksuper_decode(buf, sizeof buf, &sb, why, sizeof why), KSUPER_FOREIGN);
    memcpy(buf, "XFSB", 4);
    CHECK_EQ(ksuper_decode(buf, sizeof buf, &sb, why, sizeof why), KSUPER_FOREIGN);
    CHECK(strstr(why, "foreign"));

    sample(buf, &sb);
    buf[200] ^= 0x10;
    CHECK_EQ(ksuper_decode(buf, sizeof buf, &sb, why, sizeof why), KSUPER_CORRUPT);
    CHECK(strstr(why, "CRC32 mismatch"));

    sample(buf, &sb);
    kdisk_put32(buf + 8, 4);
    reseal(buf);
    CHECK_EQ(ksuper_decode(buf, sizeof buf, &sb, why, sizeof why), KSUPER_NEWER);
    CHECK(strstr(why, "layout version 4 is newer") && strstr(why, "newer tern is needed"));
    /* a newer version may be larger; its CRC still covers what it declares */
    kdisk_put32(buf + 12, 2048);
    buf[1500] = 0x5a;
    reseal(buf);
    CHECK_EQ(ksuper_decode(buf, sizeof buf, &sb, why, sizeof why), KSUPER_NEWER);
    buf[1500] = 0;
    CHECK_EQ(ksuper_decode(buf, sizeof buf, &sb, why, sizeof why), KSUPER_CORRUPT);
    kdisk_put32(buf + 12, 8192); /* more than a slot: refused before any CRC */
    CHECK_EQ(ksuper_decode(buf, sizeof buf, &sb, why, sizeof why), KSUPER_CORRUPT);

    sample(buf, &sb);
    kdisk_put32(buf + 8, 1);
    reseal(buf);
    CHECK_EQ(ksuper_decode(buf, sizeof buf, &sb, why, sizeof why), KSUPER_OLDER);
    CHECK(strstr(why, "version 1 is older"));
    /* a layout v2 disk (no page checksums) is older: tern-disk migrates it */
    sample(buf, &sb);
    kdisk_put32(buf + 8, 2);
    reseal(buf);
    CHECK_EQ(ksuper_decode(buf, sizeof buf, &sb, why, sizeof why), KSUPER_OLDER);
    CHECK(strstr(why, "layout version 2 is older than this release's 3: migrate it with tern-disk"));
}

TEST(ksuper_decode_checks_every_field)
{
    struct {
        unsigned off, width;
        uint64_t value;
        const char *want;
    } cases[] = {
        {12, 4, 1024, "must be 512"},
        {20, 4, 1, "reserved"},
        {100, 1, 1, "reserved"},
        {500, 1, 1, "reserved"},
        {24, 8, 0, "generation 0"},
        {48, 4, 768, "block sizes"},
        {52, 4, 256, "block sizes"},
        {52, 4, 1 << 17, "block sizes"},
        {56, 4, 1 << 19, "alignment"},
        {56, 4, 1 << 25, "alignment"},
        {60, 4, 4, "regions"},
        {60, 4, 13, "regions"},
        {64, 8, 4096, "partition size"},
        {128, 4, 0, "kind 0"},                     /* first entry's kind */
        {132, 4, 1, "flags"},
        {128 + 24, 4, 1, "two regions of kind 1"}, /* second entry made a database */
        {128 + 8, 8, 4096, "superblock area"},     /* first entry's offset */
        {128 + 8, 8, 2 * MIB + 512, "blocks"},
        {128 + 16, 8, 0, "empty"},
        {128 + 16, 8, 64ull * MIB, "beyond the partition"},
        {128 + 16, 8, 12ull * MIB, "overlap"},
        {128 + 4 * 24, 4, 9, "no backup B region"},
        {128 + 5 * 24 + 16, 1, 1, "past the count"},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t buf[KSUPER_READ_BYTES];
        struct ksuper sb;
        char why[KDISK_MSG_MAX];
        sample(buf, &sb);
        if (cases[i].width == 1)
            buf[cases[i].off] = (uint8_t)cases[i].value;
        else if (cases[i].width == 4)
            kdisk_put32(buf + cases[i].off, (uint32_t)cases[i].value);
        else
            kdisk_put64(buf + cases[i].off, cases[i].value);
        reseal(buf);
        if (ksuper_decode(buf, sizeof buf, &sb, why, sizeof why) != KSUPER_CORRUPT ||
            !strstr(why, cases[i].want)) {
            fprintf(stderr, "  case %u: %s\n", i, why);
            CHECK(0);
        }
    }
}

static const struct ksuper_region *region(const struct ksuper *sb, uint32_t kind)
{
    for (unsigned i = 0; i < sb->region_count; i++)
        if (sb->regions[i].kind == kind)
            return &sb->regions[i];
    return NULL;
}

/* The sizing rule's promises for one geometry. */
static void check_plan(uint64_t start, uint64_t bytes, uint32_t physical, uint32_t optimal,
                       uint64_t want_align)
{
    struct ksuper_geom g = {.start = start, .bytes = bytes, .logical_block = 512,
                            .physical_block = physical, .optimal_io = optimal};
    struct ksuper sb;
    char why[KDISK_MSG_MAX];
    uint8_t buf[KSUPER_READ_BYTES] = {0};
    CHECK_EQ(ksuper_plan(&g, vol, &sb, why, sizeof why), 0);
    CHECK_EQ(sb.align, want_align);
    const struct ksuper_region *db = region(&sb, KDISK_REGION_DB), *a = region(&sb, KDISK_REGION_BACKUP_A),
                               *b = region(&sb, KDISK_REGION_BACKUP_B), *w = region(&sb, KDISK_REGION_WAL),
                               *t = region(&sb, KDISK_REGION_TELEMETRY);
    CHECK(db && a && b && w && t);
    CHECK(db->length == a->length && a->length == b->length);
    CHECK(db->length >= KSUPER_DB_MIN);
    CHECK(w->length <= KSUPER_WAL_MAX && t->length <= KSUPER_TELEMETRY_MAX);
    CHECK(t->length < db->length);
    uint64_t total = 0;
    for (unsigned i = 0; i < sb.region_count; i++) {
        const struct ksuper_region *r = &sb.regions[i];
        CHECK_EQ((start + r->offset) % want_align, 0); /* aligned on the disk */
        CHECK_EQ(r->length % want_align, 0);
        CHECK(r->offset >= KSUPER_AREA && r->offset + r->length <= bytes);
        total += r->length;
    }
    /* what is left over is less than the rounding of 3 regions plus the ends */
    CHECK(bytes - total < KSUPER_AREA + 5 * want_align);
    sb.generation = 1;
    ksuper_encode(&sb, buf);
    CHECK_EQ(ksuper_decode(buf, sizeof buf, &sb, why, sizeof why), KSUPER_VALID);
}

TEST(ksuper_plan_sizes_regions_by_the_rule)
{
    check_plan(MIB, 64ull * MIB, 512, 0, MIB);
    check_plan(MIB, 1024ull * MIB, 4096, 0, MIB);
    check_plan(MIB, 64ull * 1024 * MIB, 4096, 0, MIB);
    check_plan(4096, 300ull * MIB + 4096, 4096, 0, MIB);            /* start not MiB-aligned */
    check_plan(MIB, 1024ull * MIB, 4096, 192 * 1024, 3 * MIB);      /* optimal I/O 192 KiB */
    check_plan(MIB, 1024ull * MIB, 4096, 4 * MIB, 4 * MIB);
    check_plan(MIB, 1024ull * MIB, 4096, 64 * MIB, MIB);            /* beyond 16 MiB: 1 MiB */
    check_plan(MIB, 1024ull * MIB, 4096, 1000, MIB);                /* not whole blocks */
    /* a 1 GiB partition: WAL 1/16, telemetry 1/64 */
    struct ksuper_geom g = {.start = MIB, .bytes = 1024ull * MIB, .logical_block = 512, .physical_block = 512};
    struct ksuper sb;
    char why[KDISK_MSG_MAX];
    CHECK_EQ(ksuper_plan(&g, vol, &sb, why, sizeof why), 0);
    CHECK_EQ(region(&sb, KDISK_REGION_WAL)->length, 63ull * MIB);
    CHECK_EQ(region(&sb, KDISK_REGION_TELEMETRY)->length, 15ull * MIB);
    CHECK_EQ(region(&sb, KDISK_REGION_DB)->length, 315ull * MIB);
    /* a 64 GiB one: both capped */
    g.bytes = 64ull * 1024 * MIB;
    CHECK_EQ(ksuper_plan(&g, vol, &sb, why, sizeof why), 0);
    CHECK_EQ(region(&sb, KDISK_REGION_WAL)->length, KSUPER_WAL_MAX);
    CHECK_EQ(region(&sb, KDISK_REGION_TELEMETRY)->length, KSUPER_TELEMETRY_MAX);
}

TEST(ksuper_plan_refuses_a_small_or_misaligned_partition)
{
    struct ksuper_geom g = {.start = MIB, .bytes = 20 * MIB, .logical_block = 512, .physical_block = 4096};
    struct ksuper sb;
    char why[KDISK_MSG_MAX];
    CHECK_EQ(ksuper_plan(&g, vol, &sb, why, sizeof why), -1);
    CHECK(strstr(why, "has 20 MiB; layout v3 needs at least 22 MiB"));
    g.bytes = 22 * MIB;
    CHECK_EQ(ksuper_plan(&g, vol, &sb, why, sizeof why), 0);
    g.start = MIB + 512;
    CHECK_EQ(ksuper_plan(&g, vol, &sb, why, sizeof why), -1);
    CHECK(strstr(why, "not on a 4096-byte physical block"));
    /* a small partition whose end, rounded down to the alignment, lies
     * before its start (found by fuzz_disk) */
    g = (struct ksuper_geom){.start = 0xe5000002ull * 4096, .bytes = MIB, .logical_block = 512,
                             .physical_block = 512, .optimal_io = 192 * 1024};
    CHECK_EQ(ksuper_plan(&g, vol, &sb, why, sizeof why), -1);
    CHECK(strstr(why, "has 1 MiB"));
}

static void format_and_read_back(uint32_t logical, uint32_t physical)
{
    struct mem_disk m;
    struct ksuper_geom g;
    struct ksuper_state st, again;
    struct kdisk_report rep;
    CHECK_EQ(part_disk(&m, &g, logical, physical, 64), 0);
    CHECK_EQ(read_sb(&m, &g, &st, &rep), KDISK_EBLANK);
    CHECK_EQ(m.writes, 0);
    kdisk_report_clear(&rep);
    CHECK_EQ(ksuper_format(&m.disk, &g, vol, &st, &rep), KDISK_OK);
    CHECK_EQ(st.sb.generation, 2);
    CHECK_EQ(st.slot, 1);
    CHECK(m.flushes >= 2);
    /* superblocks only in their slots' first 512 bytes; the rest of each
     * slot's physical block zero */
    CHECK_MEM(slot(&m, &g, 0), "tern-sb", 8);
    CHECK_MEM(slot(&m, &g, 1), "tern-sb", 8);
    CHECK(kdisk_is_zero(slot(&m, &g, 0) + KSUPER_BYTES, physical - KSUPER_BYTES));
    CHECK_EQ(read_sb(&m, &g, &again, &rep), KDISK_OK);
    CHECK_EQ(rep.note_count, 0);
    CHECK_EQ(again.slot, 1);
    CHECK_EQ(again.sb.generation, 2);
    CHECK_EQ(again.sb.region_count, st.sb.region_count);
    CHECK_MEM(again.sb.regions, st.sb.regions, sizeof st.sb.regions);
    CHECK_EQ(again.sb.logical_block, logical);
    CHECK_EQ(again.sb.physical_block, physical);
    mem_disk_free(&m);
}

TEST(ksuper_blank_format_read_back_512)
{
    format_and_read_back(512, 512);
}

TEST(ksuper_blank_format_read_back_512_logical_4096_physical)
{
    format_and_read_back(512, 4096);
}

TEST(ksuper_blank_format_read_back_4096)
{
    format_and_read_back(4096, 4096);
}

TEST(ksuper_format_zeroes_the_start_of_every_region)
{
    struct mem_disk m;
    struct ksuper_geom g;
    struct ksuper_state st;
    struct kdisk_report rep;
    CHECK_EQ(part_disk(&m, &g, 512, 4096, 64), 0);
    memset(mem_disk_at(&m, g.start + 2 * MIB), 0xAB, 62 * MIB); /* stale data past the first MiB */
    CHECK_EQ(read_sb(&m, &g, &st, &rep), KDISK_EBLANK);
    CHECK_EQ(ksuper_format(&m.disk, &g, vol, &st, &rep), KDISK_OK);
    for (unsigned i = 0; i < st.sb.region_count; i++)
        CHECK(kdisk_is_zero(mem_disk_at(&m, g.start + st.sb.regions[i].offset), KDISK_IO_BYTES));
    mem_disk_free(&m);
}

TEST(ksuper_updates_alternate_slots_with_rising_generations)
{
    struct mem_disk m;
    struct ksuper_geom g;
    struct ksuper_state st, rd;
    struct kdisk_report rep;
    CHECK_EQ(part_disk(&m, &g, 512, 4096, 64), 0);
    kdisk_report_clear(&rep);
    CHECK_EQ(ksuper_format(&m.disk, &g, vol, &st, &rep), KDISK_OK);
    struct ksuper next = st.sb;
    next.regions[0].length -= MIB; /* the WAL shrinks by a MiB */
    CHECK_EQ(ksuper_update(&m.disk, &g, &st, &next, &rep), KDISK_OK);
    CHECK_EQ(st.slot, 0);
    CHECK_EQ(st.sb.generation, 3);
    CHECK_EQ(ksuper_read(&m.disk, &g, &rd, &rep), KDISK_OK);
    CHECK_EQ(rd.slot, 0);
    CHECK_EQ(rd.sb.generation, 3);
    CHECK_EQ(rd.sb.regions[0].length, next.regions[0].length);
    CHECK_EQ(ksuper_update(&m.disk, &g, &st, &next, &rep), KDISK_OK);
    CHECK_EQ(st.slot, 1);
    CHECK_EQ(ksuper_read(&m.disk, &g, &rd, &rep), KDISK_OK);
    CHECK_EQ(rd.sb.generation, 4);
    /* an update a reader would refuse is not written */
    unsigned writes = m.writes;
    next.regions[0].offset = 4096;
    CHECK_EQ(ksuper_update(&m.disk, &g, &st, &next, &rep), KDISK_EINVAL);
    CHECK(strstr(rep.error, "superblock area"));
    CHECK_EQ(m.writes, writes);
    mem_disk_free(&m);
}

TEST(ksuper_torn_update_keeps_the_other_slot_and_says_so)
{
    /* The update rewrites slot A (generation 1) as generation 3 with one
     * region changed; the power fails after tear bytes reached the disk.
     * Afterwards the reader finds the old state (B, generation 2) or the
     * new one (A, generation 3), never a refusal; a slot torn between
     * the two is reported. */
    static const size_t tears[] = {0, 8, 20, 100, 170, 300, 511, 4000};
    unsigned torn_seen = 0;
    for (unsigned i = 0; i < sizeof tears / sizeof tears[0]; i++) {
        struct mem_disk m;
        struct ksuper_geom g;
        struct ksuper_state st, rd;
        struct kdisk_report rep;
        CHECK_EQ(part_disk(&m, &g, 512, 4096, 64), 0);
        kdisk_report_clear(&rep);
        CHECK_EQ(ksuper_format(&m.disk, &g, vol, &st, &rep), KDISK_OK);
        struct ksuper next = st.sb;
        const uint64_t old_len = next.regions[0].length;
        next.regions[0].length -= MIB;
        m.tear_write = (int)m.writes + 1;
        m.tear_bytes = tears[i];
        CHECK_EQ(ksuper_update(&m.disk, &g, &st, &next, &rep), KDISK_EIO);
        CHECK(strstr(rep.error, "writing superblock A"));
        CHECK_EQ(st.slot, 1); /* the caller's state still names the good slot */
        m.dead = 0;           /* power back */
            CHECK_EQ(read_sb(&m, &g, &rd, &rep), KDISK_OK);
        if (rd.sb.generation == 2) {
            CHECK_EQ(rd.slot, 1);
            CHECK_EQ(rd.sb.regions[0].length, old_len);
        } else {
            CHECK_EQ(rd.sb.generation, 3);
            CHECK_EQ(rd.slot, 0);
            CHECK_EQ(rd.sb.regions[0].length, old_len - MIB);
        }
        if (rep.note_count) {
            torn_seen++;
            CHECK(strstr(rep.notes[0], "superblock A is unusable (CRC32 mismatch"));
            CHECK(strstr(rep.notes[0], "using superblock B (generation 2)"));
        }
        /* the next update goes to the other slot */
        unsigned was = rd.slot;
        CHECK_EQ(ksuper_update(&m.disk, &g, &rd, &next, &rep), KDISK_OK);
        CHECK_EQ(rd.slot, 1 - was);
        CHECK_EQ(ksuper_read(&m.disk, &g, &st, &rep), KDISK_OK);
        CHECK_EQ(st.slot, 1 - was);
        mem_disk_free(&m);
    }
    CHECK(torn_seen >= 2); /* tears at 20 and 100 bytes leave A half new */
}

/* A formatted 64 MiB partition (512/4096) for the refusal tests. */
static int formatted(struct mem_disk *m, struct ksuper_geom *g)
{
    struct ksuper_state st;
    struct kdisk_report rep;
    kdisk_report_clear(&rep);
    if (part_disk(m, g, 512, 4096, 64) || ksuper_format(&m->disk, g, vol, &st, &rep))
        return -1;
    m->writes = 0;
    return 0;
}

TEST(ksuper_one_corrupt_slot_uses_the_other_and_says_so)
{
    struct mem_disk m;
    struct ksuper_geom g;
    struct ksuper_state st;
    struct kdisk_report rep;
    CHECK_EQ(formatted(&m, &g), 0);
    slot(&m, &g, 1)[30] ^= 1; /* B: generation byte */
    CHECK_EQ(read_sb(&m, &g, &st, &rep), KDISK_OK);
    CHECK_EQ(st.slot, 0);
    CHECK_EQ(st.sb.generation, 1);
    CHECK(strstr(rep.notes[0], "superblock B is unusable (CRC32 mismatch"));
    /* A corrupt instead: B is used */
    slot(&m, &g, 1)[30] ^= 1;
    slot(&m, &g, 0)[140] ^= 1;
    CHECK_EQ(read_sb(&m, &g, &st, &rep), KDISK_OK);
    CHECK_EQ(st.slot, 1);
    CHECK(strstr(rep.notes[0], "superblock A is unusable"));
    /* A blank (a lost first write): B is used */
    memset(slot(&m, &g, 0), 0, 4096);
    CHECK_EQ(read_sb(&m, &g, &st, &rep), KDISK_OK);
    CHECK(strstr(rep.notes[0], "superblock A is unusable (blank)"));
    CHECK_EQ(m.writes, 0);
    mem_disk_free(&m);
}

TEST(ksuper_both_corrupt_is_refused)
{
    struct mem_disk m;
    struct ksuper_geom g;
    struct ksuper_state st;
    struct kdisk_report rep;
    CHECK_EQ(formatted(&m, &g), 0);
    slot(&m, &g, 0)[30] ^= 1;
    slot(&m, &g, 1)[200] ^= 1;
    CHECK_EQ(read_sb(&m, &g, &st, &rep), KDISK_EREFUSED);
    CHECK(strstr(rep.error, "no usable superblock: A: CRC32 mismatch"));
    CHECK(strstr(rep.error, "; B: CRC32 mismatch"));
    /* corrupt and blank: still refused, not formatted */
    memset(slot(&m, &g, 1), 0, 4096);
    CHECK_EQ(read_sb(&m, &g, &st, &rep), KDISK_EREFUSED);
    CHECK(strstr(rep.error, "B: blank"));
    CHECK_EQ(m.writes, 0);
    mem_disk_free(&m);
}

TEST(ksuper_foreign_data_is_refused)
{
    struct mem_disk m;
    struct ksuper_geom g;
    struct ksuper_state st;
    struct kdisk_report rep;
    CHECK_EQ(part_disk(&m, &g, 512, 512, 64), 0);
    /* an ext4 superblock lives at byte 1024 of its partition */
    memcpy(mem_disk_at(&m, g.start + 1024 + 0x38), "\x53\xef", 2);
    CHECK_EQ(read_sb(&m, &g, &st, &rep), KDISK_EREFUSED);
    CHECK(strstr(rep.error, "foreign"));
    /* data in the first byte */
    memset(mem_disk_at(&m, g.start), 0, 4096);
    memcpy(mem_disk_at(&m, g.start), "XFSB", 4);
    CHECK_EQ(read_sb(&m, &g, &st, &rep), KDISK_EREFUSED);
    CHECK(strstr(rep.error, "starts with foreign data"));
    /* superblocks blank, data further into the first MiB */
    memset(mem_disk_at(&m, g.start), 0, 4);
    mem_disk_at(&m, g.start)[700000] = 1;
    CHECK_EQ(read_sb(&m, &g, &st, &rep), KDISK_EREFUSED);
    CHECK(strstr(rep.error, "holds data at byte 700000"));
    CHECK_EQ(m.writes, 0);
    /* foreign data in slot A beats a valid slot B */
    mem_disk_free(&m);
    CHECK_EQ(formatted(&m, &g), 0);
    memcpy(slot(&m, &g, 0), "LUKS\xba\xbe", 6);
    CHECK_EQ(read_sb(&m, &g, &st, &rep), KDISK_EREFUSED);
    CHECK(strstr(rep.error, "foreign"));
    mem_disk_free(&m);
}

TEST(ksuper_newer_version_is_refused_even_beside_a_valid_slot)
{
    struct mem_disk m;
    struct ksuper_geom g;
    struct ksuper_state st;
    struct kdisk_report rep;
    CHECK_EQ(formatted(&m, &g), 0);
    kdisk_put32(slot(&m, &g, 1) + 8, 4);
    reseal(slot(&m, &g, 1));
    CHECK_EQ(read_sb(&m, &g, &st, &rep), KDISK_EREFUSED);
    CHECK(strstr(rep.error, "superblock B: layout version 4 is newer than this release's 3"));
    CHECK_EQ(m.writes, 0);
    mem_disk_free(&m);
}

TEST(ksuper_shrunk_partition_and_bigger_physical_blocks_are_refused)
{
    struct mem_disk m;
    struct ksuper_geom g;
    struct ksuper_state st;
    struct kdisk_report rep;
    CHECK_EQ(formatted(&m, &g), 0);
    g.bytes -= MIB;
    CHECK_EQ(read_sb(&m, &g, &st, &rep), KDISK_EREFUSED);
    CHECK(strstr(rep.error, "smaller than its layout"));
    /* a larger partition (grown) is fine */
    g.bytes += 2 * MIB;
    CHECK_EQ(read_sb(&m, &g, &st, &rep), KDISK_OK);
    mem_disk_free(&m);
}

TEST(ksuper_read_errors_name_the_slot)
{
    struct mem_disk m;
    struct ksuper_geom g;
    struct ksuper_state st;
    struct kdisk_report rep;
    CHECK_EQ(formatted(&m, &g), 0);
    m.fail_read_lba = (g.start + KSUPER_SLOT_B) / 512 + 3;
    CHECK_EQ(read_sb(&m, &g, &st, &rep), KDISK_EIO);
    CHECK(strstr(rep.error, "reading superblock B at LBA 3072 failed: I/O error"));
    mem_disk_free(&m);
}
