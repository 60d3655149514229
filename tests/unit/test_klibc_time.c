/*
 * test_klibc_time.c - the kernel's timegm (libc/timegm.c, which turns the
 * RTC's date into seconds for certificate checks) compiled for the host
 * under a renamed symbol and compared with the C library's timegm over
 * every day from 1970 to 2200, plus its refusals.
 */
#define _DEFAULT_SOURCE /* timegm */
#include "test.h"

#include <time.h>

#define timegm klibc_timegm
time_t klibc_timegm(const struct tm *tm);
#include "platform/kernel/libc/timegm.c"
#undef timegm

TEST(klibc_timegm_every_day_matches_libc)
{
    /* Walk the days with the C library's gmtime, one second before
     * midnight, and convert back with both. */
    for (time_t t = 86399; t < 7258118400; t += 86400) { /* to 2200-01-01 */
        struct tm tm;
        CHECK(gmtime_r(&t, &tm) != NULL);
        CHECK_EQ(klibc_timegm(&tm), timegm(&tm));
        CHECK_EQ(klibc_timegm(&tm), t);
    }
}

TEST(klibc_timegm_known_dates)
{
    struct tm epoch = {.tm_year = 70, .tm_mon = 0, .tm_mday = 1};
    struct tm leap = {.tm_year = 124, .tm_mon = 1, .tm_mday = 29, .tm_hour = 12};
    struct tm y2k38 = {.tm_year = 138, .tm_mon = 0, .tm_mday = 19, .tm_hour = 3,
                       .tm_min = 14, .tm_sec = 8};
    CHECK_EQ(klibc_timegm(&epoch), 0);
    CHECK_EQ(klibc_timegm(&leap), 1709208000);
    CHECK_EQ(klibc_timegm(&y2k38), 2147483648LL);
}

TEST(klibc_timegm_refusals)
{
    struct tm before = {.tm_year = 69, .tm_mon = 11, .tm_mday = 31};
    struct tm feb29 = {.tm_year = 123, .tm_mon = 1, .tm_mday = 29}; /* 2023: no leap */
    struct tm feb29_1900ish = {.tm_year = 200, .tm_mon = 1, .tm_mday = 29}; /* 2100 */
    struct tm month = {.tm_year = 124, .tm_mon = 12, .tm_mday = 1};
    struct tm hour = {.tm_year = 124, .tm_mon = 0, .tm_mday = 1, .tm_hour = 24};
    struct tm day0 = {.tm_year = 124, .tm_mon = 0, .tm_mday = 0};
    CHECK_EQ(klibc_timegm(&before), -1);
    CHECK_EQ(klibc_timegm(&feb29), -1);
    CHECK_EQ(klibc_timegm(&feb29_1900ish), -1);
    CHECK_EQ(klibc_timegm(&month), -1);
    CHECK_EQ(klibc_timegm(&hour), -1);
    CHECK_EQ(klibc_timegm(&day0), -1);
}
