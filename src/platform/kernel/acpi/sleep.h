/*
 * sleep.h - what the kernel needs to power the machine off through ACPI
 * (ACPI 6.x, 4.8.3.2 and 7.4.2): the FADT's PM1a/PM1b control blocks and
 * the SLP_TYP values of the \_S5 (soft off) object in the DSDT. Pure
 * functions over copies of the tables (firmware tables are untrusted
 * input), unit-tested with QEMU's own DSDTs (q35, i440fx) and corrupt ones
 * in tests/unit/test_kacpi_sleep.c. poweroff.h does the port writes.
 */
#ifndef TERN_ACPI_SLEEP_H
#define TERN_ACPI_SLEEP_H

#include <stddef.h>
#include <stdint.h>

enum {
    ACPI_FADT_MIN_LEN = 116,      /* through the flags field (ACPI 1.0's table) */
    ACPI_DSDT_MAX_LEN = 1 << 20,  /* DSDTs read; QEMU's are under 16 KiB */
    ACPI_SLP_TYP_SHIFT = 10,      /* PM1 control: SLP_TYP is bits 10-12 */
    ACPI_SLP_EN = 1 << 13,
    ACPI_SCI_EN = 1,
};

/* The FADT's fields for sleeping: I/O ports (0 when absent). */
struct acpi_fadt_pm {
    uint64_t dsdt;             /* physical address (X_DSDT when present) */
    uint16_t pm1a_cnt, pm1b_cnt;
    uint16_t smi_cmd;          /* with acpi_enable: how to enter ACPI mode */
    uint8_t acpi_enable;
};

/* Parse a checked FADT copy ("FACP"). 0, or -1 with *err: too short, no
 * DSDT, no PM1a control block in I/O space, hardware-reduced ACPI (no PM1
 * blocks: not supported). */
int acpi_fadt_pm_parse(const uint8_t *fadt, size_t len, struct acpi_fadt_pm *out,
                       const char **err);

/* Find Name(_S5, Package(){SLP_TYPa, SLP_TYPb, ...}) in a checked DSDT copy
 * (header included) and read its first two elements (integer constants of
 * 0..7). 0, or -1 with *err (not found, truncated, not a package, an
 * element that is not a constant or out of range). */
int acpi_s5_find(const uint8_t *dsdt, size_t len, uint8_t *typ_a, uint8_t *typ_b,
                 const char **err);

#endif
