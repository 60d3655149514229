/*
 * console_ops.h - the daemon's half of the operator console
 * (broker/console.h, docs/CONSOLE.md): what only the platform knows.
 */
#ifndef TERN_POSIX_CONSOLE_OPS_H
#define TERN_POSIX_CONSOLE_OPS_H

#include "broker/console.h"

struct tern_loop;

/* The daemon's ops for loop l (which must outlive the broker). */
broker_console_ops tern_console_ops(struct tern_loop *l);

#endif
