/*
 * diagclock.h - the daemon's clock for the diagnostics measurements
 * (src/diag/diag_clock.h): CLOCK_MONOTONIC, and the TSC on x86_64.
 */
#ifndef TERN_POSIX_DIAGCLOCK_H
#define TERN_POSIX_DIAGCLOCK_H

#include "diag/diag_clock.h"

/* The daemon's diag_clock (no context; cycles NULL off x86_64). */
struct diag_clock posix_diag_clock(void);

/* ternd --diag: measure for about budget_ms and print the report's
 * crypto and handshake sections as one JSON object on stdout. Exit status:
 * 0, or 1 when the document did not fit (a bug). */
int posix_diag_run(unsigned budget_ms);

#endif
