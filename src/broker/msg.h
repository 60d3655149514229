/*
 * msg.h - building, viewing and releasing application messages (msg.c).
 */
#ifndef TERN_BROKER_MSG_H
#define TERN_BROKER_MSG_H

#include "broker/broker.h"
#include "broker/msg-t.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A message with one reference, or NULL on allocation failure. */
msg *bk_msg_new(broker *b, const uint8_t *topic, size_t topic_len, const uint8_t *payload,
                size_t payload_len, uint8_t qos, bool retain);
static inline const uint8_t *bk_msg_topic(const msg *m) { return m->data; }
static inline const uint8_t *bk_msg_payload(const msg *m) { return m->data + m->topic_len; }
static inline msg *bk_msg_ref(msg *m) { m->refs++; return m; }
/* Drop a reference; the last one frees m. NULL is ignored. */
void bk_msg_unref(broker *b, msg *m);

#endif
