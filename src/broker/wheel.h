/*
 * wheel.h - connection deadlines on a hashed timing wheel (wheel.c).
 */
#ifndef TERN_BROKER_WHEEL_H
#define TERN_BROKER_WHEEL_H

#include "broker/broker.h"
#include "broker/wheel-t.h"

#include <stdint.h>

void wheel_init(wheel *w, uint64_t now_ms);
void wheel_set(wheel *w, broker_conn *c, uint64_t deadline_ms);
void wheel_remove(wheel *w, broker_conn *c);
/* Expire due connections by calling conn_timeout (conn.h) for each. */
void wheel_advance(broker *b, wheel *w, uint64_t now_ms);
uint64_t wheel_next_deadline(const wheel *w);

#endif
