/*
 * subscribe.h - SUBSCRIBE and UNSUBSCRIBE (subscribe.c): each filter
 * checked against the topic limits, the ACL and the session's subscription
 * limit; a packet with more filters than the work budget worked through in
 * slices over several broker_input calls (conn.c keeps its bytes).
 */
#ifndef TERN_BROKER_SUBSCRIBE_H
#define TERN_BROKER_SUBSCRIBE_H

#include "broker/broker.h"
#include "broker/conn-t.h"
#include "mqtt/mqtt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The limit a topic name or filter is beyond ("max_topic_length" or
 * "max_topic_levels"), or NULL when it is within both. */
const char *bk_topic_over_limits(const broker *b, const uint8_t *t, size_t len);

typedef enum bk_list_result {
    BK_LIST_DONE,      /* the packet is finished (or the connection ended) */
    BK_LIST_PENDING,   /* it continues: c->job holds where it stopped, and
                          the caller keeps the packet's bytes, unchanged,
                          for bk_list_resume() */
    BK_LIST_DEFERRED,  /* nothing done: it fits a whole budget but not what
                          is left of this one; hand it over again later */
} bk_list_result;

/* Handle a decoded SUBSCRIBE or UNSUBSCRIBE of an active connection,
 * spending b->in_budget (the broker_input call's work budget,
 * b->lim.work_budget when whole; at least 1).
 *
 * A packet costs one unit per filter. One with no more filters than the
 * budget has left is handled whole, at once, as any packet is (its
 * retained messages then cost a unit each after the fact). One with more
 * filters than a whole budget is worked through in slices: per call, a
 * unit for each filter handled, each filter searched for retained messages
 * and each retained message sent, until the budget is spent. One in
 * between is deferred. The connection may be CLOSING afterwards. */
bk_list_result bk_list_start(broker *b, broker_conn *c, const mqtt_packet *pkt);
/* Continue c->job, on its packet at base (size bk_list_size()): DONE or
 * PENDING. */
bk_list_result bk_list_resume(broker *b, broker_conn *c, const uint8_t *base);
/* Bytes of the packet c->job works on. */
uint32_t bk_list_size(const struct list_job *j);
/* Forget c->job (the connection ends). */
void bk_list_drop(broker *b, broker_conn *c);

#endif
