/*
 * logwin.c - one window of a rate-limited kind of log line (logwin.h):
 * whether a line is written or counted, and the summary of the counted
 * ones when the window ends.
 */
#include "broker/logwin.h"

#include <stdio.h>

/* Say how many lines the window suppressed, and start afresh. */
static void window_end(bk_log_window *w, const char *kind, uint64_t now_ms,
                       const log_sink *sink)
{
    if (w->suppressed > 0 && sink->log != NULL) {
        char line[256];
        /* Seconds the window lasted (less when the log is going away). */
        uint64_t ms = now_ms - w->start_ms;
        if (ms > TERN_LOG_WINDOW_MS)
            ms = TERN_LOG_WINDOW_MS;
        unsigned s = (unsigned)((ms + 999u) / 1000u);
        (void)snprintf(line, sizeof line,
                       "log: %u more '%s' lines suppressed in %u s (at most %u of a kind "
                       "per %u s)",
                       w->suppressed, kind, s ? s : 1u, TERN_LOG_BURST,
                       TERN_LOG_WINDOW_MS / 1000u);
        sink->log(sink->ctx, (broker_log_level)w->level, line);
    }
    w->lines = 0;
    w->suppressed = 0;
}

bool broker_logwin_admit(bk_log_window *w, const char *kind, broker_log_level level,
                      uint64_t now_ms, const log_sink *sink, uint64_t *deadline)
{
    if (w->lines > 0 && now_ms - w->start_ms >= TERN_LOG_WINDOW_MS)
        window_end(w, kind, now_ms, sink);
    if (w->lines == 0)
        w->start_ms = now_ms;
    if (w->lines < TERN_LOG_BURST) {
        w->lines++;
        return true;
    }
    if (w->suppressed == 0 || level < w->level)
        w->level = (uint8_t)level;
    if (w->suppressed < UINT32_MAX)
        w->suppressed++;
    uint64_t end = w->start_ms + TERN_LOG_WINDOW_MS;
    if (end < *deadline)
        *deadline = end;
    return false;
}

uint64_t broker_logwin_tick(bk_log_window *w, const char *kind, uint64_t now_ms, bool force,
                         const log_sink *sink)
{
    uint64_t end = w->start_ms + TERN_LOG_WINDOW_MS;

    if (force || (w->lines > 0 && now_ms >= end)) {
        window_end(w, kind, now_ms, sink);
        return UINT64_MAX;
    }
    return w->suppressed > 0 ? end : UINT64_MAX;
}
