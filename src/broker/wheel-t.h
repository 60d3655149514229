/*
 * wheel-t.h - the type of the timing wheel (wheel.c) that holds every
 * connection's CONNECT or keepalive deadline. Types only; the calls are in
 * wheel.h.
 */
#ifndef TERN_BROKER_WHEEL_T_H
#define TERN_BROKER_WHEEL_T_H

#include "broker/broker.h"

#include <stddef.h>
#include <stdint.h>

#define WHEEL_SLOTS 1024u
#define WHEEL_TICK_MS 256u

typedef struct wheel {
    broker_conn *slots[WHEEL_SLOTS];
    uint64_t next_tick;       /* index of the next tick to process */
    size_t count;
} wheel;

#endif
