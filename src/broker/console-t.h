/*
 * console-t.h - the operator console's state inside the broker
 * (console.c): the platform's ops and the counters $SYS publishes. Types
 * only; the calls are in console.h (platform) and console_core.h (core).
 */
#ifndef TERN_BROKER_CONSOLE_T_H
#define TERN_BROKER_CONSOLE_T_H

#include "broker/console.h"

#include <stdint.h>

/* The commands, in the order $SYS/broker/console/commands/ lists them. */
typedef enum bk_console_cmd {
    BK_CON_STATUS = 0,
    BK_CON_CLIENTS,
    BK_CON_KICK,
    BK_CON_SESSION_DELETE,
    BK_CON_RETAINED_LIST,
    BK_CON_RETAINED_CLEAR,
    BK_CON_CONFIG_SHOW,
    BK_CON_BACKUP_NOW,
    BK_CON_SCRUB_NOW,
    BK_CON_DIAG,
    BK_CON_LOG_LEVEL,
    BK_CON_COUNT
} bk_console_cmd;

typedef struct bk_console {
    broker_console_ops ops;      /* zero = none */
    uint64_t requests;           /* operators' requests handled (answered) */
    uint64_t refused;            /* non-operators' publishes to the request topic */
    uint64_t errors;             /* answers with "ok": false */
    uint64_t per_command[BK_CON_COUNT];
} bk_console;

#endif
