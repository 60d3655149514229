/*
 * test_kmadt.c - the MADT parser (acpi/madt.c) on the host: a table as
 * QEMU builds it for -smp 2 (two local APICs, one IO-APIC, overrides, a
 * local APIC NMI), x2APIC entries, disabled and online-capable
 * processors, duplicates; then lying tables - a length field beyond the
 * copy or below the fixed part, entries of length 0 or 1 (which would
 * loop), entries running past the end, entries shorter than their type,
 * every truncation of a good table - each refused or skipped, never read
 * beyond the bytes given (ASan).
 */
#include "test.h"

#include "platform/kernel/acpi/madt.c"

#include <stdlib.h>

struct tb {
    uint8_t b[512];
    size_t len;
};

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void start(struct tb *t)
{
    memset(t, 0, sizeof *t);
    memcpy(t->b, "APIC", 4);
    put32(t->b + 36, 0xFEE00000);
    put32(t->b + 40, MADT_PCAT_COMPAT);
    t->len = MADT_FIXED_LEN;
    put32(t->b + 4, (uint32_t)t->len);
}

static uint8_t *add(struct tb *t, uint8_t type, uint8_t len)
{
    uint8_t *e = t->b + t->len;
    e[0] = type;
    e[1] = len;
    t->len += len;
    put32(t->b + 4, (uint32_t)t->len);
    return e;
}

static void lapic(struct tb *t, uint8_t uid, uint8_t id, uint32_t flags)
{
    uint8_t *e = add(t, MADT_T_LAPIC, 8);
    e[2] = uid;
    e[3] = id;
    put32(e + 4, flags);
}

static void x2apic(struct tb *t, uint32_t id, uint32_t uid, uint32_t flags)
{
    uint8_t *e = add(t, MADT_T_X2APIC, 16);
    put32(e + 4, id);
    put32(e + 8, flags);
    put32(e + 12, uid);
}

/* What QEMU's q35 gives with -smp 2. */
static void qemu_smp2(struct tb *t)
{
    start(t);
    lapic(t, 0, 0, MADT_CPU_ENABLED);
    lapic(t, 1, 1, MADT_CPU_ENABLED);
    uint8_t *io = add(t, MADT_T_IOAPIC, 12);
    io[2] = 0;
    put32(io + 4, 0xFEC00000);
    put32(io + 8, 0);
    uint8_t *o = add(t, MADT_T_OVERRIDE, 10);
    o[3] = 0;
    put32(o + 4, 2);
    o = add(t, MADT_T_OVERRIDE, 10);
    o[3] = 9;
    put32(o + 4, 9);
    put16(o + 8, 0x000D);
    uint8_t *n = add(t, MADT_T_LAPIC_NMI, 6);
    n[2] = 0xFF;
    n[5] = 1;
}

TEST(madt_qemu_smp2_two_enabled_cpus_one_ioapic)
{
    struct tb t;
    qemu_smp2(&t);
    struct madt_info m;
    const char *err = NULL;
    CHECK_EQ(madt_parse(t.b, t.len, &m, &err), 0);
    CHECK_EQ(m.cpus_enabled, 2);
    CHECK_EQ(m.ncpus, 2);
    CHECK_EQ(m.cpu[0].apic_id, 0);
    CHECK_EQ(m.cpu[1].apic_id, 1);
    CHECK_EQ(m.cpu[1].uid, 1);
    CHECK_EQ(m.cpus_online_capable, 0);
    CHECK_EQ(m.nioapics, 1);
    CHECK_EQ(m.ioapic[0].addr, 0xFEC00000u);
    CHECK_EQ(m.noverrides, 2);
    CHECK_EQ(m.override[0].source, 0);
    CHECK_EQ(m.override[0].gsi, 2);
    CHECK_EQ(m.override[1].flags, 0x000D);
    CHECK_EQ(m.lapic_nmis, 1);
    CHECK_EQ(m.lapic_addr, 0xFEE00000u);
    CHECK_EQ(m.flags & MADT_PCAT_COMPAT, MADT_PCAT_COMPAT);
    CHECK_EQ(m.malformed, 0);
    CHECK_EQ(m.unknown, 0);
}

TEST(madt_counts_disabled_online_capable_and_x2apic_cpus)
{
    struct tb t;
    start(&t);
    lapic(&t, 0, 0, MADT_CPU_ENABLED);
    lapic(&t, 1, 1, 0);                          /* disabled: not usable */
    lapic(&t, 2, 2, MADT_CPU_ONLINE_CAPABLE);    /* hot-pluggable */
    x2apic(&t, 300, 3, MADT_CPU_ENABLED);        /* beyond 8-bit ids */
    x2apic(&t, MADT_X2APIC_NONE, 4, MADT_CPU_ENABLED); /* placeholder */
    uint8_t *x = add(&t, MADT_T_X2APIC_NMI, 12);
    put32(x + 4, 0xFFFFFFFF);
    add(&t, MADT_T_NMI_SOURCE, 8);
    uint8_t *a = add(&t, MADT_T_LAPIC_ADDR, 12);
    put32(a + 4, 0x12345000);
    put32(a + 8, 0x1);
    add(&t, 0x7F, 5);                            /* unknown type, stepped over */
    struct madt_info m;
    const char *err;
    CHECK_EQ(madt_parse(t.b, t.len, &m, &err), 0);
    CHECK_EQ(m.cpus_enabled, 2);
    CHECK_EQ(m.cpus_online_capable, 1);
    CHECK_EQ(m.cpus_disabled, 1);
    CHECK_EQ(m.ncpus, 3);
    CHECK_EQ(m.cpu[2].apic_id, 300);
    CHECK_EQ(m.cpu[2].x2apic, 1);
    CHECK_EQ(m.cpu[1].online_capable, 1);
    CHECK_EQ(m.malformed, 1);
    CHECK_EQ(m.lapic_nmis, 1);
    CHECK_EQ(m.nmi_sources, 1);
    CHECK_EQ(m.unknown, 1);
    CHECK(m.lapic_addr == 0x112345000ull);
}

TEST(madt_same_apic_id_twice_is_one_cpu)
{
    struct tb t;
    start(&t);
    lapic(&t, 0, 0, MADT_CPU_ENABLED);
    x2apic(&t, 0, 0, MADT_CPU_ENABLED);
    struct madt_info m;
    const char *err;
    CHECK_EQ(madt_parse(t.b, t.len, &m, &err), 0);
    CHECK_EQ(m.cpus_enabled, 1);
    CHECK_EQ(m.cpus_duplicate, 1);
}

TEST(madt_short_entry_skipped_not_read)
{
    struct tb t;
    start(&t);
    lapic(&t, 0, 0, MADT_CPU_ENABLED);
    uint8_t *e = add(&t, MADT_T_X2APIC, 8);     /* x2APIC needs 16 */
    put32(e + 4, 7);
    add(&t, MADT_T_IOAPIC, 4);                  /* IO-APIC needs 12 */
    struct madt_info m;
    const char *err;
    CHECK_EQ(madt_parse(t.b, t.len, &m, &err), 0);
    CHECK_EQ(m.cpus_enabled, 1);
    CHECK_EQ(m.malformed, 2);
    CHECK_EQ(m.nioapics, 0);
}

TEST(madt_refuses_lying_lengths)
{
    struct tb t;
    struct madt_info m;
    const char *err = NULL;
    qemu_smp2(&t);
    put32(t.b + 4, (uint32_t)t.len + 1);        /* longer than the copy */
    CHECK_EQ(madt_parse(t.b, t.len, &m, &err), -1);
    CHECK(strstr(err, "length field"));
    put32(t.b + 4, 40);                         /* below the fixed part */
    CHECK_EQ(madt_parse(t.b, t.len, &m, &err), -1);
    qemu_smp2(&t);
    memcpy(t.b, "APIX", 4);
    CHECK_EQ(madt_parse(t.b, t.len, &m, &err), -1);
    CHECK(strstr(err, "signature"));
    CHECK_EQ(madt_parse(t.b, 43, &m, &err), -1);
    CHECK_EQ(madt_parse(NULL, 0, &m, &err), -1);
}

TEST(madt_refuses_entry_length_zero_or_one_or_past_end)
{
    for (uint8_t bad = 0; bad < 2; bad++) {
        struct tb t;
        start(&t);
        lapic(&t, 0, 0, MADT_CPU_ENABLED);
        uint8_t *e = add(&t, MADT_T_LAPIC, 8);
        e[1] = bad;                              /* would never advance */
        struct madt_info m;
        const char *err = NULL;
        CHECK_EQ(madt_parse(t.b, t.len, &m, &err), -1);
        CHECK(strstr(err, "below 2"));
    }
    struct tb t;
    start(&t);
    uint8_t *e = add(&t, MADT_T_LAPIC, 8);
    e[1] = 9;                                    /* one byte past the end */
    struct madt_info m;
    const char *err = NULL;
    CHECK_EQ(madt_parse(t.b, t.len, &m, &err), -1);
    CHECK(strstr(err, "past the table"));
    start(&t);
    add(&t, MADT_T_LAPIC, 8);
    t.b[t.len++] = MADT_T_LAPIC;                 /* a lone type byte at the end */
    put32(t.b + 4, (uint32_t)t.len);
    CHECK_EQ(madt_parse(t.b, t.len, &m, &err), -1);
    CHECK(strstr(err, "cut off"));
}

/* Every prefix of a good table, its length field kept: refused (the
 * field lies) and read only within the prefix, in a buffer of exactly
 * that size so ASan sees any overread. */
TEST(madt_every_truncation_refused_within_bounds)
{
    struct tb t;
    qemu_smp2(&t);
    for (size_t n = 0; n < t.len; n++) {
        uint8_t *copy = malloc(n ? n : 1);
        memcpy(copy, t.b, n);
        struct madt_info m;
        const char *err = NULL;
        CHECK_EQ(madt_parse(copy, n, &m, &err), -1);
        CHECK(err != NULL);
        free(copy);
    }
    /* Truncated with the length field made to match: the walk itself
     * must find the entry that no longer fits. */
    for (size_t n = MADT_FIXED_LEN + 1; n < t.len; n++) {
        uint8_t *copy = malloc(n);
        memcpy(copy, t.b, n);
        put32(copy + 4, (uint32_t)n);
        struct madt_info m;
        const char *err = NULL;
        int r = madt_parse(copy, n, &m, &err);
        /* Entry boundaries: 52, 60, 72, 82, 92 parse; anything else not. */
        int boundary = n == 52 || n == 60 || n == 72 || n == 82 || n == 92;
        CHECK_EQ(r, boundary ? 0 : -1);
        free(copy);
    }
}

TEST(madt_keeps_at_most_max_cpus_and_counts_the_rest)
{
    static uint8_t big[MADT_FIXED_LEN + 300 * 16];
    memset(big, 0, sizeof big);
    memcpy(big, "APIC", 4);
    put32(big + 4, sizeof big);
    for (unsigned i = 0; i < 300; i++) {
        uint8_t *e = big + MADT_FIXED_LEN + i * 16;
        e[0] = MADT_T_X2APIC;
        e[1] = 16;
        put32(e + 4, i);
        put32(e + 8, MADT_CPU_ENABLED);
        put32(e + 12, i);
    }
    static struct madt_info m;
    const char *err;
    CHECK_EQ(madt_parse(big, sizeof big, &m, &err), 0);
    CHECK_EQ(m.cpus_enabled, 300);
    CHECK_EQ(m.ncpus, MADT_MAX_CPUS);
    CHECK_EQ(m.cpus_dropped, 300 - MADT_MAX_CPUS);
}
