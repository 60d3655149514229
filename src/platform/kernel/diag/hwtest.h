/*
 * hwtest.h - a test-only boot hook (test builds, tern.test.diaghw=1):
 * writes the hardware sections into one JSON object, prints it between
 * "tern: diag-hw: begin" and "tern: diag-hw: end" on the console, and
 * halts. For tests/kernel/test_diag_hw.py until the diagnostics mode
 * (diag/diag.c) runs these writers itself.
 */
#ifndef TERN_DIAG_HWTEST_H
#define TERN_DIAG_HWTEST_H

#include "diag/diag.h"

#ifdef TERN_TEST_HOOKS
_Noreturn void diag_hw_test(const struct diag_env *env);
#endif

#endif
