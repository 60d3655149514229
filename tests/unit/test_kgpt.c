/*
 * test_kgpt.c - CRC-32 and the GPT reader and writer (disk/crc32.c,
 * disk/gpt.c) on a memory disk: what the writer writes reads back with
 * 512- and 4096-byte logical blocks and 4096-byte physical blocks; a
 * corrupt primary (header or array CRC, a bad field) makes the reader use
 * the backup and say so, a corrupt backup is noted, both corrupt or no
 * protective MBR is refused; overlapping or out-of-range entries are
 * refused even with good CRCs; the writer refuses what it must not write.
 */
#include "test.h"

#include "mem_disk.h"
#include "platform/kernel/disk/crc32.h"
#include "platform/kernel/disk/gpt.h"

#include <stdlib.h>

TEST(kgpt_crc32_matches_the_standard_check_value)
{
    CHECK_EQ(crc32("123456789", 9), 0xCBF43926u);
    CHECK_EQ(crc32("", 0), 0);
    CHECK_EQ(crc32_update(crc32("1234", 4), "56789", 5), 0xCBF43926u);
}

TEST(kgpt_guid_text_round_trips_in_mixed_endian_order)
{
    struct gpt_guid g;
    char text[GPT_GUID_TEXT];
    CHECK_EQ(gpt_guid_parse(TERN_DATA_TYPE_GUID, &g), 0);
    static const uint8_t on_disk[16] = {0x19, 0x9e, 0xc6, 0x66, 0xca, 0x91, 0xa8, 0x4a,
                                        0x8c, 0x74, 0x9a, 0x21, 0x0d, 0x75, 0x9a, 0x38};
    CHECK_MEM(g.b, on_disk, 16);
    gpt_guid_text(&g, text);
    CHECK(strcmp(text, TERN_DATA_TYPE_GUID) == 0);
    CHECK_EQ(gpt_guid_parse("C12A7328-F81F-11D2-BA4B-00A0C93EC93B", &g), 0);
    CHECK_EQ(g.b[0], 0x28);
    CHECK_EQ(g.b[3], 0xc1);
    CHECK(gpt_guid_parse("c12a7328-f81f-11d2-ba4b-00a0c93ec93", &g) < 0);   /* short */
    CHECK(gpt_guid_parse("c12a7328-f81f-11d2-ba4b-00a0c93ec93bb", &g) < 0); /* long */
    CHECK(gpt_guid_parse("c12a7328_f81f-11d2-ba4b-00a0c93ec93b", &g) < 0);
    CHECK(gpt_guid_parse("g12a7328-f81f-11d2-ba4b-00a0c93ec93b", &g) < 0);
}

TEST(kgpt_random_guid_is_version_4)
{
    uint8_t r[16];
    memset(r, 0xff, sizeof r);
    struct gpt_guid g;
    char text[GPT_GUID_TEXT];
    gpt_guid_random(&g, r);
    gpt_guid_text(&g, text);
    CHECK(text[14] == '4');
    CHECK(text[19] == 'b');
}

/* A disk of mib MiB with two partitions written by gpt_write: "one" at
 * 1 MiB (1 MiB long), "two" after it to the last whole MiB. */
static int two_parts(struct mem_disk *m, uint32_t logical, uint32_t physical, uint64_t mib)
{
    if (mem_disk_init(m, logical, physical, mib * 1048576 / logical))
        return -1;
    const uint64_t per_mib = 1048576 / logical;
    uint64_t first, last;
    struct kdisk_report rep;
    kdisk_report_clear(&rep);
    if (gpt_usable(&m->disk, &first, &last, &rep))
        return -1;
    struct gpt_guid disk;
    struct gpt_new_part p[2] = {
        {.first = per_mib, .last = 2 * per_mib - 1, .name = "one"},
        {.first = 2 * per_mib, .last = (last + 1) / per_mib * per_mib - 1, .name = "two"},
    };
    gpt_guid_parse("01234567-89ab-cdef-0123-456789abcdef", &disk);
    gpt_guid_parse(GPT_ESP_TYPE_GUID, &p[0].type);
    gpt_guid_parse(TERN_DATA_TYPE_GUID, &p[1].type);
    gpt_guid_parse("11111111-2222-3333-4444-555555555555", &p[0].guid);
    gpt_guid_parse("66666666-7777-8888-9999-aaaaaaaaaaaa", &p[1].guid);
    return gpt_write(&m->disk, &disk, p, 2, &rep);
}

/* One test's disk (two_parts), table and report. */
struct gfix {
    struct mem_disk m;
    struct kdisk_report rep;
    struct gpt g;
};

static struct gfix *fixture(uint32_t logical, uint32_t physical)
{
    struct gfix *f = calloc(1, sizeof *f);
    if (f && two_parts(&f->m, logical, physical, 16) == 0)
        return f;
    free(f);
    return NULL;
}

static int read_gpt(struct gfix *f)
{
    kdisk_report_clear(&f->rep);
    return gpt_read(&f->m.disk, &f->g, &f->rep);
}

static void fixture_free(struct gfix *f)
{
    mem_disk_free(&f->m);
    free(f);
}

static void check_round_trip(uint32_t logical, uint32_t physical)
{
    struct gfix *f = fixture(logical, physical);
    CHECK(f != NULL);
    CHECK_EQ(read_gpt(f), KDISK_OK);
    CHECK_EQ(f->rep.note_count, 0);
    CHECK_EQ(f->g.from_backup, 0);
    CHECK_EQ(f->g.count, 2);
    CHECK(strcmp(f->g.parts[0].name, "one") == 0 && strcmp(f->g.parts[1].name, "two") == 0);
    CHECK_EQ(f->g.parts[0].index, 1);
    CHECK_EQ(f->g.parts[0].first, 1048576 / logical);
    CHECK_EQ(f->g.hdr.first_usable % (physical / logical), 0);
    CHECK_EQ((f->g.hdr.last_usable + 1) % (physical / logical), 0);
    CHECK_EQ(f->g.hdr.alternate_lba, f->m.disk.capacity - 1);
    struct gpt_guid t;
    gpt_guid_parse(TERN_DATA_TYPE_GUID, &t);
    CHECK(gpt_guid_eq(&f->g.parts[1].type, &t));
    /* the protective MBR covers the disk */
    CHECK_EQ(f->m.data[446 + 4], 0xEE);
    CHECK_EQ(f->m.data[510], 0x55);
    fixture_free(f);
}

TEST(kgpt_written_table_reads_back_512_logical)
{
    check_round_trip(512, 512);
}

TEST(kgpt_written_table_reads_back_512_logical_4096_physical)
{
    check_round_trip(512, 4096);
}

TEST(kgpt_written_table_reads_back_4096_logical)
{
    check_round_trip(4096, 4096);
}

TEST(kgpt_writer_writes_only_whole_physical_blocks)
{
    struct mem_disk m;
    CHECK_EQ(two_parts(&m, 512, 4096, 16), 0);
    /* every byte of the partitions' area is untouched (zero), and the
     * areas the writer owns end on physical boundaries */
    struct kdisk_report rep;
    uint64_t first, last;
    kdisk_report_clear(&rep);
    CHECK_EQ(gpt_usable(&m.disk, &first, &last, &rep), 0);
    CHECK_EQ(first % 8, 0);
    CHECK_EQ((last + 1) % 8, 0);
    CHECK(kdisk_is_zero(m.data + first * 512, (size_t)(last - first + 1) * 512));
    mem_disk_free(&m);
}

/* Header and array LBA of copy (0 primary, 1 backup) of m's GPT. */
static uint64_t header_lba(struct mem_disk *m, int backup) { return backup ? m->disk.capacity - 1 : 1; }

static uint8_t *header_of(struct mem_disk *m, int backup)
{
    return m->data + header_lba(m, backup) * m->disk.logical_block;
}

/* Recompute copy's array CRC and header CRC after a test edited them. */
static void fix_crcs(struct mem_disk *m, int backup)
{
    uint8_t *h = header_of(m, backup);
    uint64_t array = kdisk_le64(h + 72);
    uint32_t bytes = kdisk_le32(h + 80) * kdisk_le32(h + 84);
    kdisk_put32(h + 88, crc32(m->data + array * m->disk.logical_block, bytes));
    kdisk_put32(h + 16, 0);
    kdisk_put32(h + 16, crc32(h, kdisk_le32(h + 12)));
}

static uint8_t *entry_of(struct mem_disk *m, int backup, unsigned index)
{
    uint8_t *h = header_of(m, backup);
    return m->data + kdisk_le64(h + 72) * m->disk.logical_block + (index - 1) * kdisk_le32(h + 84);
}

TEST(kgpt_corrupt_primary_header_uses_the_backup_and_says_so)
{
    struct gfix *f = fixture(512, 512);
    CHECK(f != NULL);
    header_of(&f->m, 0)[40] ^= 1; /* FirstUsableLBA: header CRC now wrong */
    CHECK_EQ(read_gpt(f), KDISK_OK);
    CHECK_EQ(f->g.from_backup, 1);
    CHECK_EQ(f->g.count, 2);
    CHECK_EQ(f->g.hdr.my_lba, f->m.disk.capacity - 1);
    CHECK_EQ(f->rep.note_count, 1);
    CHECK(strstr(f->rep.notes[0], "primary GPT") && strstr(f->rep.notes[0], "header CRC32 mismatch"));
    CHECK(strstr(f->rep.notes[0], "using the backup"));
    fixture_free(f);
}

TEST(kgpt_corrupt_primary_array_uses_the_backup)
{
    struct gfix *f = fixture(4096, 4096);
    CHECK(f != NULL);
    entry_of(&f->m, 0, 2)[60] ^= 0x20; /* a name character */
    CHECK_EQ(read_gpt(f), KDISK_OK);
    CHECK_EQ(f->g.from_backup, 1);
    CHECK(strcmp(f->g.parts[1].name, "two") == 0);
    CHECK(strstr(f->rep.notes[0], "entry array CRC32 mismatch"));
    fixture_free(f);
}

TEST(kgpt_corrupt_backup_keeps_the_primary_and_notes_it)
{
    struct gfix *f = fixture(512, 4096);
    CHECK(f != NULL);
    header_of(&f->m, 1)[0] = 'X'; /* signature */
    CHECK_EQ(read_gpt(f), KDISK_OK);
    CHECK_EQ(f->g.from_backup, 0);
    CHECK_EQ(f->g.count, 2);
    CHECK_EQ(f->rep.note_count, 1);
    CHECK(strstr(f->rep.notes[0], "backup GPT") && strstr(f->rep.notes[0], "signature"));
    fixture_free(f);
}

TEST(kgpt_both_copies_corrupt_is_refused_with_both_reasons)
{
    struct gfix *f = fixture(512, 512);
    CHECK(f != NULL);
    header_of(&f->m, 0)[16] ^= 1;      /* header CRC */
    entry_of(&f->m, 1, 1)[33] ^= 1;    /* backup array */
    CHECK_EQ(read_gpt(f), KDISK_EREFUSED);
    CHECK(strstr(f->rep.error, "no usable GPT"));
    CHECK(strstr(f->rep.error, "header CRC32 mismatch"));
    CHECK(strstr(f->rep.error, "entry array CRC32 mismatch"));
    CHECK_EQ(f->g.count, 0);
    fixture_free(f);
}

TEST(kgpt_disk_without_protective_mbr_is_refused)
{
    struct gfix *f = fixture(512, 512);
    CHECK(f != NULL);
    f->m.data[446 + 4] = 0x83; /* a Linux MBR partition instead of 0xEE */
    CHECK_EQ(read_gpt(f), KDISK_EREFUSED);
    CHECK(strstr(f->rep.error, "not a GPT disk") && strstr(f->rep.error, "0xEE"));
    f->m.data[446 + 4] = 0xEE;
    f->m.data[511] = 0;
    CHECK_EQ(read_gpt(f), KDISK_EREFUSED);
    CHECK(strstr(f->rep.error, "0x55AA"));
    fixture_free(f);
}

TEST(kgpt_blank_disk_is_refused)
{
    struct gfix *f = calloc(1, sizeof *f);
    CHECK(f != NULL);
    CHECK_EQ(mem_disk_init(&f->m, 512, 512, 2048), 0);
    CHECK_EQ(read_gpt(f), KDISK_EREFUSED);
    CHECK(strstr(f->rep.error, "not a GPT disk"));
    fixture_free(f);
}

TEST(kgpt_overlapping_partitions_are_refused_despite_good_crcs)
{
    struct gfix *f = fixture(512, 512);
    CHECK(f != NULL);
    for (int copy = 0; copy < 2; copy++) {
        kdisk_put64(entry_of(&f->m, copy, 1) + 40, 4096 + 100); /* "one" ends inside "two" */
        fix_crcs(&f->m, copy);
    }
    CHECK_EQ(read_gpt(f), KDISK_EREFUSED);
    CHECK(strstr(f->rep.error, "partitions 1 (LBA 2048..4196) and 2 (LBA 4096..") );
    CHECK(strstr(f->rep.error, "overlap"));
    fixture_free(f);
}

TEST(kgpt_partition_outside_usable_lbas_is_refused)
{
    struct gfix *f = fixture(512, 512);
    CHECK(f != NULL);
    kdisk_put64(entry_of(&f->m, 0, 2) + 40, f->m.disk.capacity - 1); /* into the backup GPT */
    fix_crcs(&f->m, 0);
    CHECK_EQ(read_gpt(f), KDISK_OK); /* the backup is still right */
    CHECK_EQ(f->g.from_backup, 1);
    CHECK(strstr(f->rep.notes[0], "partition 2") && strstr(f->rep.notes[0], "usable LBAs"));
    fixture_free(f);
}

TEST(kgpt_header_fields_are_checked_with_a_good_crc)
{
    struct mem_disk m;
    CHECK_EQ(two_parts(&m, 512, 512, 16), 0);
    struct gpt_header h;
    char why[KDISK_MSG_MAX];
    uint8_t blk[512];
    const uint64_t cap = m.disk.capacity;
    struct {
        unsigned off, width;
        uint64_t value;
        const char *want;
    } cases[] = {
        {8, 4, 0x00020000, "revision"},
        {12, 4, 91, "header size"},
        {12, 4, 513, "header size"},
        {24, 8, 2, "MyLBA"},
        {32, 8, cap, "AlternateLBA"},
        {48, 8, cap, "usable LBAs"},
        {40, 8, 0, "usable LBAs"},
        {80, 4, 0, "entries"},
        {80, 4, 100000, "entries"},
        {84, 4, 192, "entries of 192 bytes"},
        {72, 8, 20, "entry array"},       /* overlaps the usable LBAs */
        {72, 8, 1, "entry array"},        /* overlaps the header itself */
        {72, 8, cap - 2, "entry array"},  /* runs off the disk */
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(blk, header_of(&m, 0), sizeof blk);
        if (cases[i].width == 4)
            kdisk_put32(blk + cases[i].off, (uint32_t)cases[i].value);
        else
            kdisk_put64(blk + cases[i].off, cases[i].value);
        kdisk_put32(blk + 16, 0);
        kdisk_put32(blk + 16, crc32(blk, 92));
        if (gpt_header_parse(blk, 512, cap, 1, &h, why, sizeof why) != -1 ||
            !strstr(why, cases[i].want)) {
            fprintf(stderr, "  case %u: %s\n", i, why);
            CHECK(0);
        }
    }
    memcpy(blk, header_of(&m, 0), sizeof blk);
    CHECK_EQ(gpt_header_parse(blk, 512, cap, 1, &h, why, sizeof why), 0);
    mem_disk_free(&m);
}

TEST(kgpt_read_error_is_reported_with_its_lba)
{
    struct gfix *f = fixture(512, 512);
    CHECK(f != NULL);
    f->m.fail_read_lba = 0;
    CHECK_EQ(read_gpt(f), KDISK_EIO);
    CHECK(strstr(f->rep.error, "protective MBR at LBA 0") && strstr(f->rep.error, "I/O error"));
    /* an unreadable backup only costs a note */
    f->m.fail_read_lba = f->m.disk.capacity - 1;
    CHECK_EQ(read_gpt(f), KDISK_OK);
    CHECK(strstr(f->rep.notes[0], "unreadable"));
    fixture_free(f);
}

TEST(kgpt_writer_refuses_overlap_misalignment_and_bad_names)
{
    struct mem_disk m;
    struct kdisk_report rep;
    CHECK_EQ(mem_disk_init(&m, 512, 4096, 32768), 0);
    struct gpt_guid disk;
    gpt_guid_parse("01234567-89ab-cdef-0123-456789abcdef", &disk);
    struct gpt_new_part p[2] = {{.first = 2048, .last = 4095}, {.first = 4004, .last = 6143}};
    gpt_guid_parse(TERN_DATA_TYPE_GUID, &p[0].type);
    p[1].type = p[0].type;
    gpt_guid_parse("11111111-2222-3333-4444-555555555555", &p[0].guid);
    gpt_guid_parse("11111111-2222-3333-4444-555555555556", &p[1].guid);
    kdisk_report_clear(&rep);
    CHECK_EQ(gpt_write(&m.disk, &disk, p, 2, &rep), KDISK_EINVAL);
    CHECK(strstr(rep.error, "physical blocks")); /* 4004 is not on a 4 KiB block */
    p[1].first = 4088;
    CHECK_EQ(gpt_write(&m.disk, &disk, p, 2, &rep), KDISK_EINVAL);
    CHECK(strstr(rep.error, "overlap"));
    p[1].first = 4096;
    p[1].guid = p[0].guid;
    CHECK_EQ(gpt_write(&m.disk, &disk, p, 2, &rep), KDISK_EINVAL);
    CHECK(strstr(rep.error, "same GUID"));
    p[1].guid.b[0] ^= 1;
    p[1].name = "a name that is far too long for a GPT entry";
    CHECK_EQ(gpt_write(&m.disk, &disk, p, 2, &rep), KDISK_EINVAL);
    CHECK(strstr(rep.error, "longer than 36"));
    p[1].name = NULL;
    p[1].last = m.disk.capacity - 1;
    CHECK_EQ(gpt_write(&m.disk, &disk, p, 2, &rep), KDISK_EINVAL);
    CHECK(strstr(rep.error, "usable LBAs"));
    CHECK_EQ(m.writes, 0);
    p[1].last = 6143;
    CHECK_EQ(gpt_write(&m.disk, &disk, p, 2, &rep), KDISK_OK);
    CHECK_EQ(m.flushes, 1);
    mem_disk_free(&m);
}
