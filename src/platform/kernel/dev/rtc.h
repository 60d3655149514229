/*
 * rtc.h - the CMOS real-time clock: wall-clock time at boot (SPEC B4).
 */
#ifndef TERN_DEV_RTC_H
#define TERN_DEV_RTC_H

struct rtc_time {
    int year, month, day, hour, minute, second;
};

/* Read the RTC; returns 0 on success, -1 if it never settled or is absurd. */
int rtc_read(struct rtc_time *t);

#endif
