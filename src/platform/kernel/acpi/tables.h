/*
 * tables.h - the ACPI tables tern reads (ACPI 6.x, 5.2): the RSDP, the
 * root tables (RSDT, XSDT) and MCFG (PCI Firmware spec 3.x, 4.1.2), parsed
 * as pure functions over a caller-supplied reader of physical memory, so
 * host tests (tests/unit/test_kacpi.c) can feed them lying tables.
 *
 * Firmware tables are untrusted input: every table is copied before it is
 * checked (the firmware cannot change it between check and use), its
 * length must cover its header and fit the caller's buffer and the memory
 * the reader allows, its checksum must hold, and entry arrays must fill
 * the table exactly.
 */
#ifndef TERN_ACPI_TABLES_H
#define TERN_ACPI_TABLES_H

#include <stddef.h>
#include <stdint.h>

enum {
    ACPI_RSDP_V1_LEN = 20,
    ACPI_RSDP_V2_LEN = 36,
    ACPI_SDT_HEADER_LEN = 36,
    ACPI_ROOT_MAX_LEN = 4096,   /* RSDT/XSDT: 36 + 8 x 507 entries */
    ACPI_MCFG_MAX_LEN = 4096,
    ACPI_MCFG_MAX_ENTRIES = 16,
    ACPI_BIOS_AREA = 0xE0000,   /* RSDP search area without a loader's help */
    ACPI_BIOS_AREA_LEN = 0x20000,
    ACPI_EBDA_SEARCH_LEN = 1024,
};

/* Copy len bytes at physical address pa into dst; 0, or -1 when the range
 * is not memory the caller is willing to read. */
typedef int (*acpi_read_fn)(void *ctx, uint64_t pa, void *dst, size_t len);

struct acpi_rsdp {
    uint8_t revision;      /* 0: ACPI 1.0 (RSDT only); 2 and up: XSDT too */
    uint32_t rsdt;
    uint64_t xsdt;         /* 0 when absent */
};

/* Check an RSDP image of len bytes (a loader's copy or memory): signature,
 * checksum of the first 20 bytes and, from revision 2 when len >= 36, the
 * length field (36..len) and the extended checksum. A 20-byte image is
 * read as ACPI 1.0 (RSDT only) whatever its revision. 0, or -1 with *err. */
int acpi_rsdp_parse(const uint8_t *p, size_t len, struct acpi_rsdp *out, const char **err);

/* Offset of the first valid RSDP on a 16-byte boundary in area, or -1. */
long acpi_rsdp_scan(const uint8_t *area, size_t len);

/* Find the table with signature sig through the XSDT (or, when there is
 * none or it is unusable, the RSDT) and copy it, checked, into buf (cap
 * bytes). Returns its length; -1 with *err when it is absent (*err =
 * "not present") or no copy of it passes the checks. *root names the
 * root table used ("XSDT", "RSDT"). */
long acpi_find_table(const struct acpi_rsdp *rsdp, const char sig[4], acpi_read_fn rd,
                     void *ctx, uint8_t *buf, size_t cap, const char **root, const char **err);

/* Copy the table at physical address pa (a table no root lists, such as
 * the DSDT the FADT points to) into buf, checked as acpi_find_table checks
 * (signature sig, length, checksum). Its length, or -1 with *err. */
long acpi_read_table(acpi_read_fn rd, void *ctx, uint64_t pa, const char sig[4], uint8_t *buf,
                     size_t cap, const char **err);

/* One MCFG allocation: ECAM for buses bus_start..bus_end of a segment,
 * whose bus 0 would sit at base. */
struct acpi_mcfg_entry {
    uint64_t base;
    uint16_t segment;
    uint8_t bus_start, bus_end;
};

/* Parse a checked MCFG copy. Entries that cannot be right (buses
 * inverted, base zero or not 1 MiB-aligned, window beyond 52-bit physical
 * addresses) are skipped and counted in *skipped. Returns the number of
 * entries stored (at most max), or -1 with *err for a malformed table. */
int acpi_mcfg_parse(const uint8_t *table, size_t len, struct acpi_mcfg_entry *out,
                    unsigned max, unsigned *skipped, const char **err);

#endif
