/*
 * console_ops.c - the daemon's operator console ops: config-show from the
 * loaded configuration (paths, never file contents), backup-now through the
 * store thread, diag (the crypto and handshake measurements within a short
 * budget), log-level for the daemon's own log and its connection layer's. The daemon has no disk
 * scrubber: scrub-now says so.
 *
 * They run on the event loop's thread inside the request's broker_input,
 * like the rest of the core's work; diag holds the loop for about
 * BROKER_CONSOLE_DIAG_BUDGET_MS.
 */
#include "platform/posix/console_ops.h"

#include "config/config_show.h"
#include "diag/cryptobench.h"
#include "platform/posix/diagclock.h"
#include "platform/posix/loop_internal.h"
#include "platform/posix/storeq.h"
#include "store/store.h"

#include <stdio.h>

static int config_show(void *ctx, jw *w, char *err, size_t errlen)
{
    const tern_loop *l = ctx;
    (void)err;
    (void)errlen;
    jw_str(w, "file", l->config_path);
    jw_obj(w, "config");
    tern_config_show(&l->cfg, w);
    jw_end(w);
    return 0;
}

static int backup_now(void *ctx, jw *w, char *err, size_t errlen)
{
    tern_loop *l = ctx;
    if (l->store == NULL) {
        snprintf(err, errlen, "no store: store.path is not set");
        return -1;
    }
    store_stats st;
    tern_storeq_stats(l->store, &st);
    tern_storeq_backup_now(l->store);
    /* The backup runs on the store thread; its outcome is counted on
     * $SYS/broker/store/backups/done and .../failed. */
    jw_bool(w, "started", true);
    jw_u64(w, "backups_done", st.backups_done);
    jw_u64(w, "backups_failed", st.backups_failed);
    tern_logf(l->log, BROKER_LOG_INFO, "store: backup requested by the operator console");
    return 0;
}

static int scrub_now(void *ctx, jw *w, char *err, size_t errlen)
{
    (void)ctx;
    (void)w;
    snprintf(err, errlen, "not available on this platform: the daemon has no disk scrubber "
                          "(the unikernel's disk store has one)");
    return -1;
}

static int diag(void *ctx, jw *w, char *err, size_t errlen)
{
    (void)ctx;
    (void)err;
    (void)errlen;
    struct diag_clock clk = posix_diag_clock();
    jw_u64(w, "budget_ms", BROKER_CONSOLE_DIAG_BUDGET_MS);
    diag_crypto_write(w, &clk, BROKER_CONSOLE_DIAG_BUDGET_MS);
    return 0;
}

static int log_level(void *ctx, broker_log_level level, jw *w, char *err, size_t errlen)
{
    tern_loop *l = ctx;
    (void)w;
    (void)err;
    (void)errlen;
    l->log->level = level;
    conn_server_set_log_level(l->cs, level);
    return 0;
}

broker_console_ops tern_console_ops(struct tern_loop *l)
{
    broker_console_ops ops = {
        .ctx = l,
        .config_show = config_show,
        .backup_now = backup_now,
        .scrub_now = scrub_now,
        .diag = diag,
        .log_level = log_level,
    };
    return ops;
}
