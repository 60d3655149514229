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
 * suppressed. The end is a deadline of broker_tick, so the count comes out
 * even when the flood stops. Time is the core's now_ms: no clock is read.
 */
#include "broker/base.h"
#include "broker/broker-t.h"

#include <stdarg.h>
#include <stdio.h>

/* Lines of one kind written per window, and the window. Ten lines show
 * what is happening and who does it; ten seconds is the connection
 * layer's refusal interval too (src/conn/tunables.h). */
#ifndef TERN_LOG_BURST
#define TERN_LOG_BURST 10u
#endif
#ifndef TERN_LOG_WINDOW_MS
#define TERN_LOG_WINDOW_MS 10000u
#endif

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

/* Close k's window: say how many of its lines were not written. */
static void window_end(broker *b, bk_log_kind k)
{
    bk_log_window *w = &b->logs.w[k];
    if (w->suppressed > 0) {
        /* Seconds the window lasted (less when the broker is going away). */
        uint64_t ms = b->now_ms - w->start_ms;
        if (ms > TERN_LOG_WINDOW_MS)
            ms = TERN_LOG_WINDOW_MS;
        unsigned s = (unsigned)((ms + 999u) / 1000u);
        bk_log(b, (broker_log_level)w->level,
               "log: %u more '%s' lines suppressed in %u s (at most %u of a kind per %u s)",
               w->suppressed, kind_name[k], s ? s : 1u, TERN_LOG_BURST,
               TERN_LOG_WINDOW_MS / 1000u);
    }
    w->lines = 0;
    w->suppressed = 0;
}

void bk_log_limited(broker *b, bk_log_kind kind, broker_log_level level, const char *fmt, ...)
{
    ALWAYS(kind < BK_LOGK_COUNT);
    if (!level_on(b, level))
        return;
    bk_log_window *w = &b->logs.w[kind];
    if (w->lines > 0 && b->now_ms - w->start_ms >= TERN_LOG_WINDOW_MS)
        window_end(b, kind);
    if (w->lines == 0)
        w->start_ms = b->now_ms;
    if (w->lines < TERN_LOG_BURST) {
        va_list ap;
        w->lines++;
        va_start(ap, fmt);
        vlog(b, level, fmt, ap);
        va_end(ap);
        return;
    }
    if (w->suppressed == 0 || level < w->level)
        w->level = (uint8_t)level;
    if (w->suppressed < UINT32_MAX)
        w->suppressed++;
    uint64_t end = w->start_ms + TERN_LOG_WINDOW_MS;
    if (end < b->logs.deadline)
        b->logs.deadline = end;
}

void bk_log_init(broker *b)
{
    b->logs.deadline = UINT64_MAX;
}

void bk_log_tick(broker *b, uint64_t now_ms)
{
    if (now_ms < b->logs.deadline)
        return;
    uint64_t next = UINT64_MAX;
    for (int k = 0; k < BK_LOGK_COUNT; k++) {
        bk_log_window *w = &b->logs.w[k];
        if (w->suppressed == 0)
            continue;
        uint64_t end = w->start_ms + TERN_LOG_WINDOW_MS;
        if (now_ms >= end)
            window_end(b, (bk_log_kind)k);
        else if (end < next)
            next = end;
    }
    b->logs.deadline = next;
}

uint64_t bk_log_next_deadline(const broker *b)
{
    return b->logs.deadline;
}

void bk_log_flush(broker *b)
{
    for (int k = 0; k < BK_LOGK_COUNT; k++)
        window_end(b, (bk_log_kind)k);
    b->logs.deadline = UINT64_MAX;
}
