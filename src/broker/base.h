/*
 * base.h - what every file of the broker core uses: invariant checks that
 * stay on in production, and the core's log call. Internal to src/broker/
 * (broker.h is the public face).
 */
#ifndef TERN_BROKER_BASE_H
#define TERN_BROKER_BASE_H

#include "broker/broker.h"

/* Invariant checks that stay on in production builds: a broken invariant is
 * a bug, and continuing would corrupt state. */
#define ALWAYS(cond) ((cond) ? (void)0 : tern_panic(__FILE__, __LINE__, #cond))

/* Log a line through the platform's broker_config.log, if level passes. */
void bk_log(broker *b, broker_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
