/*
 * wallclock.h - the kernel's idea of the date (SPEC B4), for certificate
 * validity: the CMOS RTC read once at boot, advanced by the monotonic
 * clock, stepped by the SNTP client once its servers agree (net/sntp.c).
 * The trust decision is ADR-025 in docs/DECISIONS.md.
 */
#ifndef TERN_WALLCLOCK_H
#define TERN_WALLCLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* No RTC date before this is believed (2025-01-01T00:00:00Z): a clock
 * that far back is a flat battery or a reset, and would make expired
 * certificates look valid. Raise it with each release. */
#define WALLCLOCK_FLOOR 1735689600L

/* Read the RTC; returns 0 when the date is trustworthy, -1 when it is
 * unreadable or before WALLCLOCK_FLOOR (then wallclock_now() is 0 and the
 * boot refuses a TLS listener: bootconf.c). */
int wallclock_init(void);
int wallclock_valid(void);
/* Seconds since the epoch, or 0 without a trustworthy date. */
time_t wallclock_now(void);
/* The clock in ns since the epoch, also without a trustworthy date (then
 * it counts from epoch 0 at boot): the SNTP client's T1 and T4. */
int64_t wallclock_raw_ns(void);
/* Move the clock by offset_ns (an agreed SNTP correction). Refused (-1)
 * when the result would be before WALLCLOCK_FLOOR. Without an RTC date
 * the result becomes the date. */
int wallclock_step(int64_t offset_ns);
/* 1 once wallclock_step succeeded. */
int wallclock_from_sntp(void);
/* "2026-12-01T03:12:16Z (RTC at boot, unverified)" or "(sntp, agreed)",
 * or why there is no date. */
void wallclock_describe(char *buf, size_t n);
/* The clock lock's counters (arch/x86_64/spinlock.h; issue 18). */
struct spin_stats;
void wallclock_lock_stats(struct spin_stats *out);

#endif
