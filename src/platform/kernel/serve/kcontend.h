/*
 * kcontend.h - the kernel's contention figures for the operator console's
 * `diag` answer (issue 18): how often the CPUs met on the spinlocks they
 * share, and what the hand-over between CPU 0 and the storage core cost
 * in wake IPIs and hlts. Counted all the time (spinlock.h, percpu.h) and
 * only read here, so a benchmark can read them after its load.
 */
#ifndef TERN_KSERVE_KCONTEND_H
#define TERN_KSERVE_KCONTEND_H

#include "json/json.h"

struct kstore;

/* A "locks" and a "cpus" member on w; k may be NULL (no store). */
void kcontend_write(jw *w, struct kstore *k);

#endif
