/*
 * log.h - the daemon's log: one line per message on a file descriptor
 * (stderr), "2026-11-29T22:30:01.123Z INFO message", filtered by level.
 *
 * A tern_log is a plain value owned by whoever runs the daemon; the broker
 * core logs through tern_log_broker() with the tern_log as its context.
 */
#ifndef TERN_LOG_H
#define TERN_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/broker.h"

/* Longest line written, newline included; longer messages are cut. */
#define TERN_LOG_LINE_MAX 1024u

typedef struct tern_log {
    broker_log_level level; /* messages above this level are dropped */
    int fd;                 /* where lines go; not owned */
} tern_log;

void tern_log_init(tern_log *lg, broker_log_level level, int fd);
bool tern_log_enabled(const tern_log *lg, broker_log_level level);

/* printf-style message; one write(2) per line so lines never interleave. */
void tern_logf(const tern_log *lg, broker_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* broker_log_fn for the core: ctx is a tern_log. */
void tern_log_broker(void *ctx, broker_log_level level, const char *msg);

/*
 * Format one line (timestamp, level, message, newline) into buf and return
 * its length (at most size - 1; buf is NUL-terminated). realtime_ms is
 * milliseconds since the Unix epoch. Control characters in msg become '?'
 * so text that came from a client cannot forge extra log lines.
 */
size_t tern_log_format(char *buf, size_t size, int64_t realtime_ms, broker_log_level level,
                       const char *msg);

#endif
