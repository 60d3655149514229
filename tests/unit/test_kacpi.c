/*
 * test_kacpi.c - the ACPI table parser (acpi/tables.c) on the host, over a
 * fake physical memory: RSDP v1 and v2, RSDT and XSDT, MCFG; then the ways
 * firmware can lie - bad checksums, truncated tables, lengths shorter than
 * a header or longer than memory, entry arrays that do not fill the table,
 * pointers outside memory, impossible MCFG entries - each of which must be
 * refused (or skipped) without reading outside what the reader allows.
 */
#include "test.h"

#include "platform/kernel/acpi/tables.c"

enum { MEM_BASE = 0x100000, MEM_LEN = 0x4000 };

/* Physical memory [MEM_BASE, MEM_BASE + MEM_LEN); reads elsewhere fail and
 * are counted. */
struct fakemem {
    uint8_t b[MEM_LEN];
    unsigned refused;
};

static int fake_read(void *ctx, uint64_t pa, void *dst, size_t len)
{
    struct fakemem *m = ctx;
    if (pa < MEM_BASE || pa - MEM_BASE > MEM_LEN || len > MEM_LEN - (pa - MEM_BASE)) {
        m->refused++;
        return -1;
    }
    memcpy(dst, m->b + (pa - MEM_BASE), len);
    return 0;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

static uint8_t *at(struct fakemem *m, uint64_t pa) { return m->b + (pa - MEM_BASE); }

static void fix_checksum(uint8_t *p, size_t len, size_t field)
{
    p[field] = 0;
    p[field] = (uint8_t)(0x100 - acpi_sum(p, len));
}

/* A table header with signature and length; the checksum is set by seal(). */
static void header(uint8_t *p, const char *sig, uint32_t len)
{
    memcpy(p, sig, 4);
    put32(p + 4, len);
    p[8] = 1;
    memcpy(p + 10, "TERNTS", 6);
}

static void seal(uint8_t *p) { fix_checksum(p, acpi_le32(p + 4), 9); }

enum {
    RSDT_AT = MEM_BASE + 0x100, XSDT_AT = MEM_BASE + 0x200, MCFG_AT = MEM_BASE + 0x400,
    FACP_AT = MEM_BASE + 0x600, MCFG2_AT = MEM_BASE + 0x800,
};

static void put_mcfg_entry(uint8_t *e, uint64_t base, uint16_t seg, uint8_t b0, uint8_t b1)
{
    put64(e, base);
    e[8] = (uint8_t)seg;
    e[9] = (uint8_t)(seg >> 8);
    e[10] = b0;
    e[11] = b1;
}

/* Firmware as QEMU q35 builds it: RSDT and XSDT listing a FACP and an MCFG
 * with one entry (ECAM at 0xb0000000, buses 0-255). */
static void build(struct fakemem *m, uint8_t rsdp[36], uint8_t revision)
{
    memset(m, 0, sizeof *m);
    header(at(m, FACP_AT), "FACP", 116);
    seal(at(m, FACP_AT));
    uint8_t *mc = at(m, MCFG_AT);
    header(mc, "MCFG", 60);
    put_mcfg_entry(mc + 44, 0xb0000000, 0, 0, 255);
    seal(mc);
    uint8_t *r = at(m, RSDT_AT);
    header(r, "RSDT", 36 + 8);
    put32(r + 36, FACP_AT);
    put32(r + 40, MCFG_AT);
    seal(r);
    uint8_t *x = at(m, XSDT_AT);
    header(x, "XSDT", 36 + 16);
    put64(x + 36, FACP_AT);
    put64(x + 44, MCFG_AT);
    seal(x);

    memset(rsdp, 0, 36);
    memcpy(rsdp, "RSD PTR ", 8);
    memcpy(rsdp + 9, "TERNTS", 6);
    rsdp[15] = revision;
    put32(rsdp + 16, RSDT_AT);
    fix_checksum(rsdp, 20, 8);
    if (revision >= 2) {
        put32(rsdp + 20, 36);
        put64(rsdp + 24, XSDT_AT);
        fix_checksum(rsdp, 36, 32);
    }
}

static long find_mcfg(struct fakemem *m, const uint8_t *rsdp, size_t rlen, uint8_t *buf,
                      const char **root, const char **err)
{
    struct acpi_rsdp r;
    if (acpi_rsdp_parse(rsdp, rlen, &r, err) < 0)
        return -2;
    return acpi_find_table(&r, "MCFG", fake_read, m, buf, ACPI_MCFG_MAX_LEN, root, err);
}

TEST(kacpi_rsdp_v1_rsdt_mcfg)
{
    static struct fakemem m;
    uint8_t rsdp[36], buf[ACPI_MCFG_MAX_LEN];
    const char *root = NULL, *err = NULL;
    build(&m, rsdp, 0);
    struct acpi_rsdp r;
    CHECK_EQ(acpi_rsdp_parse(rsdp, 20, &r, &err), 0);
    CHECK_EQ(r.revision, 0);
    CHECK_EQ(r.xsdt, 0);
    CHECK_EQ(find_mcfg(&m, rsdp, 20, buf, &root, &err), 60);
    CHECK(!strcmp(root, "RSDT"));
    struct acpi_mcfg_entry e[4];
    unsigned skipped;
    CHECK_EQ(acpi_mcfg_parse(buf, 60, e, 4, &skipped, &err), 1);
    CHECK_EQ(skipped, 0);
    CHECK_EQ(e[0].base, 0xb0000000);
    CHECK_EQ(e[0].segment, 0);
    CHECK_EQ(e[0].bus_start, 0);
    CHECK_EQ(e[0].bus_end, 255);
    CHECK_EQ(m.refused, 0);
}

TEST(kacpi_rsdp_v2_prefers_the_xsdt)
{
    static struct fakemem m;
    uint8_t rsdp[36], buf[ACPI_MCFG_MAX_LEN];
    const char *root = NULL, *err = NULL;
    build(&m, rsdp, 2);
    /* Point the RSDT at nothing: only the XSDT can find the MCFG. */
    put32(at(&m, RSDT_AT) + 40, 0);
    seal(at(&m, RSDT_AT));
    CHECK_EQ(find_mcfg(&m, rsdp, 36, buf, &root, &err), 60);
    CHECK(!strcmp(root, "XSDT"));
}

TEST(kacpi_broken_xsdt_falls_back_to_the_rsdt)
{
    static struct fakemem m;
    uint8_t rsdp[36], buf[ACPI_MCFG_MAX_LEN];
    const char *root = NULL, *err = NULL;
    build(&m, rsdp, 2);
    at(&m, XSDT_AT)[40] ^= 1; /* checksum now wrong */
    CHECK_EQ(find_mcfg(&m, rsdp, 36, buf, &root, &err), 60);
    CHECK(!strcmp(root, "RSDT"));
}

TEST(kacpi_rsdp_checks)
{
    uint8_t rsdp[36];
    static struct fakemem m;
    struct acpi_rsdp r;
    const char *err = NULL;

    build(&m, rsdp, 2);
    CHECK_EQ(acpi_rsdp_parse(rsdp, 19, &r, &err), -1);      /* too short */
    CHECK_EQ(acpi_rsdp_parse(rsdp, 20, &r, &err), 0);       /* the v1 part alone */
    CHECK_EQ(r.xsdt, 0);
    CHECK_EQ(r.rsdt, RSDT_AT);
    CHECK_EQ(acpi_rsdp_parse(rsdp, 36, &r, &err), 0);
    CHECK_EQ(r.xsdt, XSDT_AT);

    rsdp[0] = 'r';
    CHECK_EQ(acpi_rsdp_parse(rsdp, 36, &r, &err), -1);
    CHECK(!strcmp(err, "RSDP signature missing"));
    rsdp[0] = 'R';

    rsdp[16] ^= 0x10; /* RSDT address: the v1 checksum no longer holds */
    CHECK_EQ(acpi_rsdp_parse(rsdp, 36, &r, &err), -1);
    CHECK(!strcmp(err, "RSDP checksum is wrong"));
    rsdp[16] ^= 0x10;

    rsdp[24] ^= 0x10; /* XSDT address: only the extended checksum covers it */
    CHECK_EQ(acpi_rsdp_parse(rsdp, 36, &r, &err), -1);
    CHECK(!strcmp(err, "RSDP extended checksum is wrong"));
    rsdp[24] ^= 0x10;

    /* A length field claiming more than the copy holds. */
    put32(rsdp + 20, 4096);
    fix_checksum(rsdp, 36, 32);
    fix_checksum(rsdp, 20, 8);
    CHECK_EQ(acpi_rsdp_parse(rsdp, 36, &r, &err), -1);
    CHECK(!strcmp(err, "RSDP length is wrong"));
    put32(rsdp + 20, 20);
    fix_checksum(rsdp, 36, 32);
    fix_checksum(rsdp, 20, 8);
    CHECK_EQ(acpi_rsdp_parse(rsdp, 36, &r, &err), -1);
    CHECK(!strcmp(err, "RSDP length is wrong"));
}

TEST(kacpi_rsdp_scan_takes_only_aligned_valid_candidates)
{
    static uint8_t area[512];
    uint8_t rsdp[36];
    static struct fakemem m;
    build(&m, rsdp, 0);
    memset(area, 0, sizeof area);
    memcpy(area + 0x48, rsdp, 20);   /* not on a 16-byte boundary */
    memcpy(area + 0x80, rsdp, 20);   /* aligned, but broken below */
    area[0x80 + 17] ^= 1;
    CHECK_EQ(acpi_rsdp_scan(area, sizeof area), -1);
    memcpy(area + 0x1E0, rsdp, 20);  /* aligned, valid, ends 12 bytes early */
    CHECK_EQ(acpi_rsdp_scan(area, sizeof area), 0x1E0);
    CHECK_EQ(acpi_rsdp_scan(area, sizeof area - 13), -1); /* would run off the end */
}

/* One lie in the firmware; the MCFG must not be returned. */
static const char *mcfg_error_after(void (*lie)(struct fakemem *m))
{
    static struct fakemem m;
    uint8_t rsdp[36], buf[ACPI_MCFG_MAX_LEN];
    const char *root = NULL, *err = NULL;
    build(&m, rsdp, 0);
    lie(&m);
    long n = find_mcfg(&m, rsdp, 20, buf, &root, &err);
    return n < 0 ? err : NULL;
}

static void mcfg_bad_checksum(struct fakemem *m) { at(m, MCFG_AT)[50] ^= 1; }
/* Its header would run off the end of memory: skipped like any entry
 * that cannot be read, so the MCFG is not present. */
static void mcfg_header_beyond_memory(struct fakemem *m)
{
    uint8_t *mc = at(m, MCFG_AT);
    memmove(at(m, MEM_BASE + MEM_LEN - 30), mc, 30); /* 30 bytes left before the end */
    put32(at(m, RSDT_AT) + 40, MEM_BASE + MEM_LEN - 30);
    seal(at(m, RSDT_AT));
}
static void mcfg_length_below_header(struct fakemem *m)
{
    put32(at(m, MCFG_AT) + 4, 20);
    seal(at(m, MCFG_AT));
}
static void mcfg_length_huge(struct fakemem *m)
{
    put32(at(m, MCFG_AT) + 4, 0xFFFFFFF0u);
}
static void mcfg_length_beyond_memory(struct fakemem *m)
{
    /* 100 bytes before the end, claiming 200: fits the buffer, not memory. */
    uint8_t *mc = at(m, MEM_BASE + MEM_LEN - 100);
    memcpy(mc, at(m, MCFG_AT), 60);
    put32(mc + 4, 200);
    put32(at(m, RSDT_AT) + 40, MEM_BASE + MEM_LEN - 100);
    seal(at(m, RSDT_AT));
}
static void rsdt_bad_checksum(struct fakemem *m) { at(m, RSDT_AT)[37] ^= 1; }
static void rsdt_ragged(struct fakemem *m)
{
    put32(at(m, RSDT_AT) + 4, 36 + 6);
    seal(at(m, RSDT_AT));
}
static void rsdt_below_header(struct fakemem *m)
{
    put32(at(m, RSDT_AT) + 4, 35);
    seal(at(m, RSDT_AT));
}
static void rsdt_wrong_signature(struct fakemem *m)
{
    memcpy(at(m, RSDT_AT), "XSDT", 4);
    seal(at(m, RSDT_AT));
}
static void mcfg_outside_memory(struct fakemem *m)
{
    put32(at(m, RSDT_AT) + 40, 0x1000);
    seal(at(m, RSDT_AT));
}
static void no_mcfg(struct fakemem *m) { memcpy(at(m, MCFG_AT), "SSDT", 4); }

TEST(kacpi_lying_tables_are_refused)
{
    static const struct {
        void (*lie)(struct fakemem *);
        const char *err;
    } cases[] = {
        {mcfg_bad_checksum, "table checksum is wrong"},
        {mcfg_header_beyond_memory, "not present"},
        {mcfg_length_below_header, "table length is shorter than its header"},
        {mcfg_length_huge, "table is longer than this kernel reads"},
        {mcfg_length_beyond_memory, "table runs beyond readable memory"},
        {rsdt_bad_checksum, "table checksum is wrong"},
        {rsdt_ragged, "root table length is not a whole number of entries"},
        {rsdt_below_header, "table length is shorter than its header"},
        {rsdt_wrong_signature, "table signature is wrong"},
        {mcfg_outside_memory, "not present"},
        {no_mcfg, "not present"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *err = mcfg_error_after(cases[i].lie);
        if (!err || strcmp(err, cases[i].err) != 0)
            fprintf(stderr, "  case %zu: got %s, want %s\n", i, err ? err : "(found)",
                    cases[i].err);
        CHECK(err != NULL);
        CHECK(!strcmp(err, cases[i].err));
    }
}

TEST(kacpi_a_bad_copy_does_not_hide_a_good_one)
{
    static struct fakemem m;
    uint8_t rsdp[36], buf[ACPI_MCFG_MAX_LEN];
    const char *root = NULL, *err = NULL;
    build(&m, rsdp, 0);
    /* RSDT: FACP, a broken MCFG, then a good one. */
    memcpy(at(&m, MCFG2_AT), at(&m, MCFG_AT), 60);
    at(&m, MCFG_AT)[50] ^= 1;
    uint8_t *r = at(&m, RSDT_AT);
    header(r, "RSDT", 36 + 12);
    put32(r + 36, FACP_AT);
    put32(r + 40, MCFG_AT);
    put32(r + 44, MCFG2_AT);
    seal(r);
    CHECK_EQ(find_mcfg(&m, rsdp, 20, buf, &root, &err), 60);
    CHECK_MEM(buf, at(&m, MCFG2_AT), 60);
}

TEST(kacpi_mcfg_entries_checked)
{
    uint8_t t[44 + 16 * 6];
    memset(t, 0, sizeof t);
    header(t, "MCFG", sizeof t);
    put_mcfg_entry(t + 44, 0xe0000000, 0, 0, 63);                 /* good */
    put_mcfg_entry(t + 60, 0xf0000000, 0, 9, 8);                  /* buses inverted */
    put_mcfg_entry(t + 76, 0, 0, 0, 255);                         /* base zero */
    put_mcfg_entry(t + 92, 0xe0080000, 0, 0, 1);                  /* not 1 MiB-aligned */
    put_mcfg_entry(t + 108, (1ull << 52) - (1u << 20), 0, 0, 1);  /* past 52 bits */
    put_mcfg_entry(t + 124, 0x3000000000ull, 1, 0, 255);          /* good, segment 1 */
    seal(t);
    struct acpi_mcfg_entry e[4];
    unsigned skipped;
    const char *err = NULL;
    CHECK_EQ(acpi_mcfg_parse(t, sizeof t, e, 4, &skipped, &err), 2);
    CHECK_EQ(skipped, 4);
    CHECK_EQ(e[0].bus_end, 63);
    CHECK_EQ(e[1].segment, 1);
    CHECK_EQ(e[1].base, 0x3000000000ull);
    /* More entries than the caller takes: the rest are skipped. */
    CHECK_EQ(acpi_mcfg_parse(t, sizeof t, e, 1, &skipped, &err), 1);
    CHECK_EQ(skipped, 5);
    /* A length that does not match the header's, or ragged entries. */
    CHECK_EQ(acpi_mcfg_parse(t, sizeof t - 16, e, 4, &skipped, &err), -1);
    put32(t + 4, sizeof t - 4);
    CHECK_EQ(acpi_mcfg_parse(t, sizeof t - 4, e, 4, &skipped, &err), -1);
    CHECK(!strcmp(err, "MCFG length is not a whole number of entries"));
    /* Only impossible entries. */
    put32(t + 4, 44 + 16);
    memcpy(t + 44, t + 60, 16);
    CHECK_EQ(acpi_mcfg_parse(t, 44 + 16, e, 4, &skipped, &err), -1);
    CHECK(!strcmp(err, "MCFG has no usable entry"));
    CHECK_EQ(acpi_mcfg_parse(t, 40, e, 4, &skipped, &err), -1);
}
