/*
 * wallclock.c - the date from the RTC at boot plus monotonic time since,
 * and time() for portable code (wolfSSL checks certificate dates with it).
 *
 * The RTC is read once: reading CMOS takes port I/O and can stall on an
 * update in progress, while the TSC-based monotonic clock is exact and
 * cheap. Drift over the uptime is the TSC calibration's, a few seconds a
 * day at worst; certificate lifetimes are measured in days.
 *
 * The SNTP client (net/sntp.c) may step this clock once its servers agree
 * (wallclock_step); from then on the date is "sntp, agreed", not "RTC at
 * boot, unverified".
 */
#include "wallclock.h"

#include "arch/x86_64/spinlock.h"
#include "clock.h"
#include "dev/rtc.h"

#include <stdint.h>
#include <stdio.h>

struct wallclock {
    time_t boot_epoch;     /* the RTC's date when read */
    uint64_t boot_mono_ns; /* the monotonic clock then */
    int state;             /* 0 not read, 1 valid, -1 unreadable, -2 too early */
    int64_t step_ns;       /* the sum of the SNTP steps */
    int stepped;           /* 1 once SNTP agreement set the clock */
};

/* Written at boot, and by an SNTP step on CPU 0; read on every CPU (the
 * store's SQLite asks the date on the storage core, ADR-064), so every
 * read after boot copies it under wc_lock (held for the copy only). */
static struct wallclock wc;
static struct spinlock wc_lock = SPINLOCK_INIT;

static struct wallclock wc_copy(void)
{
    spin_lock(&wc_lock);
    struct wallclock c = wc;
    spin_unlock(&wc_lock);
    return c;
}

void wallclock_lock_stats(struct spin_stats *out)
{
    spin_stats_read(&wc_lock, out);
}

int wallclock_init(void)
{
    struct rtc_time r;
    wc.boot_mono_ns = clock_mono_ns();
    if (rtc_read(&r) != 0) {
        wc.state = -1;
        return -1;
    }
    struct tm tm = {.tm_year = r.year - 1900, .tm_mon = r.month - 1, .tm_mday = r.day,
                    .tm_hour = r.hour, .tm_min = r.minute, .tm_sec = r.second};
    wc.boot_epoch = timegm(&tm);
    if (wc.boot_epoch < WALLCLOCK_FLOOR) {
        wc.state = wc.boot_epoch < 0 ? -1 : -2;
        return -1;
    }
    wc.state = 1;
    return 0;
}

int wallclock_valid(void)
{
    return wc_copy().state == 1;
}

static int64_t raw_ns(const struct wallclock *c)
{
    int64_t base = c->state == 1 ? (int64_t)c->boot_epoch * 1000000000LL : 0;
    return base + (int64_t)(clock_mono_ns() - c->boot_mono_ns) + c->step_ns;
}

int64_t wallclock_raw_ns(void)
{
    struct wallclock c = wc_copy();
    return raw_ns(&c);
}

time_t wallclock_now(void)
{
    struct wallclock c = wc_copy();
    if (c.state != 1)
        return 0;
    return (time_t)(raw_ns(&c) / 1000000000LL);
}

int wallclock_step(int64_t offset_ns)
{
    spin_lock(&wc_lock);
    int rc = -1;
    if (raw_ns(&wc) + offset_ns >= (int64_t)WALLCLOCK_FLOOR * 1000000000LL) {
        if (wc.state != 1) {
            /* No RTC date to step from: raw time counted from epoch 0, and
             * the agreed time becomes the date. */
            wc.boot_epoch = 0;
            wc.state = 1;
        }
        wc.step_ns += offset_ns;
        wc.stepped = 1;
        rc = 0;
    }
    spin_unlock(&wc_lock);
    return rc;
}

int wallclock_from_sntp(void)
{
    return wc_copy().stepped;
}

void wallclock_describe(char *buf, size_t n)
{
    struct wallclock c = wc_copy();
    if (c.state == -1) {
        snprintf(buf, n, "no date: the RTC is unreadable or absurd");
        return;
    }
    if (c.state == -2) {
        snprintf(buf, n, "no date: the RTC says before 2025-01-01 (flat battery?)");
        return;
    }
    if (c.state == 0) {
        snprintf(buf, n, "no date: the RTC was not read");
        return;
    }
    time_t t = wallclock_now();
    struct tm tm;
    gmtime_r(&t, &tm);
    snprintf(buf, n, "%04d-%02d-%02dT%02d:%02d:%02dZ (%s)", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             c.stepped ? "sntp, agreed" : "RTC at boot, unverified");
}

time_t time(time_t *t)
{
    time_t now = wallclock_now();
    if (t)
        *t = now;
    return now;
}
