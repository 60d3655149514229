/*
 * test_klayout.c - the layout glue (disk/layout.c) on a memory disk: a
 * disk partitioned by klayout_partition is blank until formatted, opens
 * with its regions as absolute LBAs inside the data partition (512- and
 * 4096-byte logical blocks, 4096-byte physical), and reopens unchanged;
 * no tern partition, two of them (named), and foreign data are refused
 * without a write; damaged copies (a GPT header, a superblock) are used
 * around and every one is reported; a read-only disk is never written.
 */
#include "test.h"

#include "mem_disk.h"
#include "platform/kernel/disk/crc32.h"
#include "platform/kernel/disk/layout.h"

#include <stdlib.h>

enum { MIB = 1048576 };

static const uint8_t random64[64] = {
    0x10, 0x21, 0x32, 0x43, 0x54, 0x65, 0x76, 0x87, 0x98, 0xa9, 0xba, 0xcb, 0xdc, 0xed, 0xfe, 0x0f,
    0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x01,
    0x12, 0x23, 0x34, 0x45, 0x56, 0x67, 0x78, 0x89, 0x9a, 0xab, 0xbc, 0xcd, 0xde, 0xef, 0xf0, 0x02,
};

/* A memory disk of mib MiB partitioned with an ESP of esp_mib MiB. */
static int partitioned(struct mem_disk *m, uint32_t logical, uint32_t physical, uint64_t mib,
                       uint64_t esp_mib)
{
    struct kdisk_report rep;
    kdisk_report_clear(&rep);
    if (mem_disk_init(m, logical, physical, mib * MIB / logical))
        return -1;
    return klayout_partition(&m->disk, 0, esp_mib * MIB, random64, &rep);
}

/* klayout_open with a fresh report. */
static int open_layout(struct mem_disk *m, unsigned flags, struct klayout *l, struct kdisk_report *rep)
{
    kdisk_report_clear(rep);
    return klayout_open(&m->disk, flags, random64, l, rep);
}

static struct klayout *layout_new(void) { return calloc(1, sizeof(struct klayout)); }

static void check_open(uint32_t logical, uint32_t physical)
{
    struct mem_disk m;
    struct kdisk_report rep;
    struct klayout *l = layout_new(), *again = layout_new();
    CHECK(l && again);
    CHECK_EQ(partitioned(&m, logical, physical, 128, 16), 0);
    kdisk_report_clear(&rep);
    unsigned writes = m.writes;
    CHECK_EQ(klayout_open(&m.disk, 0, random64, l, &rep), KDISK_EBLANK);
    CHECK(strstr(rep.error, "blank"));
    CHECK_EQ(m.writes, writes);

    CHECK_EQ(open_layout(&m, KLAYOUT_FORMAT, l, &rep), KDISK_OK);
    CHECK_EQ(l->formatted, 1);
    CHECK_EQ(rep.note_count, 1);
    CHECK(strstr(rep.notes[0], "formatted the blank tern partition #2"));
    CHECK(strcmp(l->part.name, "tern-data") == 0);
    const uint64_t per_mib = MIB / logical;
    CHECK_EQ(l->part.first, 17 * per_mib);          /* after 1 MiB and the 16 MiB ESP */
    CHECK_EQ(l->region_count, KDISK_REGION_KINDS);
    for (uint32_t k = 1; k <= KDISK_REGION_KINDS; k++) {
        const struct kdisk_region *r = klayout_region(l, k);
        CHECK(r != NULL);
        CHECK(r->lba >= l->part.first + per_mib);     /* past the superblock area */
        CHECK(r->lba + r->blocks - 1 <= l->part.last);
        CHECK_EQ(r->lba % per_mib, 0);                /* 1 MiB-aligned on the disk */
        CHECK_EQ(r->blocks % per_mib, 0);
    }
    CHECK_EQ(klayout_region(l, KDISK_REGION_DB)->blocks, klayout_region(l, KDISK_REGION_BACKUP_A)->blocks);
    CHECK(klayout_region(l, 99) == NULL);

    kdisk_report_clear(&rep);
    writes = m.writes;
    CHECK_EQ(klayout_open(&m.disk, KLAYOUT_FORMAT, random64, again, &rep), KDISK_OK);
    CHECK_EQ(again->formatted, 0);
    CHECK_EQ(rep.note_count, 0);
    CHECK_EQ(m.writes, writes);
    CHECK_EQ(again->super.sb.generation, 2);
    CHECK_MEM(again->regions, l->regions, sizeof l->regions);
    mem_disk_free(&m);
    free(l);
    free(again);
}

TEST(klayout_blank_format_open_512)
{
    check_open(512, 512);
}

TEST(klayout_blank_format_open_512_logical_4096_physical)
{
    check_open(512, 4096);
}

TEST(klayout_blank_format_open_4096)
{
    check_open(4096, 4096);
}

TEST(klayout_partition_without_esp_and_too_small_disks)
{
    struct mem_disk m;
    struct kdisk_report rep;
    struct klayout *l = layout_new();
    CHECK_EQ(partitioned(&m, 512, 512, 64, 0), 0);
    CHECK_EQ(open_layout(&m, KLAYOUT_FORMAT, l, &rep), KDISK_OK);
    CHECK_EQ(l->gpt.count, 1);
    CHECK_EQ(l->part.first, MIB / 512);
    mem_disk_free(&m);
    CHECK_EQ(mem_disk_init(&m, 512, 512, 30 * MIB / 512), 0);
    kdisk_report_clear(&rep);
    CHECK_EQ(klayout_partition(&m.disk, 0, 16 * MIB, random64, &rep), KDISK_EINVAL);
    CHECK(strstr(rep.error, "too small"));
    CHECK_EQ(m.writes, 0);
    mem_disk_free(&m);
    free(l);
}

TEST(klayout_aligns_regions_to_the_optimal_io_size)
{
    struct mem_disk m;
    struct kdisk_report rep;
    struct klayout *l = layout_new();
    CHECK_EQ(mem_disk_init(&m, 512, 4096, 256ull * MIB / 512), 0);
    m.disk.optimal_io = 4 * MIB;
    kdisk_report_clear(&rep);
    CHECK_EQ(klayout_partition(&m.disk, 0, 3 * MIB, random64, &rep), KDISK_OK);
    CHECK_EQ(klayout_open(&m.disk, KLAYOUT_FORMAT, random64, l, &rep), KDISK_OK);
    CHECK_EQ(l->super.sb.align, 4 * MIB);
    for (unsigned i = 0; i < l->region_count; i++)
        CHECK_EQ(l->regions[i].lba * 512 % (4 * MIB), 0);
    mem_disk_free(&m);
    free(l);
}

/* Rewrite the type of entry index in both GPT copies of m (and their CRCs). */
static void set_type(struct mem_disk *m, unsigned index, const char *type)
{
    struct gpt_guid g;
    gpt_guid_parse(type, &g);
    for (int copy = 0; copy < 2; copy++) {
        uint8_t *h = m->data + (copy ? m->disk.capacity - 1 : 1) * m->disk.logical_block;
        uint8_t *array = m->data + kdisk_le64(h + 72) * m->disk.logical_block;
        memcpy(array + (index - 1) * 128, g.b, 16);
        kdisk_put32(h + 88, crc32(array, 128 * 128));
        kdisk_put32(h + 16, 0);
        kdisk_put32(h + 16, crc32(h, 92));
    }
}

TEST(klayout_needs_exactly_one_tern_partition)
{
    struct mem_disk m;
    struct kdisk_report rep;
    struct klayout *l = layout_new();
    CHECK_EQ(partitioned(&m, 512, 512, 64, 8), 0);
    unsigned writes = m.writes;
    set_type(&m, 1, TERN_DATA_TYPE_GUID); /* the ESP becomes a second tern partition */
    CHECK_EQ(open_layout(&m, KLAYOUT_FORMAT, l, &rep), KDISK_EREFUSED);
    CHECK(strstr(rep.error, "2 tern data partitions"));
    CHECK(strstr(rep.error, "#1 \"EFI System Partition\" at LBA 2048"));
    CHECK(strstr(rep.error, "#2 \"tern-data\" at LBA 18432"));
    set_type(&m, 1, GPT_ESP_TYPE_GUID);
    set_type(&m, 2, "0fc63daf-8483-4772-8e79-3d69d8477de4"); /* Linux data */
    CHECK_EQ(open_layout(&m, KLAYOUT_FORMAT, l, &rep), KDISK_EREFUSED);
    CHECK(strstr(rep.error, "no tern data partition (type " TERN_DATA_TYPE_GUID ")"));
    CHECK_EQ(m.writes, writes);
    mem_disk_free(&m);
    free(l);
}

TEST(klayout_foreign_partition_is_refused_and_not_written)
{
    struct mem_disk m;
    struct kdisk_report rep;
    struct klayout *l = layout_new();
    CHECK_EQ(partitioned(&m, 512, 512, 64, 8), 0);
    memcpy(m.data + 9ull * MIB + 1024 + 0x38, "\x53\xef", 2); /* an ext4 magic */
    unsigned writes = m.writes;
    CHECK_EQ(open_layout(&m, KLAYOUT_FORMAT, l, &rep), KDISK_EREFUSED);
    CHECK(strstr(rep.error, "foreign"));
    CHECK_EQ(m.writes, writes);
    mem_disk_free(&m);
    free(l);
}

TEST(klayout_damaged_copies_are_used_around_and_reported)
{
    struct mem_disk m;
    struct kdisk_report rep;
    struct klayout *l = layout_new();
    CHECK_EQ(partitioned(&m, 512, 4096, 64, 8), 0);
    CHECK_EQ(open_layout(&m, KLAYOUT_FORMAT, l, &rep), KDISK_OK);
    m.data[512 + 20] ^= 1;                      /* primary GPT header */
    m.data[9ull * MIB + KSUPER_SLOT_B + 40] ^= 1; /* superblock B */
    CHECK_EQ(open_layout(&m, 0, l, &rep), KDISK_OK);
    CHECK_EQ(rep.note_count, 2);
    CHECK(strstr(rep.notes[0], "primary GPT at LBA 1 is unusable"));
    CHECK(strstr(rep.notes[1], "superblock B is unusable"));
    CHECK_EQ(l->gpt.from_backup, 1);
    CHECK_EQ(l->super.slot, 0);
    mem_disk_free(&m);
    free(l);
}

TEST(klayout_read_only_disk_is_never_written)
{
    struct mem_disk m;
    struct kdisk_report rep;
    struct klayout *l = layout_new();
    CHECK_EQ(partitioned(&m, 512, 512, 64, 8), 0);
    mem_disk_read_only(&m);
    unsigned writes = m.writes;
    CHECK_EQ(open_layout(&m, KLAYOUT_FORMAT, l, &rep), KDISK_EIO);
    CHECK(strstr(rep.error, "read-only"));
    CHECK_EQ(m.writes, writes);
    mem_disk_free(&m);
    free(l);
}
