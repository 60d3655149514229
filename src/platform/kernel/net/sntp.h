/*
 * sntp.h - the kernel's SNTP client (SPEC B4): asks each server of
 * time.sntp_servers, steps the wall clock (wallclock.h) when a majority
 * agree (time/agree.h), resyncs periodically, and publishes its state on
 * $SYS/broker/time/ *. Without agreement certificates stay checked against
 * the RTC floor (ADR-025), and the log and $SYS say so.
 */
#ifndef TERN_NET_SNTP_H
#define TERN_NET_SNTP_H

#include "config/config.h"

#include <stddef.h>

/* Start the client on lwIP's timers (after net_init; the first round waits
 * for an address). No servers configured: only publishes "rtc". */
void sntp_start(const tern_config *cfg);
/* Republish the $SYS status (after the broker started). */
void sntp_publish(void);

#endif
