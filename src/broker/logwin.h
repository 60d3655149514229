/*
 * logwin.h - the window arithmetic of rate-limited log lines, shared by
 * the core's lines (log.c) and the connection layer's (src/conn): of each
 * kind of line a client can make the broker repeat, the first
 * TERN_LOG_BURST of a window are written, the rest are counted, and when
 * the window ends (TERN_LOG_WINDOW_MS after its first line) one line says
 * how many were suppressed. Pure: time comes from the caller, lines go to
 * the caller's log function.
 */
#ifndef TERN_BROKER_LOGWIN_H
#define TERN_BROKER_LOGWIN_H

#include "broker/broker.h"
#include "broker/log-t.h"

#include <stdbool.h>
#include <stdint.h>

/* Lines of one kind written per window, and the window. Ten lines show
 * what is happening and who does it; ten seconds is the connection
 * layer's refusal interval too (src/conn/tunables.h). */
#ifndef TERN_LOG_BURST
#define TERN_LOG_BURST 10u
#endif
#ifndef TERN_LOG_WINDOW_MS
#define TERN_LOG_WINDOW_MS 10000u
#endif

/* Where a window's summary line goes. */
typedef struct log_sink {
    broker_log_fn log; /* NULL: nowhere */
    void *ctx;
} log_sink;

/*
 * A line of w's kind (`kind`: its name in the summary) at `level` wants
 * out at now_ms: true when it is to be written. A window that ended first
 * writes its summary. When the line is suppressed it is counted and
 * *deadline lowered to the window's end (when the summary is due). The
 * caller has already checked that `level` is logged at all.
 */
bool broker_logwin_admit(bk_log_window *w, const char *kind, broker_log_level level,
                      uint64_t now_ms, const log_sink *sink, uint64_t *deadline);

/*
 * Close w when its window ended by now_ms, or at once when `force` (the
 * log is going away): the summary of its suppressed lines, if any. Returns
 * when w still owes a summary (its window's end), UINT64_MAX for never.
 */
uint64_t broker_logwin_tick(bk_log_window *w, const char *kind, uint64_t now_ms, bool force,
                         const log_sink *sink);

#endif
