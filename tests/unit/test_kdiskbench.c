/*
 * test_kdiskbench.c - the pure parts of the disk measurements
 * (src/platform/kernel/diag/): the write test's free span (diskspan.c)
 * from GPTs written by gpt_write and read back by gpt_read with partitions
 * at the start, the end, the middle, none and everywhere, with 512- and
 * 4096-byte blocks; tables it must refuse (overlapping, out of range,
 * reversed, read from the backup) and the GPT's own blocks never given
 * even when a header's usable range claims them; hybrid MBR records
 * counted as covered; alignment and the minimum size. Then the integer
 * arithmetic (diskstat.c: nearest-rank percentiles, rates without
 * overflow, the LCG's range) and the WIPE answer (diskask.c): only
 * "WIPE" and Enter confirms.
 */
#include "test.h"

#include "mem_disk.h"
#include "platform/kernel/diag/diskask.c"
#include "platform/kernel/diag/diskspan.c"
#include "platform/kernel/diag/diskstat.c"
#include "platform/kernel/disk/gpt.h"

enum { MIB = 1048576 };

struct part_mib {
    uint64_t first_mib, end_mib; /* [first, end) in MiB; end 0: the last whole MiB */
};

/* A disk of mib MiB with a GPT (gpt_write) holding parts, read back by
 * gpt_read into *g. 0 or -1. */
static int table(struct mem_disk *m, struct gpt *g, uint32_t logical, uint64_t mib,
                 const struct part_mib *parts, unsigned n)
{
    if (mem_disk_init(m, logical, logical, mib * MIB / logical))
        return -1;
    const uint64_t per_mib = MIB / logical;
    uint64_t first, last;
    struct kdisk_report rep;
    kdisk_report_clear(&rep);
    if (gpt_usable(&m->disk, &first, &last, &rep))
        return -1;
    struct gpt_new_part p[8];
    struct gpt_guid disk;
    gpt_guid_parse("01234567-89ab-cdef-0123-456789abcdef", &disk);
    for (unsigned i = 0; i < n; i++) {
        memset(&p[i], 0, sizeof p[i]);
        p[i].first = parts[i].first_mib * per_mib;
        p[i].last = parts[i].end_mib ? parts[i].end_mib * per_mib - 1
                                     : (last + 1) / per_mib * per_mib - 1;
        p[i].name = "part";
        gpt_guid_parse(TERN_DATA_TYPE_GUID, &p[i].type);
        gpt_guid_parse("11111111-2222-3333-4444-555555555555", &p[i].guid);
        p[i].guid.b[15] = (uint8_t)i;
    }
    if (gpt_write(&m->disk, &disk, p, n, &rep))
        return -1;
    return gpt_read(&m->disk, g, &rep) == KDISK_OK ? 0 : -1;
}

/* The free span of a table made by table(), in MiB ([first, end)). */
static int span_mib(uint32_t logical, uint64_t mib, const struct part_mib *parts, unsigned n,
                    uint64_t *first_mib, uint64_t *end_mib, char *why, size_t why_size)
{
    static struct gpt g;
    struct mem_disk m;
    if (table(&m, &g, logical, mib, parts, n)) {
        snprintf(why, why_size, "table not made");
        return -2;
    }
    struct diskspan s;
    int rc = diskspan_free(&g, NULL, 0, m.disk.capacity, logical, MIB, MIB, &s, why, why_size);
    mem_disk_free(&m);
    if (rc == 0) {
        *first_mib = s.first * logical / MIB;
        *end_mib = (s.last + 1) * logical / MIB;
        if (s.first * logical % MIB || (s.last + 1) * logical % MIB)
            return -3; /* not aligned */
    }
    return rc;
}

TEST(kdiskbench_free_span_after_a_partition_at_the_start)
{
    char why[200];
    uint64_t a, e;
    struct part_mib p[] = {{1, 17}};
    CHECK_EQ(span_mib(512, 64, p, 1, &a, &e, why, sizeof why), 0);
    CHECK_EQ(a, 17);
    CHECK_EQ(e, 63); /* the last MiB holds the backup GPT */
    CHECK_EQ(span_mib(4096, 64, p, 1, &a, &e, why, sizeof why), 0);
    CHECK_EQ(a, 17);
    CHECK_EQ(e, 63);
}

TEST(kdiskbench_free_span_before_a_partition_at_the_end)
{
    char why[200];
    uint64_t a, e;
    struct part_mib p[] = {{40, 0}};
    CHECK_EQ(span_mib(512, 64, p, 1, &a, &e, why, sizeof why), 0);
    CHECK_EQ(a, 1); /* the first MiB holds the primary GPT */
    CHECK_EQ(e, 40);
}

TEST(kdiskbench_free_span_is_the_largest_gap_between_partitions)
{
    char why[200];
    uint64_t a, e;
    struct part_mib p[] = {{1, 4}, {10, 30}, {45, 50}};
    CHECK_EQ(span_mib(512, 64, p, 3, &a, &e, why, sizeof why), 0);
    CHECK_EQ(a, 30);
    CHECK_EQ(e, 45);
    struct part_mib q[] = {{30, 31}, {1, 2}}; /* entry order is not disk order */
    CHECK_EQ(span_mib(512, 64, q, 2, &a, &e, why, sizeof why), 0);
    CHECK_EQ(a, 31);
    CHECK_EQ(e, 63);
}

TEST(kdiskbench_free_span_of_an_empty_table_is_the_usable_range)
{
    char why[200];
    uint64_t a, e;
    CHECK_EQ(span_mib(512, 16, NULL, 0, &a, &e, why, sizeof why), 0);
    CHECK_EQ(a, 1);
    CHECK_EQ(e, 15);
}

TEST(kdiskbench_no_free_span_when_partitions_cover_the_disk)
{
    char why[200];
    uint64_t a, e;
    struct part_mib p[] = {{1, 0}};
    CHECK_EQ(span_mib(512, 64, p, 1, &a, &e, why, sizeof why), -1);
    CHECK(strstr(why, "no free space") != NULL);
    /* Gaps smaller than the minimum (1 MiB) do not count either. */
    struct part_mib q[] = {{1, 20}, {20, 0}};
    CHECK_EQ(span_mib(512, 64, q, 2, &a, &e, why, sizeof why), -1);
}

/* A table by hand: a 512-byte-block disk of cap blocks, 128 entries of
 * 128 bytes (32 blocks) at LBA 2, usable 34 .. cap - 34. */
static void hand_table(struct gpt *g, uint64_t cap)
{
    memset(g, 0, sizeof *g);
    g->hdr.my_lba = 1;
    g->hdr.alternate_lba = cap - 1;
    g->hdr.array_lba = 2;
    g->hdr.entries = 128;
    g->hdr.entry_size = 128;
    g->hdr.first_usable = 34;
    g->hdr.last_usable = cap - 34;
}

static void add(struct gpt *g, uint64_t first, uint64_t last)
{
    struct gpt_part *p = &g->parts[g->count];
    memset(p, 0, sizeof *p);
    p->first = first;
    p->last = last;
    p->index = ++g->count;
}

TEST(kdiskbench_overlapping_or_odd_tables_are_refused)
{
    static struct gpt g;
    struct diskspan s;
    char why[200];
    hand_table(&g, 100000);
    add(&g, 2048, 4095);
    add(&g, 4000, 8191); /* overlaps the first */
    CHECK_EQ(diskspan_free(&g, NULL, 0, 100000, 512, MIB, MIB, &s, why, sizeof why), -1);
    CHECK(strstr(why, "overlap") != NULL);
    hand_table(&g, 100000);
    add(&g, 8192, 4096); /* ends before it starts */
    CHECK_EQ(diskspan_free(&g, NULL, 0, 100000, 512, MIB, MIB, &s, why, sizeof why), -1);
    hand_table(&g, 100000);
    add(&g, 20, 2047); /* inside the primary GPT's blocks */
    CHECK_EQ(diskspan_free(&g, NULL, 0, 100000, 512, MIB, MIB, &s, why, sizeof why), -1);
    CHECK(strstr(why, "outside the usable range") != NULL);
    hand_table(&g, 100000);
    add(&g, 90000, 99999); /* into the backup GPT */
    CHECK_EQ(diskspan_free(&g, NULL, 0, 100000, 512, MIB, MIB, &s, why, sizeof why), -1);
    hand_table(&g, 100000);
    g.from_backup = 1;
    CHECK_EQ(diskspan_free(&g, NULL, 0, 100000, 512, MIB, MIB, &s, why, sizeof why), -1);
    CHECK(strstr(why, "backup") != NULL);
    hand_table(&g, 100000);
    g.hdr.last_usable = 100000; /* past the disk */
    CHECK_EQ(diskspan_free(&g, NULL, 0, 100000, 512, MIB, MIB, &s, why, sizeof why), -1);
    hand_table(&g, 100000);
    CHECK_EQ(diskspan_free(&g, NULL, 0, 100000, 512, 3 * 512, MIB, &s, why, sizeof why), -1);
}

TEST(kdiskbench_gpt_blocks_are_never_free_whatever_the_header_says)
{
    static struct gpt g;
    struct diskspan s;
    char why[200];
    const uint64_t cap = 100000;
    hand_table(&g, cap);
    g.hdr.first_usable = 2;        /* claims the primary array */
    g.hdr.last_usable = cap - 2;   /* and the backup array */
    /* Alignment of one block shows the exact bounds. */
    CHECK_EQ(diskspan_free(&g, NULL, 0, cap, 512, 512, 512, &s, why, sizeof why), 0);
    CHECK_EQ(s.first, 34);         /* after LBA 0, 1 and the 32-block array */
    CHECK_EQ(s.last, cap - 34);    /* before the backup array and header */
}

TEST(kdiskbench_span_is_aligned_inside_a_gap)
{
    static struct gpt g;
    struct diskspan s;
    char why[200];
    const uint64_t cap = 2 * 2048 * 16; /* 32 MiB */
    hand_table(&g, cap);
    add(&g, 2048, 5000);           /* ends mid-MiB */
    add(&g, 30000, 60000);         /* starts mid-MiB; a smaller gap after it */
    CHECK_EQ(diskspan_free(&g, NULL, 0, cap, 512, MIB, MIB, &s, why, sizeof why), 0);
    CHECK_EQ(s.first, 3 * 2048);   /* the next whole MiB after 5000 */
    CHECK_EQ(s.last, 14 * 2048 - 1); /* the last whole MiB before 30000 */
    /* A 4096-byte physical block alignment keeps more. */
    CHECK_EQ(diskspan_free(&g, NULL, 0, cap, 512, 4096, MIB, &s, why, sizeof why), 0);
    CHECK_EQ(s.first, 5008);
    CHECK_EQ(s.last, 29999);
}

TEST(kdiskbench_hybrid_mbr_records_count_as_covered)
{
    static struct gpt g;
    uint8_t mbr[512];
    struct diskspan r[DISKSPAN_MBR_RECORDS], s;
    char why[200];
    const uint64_t cap = 65536; /* 32 MiB */
    memset(mbr, 0, sizeof mbr);
    CHECK_EQ(diskspan_mbr_ranges(mbr, cap, r), 0); /* no signature */
    mbr[510] = 0x55;
    mbr[511] = 0xAA;
    /* Protective record over the whole disk: ignored. */
    mbr[446 + 4] = 0xEE;
    kdisk_put32(mbr + 446 + 8, 1);
    kdisk_put32(mbr + 446 + 12, (uint32_t)(cap - 1));
    /* A FAT record at 8 MiB, 4 MiB long; one running past the disk. */
    mbr[462 + 4] = 0x0C;
    kdisk_put32(mbr + 462 + 8, 8 * 2048);
    kdisk_put32(mbr + 462 + 12, 4 * 2048);
    mbr[478 + 4] = 0x83;
    kdisk_put32(mbr + 478 + 8, 60000);
    kdisk_put32(mbr + 478 + 12, 100000);
    CHECK_EQ(diskspan_mbr_ranges(mbr, cap, r), 2);
    CHECK_EQ(r[0].first, 8 * 2048);
    CHECK_EQ(r[0].last, 12 * 2048 - 1);
    CHECK_EQ(r[1].last, cap - 1);
    hand_table(&g, cap);
    add(&g, 2048, 4 * 2048 - 1);
    CHECK_EQ(diskspan_free(&g, r, 2, cap, 512, MIB, MIB, &s, why, sizeof why), 0);
    CHECK_EQ(s.first, 12 * 2048);  /* 12..29 MiB beats 4..8 MiB */
    CHECK_EQ(s.last, 29 * 2048 - 1);
}

TEST(kdiskbench_percentiles_are_nearest_rank)
{
    uint64_t v[100];
    struct diskstat_pct p;
    for (unsigned i = 0; i < 100; i++)
        v[i] = 100 - i; /* unsorted: 100 .. 1 */
    CHECK_EQ(diskstat_percentiles(v, 100, &p), 0);
    CHECK_EQ(p.p50, 50);
    CHECK_EQ(p.p90, 90);
    CHECK_EQ(p.p99, 99);
    CHECK_EQ(p.max, 100);
    uint64_t three[3] = {30, 10, 20};
    CHECK_EQ(diskstat_percentiles(three, 3, &p), 0);
    CHECK_EQ(p.p50, 20); /* rank ceil(1.5) = 2 */
    CHECK_EQ(p.p90, 30);
    CHECK_EQ(p.max, 30);
    uint64_t one = 7;
    CHECK_EQ(diskstat_percentiles(&one, 1, &p), 0);
    CHECK(p.p50 == 7 && p.p99 == 7 && p.max == 7);
    CHECK_EQ(diskstat_percentiles(v, 0, &p), -1);
    CHECK_EQ(diskstat_rank(1000, 99), 989);
    CHECK_EQ(diskstat_rank(1001, 99), 990); /* ceil(990.99) = 991 */
    uint64_t big[2] = {UINT64_MAX, 1};
    CHECK_EQ(diskstat_percentiles(big, 2, &p), 0);
    CHECK(p.max == UINT64_MAX && p.p50 == 1);
}

TEST(kdiskbench_rates_are_exact_integers_without_overflow)
{
    CHECK_EQ(diskstat_per_s(1000, 1000000000, 0), 1000);
    CHECK_EQ(diskstat_per_s(3, 2000000000, 1), 15);       /* 1.5 /s */
    CHECK_EQ(diskstat_per_s(1, 3000000000, 3), 333);      /* 0.333 /s */
    CHECK_EQ(diskstat_per_s(5, 999, 0), 5000000);         /* under 1 us counts as 1 us */
    CHECK_EQ(diskstat_mib_s_x10(256ull * MIB, 2000000000), 1280);  /* 128.0 MiB/s */
    CHECK_EQ(diskstat_mib_s_x10(100ull * MIB, 3000000000), 333);   /* 33.3 */
    /* 1 TiB in 7 s: 149796.5 MiB/s; no overflow on the way. */
    CHECK_EQ(diskstat_mib_s_x10(1ull << 40, 7000000000ull), 1497965);
    CHECK(diskstat_per_s(UINT64_MAX, 1000, 3) == UINT64_MAX); /* saturates */
    CHECK_EQ(diskstat_per_s(0, 5000, 1), 0);
}

TEST(kdiskbench_lcg_stays_in_range_and_reaches_every_value)
{
    struct diskstat_lcg g;
    diskstat_lcg_seed(&g, 12345);
    unsigned seen[16] = {0};
    for (unsigned i = 0; i < 4000; i++) {
        uint64_t v = diskstat_lcg_below(&g, 16);
        CHECK(v < 16);
        seen[v]++;
    }
    for (unsigned i = 0; i < 16; i++)
        CHECK(seen[i] > 150); /* about 250 each */
    CHECK_EQ(diskstat_lcg_below(&g, 1), 0);
    struct diskstat_lcg h;
    diskstat_lcg_seed(&h, 12346);
    diskstat_lcg_seed(&g, 12345);
    CHECK(diskstat_lcg_below(&g, 1ull << 40) != diskstat_lcg_below(&h, 1ull << 40));
}

static enum diskask_state answer(const char *typed)
{
    struct diskask a;
    const char *echo;
    enum diskask_state s = DISKASK_MORE;
    diskask_init(&a);
    for (const char *p = typed; *p; p++)
        s = diskask_feed(&a, (unsigned char)*p, &echo);
    return s;
}

TEST(kdiskbench_only_WIPE_and_enter_confirms)
{
    CHECK_EQ(answer("WIPE\n"), DISKASK_WIPE);
    CHECK_EQ(answer("WIPX\bE\n"), DISKASK_WIPE);     /* an erase */
    CHECK_EQ(answer("WIPEE\x7f\n"), DISKASK_WIPE);   /* DEL erases too */
    CHECK_EQ(answer("wipe\n"), DISKASK_REFUSED);
    CHECK_EQ(answer("WIPE \n"), DISKASK_REFUSED);
    CHECK_EQ(answer(" WIPE\n"), DISKASK_REFUSED);
    CHECK_EQ(answer("WIP\n"), DISKASK_REFUSED);
    CHECK_EQ(answer("\n"), DISKASK_REFUSED);
    CHECK_EQ(answer("WIPE"), DISKASK_MORE);          /* no Enter yet */
    CHECK_EQ(answer("WI\tPE\n"), DISKASK_REFUSED);   /* a control character: at once */
    CHECK_EQ(answer("WIPEWIPEWIPEWIPEWIPE\n"), DISKASK_REFUSED);
    CHECK_EQ(answer("x\nWIPE\n"), DISKASK_REFUSED);  /* the first line decides */
    struct diskask a;
    const char *echo;
    diskask_init(&a);
    CHECK_EQ(diskask_feed(&a, 'W', &echo), DISKASK_MORE);
    CHECK(echo && !strcmp(echo, "W"));
    CHECK_EQ(diskask_feed(&a, '\b', &echo), DISKASK_MORE);
    CHECK(echo && !strcmp(echo, "\b \b"));
    CHECK_EQ(diskask_feed(&a, '\b', &echo), DISKASK_MORE);
    CHECK(echo == NULL); /* nothing to erase */
    CHECK_EQ(diskask_feed(&a, 0x80, &echo), DISKASK_REFUSED);
}
