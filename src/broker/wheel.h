/*
 * wheel.h - connection deadlines on a hashed timing wheel (wheel.c).
 */
#ifndef TERN_BROKER_WHEEL_H
#define TERN_BROKER_WHEEL_H

#include "broker/broker.h"
#include "broker/wheel-t.h"

#include <stdint.h>

void bk_wheel_init(wheel *w, uint64_t now_ms);
void bk_wheel_set(wheel *w, broker_conn *c, uint64_t deadline_ms);
void bk_wheel_remove(wheel *w, broker_conn *c);
/* Expire due connections by calling bk_conn_timeout (conn.h) for each. */
void bk_wheel_advance(broker *b, wheel *w, uint64_t now_ms);
uint64_t bk_wheel_next_deadline(const wheel *w);

#endif
