/*
 * hw.h - the kernel's hardware report (SPEC E1), the RNG panel (E3) and
 * the memory bandwidth measurement (E2), as section writers for the
 * diagnostics report (diag/diag.c). Each writes its top-level members into
 * the report's open object; a value that cannot be known is null with a
 * sibling "X_why". Schema: docs/DIAGNOSTICS.md.
 */
#ifndef TERN_DIAG_HW_H
#define TERN_DIAG_HW_H

#include "diag/diag.h"
#include "json/json.h"

/* Writes cpu, hypervisor, cores, memory, firmware, pci, nics, disks and
 * rng (through diag_rng_write). Measures the TSC against the ACPI PM
 * timer (about 0.2 s) and reads the RNG sources (rngpanel.c). */
void diag_hw_write(jw *w, const struct diag_env *env);
/* Writes rng: the RNG panel (diag/rngpanel.c). Called by diag_hw_write. */
void diag_rng_write(jw *w);
/* Writes memory_bandwidth: sequential read, write and copy over a buffer
 * beyond the caches (diag/membw.c). */
void diag_membw_write(jw *w);

#endif
