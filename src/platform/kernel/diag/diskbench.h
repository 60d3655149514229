/*
 * diskbench.h - the disk measurements of the diagnostics report (SPEC
 * E2), as two section writers diag.c calls (schema: docs/DIAGNOSTICS.md):
 *
 *   disk_read   every disk (dev/blk.h): sequential read MiB/s (requests
 *               at the driver's maximum, at most 1 MiB, several in
 *               flight, from LBA 0 over at most 256 MiB or the disk), and
 *               random reads/s of 4 KiB (or one block when blocks are
 *               larger) spread over the whole disk by an LCG seeded from
 *               the DRBG, at queue depth 1 and 8, with latency p50, p90,
 *               p99 and max over every request. Reads only.
 *   disk_write  the write test: only in the largest free span no
 *               partition covers (diskspan.h: a disk without a valid GPT
 *               is refused), only after the operator types WIPE and Enter
 *               on a console within 30 s; sequential write MiB/s ending
 *               in a flush, random 4 KiB writes/s each durable (FUA, or
 *               write then flush) with latency percentiles. Nothing is
 *               restored: the space is unallocated by definition. The
 *               first disk (in the order the drivers found them) with
 *               such a span is the one asked about; the others are listed
 *               with why they were not.
 *
 * Every run is time-bounded, and bounded to DISKBENCH_SAMPLES_MAX
 * requests; the report says the bytes or requests done, the time, and
 * which bound stopped it. A figure that cannot be measured is null with a
 * sibling "..._why".
 */
#ifndef TERN_DIAG_DISKBENCH_H
#define TERN_DIAG_DISKBENCH_H

#include "diag/diag.h"
#include "json/json.h"

/* Member "disk_read": one object per disk, DISKBENCH_BUDGET_MS for each. */
void diag_disk_read_write(jw *w);
/* The same with budget_ms per disk (split between its three runs; 0: the
 * default), as diag.c passes env->budget_ms. */
void diag_disk_read_budget(jw *w, unsigned budget_ms);

/* Member "disk_write": asks on the consoles, then measures or refuses
 * ({"done": false, "why": "..."}). env->budget_ms bounds each run (0: the
 * default); test builds shorten the question's timeout with the boot
 * argument tern.test.diag.wipe_s=SECONDS. */
void diag_disk_write_test(jw *w, const struct diag_env *env);

#endif
