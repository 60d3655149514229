/*
 * base.h - what every file of the broker core uses: invariant checks that
 * stay on in production, and the core's log call. Internal to src/broker/
 * (broker.h is the public face).
 */
#ifndef TERN_BROKER_BASE_H
#define TERN_BROKER_BASE_H

#include "broker/broker.h"
#include "broker/log-t.h"

/* Invariant checks that stay on in production builds: a broken invariant is
 * a bug, and continuing would corrupt state. */
#define ALWAYS(cond) ((cond) ? (void)0 : tern_panic(__FILE__, __LINE__, #cond))

/* Log a line through the platform's broker_config.log, if level passes. */
void bk_log(broker *b, broker_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The same for a line a client can make the broker repeat (one per
 * message, packet or connection): at most a few lines of each kind per
 * window, then one line with how many were suppressed (log.c). Every such
 * line in the core goes through this. */
void bk_log_limited(broker *b, bk_log_kind kind, broker_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void bk_log_init(broker *b);
/* Write the suppressed counts of windows that ended by now_ms. */
void bk_log_tick(broker *b, uint64_t now_ms);
uint64_t bk_log_next_deadline(const broker *b);
/* Write every suppressed count now (the broker is going away). */
void bk_log_flush(broker *b);

#endif
