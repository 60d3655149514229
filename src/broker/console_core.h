/*
 * console_core.h - what the rest of the core calls of the operator console
 * (console.c): recognising a request, handling one, its $SYS counters.
 */
#ifndef TERN_BROKER_CONSOLE_CORE_H
#define TERN_BROKER_CONSOLE_CORE_H

#include "broker/broker.h"
#include "broker/conn-t.h"
#include "broker/console.h"
#include "mqtt/mqtt.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* Is topic exactly BROKER_CONSOLE_REQUEST_TOPIC? */
static inline bool bk_console_is_request(const uint8_t *topic, size_t len)
{
    return len == sizeof BROKER_CONSOLE_REQUEST_TOPIC - 1 &&
           memcmp(topic, BROKER_CONSOLE_REQUEST_TOPIC, len) == 0;
}

/* Operator c published request p (on the request topic, allowed by the
 * ACL's one $SYS exception): run it and publish the answer. The request
 * itself goes to no subscriber and is never retained. */
void bk_console_request(broker *b, broker_conn *c, const mqtt_publish *p);

/* A publish to the request topic the ACL refused (not an operator). */
void bk_console_refused(broker *b);

/* Publish the console's counters (bk_sys_publish). */
void bk_console_sys_publish(broker *b);

#endif
