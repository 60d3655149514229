/*
 * diag.h - the kernel's diagnostics mode (SPEC E1-E4): what the section
 * writers (diag/hw.h, diag/diskbench.h, src/diag/cryptobench.h) are told
 * about the machine, and the entry points main.c calls for the ISO's
 * "Diagnostics" (tern.mode=diag) and "Diagnostics, then serve"
 * (tern.mode=diag-serve) entries. The report's schema is docs/DIAGNOSTICS.md.
 */
#ifndef TERN_DIAG_DIAG_H
#define TERN_DIAG_DIAG_H

#include "arch/x86_64/timer.h"
#include "bootinfo.h"
#include "dev/pci.h"

#include <stddef.h>

/* What boot found, handed to every section writer; read-only to them. */
struct diag_env {
    const struct boot_info *boot; /* loader's information (memory map, RSDP, fb) */
    const struct pci_dev *pci;    /* devices found at boot */
    unsigned pci_count;
    const struct tsc_info *tsc;   /* measured TSC rate, invariance */
    const char *loader;           /* "multiboot2" or "pvh" (boot->loader) */
    const char *mode;             /* "diag" or "diag-serve" */
    int serve_after;              /* 1 in diag-serve: the broker starts after */
    /* Time bound for each measurement in ms (0: the writer's own default).
     * Test builds lower it with tern.test.diag_ms so TCG boots stay short. */
    unsigned budget_ms;
};

/* Upper bound of the whole report's JSON text. */
enum { DIAG_REPORT_MAX = 32 * 1024 };
/* Where diag-serve publishes the report (retained; $SYS: operators only). */
#define DIAG_REPORT_TOPIC "$SYS/diag/report"

/* Run every section writer and assemble the report into report[0..cap)
 * (NUL-terminated); its length, or 0 when it did not fit. */
size_t diag_run(const struct diag_env *env, char *report, size_t cap);

/* Print the report on the serial console between the marker lines
 * "tern: diag: report begin" and "tern: diag: report end" as raw bytes
 * (no line limit), and draw the dashboard on the framebuffer if there is
 * one. */
void diag_show(const char *report, size_t len);

#endif
