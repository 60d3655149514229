/*
 * timegm.c - a UTC calendar date to seconds since the epoch, for the
 * kernel's wall clock (the RTC gives a date). Days are counted with the
 * proleptic Gregorian calendar in 400-year eras (146,097 days each), so the
 * arithmetic is exact without tables or loops. Portable: also compiled for
 * the host by tests/unit/test_klibc_time.c and checked against the C
 * library's timegm.
 */
#include <time.h>

/* Days from 1970-01-01 to year-month-day (month 1..12); y >= 1970. */
static long days_from_civil(long y, long m, long d)
{
    y -= m <= 2;                                  /* the year starts in March */
    long era = y / 400;
    long yoe = y - era * 400;                     /* 0..399 */
    long mp = m > 2 ? m - 3 : m + 9;              /* March = 0 */
    long doy = (153 * mp + 2) / 5 + d - 1;        /* 0..365 */
    long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; /* 0..146096 */
    return era * 146097 + doe - 719468;           /* 719468: 0000-03-01 to 1970-01-01 */
}

static int leap(long y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

time_t timegm(const struct tm *tm)
{
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    long y = (long)tm->tm_year + 1900;
    if (y < 1970 || y > 9999 || tm->tm_mon < 0 || tm->tm_mon > 11 || tm->tm_mday < 1 ||
        tm->tm_hour < 0 || tm->tm_hour > 23 || tm->tm_min < 0 || tm->tm_min > 59 ||
        tm->tm_sec < 0 || tm->tm_sec > 60)
        return -1;
    int dim = mdays[tm->tm_mon] + (tm->tm_mon == 1 && leap(y));
    if (tm->tm_mday > dim)
        return -1;
    long days = days_from_civil(y, tm->tm_mon + 1, tm->tm_mday);
    return (time_t)(days * 86400 + tm->tm_hour * 3600L + tm->tm_min * 60L + tm->tm_sec);
}
