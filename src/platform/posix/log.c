/*
 * log.c - timestamped, levelled log lines on a file descriptor. Each line is
 * built in a stack buffer and written with one write(2), so lines from the
 * core and the platform never interleave mid-line even when stderr is shared.
 */
#define _POSIX_C_SOURCE 200809L

#include "platform/posix/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *level_name(broker_log_level level)
{
    switch (level) {
    case BROKER_LOG_ERROR:
        return "ERROR";
    case BROKER_LOG_WARN:
        return "WARN";
    case BROKER_LOG_INFO:
        return "INFO";
    case BROKER_LOG_DEBUG:
        return "DEBUG";
    }
    return "?";
}

void tern_log_init(tern_log *lg, broker_log_level level, int fd)
{
    lg->level = level;
    lg->fd = fd;
}

bool tern_log_enabled(const tern_log *lg, broker_log_level level)
{
    return level <= lg->level;
}

size_t tern_log_format(char *buf, size_t size, int64_t realtime_ms, broker_log_level level,
                       const char *msg)
{
    time_t secs;
    struct tm tm;
    size_t len = 0;
    int n;

    if (size == 0)
        return 0;
    if (realtime_ms < 0)
        realtime_ms = 0;
    secs = (time_t)(realtime_ms / 1000);
    if (gmtime_r(&secs, &tm) == NULL)
        memset(&tm, 0, sizeof tm);
    n = snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ %s ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 (int)(realtime_ms % 1000), level_name(level));
    if (n > 0)
        len = (size_t)n < size ? (size_t)n : size - 1;
    /* Keep one byte for the newline and one for the terminator. */
    for (const char *p = msg; *p != '\0' && len + 2 < size; p++) {
        unsigned char ch = (unsigned char)*p;

        buf[len++] = (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
    }
    if (len + 1 < size)
        buf[len++] = '\n';
    buf[len] = '\0';
    return len;
}

/* Nothing useful can be done when the log itself cannot be written, so
 * write errors other than EINTR end the attempt silently. */
static void write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        p += n;
        len -= (size_t)n;
    }
}

static void emit(const tern_log *lg, broker_log_level level, const char *msg)
{
    char line[TERN_LOG_LINE_MAX];
    struct timespec ts;
    int64_t ms = 0;
    size_t len;

    if (clock_gettime(CLOCK_REALTIME, &ts) == 0)
        ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    len = tern_log_format(line, sizeof line, ms, level, msg);
    write_all(lg->fd, line, len);
}

void tern_logf(const tern_log *lg, broker_log_level level, const char *fmt, ...)
{
    char msg[TERN_LOG_LINE_MAX];
    va_list ap;

    if (!tern_log_enabled(lg, level))
        return;
    va_start(ap, fmt);
    if (vsnprintf(msg, sizeof msg, fmt, ap) < 0)
        msg[0] = '\0';
    va_end(ap);
    emit(lg, level, msg);
}

void tern_log_broker(void *ctx, broker_log_level level, const char *msg)
{
    const tern_log *lg = ctx;

    if (tern_log_enabled(lg, level))
        emit(lg, level, msg);
}
