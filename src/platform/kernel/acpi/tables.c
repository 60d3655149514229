/*
 * tables.c - checks and walks ACPI tables copied through a reader (see
 * tables.h for the rules). Nothing here touches memory except through the
 * reader and the caller's buffers, and every multi-byte field is read with
 * explicit little-endian loads (tables need not be aligned).
 */
#include "tables.h"

#include <string.h>

enum {
    MCFG_ENTRIES_AT = 44,       /* header + 8 reserved bytes */
    MCFG_ENTRY_LEN = 16,
    PHYS_LIMIT_BITS = 52,       /* x86_64's architectural physical address maximum */
};

static uint32_t acpi_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t acpi_le64(const uint8_t *p)
{
    return acpi_le32(p) | (uint64_t)acpi_le32(p + 4) << 32;
}

static uint8_t acpi_sum(const uint8_t *p, size_t n)
{
    uint8_t s = 0;
    for (size_t i = 0; i < n; i++)
        s = (uint8_t)(s + p[i]);
    return s;
}

int acpi_rsdp_parse(const uint8_t *p, size_t len, struct acpi_rsdp *out, const char **err)
{
    if (len < ACPI_RSDP_V1_LEN || memcmp(p, "RSD PTR ", 8) != 0) {
        *err = "RSDP signature missing";
        return -1;
    }
    if (acpi_sum(p, ACPI_RSDP_V1_LEN) != 0) {
        *err = "RSDP checksum is wrong";
        return -1;
    }
    struct acpi_rsdp r = {.revision = p[15], .rsdt = acpi_le32(p + 16), .xsdt = 0};
    /* A 20-byte copy of a newer RSDP (multiboot2's "old" ACPI tag) is a
     * complete ACPI 1.0 RSDP: its RSDT is usable, its XSDT unknown. */
    if (r.revision >= 2 && len >= ACPI_RSDP_V2_LEN) {
        uint32_t length = acpi_le32(p + 20);
        if (length < ACPI_RSDP_V2_LEN || length > len) {
            *err = "RSDP length is wrong";
            return -1;
        }
        if (acpi_sum(p, length) != 0) {
            *err = "RSDP extended checksum is wrong";
            return -1;
        }
        r.xsdt = acpi_le64(p + 24);
    }
    if (!r.rsdt && !r.xsdt) {
        *err = "RSDP names no root table";
        return -1;
    }
    *out = r;
    return 0;
}

long acpi_rsdp_scan(const uint8_t *area, size_t len)
{
    struct acpi_rsdp r;
    const char *err;
    for (size_t off = 0; off + ACPI_RSDP_V1_LEN <= len; off += 16)
        if (acpi_rsdp_parse(area + off, len - off, &r, &err) == 0)
            return (long)off;
    return -1;
}

/* Copy the table at pa into buf and check its header: signature (unless
 * sig is NULL), a length that covers the header and fits cap, and the
 * checksum over that length. Returns the length or -1 with *err. */
static long read_table(acpi_read_fn rd, void *ctx, uint64_t pa, const char *sig, uint8_t *buf,
                       size_t cap, const char **err)
{
    if (cap < ACPI_SDT_HEADER_LEN || rd(ctx, pa, buf, ACPI_SDT_HEADER_LEN) < 0) {
        *err = "table lies outside readable memory";
        return -1;
    }
    if (sig && memcmp(buf, sig, 4) != 0) {
        *err = "table signature is wrong";
        return -1;
    }
    uint32_t length = acpi_le32(buf + 4);
    if (length < ACPI_SDT_HEADER_LEN) {
        *err = "table length is shorter than its header";
        return -1;
    }
    if (length > cap) {
        *err = "table is longer than this kernel reads";
        return -1;
    }
    /* Read the whole table again: the header checked above is part of the
     * copy whose checksum is checked, so nothing is used unchecked. */
    if (rd(ctx, pa, buf, length) < 0) {
        *err = "table runs beyond readable memory";
        return -1;
    }
    if (acpi_le32(buf + 4) != length) {
        *err = "table changed while it was read";
        return -1;
    }
    if (acpi_sum(buf, length) != 0) {
        *err = "table checksum is wrong";
        return -1;
    }
    return (long)length;
}

long acpi_read_table(acpi_read_fn rd, void *ctx, uint64_t pa, const char sig[4], uint8_t *buf,
                     size_t cap, const char **err)
{
    return read_table(rd, ctx, pa, sig, buf, cap, err);
}

/* Search one root table (entries of esize bytes) for sig. */
static long search_root(acpi_read_fn rd, void *ctx, uint64_t root_pa, const char *root_sig,
                        unsigned esize, const char sig[4], uint8_t *buf, size_t cap,
                        const char **err)
{
    uint8_t root[ACPI_ROOT_MAX_LEN];
    long rlen = read_table(rd, ctx, root_pa, root_sig, root, sizeof root, err);
    if (rlen < 0)
        return -1;
    size_t body = (size_t)rlen - ACPI_SDT_HEADER_LEN;
    if (body % esize != 0) {
        *err = "root table length is not a whole number of entries";
        return -1;
    }
    const char *last = "not present";
    for (size_t off = ACPI_SDT_HEADER_LEN; off < (size_t)rlen; off += esize) {
        uint64_t pa = esize == 8 ? acpi_le64(root + off) : acpi_le32(root + off);
        uint8_t hdr[ACPI_SDT_HEADER_LEN];
        if (!pa || rd(ctx, pa, hdr, sizeof hdr) < 0 || memcmp(hdr, sig, 4) != 0)
            continue;
        /* A copy that fails its checks does not hide a later good one. */
        long n = read_table(rd, ctx, pa, sig, buf, cap, &last);
        if (n >= 0)
            return n;
    }
    *err = last;
    return -1;
}

long acpi_find_table(const struct acpi_rsdp *rsdp, const char sig[4], acpi_read_fn rd,
                     void *ctx, uint8_t *buf, size_t cap, const char **root, const char **err)
{
    long n = -1;
    if (rsdp->xsdt) {
        *root = "XSDT";
        n = search_root(rd, ctx, rsdp->xsdt, "XSDT", 8, sig, buf, cap, err);
        /* The spec prefers the XSDT; only a broken one sends us to the RSDT. */
        if (n >= 0 || !strcmp(*err, "not present") || !rsdp->rsdt)
            return n;
    }
    if (rsdp->rsdt) {
        *root = "RSDT";
        n = search_root(rd, ctx, rsdp->rsdt, "RSDT", 4, sig, buf, cap, err);
    }
    return n;
}

int acpi_mcfg_parse(const uint8_t *table, size_t len, struct acpi_mcfg_entry *out,
                    unsigned max, unsigned *skipped, const char **err)
{
    *skipped = 0;
    if (len < MCFG_ENTRIES_AT || memcmp(table, "MCFG", 4) != 0 || acpi_le32(table + 4) != len) {
        *err = "MCFG is too short or not an MCFG";
        return -1;
    }
    if ((len - MCFG_ENTRIES_AT) % MCFG_ENTRY_LEN != 0) {
        *err = "MCFG length is not a whole number of entries";
        return -1;
    }
    unsigned n = 0;
    for (size_t off = MCFG_ENTRIES_AT; off < len; off += MCFG_ENTRY_LEN) {
        const uint8_t *e = table + off;
        struct acpi_mcfg_entry m = {
            .base = acpi_le64(e), .segment = (uint16_t)(e[8] | e[9] << 8),
            .bus_start = e[10], .bus_end = e[11],
        };
        uint64_t end = m.base + ((uint64_t)m.bus_end + 1) * (1u << 20);
        if (m.bus_start > m.bus_end || !m.base || m.base % (1u << 20) ||
            m.base >= (1ull << PHYS_LIMIT_BITS) || end > (1ull << PHYS_LIMIT_BITS) ||
            n == max) {
            ++*skipped;
            continue;
        }
        out[n++] = m;
    }
    if (n == 0) {
        *err = "MCFG has no usable entry";
        return -1;
    }
    return (int)n;
}
