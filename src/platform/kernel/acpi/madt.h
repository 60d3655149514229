/*
 * madt.h - the ACPI MADT ("APIC", ACPI 6.5, 5.2.12): processors (local
 * APIC and x2APIC entries), IO-APICs, interrupt source overrides and NMI
 * entries, parsed by a pure function over a copy of the table, so host
 * tests (tests/unit/test_kmadt.c) and the fuzzer (fuzz_devices) can feed
 * it truncated and lying tables. The diagnostics report counts the
 * processors with it today; SMP bring-up (issue 18) will start them from
 * the same parse.
 *
 * The table is untrusted: the header's length must cover the fixed part
 * and fit the bytes given; every entry's length must be at least 2 and
 * stay inside the table (otherwise the walk stops: the table is refused);
 * an entry shorter than its type needs is skipped and counted; unknown
 * types are skipped (their length field is trusted to step over them, as
 * ACPI asks of readers). Checksums are checked by acpi/tables.c before.
 */
#ifndef TERN_ACPI_MADT_H
#define TERN_ACPI_MADT_H

#include <stddef.h>
#include <stdint.h>

enum {
    MADT_FIXED_LEN = 44,        /* header (36), local APIC address, flags */
    MADT_MAX_LEN = 8192,        /* a copy buffer: ~1000 local APIC entries */
    MADT_MAX_CPUS = 256,        /* processors whose ids are kept */
    MADT_MAX_IOAPICS = 16,
    MADT_MAX_OVERRIDES = 24,
    /* entry types (ACPI 6.5 table 5.20) */
    MADT_T_LAPIC = 0,
    MADT_T_IOAPIC = 1,
    MADT_T_OVERRIDE = 2,
    MADT_T_NMI_SOURCE = 3,
    MADT_T_LAPIC_NMI = 4,
    MADT_T_LAPIC_ADDR = 5,
    MADT_T_X2APIC = 9,
    MADT_T_X2APIC_NMI = 10,
    /* processor flags */
    MADT_CPU_ENABLED = 1u << 0,
    MADT_CPU_ONLINE_CAPABLE = 1u << 1, /* ACPI 6.3+: may be enabled later */
    MADT_PCAT_COMPAT = 1u << 0,        /* table flag: legacy 8259 PICs present */
    MADT_X2APIC_NONE = 0xFFFFFFFFu,    /* a placeholder id firmware may list */
};

struct madt_cpu {
    uint32_t apic_id;           /* local APIC or x2APIC id */
    uint32_t uid;               /* ACPI processor UID */
    uint8_t x2apic;             /* from an x2APIC entry */
    uint8_t enabled;            /* usable now */
    uint8_t online_capable;     /* disabled, but the OS may enable it */
};

struct madt_ioapic {
    uint8_t id;
    uint32_t addr;              /* physical base of its registers */
    uint32_t gsi_base;
};

struct madt_override {
    uint8_t bus, source;        /* ISA IRQ */
    uint32_t gsi;
    uint16_t flags;             /* polarity, trigger mode */
};

struct madt_info {
    uint64_t lapic_addr;        /* from the header, or the 64-bit override */
    uint32_t flags;             /* MADT_PCAT_COMPAT */
    unsigned cpus_enabled;      /* processor entries with MADT_CPU_ENABLED */
    unsigned cpus_online_capable; /* not enabled, online capable */
    unsigned cpus_disabled;     /* neither: not usable */
    unsigned cpus_duplicate;    /* enabled entries repeating an APIC id: ignored */
    unsigned ncpus;             /* entries in cpu[] (enabled and capable) */
    struct madt_cpu cpu[MADT_MAX_CPUS];
    unsigned cpus_dropped;      /* usable processors beyond MADT_MAX_CPUS */
    unsigned nioapics;          /* IO-APIC entries, all counted */
    struct madt_ioapic ioapic[MADT_MAX_IOAPICS]; /* the first ones */
    unsigned noverrides;
    struct madt_override override[MADT_MAX_OVERRIDES];
    unsigned nmi_sources;       /* NMI source entries */
    unsigned lapic_nmis;        /* local APIC and x2APIC NMI entries */
    unsigned unknown;           /* entries of other types */
    unsigned malformed;         /* entries shorter than their type: skipped */
};

/* Parse a checked copy of the MADT (len bytes, its signature "APIC").
 * 0 and *out, or -1 with *err for a table that cannot be walked. */
int madt_parse(const uint8_t *table, size_t len, struct madt_info *out, const char **err);

#endif
