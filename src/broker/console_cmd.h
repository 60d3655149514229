/*
 * console_cmd.h - between the console's request handling (console.c) and
 * its commands (console_cmd.c, console_list.c): what a command is given and
 * the commands themselves.
 */
#ifndef TERN_BROKER_CONSOLE_CMD_H
#define TERN_BROKER_CONSOLE_CMD_H

#include "broker/broker.h"
#include "broker/conn-t.h"
#include "json/json.h"

#include <stdbool.h>
#include <stddef.h>

/* One request being answered. The answer object is open in w with
 * "command" and "ok" written; a command writes its results and returns 0,
 * or returns -1 with a reason in err (the answer is then rebuilt as an
 * error). */
typedef struct bk_con_req {
    broker *b;
    broker_conn *c;       /* the operator's connection */
    const jr_val *args;   /* the whole request object */
    jw *w;
    size_t tail_room;     /* bytes a list keeps free to close the answer */
    char *err;
    size_t errlen;
} bk_con_req;

/* Set err and return -1. */
int bk_con_fail(bk_con_req *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Is every member of the request "command" or one of the NULL-ended
 * names? -1 (err set) naming the first that is not. */
int bk_con_args_only(bk_con_req *r, const char *const *names);
/* Argument `key` as a string, unescaped into a new allocation (freed with
 * bk_mem_free); NULL with *present false when absent, NULL with err set
 * when not a string, holding a NUL or out of memory. */
char *bk_con_arg_str(bk_con_req *r, const char *key, bool *present, size_t *len);
/* Argument `key` as an integer in [0, max], default def when absent; -1
 * (err set) otherwise. */
int bk_con_arg_u32(bk_con_req *r, const char *key, uint32_t def, uint32_t max, uint32_t *out);

/* The core's commands (console_cmd.c). */
int bk_con_status(bk_con_req *r);
int bk_con_kick(bk_con_req *r);
int bk_con_session_delete(bk_con_req *r);
int bk_con_log_level(bk_con_req *r);
/* The list commands (console_list.c). */
int bk_con_clients(bk_con_req *r);
int bk_con_retained_list(bk_con_req *r);
int bk_con_retained_clear(bk_con_req *r);

#endif
