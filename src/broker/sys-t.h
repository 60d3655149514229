/*
 * sys-t.h - the state of the $SYS publisher (sys.c): when it runs next and
 * the figures its rates are computed from. Types only; the call is in
 * sys.h.
 */
#ifndef TERN_BROKER_SYS_T_H
#define TERN_BROKER_SYS_T_H

#include <stdint.h>

typedef struct sys_state {
    uint64_t next_ms;
    uint64_t last_ms;
    uint64_t last_received, last_sent;
    uint64_t load_received, load_sent; /* messages/minute x1000, 1-minute EMA */
} sys_state;

#endif
