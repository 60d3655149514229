/*
 * flow.h - back-pressure from slow subscribers to their publishers
 * (flow.c, ADR-028): the events that hold and release a publisher.
 */
#ifndef TERN_BROKER_FLOW_H
#define TERN_BROKER_FLOW_H

#include "broker/broker.h"
#include "broker/session-t.h"

#include <stdint.h>

/* A QoS 1/2 message was queued for s: hold b->publisher (the connection
 * whose PUBLISH is being handled, if any) when s is behind. */
void bk_flow_routed(broker *b, session *s);
/* s sent queued messages: release its publishers once it has drained. */
void bk_flow_progress(broker *b, session *s);
/* s went offline or is being destroyed: release everyone it holds. */
void bk_flow_session_gone(broker *b, session *s);
/* c is ending: it is held by no one any more. */
void bk_flow_conn_gone(broker *b, broker_conn *c);
/* Release the publishers of sessions that made no progress in time. */
void bk_flow_tick(broker *b, uint64_t now_ms);
uint64_t bk_flow_next_deadline(const broker *b);

#endif
