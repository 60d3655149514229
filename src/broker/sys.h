/*
 * sys.h - publishing the $SYS topics (sys.c).
 */
#ifndef TERN_BROKER_SYS_H
#define TERN_BROKER_SYS_H

#include "broker/broker.h"
#include "broker/sys-t.h"

#include <stdint.h>

/* Publish every $SYS value now (broker_tick, every sys_interval_s). */
void bk_sys_publish(broker *b, uint64_t now_ms);

#endif
