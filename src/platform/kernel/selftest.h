/*
 * selftest.h - test hooks compiled only into test builds (TERN_TEST_HOOKS):
 * the kernel command line "tern.test=NAME" makes the kernel deliberately
 * fault or run an internal check, for tests/kernel/. Production builds
 * contain none of this.
 */
#ifndef TERN_SELFTEST_H
#define TERN_SELFTEST_H

/* Run the named test. Fault tests do not return; checks print their result. */
void selftest_run(const char *name);

/* The kernel threads' tests (selftest_kthread.c): 1 when name was one of
 * them (checks return, faults do not), 0 otherwise. */
int selftest_kthread(const char *name);

/* The hardened heap's tests (selftest_halloc.c): 1 when name was one of
 * them (the bench returns, the three heap faults halt), 0 otherwise. */
int selftest_halloc(const char *name);

#endif
