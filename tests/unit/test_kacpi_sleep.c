/*
 * test_kacpi_sleep.c - ACPI soft off's table parsing (acpi/sleep.c) on the
 * host: the FADT's PM1 control blocks (legacy fields and the extended
 * generic addresses), hardware-reduced ACPI refused; \_S5 found in QEMU's
 * own DSDTs (dumped from q35 and i440fx machines: tests/unit/data/) and in
 * hand-made ones with every PkgLength encoding; then DSDTs that lie - _S5
 * as a reference only, not a package, a package length past the table, cut
 * at every byte, elements that are not constants or out of range.
 */
#include "test.h"

#include "platform/kernel/acpi/sleep.c"

#include <stdio.h>
#include <stdlib.h>

static size_t dsdt_with(uint8_t *b, size_t cap, const uint8_t *body, size_t n)
{
    memset(b, 0, cap);
    memcpy(b, "DSDT", 4);
    memcpy(b + 36, body, n);
    b[4] = (uint8_t)(36 + n);
    return 36 + n;
}

TEST(kacpi_sleep_s5_found_in_every_pkglength_encoding)
{
    uint8_t b[512], a, bb;
    const char *err = "";
    /* Scope(\_SB) noise, then Name(_S5, Package(4){5, One, 0, 0}): 1-byte
     * PkgLength. */
    const uint8_t one[] = {0x10, 0x05, '\\', '_', 'S', 'B', '_', 0x08, '_', 'S', '5', '_',
                           0x12, 0x07, 0x04, 0x0A, 0x05, 0x01, 0x00, 0x00};
    size_t n = dsdt_with(b, sizeof b, one, sizeof one);
    CHECK_EQ(acpi_s5_find(b, n, &a, &bb, &err), 0);
    CHECK_EQ(a, 5);
    CHECK_EQ(bb, 1);
    /* Rooted name, 2-byte PkgLength (0x40 | low nibble, then high byte),
     * WordConst elements. */
    const uint8_t two[] = {0x08, '\\', '_', 'S', '5', '_', 0x12, 0x49, 0x00, 0x02, 0x0B,
                           0x07, 0x00, 0x0B, 0x06, 0x00};
    n = dsdt_with(b, sizeof b, two, sizeof two);
    CHECK_EQ(acpi_s5_find(b, n, &a, &bb, &err), 0);
    CHECK_EQ(a, 7);
    CHECK_EQ(bb, 6);
    /* A reference (no NameOp before it) is skipped, the declaration after
     * it is used. */
    const uint8_t ref[] = {0x70, '_', 'S', '5', '_', 0x60, 0x08, '_', 'S', '5', '_', 0x12,
                           0x04, 0x02, 0x00, 0x00};
    n = dsdt_with(b, sizeof b, ref, sizeof ref);
    CHECK_EQ(acpi_s5_find(b, n, &a, &bb, &err), 0);
    CHECK_EQ(a, 0);
}

static void s5_refused(const uint8_t *body, size_t len, const char *want)
{
    uint8_t b[512], a, bb;
    const char *err = "";
    size_t n = dsdt_with(b, sizeof b, body, len);
    CHECK_EQ(acpi_s5_find(b, n, &a, &bb, &err), -1);
    if (!strstr(err, want))
        fprintf(stderr, "    got \"%s\", wanted \"%s\"\n", err, want);
    CHECK(strstr(err, want) != NULL);
}

TEST(kacpi_sleep_s5_lies_refused)
{
    const uint8_t none[] = {0x10, 0x05, '\\', '_', 'S', 'B', '_'};
    s5_refused(none, sizeof none, "no \\_S5 object");
    const uint8_t method[] = {0x08, '_', 'S', '5', '_', 0x14, 0x05};
    s5_refused(method, sizeof method, "not a package");
    const uint8_t past[] = {0x08, '_', 'S', '5', '_', 0x12, 0x3F, 0x02, 0x00, 0x00};
    s5_refused(past, sizeof past, "runs past the DSDT");
    const uint8_t four[] = {0x08, '_', 'S', '5', '_', 0x12, 0xC0, 0xFF, 0xFF, 0xFF};
    s5_refused(four, sizeof four, "runs past the DSDT");
    const uint8_t single[] = {0x08, '_', 'S', '5', '_', 0x12, 0x03, 0x01, 0x00};
    s5_refused(single, sizeof single, "fewer than two elements");
    const uint8_t string[] = {0x08, '_', 'S', '5', '_', 0x12, 0x06, 0x02, 0x0D, 'x', 0x00,
                              0x00};
    s5_refused(string, sizeof string, "not constants");
    const uint8_t big[] = {0x08, '_', 'S', '5', '_', 0x12, 0x06, 0x02, 0x0A, 0x08, 0x00, 0x00};
    s5_refused(big, sizeof big, "out of range");
    /* Byte constant cut off by the package's own length. */
    const uint8_t cut[] = {0x08, '_', 'S', '5', '_', 0x12, 0x04, 0x02, 0x00, 0x0A, 0x05};
    s5_refused(cut, sizeof cut, "not constants");
}

TEST(kacpi_sleep_s5_cut_at_every_byte)
{
    const uint8_t body[] = {0x08, '_', 'S', '5', '_', 0x12, 0x07, 0x04, 0x0A, 0x05, 0x01,
                            0x00, 0x00};
    uint8_t b[512], a, bb;
    const char *err;
    size_t n = dsdt_with(b, sizeof b, body, sizeof body);
    for (size_t cut = 0; cut < n - 2; cut++) {
        uint8_t *copy = malloc(cut ? cut : 1); /* ASan sees any read past it */
        memcpy(copy, b, cut);
        CHECK_EQ(acpi_s5_find(copy, cut, &a, &bb, &err), -1);
        free(copy);
    }
}

static void fadt(uint8_t *f, size_t len)
{
    memset(f, 0, len);
    memcpy(f, "FACP", 4);
    f[40] = 0x00, f[41] = 0x10;          /* DSDT 0x1000 */
    f[48] = 0xB2;                        /* SMI_CMD 0xB2 */
    f[52] = 0xF1;                        /* ACPI_ENABLE */
    f[64] = 0x04, f[65] = 0x06;          /* PM1a_CNT 0x604 */
}

TEST(kacpi_sleep_fadt_pm1_blocks)
{
    uint8_t f[276];
    struct acpi_fadt_pm pm;
    const char *err = "";
    fadt(f, sizeof f);
    CHECK_EQ(acpi_fadt_pm_parse(f, sizeof f, &pm, &err), 0);
    CHECK_EQ(pm.pm1a_cnt, 0x604);
    CHECK_EQ(pm.pm1b_cnt, 0);
    CHECK_EQ(pm.dsdt, 0x1000);
    CHECK_EQ(pm.smi_cmd, 0xB2);
    /* X_DSDT wins; X_PM1a_CNT in I/O space when the legacy field is 0. */
    f[140 + 4] = 0x01;                   /* X_DSDT 0x1_0000_0000 */
    f[64] = f[65] = 0;
    f[172] = 1, f[172 + 4] = 0x04, f[172 + 5] = 0xB0;
    CHECK_EQ(acpi_fadt_pm_parse(f, sizeof f, &pm, &err), 0);
    CHECK_EQ(pm.dsdt, 0x100000000ull);
    CHECK_EQ(pm.pm1a_cnt, 0xB004);
    f[172] = 0;                          /* memory space: not usable */
    CHECK_EQ(acpi_fadt_pm_parse(f, sizeof f, &pm, &err), -1);
    CHECK(strstr(err, "no PM1a control block") != NULL);
    fadt(f, sizeof f);
    f[112 + 2] = 0x10;                   /* flags bit 20: hardware-reduced */
    CHECK_EQ(acpi_fadt_pm_parse(f, sizeof f, &pm, &err), -1);
    CHECK(strstr(err, "hardware-reduced") != NULL);
    fadt(f, sizeof f);
    CHECK_EQ(acpi_fadt_pm_parse(f, 100, &pm, &err), -1);
    f[40] = f[41] = 0;
    CHECK_EQ(acpi_fadt_pm_parse(f, sizeof f, &pm, &err), -1);
    CHECK(strstr(err, "no DSDT") != NULL);
}

/* QEMU's DSDTs as its machines hand them to the guest (dumped by the test
 * kernel's tern.test.install.dump=dsdt under QEMU 7.2: q35 and pc). */
static uint8_t *load_dsdt(const char *name, size_t *len)
{
    char path[256];
    const char *dir = getenv("TERN_UNIT_DATA");
    snprintf(path, sizeof path, "%s/%s", dir ? dir : "tests/unit/data", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *b = malloc(1 << 16);
    *len = fread(b, 1, 1 << 16, f);
    fclose(f);
    return b;
}

static void qemu_dsdt(const char *name)
{
    size_t len = 0;
    uint8_t *b = load_dsdt(name, &len), a = 9, bb = 9;
    const char *err = "";
    CHECK(b != NULL);
    if (!b)
        return;
    CHECK(len > 1000 && !memcmp(b, "DSDT", 4));
    CHECK_EQ(acpi_s5_find(b, len, &a, &bb, &err), 0);
    CHECK_EQ(a, 0); /* QEMU: Name(_S5, Package(4){0, 0, 0, 0}); SLP_TYP 0 is soft off */
    CHECK_EQ(bb, 0);
    /* Corrupt copies: cut at every length up to just past the package, and
     * the package's bytes flipped one at a time; each is refused or read
     * as a value in range, never read beyond the copy (ASan). */
    size_t at = 0;
    for (size_t i = 0; i + 4 <= len; i++)
        if (!memcmp(b + i, "_S5_", 4)) {
            at = i;
            break;
        }
    CHECK(at > 36);
    for (size_t cut = at - 2; cut < at + 11; cut++) { /* the package ends at at + 11 */
        uint8_t *copy = malloc(cut);
        memcpy(copy, b, cut);
        CHECK_EQ(acpi_s5_find(copy, cut, &a, &bb, &err), -1);
        free(copy);
    }
    for (size_t i = at + 4; i < at + 12; i++)
        for (unsigned bit = 0; bit < 8; bit++) {
            b[i] ^= (uint8_t)(1u << bit);
            int rc = acpi_s5_find(b, len, &a, &bb, &err);
            CHECK(rc == -1 || (a <= 7 && bb <= 7));
            b[i] ^= (uint8_t)(1u << bit);
        }
    b[at + 4] = 0x14; /* a method, not a package */
    CHECK_EQ(acpi_s5_find(b, len, &a, &bb, &err), -1);
    CHECK(strstr(err, "not a package") != NULL);
    free(b);
}

TEST(kacpi_sleep_qemu_q35_and_i440fx_dsdts)
{
    qemu_dsdt("qemu-q35.dsdt");
    qemu_dsdt("qemu-i440fx.dsdt");
}
