/*
 * test_kpayload.c - the install payload's parser (install/payload.c, format
 * in payload.h and docs/INSTALL.md) on the host: a well-formed payload
 * built here reads back part by part (zeros where no extent is), then every
 * way a damaged medium can lie - cut short at every length, each header
 * and table byte flipped, extents overlapping, out of order, past their
 * part or the payload, parts misplaced or repeated, a newer version, a data
 * byte flipped (the part's SHA-256) - is refused with a reason.
 * sha256.c comes from test_ksha256.c.
 */
#include "test.h"

#include "platform/kernel/install/payload.c"

#include <stdlib.h>

enum { BIOS = 1 << 20, ESP = 2 << 20, CORE = 1024, NEXT = 4 };


/* The parts as the builder would see them. */
struct parts {
    uint8_t mbr[PAYLOAD_MBR_CODE_BYTES];
    uint8_t core[CORE];
    uint8_t *esp; /* ESP bytes: two islands of data in zeros */
};

static void make_parts(struct parts *p)
{
    for (unsigned i = 0; i < sizeof p->mbr; i++)
        p->mbr[i] = (uint8_t)(i * 7 + 1);
    for (unsigned i = 0; i < sizeof p->core; i++)
        p->core[i] = (uint8_t)(i * 13 + 5);
    p->esp = calloc(1, ESP);
    memset(p->esp, 0xA5, 4096);
    memset(p->esp + ESP - 8192, 0x3C, 4096);
}

/* Reseal the header digest after a deliberate edit of the tables. */
static void reseal(uint8_t *b, size_t tables_end)
{
    struct sha256 c;
    memset(b + 48, 0, 32);
    sha256_init(&c);
    sha256_update(&c, b, tables_end);
    sha256_final(&c, b + 48);
}

/* header, three parts, extents (MBR 1, core 1, ESP 2), data. */
enum { TABLES = PAYLOAD_HEADER_BYTES + 3 * PAYLOAD_PART_BYTES, EXT0 = TABLES,
       TABLES_END = TABLES + NEXT * PAYLOAD_EXTENT_BYTES };

static uint8_t *build(const struct parts *p, size_t *len)
{
    size_t data = TABLES_END;
    size_t total = data + sizeof p->mbr + sizeof p->core + 2 * 4096;
    uint8_t *b = calloc(1, total);
    memcpy(b, PAYLOAD_MAGIC, 8);
    kdisk_put32(b + 8, PAYLOAD_VERSION);
    kdisk_put32(b + 12, PAYLOAD_HEADER_BYTES);
    kdisk_put32(b + 16, 3);
    kdisk_put64(b + 24, BIOS);
    kdisk_put64(b + 32, ESP);
    kdisk_put64(b + 40, total);
    struct { uint32_t kind, next; uint64_t size, where; const uint8_t *bytes; } in[3] = {
        {PAYLOAD_MBR_CODE, 1, sizeof p->mbr, 0, p->mbr},
        {PAYLOAD_BIOS_BOOT, 1, sizeof p->core, 1 << 20, p->core},
        {PAYLOAD_ESP, 2, ESP, (1 << 20) + BIOS, p->esp},
    };
    size_t ext = EXT0, pos = data;
    for (int i = 0; i < 3; i++) {
        uint8_t *pe = b + PAYLOAD_HEADER_BYTES + i * PAYLOAD_PART_BYTES;
        kdisk_put32(pe, in[i].kind);
        kdisk_put32(pe + 4, in[i].next);
        kdisk_put64(pe + 8, in[i].size);
        kdisk_put64(pe + 16, in[i].where);
        kdisk_put64(pe + 24, ext);
        sha256(in[i].bytes, in[i].size, pe + 32);
        for (uint32_t e = 0; e < in[i].next; e++) {
            uint64_t off = in[i].kind == PAYLOAD_ESP ? (e ? ESP - 8192 : 0) : 0;
            uint64_t n = in[i].kind == PAYLOAD_ESP ? 4096 : in[i].size;
            kdisk_put64(b + ext, off);
            kdisk_put64(b + ext + 8, n);
            kdisk_put64(b + ext + 16, pos);
            memcpy(b + pos, in[i].bytes + off, n);
            ext += PAYLOAD_EXTENT_BYTES;
            pos += n;
        }
    }
    reseal(b, TABLES_END);
    *len = total;
    return b;
}

static int parses(const uint8_t *b, size_t len, char *err)
{
    struct payload pl;
    static uint8_t scratch[65536];
    return payload_parse(b, len, &pl, err, PAYLOAD_ERR_MAX) == 0 &&
           payload_check_parts(&pl, scratch, sizeof scratch, err, PAYLOAD_ERR_MAX) == 0;
}

TEST(kpayload_well_formed_reads_back_with_zeros_between_extents)
{
    struct parts p;
    size_t len;
    make_parts(&p);
    uint8_t *b = build(&p, &len);
    struct payload pl;
    char err[PAYLOAD_ERR_MAX] = "";
    CHECK_EQ(payload_parse(b, len, &pl, err, sizeof err), 0);
    CHECK(parses(b, len, err));
    const struct payload_part *esp = payload_part(&pl, PAYLOAD_ESP);
    CHECK(esp != NULL);
    uint8_t *back = malloc(ESP);
    for (uint64_t off = 0; off < ESP; off += 3000) /* odd-sized reads across extents */
        payload_read(&pl, esp, off, back + off, ESP - off < 3000 ? ESP - off : 3000);
    CHECK_MEM(back, p.esp, ESP);
    uint8_t mbr[PAYLOAD_MBR_CODE_BYTES];
    payload_read(&pl, payload_part(&pl, PAYLOAD_MBR_CODE), 0, mbr, sizeof mbr);
    CHECK_MEM(mbr, p.mbr, sizeof mbr);
    free(back);
    free(b);
    free(p.esp);
}

TEST(kpayload_refuses_every_truncation_and_a_padded_copy)
{
    struct parts p;
    size_t len;
    char err[PAYLOAD_ERR_MAX];
    make_parts(&p);
    uint8_t *b = build(&p, &len);
    for (size_t n = 0; n < len; n += n < TABLES_END + 64 ? 1 : 97) {
        uint8_t *cut = malloc(n ? n : 1);
        memcpy(cut, b, n);
        CHECK(!parses(cut, n, err));
        free(cut);
    }
    uint8_t *pad = calloc(1, len + 512);
    memcpy(pad, b, len);
    CHECK(!parses(pad, len + 512, err));
    CHECK(strstr(err, "cut short or padded") != NULL);
    free(pad);
    free(b);
    free(p.esp);
}

TEST(kpayload_refuses_any_flipped_byte)
{
    struct parts p;
    size_t len;
    char err[PAYLOAD_ERR_MAX];
    make_parts(&p);
    uint8_t *b = build(&p, &len);
    /* Every header and table byte (the header digest covers them), then
     * a sample of data bytes (the parts' digests). */
    for (size_t i = 0; i < len; i += i < TABLES_END ? 1 : 61) {
        b[i] ^= 0x40;
        CHECK(!parses(b, len, err));
        b[i] ^= 0x40;
    }
    CHECK(parses(b, len, err));
    b[len - 1] ^= 1;
    CHECK(!parses(b, len, err));
    CHECK(strstr(err, "EFI system partition: SHA-256 mismatch") != NULL);
    free(b);
    free(p.esp);
}

/* Edit the tables, reseal the header digest: the structure checks alone
 * must refuse. */
static void refused_after(void (*edit)(uint8_t *b), const char *want)
{
    struct parts p;
    size_t len;
    char err[PAYLOAD_ERR_MAX] = "";
    make_parts(&p);
    uint8_t *b = build(&p, &len);
    edit(b);
    reseal(b, TABLES_END);
    struct payload pl;
    CHECK_EQ(payload_parse(b, len, &pl, err, sizeof err), -1);
    if (!strstr(err, want))
        fprintf(stderr, "    got \"%s\", wanted \"%s\"\n", err, want);
    CHECK(strstr(err, want) != NULL);
    free(b);
    free(p.esp);
}

static uint8_t *esp_ext(uint8_t *b, int i) { return b + EXT0 + (2 + i) * PAYLOAD_EXTENT_BYTES; }
static uint8_t *part(uint8_t *b, int i)
{
    return b + PAYLOAD_HEADER_BYTES + i * PAYLOAD_PART_BYTES;
}

static void overlap(uint8_t *b) { kdisk_put64(esp_ext(b, 1), 2048); }
static void past_part(uint8_t *b) { kdisk_put64(esp_ext(b, 1), ESP - 100); }
static void data_outside(uint8_t *b) { kdisk_put64(esp_ext(b, 1) + 16, UINT64_MAX - 10); }
static void huge_length(uint8_t *b) { kdisk_put64(esp_ext(b, 1) + 8, UINT64_MAX); }
static void empty_extent(uint8_t *b) { kdisk_put64(esp_ext(b, 0) + 8, 0); }
static void table_outside(uint8_t *b) { kdisk_put64(part(b, 2) + 24, 1ull << 40); }
static void many_extents(uint8_t *b) { kdisk_put32(part(b, 2) + 4, 0x7FFFFFFF); }
static void esp_misplaced(uint8_t *b) { kdisk_put64(part(b, 2) + 16, 3 << 20); }
static void core_too_big(uint8_t *b) { kdisk_put64(part(b, 1) + 8, BIOS + 512); }
static void core_odd(uint8_t *b) { kdisk_put64(part(b, 1) + 8, 1000); }
static void two_cores(uint8_t *b) { kdisk_put32(part(b, 2), PAYLOAD_BIOS_BOOT); }
static void kind_unknown(uint8_t *b) { kdisk_put32(part(b, 0), 9); }
static void newer(uint8_t *b) { kdisk_put32(b + 8, 2); }
static void bad_magic(uint8_t *b) { b[0] = 'X'; }
static void odd_esp_size(uint8_t *b) { kdisk_put64(b + 32, ESP + 512); }

TEST(kpayload_refuses_misplaced_overlapping_and_outside_extents)
{
    refused_after(overlap, "extent 1 overlaps or precedes");
    refused_after(past_part, "extent 1 runs past the part's");
    refused_after(data_outside, "extent 1's bytes lie outside the payload");
    refused_after(huge_length, "extent 1 runs past");
    refused_after(empty_extent, "extent 0 is empty");
    refused_after(table_outside, "extent table outside the payload");
    refused_after(many_extents, "extents (at most");
    refused_after(esp_misplaced, "EFI system partition at byte 3145728 of the disk");
    refused_after(core_too_big, "does not fit");
    refused_after(core_odd, "not whole sectors");
    refused_after(two_cores, "two parts of kind BIOS boot partition");
    refused_after(kind_unknown, "unknown kind 9");
    refused_after(newer, "format version 2, this release reads 1");
    refused_after(bad_magic, "bad magic");
    refused_after(odd_esp_size, "not whole MiB");
}
