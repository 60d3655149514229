/*
 * cryptobench_hook.h - the diagnostics' crypto and handshake measurements
 * (src/diag/cryptobench.h) in test builds (TERN_TEST_HOOKS), before the
 * diagnostics mode itself can run them: the kernel argument
 * tern.test.cryptobench=MS measures for about MS milliseconds after the
 * crypto self-tests and prints the two sections as one JSON object between
 * the lines "tern: cryptobench: begin" and "tern: cryptobench: end", then
 * boot goes on. Used for docs/PERFORMANCE.md's kernel figures under TCG.
 */
#ifndef TERN_CRYPTO_CRYPTOBENCH_HOOK_H
#define TERN_CRYPTO_CRYPTOBENCH_HOOK_H

#include "arch/x86_64/timer.h"

/* arg: the argument's value (milliseconds, 0..60000); tsc: boot's TSC
 * calibration (an invariant TSC serves as the cycle counter). */
void cryptobench_hook(const char *arg, const struct tsc_info *tsc);

#endif
