/*
 * smp_selftest.h - test builds only (TERN_TEST_HOOKS): the kernel heap and
 * the console used by CPU 0 and CPU 1 at the same time (issue 18, ADR-063),
 * on real guest CPUs rather than host threads. Booted with
 * tern.test.smpshare=1 and -smp 2 or more: both CPUs allocate, check and
 * free heap objects and print console lines in parallel; a lost lock shows
 * as a heap halt, a broken pattern, counters that do not come back, or
 * console lines mixed into each other (tests/kernel/test_smp.py reads
 * them).
 */
#ifndef TERN_ARCH_SMP_SELFTEST_H
#define TERN_ARCH_SMP_SELFTEST_H

#include "arch/x86_64/percpu.h"

/* CPU 0, at the end of smp_start: run the test if asked for. */
void smp_selftest_boot(int asked);
/* An AP's parked loop, after each wake-up: join the test if it runs. */
void smp_selftest_ap(const struct percpu *c);

#endif
