/*
 * sleep.c - the FADT's sleep fields and the DSDT's \_S5 package (sleep.h).
 * The AML lookup is deliberately minimal: it does not interpret AML, it
 * finds the byte pattern NameOp "_S5_" (optionally rooted, \_S5_) followed
 * by a PackageOp, and reads two integer constants from it, checking every
 * length against the table. A DSDT that computes _S5 in a method is
 * refused rather than guessed at.
 */
#include "sleep.h"

#include <string.h>

enum {
    AML_ZERO = 0x00, AML_ONE = 0x01, AML_NAME = 0x08, AML_BYTE = 0x0A, AML_WORD = 0x0B,
    AML_DWORD = 0x0C, AML_QWORD = 0x0E, AML_PACKAGE = 0x12, AML_ROOT = 0x5C, AML_ONES = 0xFF,
    GAS_SYSTEM_IO = 1,
    FADT_DSDT = 40, FADT_SMI_CMD = 48, FADT_ACPI_ENABLE = 52, FADT_PM1A_CNT = 64,
    FADT_PM1B_CNT = 68, FADT_FLAGS = 112, FADT_X_DSDT = 140, FADT_X_PM1A_CNT = 172,
    FADT_X_PM1B_CNT = 184,
    FADT_HW_REDUCED = 1 << 20,
};

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

/* A generic address structure's port, when it is in system I/O space and
 * fits a port number; 0 otherwise. */
static uint16_t gas_port(const uint8_t *gas)
{
    uint64_t a = le64(gas + 4);
    return gas[0] == GAS_SYSTEM_IO && a <= 0xFFFF ? (uint16_t)a : 0;
}

int acpi_fadt_pm_parse(const uint8_t *f, size_t len, struct acpi_fadt_pm *out, const char **err)
{
    memset(out, 0, sizeof *out);
    if (len < ACPI_FADT_MIN_LEN) {
        *err = "FADT too short";
        return -1;
    }
    if (le32(f + FADT_FLAGS) & FADT_HW_REDUCED) {
        *err = "hardware-reduced ACPI (no PM1 control block): not supported";
        return -1;
    }
    out->dsdt = le32(f + FADT_DSDT);
    if (len >= FADT_X_DSDT + 8 && le64(f + FADT_X_DSDT))
        out->dsdt = le64(f + FADT_X_DSDT);
    uint32_t a = le32(f + FADT_PM1A_CNT), b = le32(f + FADT_PM1B_CNT);
    out->pm1a_cnt = a <= 0xFFFF ? (uint16_t)a : 0;
    out->pm1b_cnt = b <= 0xFFFF ? (uint16_t)b : 0;
    if (!out->pm1a_cnt && len >= FADT_X_PM1A_CNT + 12)
        out->pm1a_cnt = gas_port(f + FADT_X_PM1A_CNT);
    if (!out->pm1b_cnt && len >= FADT_X_PM1B_CNT + 12)
        out->pm1b_cnt = gas_port(f + FADT_X_PM1B_CNT);
    uint32_t smi = le32(f + FADT_SMI_CMD);
    out->smi_cmd = smi <= 0xFFFF ? (uint16_t)smi : 0;
    out->acpi_enable = f[FADT_ACPI_ENABLE];
    if (!out->dsdt) {
        *err = "FADT names no DSDT";
        return -1;
    }
    if (!out->pm1a_cnt) {
        *err = "FADT has no PM1a control block in I/O space";
        return -1;
    }
    return 0;
}

/* One integer constant at p (end exclusive): its value, the bytes used;
 * -1 when it is not one. */
static int aml_const(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
    if (p >= end)
        return -1;
    switch (*p) {
    case AML_ZERO:
        *v = 0;
        return 1;
    case AML_ONE:
        *v = 1;
        return 1;
    case AML_ONES:
        *v = UINT64_MAX;
        return 1;
    case AML_BYTE:
        if (end - p < 2)
            return -1;
        *v = p[1];
        return 2;
    case AML_WORD:
        if (end - p < 3)
            return -1;
        *v = (uint64_t)(p[1] | p[2] << 8);
        return 3;
    case AML_DWORD:
        if (end - p < 5)
            return -1;
        *v = le32(p + 1);
        return 5;
    case AML_QWORD:
        if (end - p < 9)
            return -1;
        *v = le64(p + 1);
        return 9;
    default:
        return -1;
    }
}

int acpi_s5_find(const uint8_t *d, size_t len, uint8_t *typ_a, uint8_t *typ_b, const char **err)
{
    enum { HDR = 36 };
    if (len < HDR) {
        *err = "DSDT shorter than its header";
        return -1;
    }
    const uint8_t *end = d + len;
    for (size_t i = HDR + 1; i + 4 <= len; i++) {
        if (memcmp(d + i, "_S5_", 4))
            continue;
        int named = d[i - 1] == AML_NAME || (d[i - 1] == AML_ROOT && i >= HDR + 2 &&
                                             d[i - 2] == AML_NAME);
        if (!named)
            continue; /* a reference to _S5 (or bytes that look like it) */
        const uint8_t *p = d + i + 4;
        if (p >= end || *p != AML_PACKAGE) {
            *err = "\\_S5 is not a package";
            return -1;
        }
        p++;
        /* PkgLength: the lead byte's top two bits count the bytes that
         * follow; the length counts itself and runs from the lead byte. */
        if (p >= end) {
            *err = "\\_S5's package is cut off";
            return -1;
        }
        const uint8_t *pkg = p;
        unsigned follow = *p >> 6;
        uint32_t plen = follow ? (uint32_t)(*p & 0x0F) : (uint32_t)(*p & 0x3F);
        if ((size_t)(end - p) < 1 + follow) {
            *err = "\\_S5's package is cut off";
            return -1;
        }
        for (unsigned k = 0; k < follow; k++)
            plen |= (uint32_t)p[1 + k] << (4 + 8 * k);
        if (plen > (size_t)(end - pkg) || plen < 1 + follow + 1) {
            *err = "\\_S5's package length runs past the DSDT";
            return -1;
        }
        const uint8_t *pend = pkg + plen;
        p = pkg + 1 + follow;
        unsigned count = *p++;
        if (count < 2) {
            *err = "\\_S5's package has fewer than two elements";
            return -1;
        }
        uint64_t a, b;
        int n = aml_const(p, pend, &a);
        int m = n < 0 ? -1 : aml_const(p + n, pend, &b);
        if (n < 0 || m < 0) {
            *err = "\\_S5's SLP_TYP values are not constants";
            return -1;
        }
        if (a > 7 || b > 7) {
            *err = "\\_S5's SLP_TYP values are out of range";
            return -1;
        }
        *typ_a = (uint8_t)a;
        *typ_b = (uint8_t)b;
        return 0;
    }
    *err = "no \\_S5 object in the DSDT";
    return -1;
}
