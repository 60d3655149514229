/*
 * time.h - calendar time for the kernel: time() is the kernel's wall clock
 * (wallclock.c: the RTC read at boot, advanced by the monotonic clock),
 * used for certificate validity; timegm() turns a UTC date into seconds
 * since the epoch (libc/timegm.c). gmtime/gmtime_r come with wolfSSL
 * (its USER_TIME build provides them). No time zones, no locale.
 */
#ifndef TERN_KLIBC_TIME_H
#define TERN_KLIBC_TIME_H

typedef long time_t;

struct tm {
    int tm_sec;   /* 0-60 */
    int tm_min;   /* 0-59 */
    int tm_hour;  /* 0-23 */
    int tm_mday;  /* 1-31 */
    int tm_mon;   /* 0-11 */
    int tm_year;  /* years since 1900 */
    int tm_wday;  /* 0-6, Sunday = 0 */
    int tm_yday;  /* 0-365 */
    int tm_isdst; /* always 0 */
};

/* Seconds since 1970-01-01T00:00:00Z; also stored through t when not NULL.
 * Never negative: 0 when the kernel has no trustworthy time. */
time_t time(time_t *t);
/* The UTC date in tm (fields in their normal ranges) as seconds since the
 * epoch; -1 for a date before 1970 or fields out of range. */
time_t timegm(const struct tm *tm);

struct tm *gmtime(const time_t *t);
struct tm *gmtime_r(const time_t *t, struct tm *out);

#endif
