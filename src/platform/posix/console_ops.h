/*
 * console_ops.h - the daemon's half of the operator console
 * (broker/console.h, docs/CONSOLE.md): what only the platform knows.
 */
#ifndef TERN_POSIX_CONSOLE_OPS_H
#define TERN_POSIX_CONSOLE_OPS_H

#include "broker/console.h"

/* Budget of the console's diag command: the broker is live, so only a
 * short measurement (the diagnostics mode takes DIAG_CRYPTO_BUDGET_MS). */
#define TERN_CONSOLE_DIAG_BUDGET_MS 300u

struct tern_loop;

/* The daemon's ops for loop l (which must outlive the broker). */
broker_console_ops tern_console_ops(struct tern_loop *l);

#endif
