/*
 * console.h - the operator console (SPEC C6, docs/CONSOLE.md): the public
 * face of src/broker/console*.c for platforms.
 *
 * Operators (broker_conn_info.is_operator) publish a JSON request
 * {"command": "NAME", ...arguments} to BROKER_CONSOLE_REQUEST_TOPIC; the
 * core parses it, runs the command and publishes the JSON answer to the
 * request's MQTT 5.0 Response Topic (with its Correlation Data) or else to
 * BROKER_CONSOLE_RESPONSE_PREFIX + the operator's identity (escaped:
 * docs/CONSOLE.md). Everything about the broker itself (status, clients,
 * kick, sessions, retained messages, the core's log level) is the core's;
 * what only the platform knows (its configuration, its store's backups and
 * scrubber, its measurements, its own log level) goes through these ops.
 *
 * Every op answers at once, inside the request's broker_input call: it
 * writes its answer's members with the jw it is given (an object is open)
 * and returns 0, or returns -1 with a reason in err (NUL-terminated; the
 * answer then says "ok": false, "error": err). An op that starts work
 * that takes longer (backup-now) says "started" and the outcome shows on
 * $SYS (the store's counters): there is no deferred answer. A NULL op is a
 * command this platform does not have: answered "ok": false, "error":
 * "not available on this platform".
 */
#ifndef TERN_BROKER_CONSOLE_H
#define TERN_BROKER_CONSOLE_H

#include "broker/broker.h"
#include "json/json.h"

#include <stddef.h>

#define BROKER_CONSOLE_REQUEST_TOPIC "$SYS/console/request"
#define BROKER_CONSOLE_RESPONSE_PREFIX "$SYS/console/response/"

/* The diag command's measuring time on every platform: the broker is live
 * and its loop waits that long, so only a short measurement (the
 * diagnostics boot entries take DIAG_CRYPTO_BUDGET_MS). */
#define BROKER_CONSOLE_DIAG_BUDGET_MS 300u

/* A request's payload larger than this is answered with an error. */
#define BROKER_CONSOLE_REQUEST_MAX 16384u
/* An answer is at most this many bytes, and at most what the requesting
 * client's Maximum Packet Size leaves room for; lists (clients,
 * retained-list) stop early and say "more": true, any other answer that
 * does not fit is replaced by an error saying so. */
#define BROKER_CONSOLE_ANSWER_MAX 65536u
/* Entries a list answer holds unless "limit" asks otherwise, and the most
 * "limit" may ask. */
#define BROKER_CONSOLE_LIST_DEFAULT 100u
#define BROKER_CONSOLE_LIST_MAX 1000u

typedef struct broker_console_ops {
    void *ctx; /* given back to every op */
    /* The running configuration, secrets never shown (key file contents,
     * passwords: paths are fine). */
    int (*config_show)(void *ctx, jw *w, char *err, size_t errlen);
    /* Start a backup of the store now. */
    int (*backup_now)(void *ctx, jw *w, char *err, size_t errlen);
    /* Start a scrub pass of the store now. */
    int (*scrub_now)(void *ctx, jw *w, char *err, size_t errlen);
    /* The measurements that do not disturb a live broker (crypto costs,
     * a handshake's cost), within a small time budget. */
    int (*diag)(void *ctx, jw *w, char *err, size_t errlen);
    /* The platform's own log level follows the core's (which the core has
     * already changed when this is called); NULL = the core's only. */
    int (*log_level)(void *ctx, broker_log_level level, jw *w, char *err, size_t errlen);
} broker_console_ops;

/* Install the platform's ops (copied; NULL = none: every platform command
 * answers "not available"). May be called at any time. */
void broker_set_console_ops(broker *b, const broker_console_ops *ops);

#endif
