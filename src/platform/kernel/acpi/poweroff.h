/*
 * poweroff.h - switching the machine off through ACPI (S5, soft off): the
 * installer's last step (SPEC A1), so a VPS or a test's QEMU sees the
 * machine stop rather than reboot into the medium again.
 */
#ifndef TERN_ACPI_POWEROFF_H
#define TERN_ACPI_POWEROFF_H

#include <stddef.h>

/* Enter S5: the FADT's PM1a (and PM1b) control blocks get SLP_TYP from the
 * DSDT's \_S5 and SLP_EN. Returns only on failure, with the reason in why
 * (no tables, no \_S5, or the machine still running a while after the
 * write). acpi_init must have run (pci_init does). */
void acpi_poweroff(char *why, size_t n);

#ifdef TERN_TEST_HOOKS
/* Test kernels: print the DSDT as hex lines ("tern: dsdt: OFFSET HEX"), so
 * the unit tests' copies of QEMU's DSDTs can be taken from the machines
 * the kernel tests boot (tern.test.install.dump=dsdt). */
void acpi_dump_dsdt(void);
#endif

#endif
