/*
 * log.c - the core's log lines: the plain call, and the rate-limited one
 * for every line a client can make the broker repeat per message, packet
 * or connection (one client once wrote 110,786 WARN lines, one per refused
 * retained message).
 *
 * Each kind of line (log-t.h) has its own window: the first
 * TERN_LOG_BURST lines of a kind are written, the rest of the window's
 * lines of that kind are counted, not formatted, and when the window ends
 * (TERN_LOG_WINDOW_MS after its first line) one line says how many were
 * suppressed (the window arithmetic is logwin.c's, shared with the
 * connection layer). The end is a deadline of broker_tick, so the count
 * comes out even when the flood stops. Time is the core's now_ms: no clock
 * is read.
 */
#include "broker/base.h"
#include "broker/broker-t.h"
#include "broker/logwin.h"

#include <stdarg.h>
#include <stdio.h>

static const char *const kind_name[BK_LOGK_COUNT] = {
    [BK_LOGK_CONN_REFUSED] = "connection refused (max_connections)",
    [BK_LOGK_CONNECT_FAILED] = "connection closed before CONNECT was accepted",
    [BK_LOGK_PROTOCOL] = "protocol error",
    [BK_LOGK_TOO_LARGE] = "packet too large",
    [BK_LOGK_DENIED] = "denied by the ACL",
    [BK_LOGK_RETAINED] = "retained message not kept",
    [BK_LOGK_DROPPED] = "QoS 1/2 message not delivered",
    [BK_LOGK_DROPPED_QOS0] = "QoS 0 message not delivered",
    [BK_LOGK_NOMEM] = "out of memory",
    [BK_LOGK_HOLD] = "publisher hold",
    [BK_LOGK_UNKNOWN_ACK] = "acknowledgement for an unknown packet id",
    [BK_LOGK_EXPIRED] = "session expired",
    [BK_LOGK_TOPIC_LIMITS] = "filters or topics refused",
    [BK_LOGK_SESSIONS] = "session refused (max_sessions_per_identity)",
    [BK_LOGK_BAD_PAYLOAD] = "payload not UTF-8 as its format indicator says",
    [BK_LOGK_OVER_CLIENT_MAX] = "message above a client's maximum packet size",
    [BK_LOGK_AUTH] = "user name or password refused",
};

static bool level_on(const broker *b, broker_log_level level)
{
    return b->log && level <= b->log_level;
}

static void vlog(broker *b, broker_log_level level, const char *fmt, va_list ap)
{
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    b->log(b->log_ctx, level, line);
}

void bk_log(broker *b, broker_log_level level, const char *fmt, ...)
{
    va_list ap;
    if (!level_on(b, level))
        return;
    va_start(ap, fmt);
    vlog(b, level, fmt, ap);
    va_end(ap);
}

static log_sink sink_of(const broker *b)
{
    return (log_sink){b->log, b->log_ctx};
}

void bk_log_limited(broker *b, bk_log_kind kind, broker_log_level level, const char *fmt, ...)
{
    ALWAYS(kind < BK_LOGK_COUNT);
    if (!level_on(b, level))
        return;
    log_sink sink = sink_of(b);
    if (broker_logwin_admit(&b->logs.w[kind], kind_name[kind], level, b->now_ms, &sink,
                         &b->logs.deadline)) {
        va_list ap;
        va_start(ap, fmt);
        vlog(b, level, fmt, ap);
        va_end(ap);
    }
}

void bk_log_init(broker *b)
{
    b->logs.deadline = UINT64_MAX;
}

/* Every window's summary that is due (all of them when force). */
static void tick(broker *b, uint64_t now_ms, bool force)
{
    log_sink sink = sink_of(b);
    uint64_t next = UINT64_MAX;
    for (int k = 0; k < BK_LOGK_COUNT; k++) {
        uint64_t due = broker_logwin_tick(&b->logs.w[k], kind_name[k], now_ms, force, &sink);
        if (due < next)
            next = due;
    }
    b->logs.deadline = next;
}

void bk_log_tick(broker *b, uint64_t now_ms)
{
    if (now_ms >= b->logs.deadline)
        tick(b, now_ms, false);
}

uint64_t bk_log_next_deadline(const broker *b)
{
    return b->logs.deadline;
}

void bk_log_flush(broker *b)
{
    tick(b, b->now_ms, true);
}

const char *broker_log_level_name(broker_log_level level)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    return (unsigned)level < sizeof names / sizeof names[0] ? names[level] : "log";
}
