/*
 * disk_selftest.h - test builds only (TERN_TEST_HOOKS): the boot argument
 * tern.test.diag=disk runs the disk section writers (diskbench.h) alone,
 * prints their JSON between marker lines and halts, so
 * tests/kernel/test_diag_disk.py checks them before (and independently
 * of) the whole diagnostics mode.
 */
#ifndef TERN_DIAG_DISK_SELFTEST_H
#define TERN_DIAG_DISK_SELFTEST_H

#include "diag/diag.h"

/* Print "tern: diag: disk selftest begin", the object {"disk_read": ...,
 * "disk_write": ...} on one line, "tern: diag: disk selftest end", then
 * halt. The environment is made from what boot found; tern.test.diag_ms
 * (as in the diagnostics mode) sets its time budget. */
_Noreturn void disk_selftest(const struct boot_info *boot, const struct pci_dev *pci,
                             unsigned pci_count, const struct tsc_info *tsc);

#endif
