/*
 * msg-t.h - the type of an application message (msg.c): topic, payload
 * and MQTT 5.0 properties in one allocation, shared by reference between the retained store,
 * session queues and wills. Types only; the calls are in msg.h.
 */
#ifndef TERN_BROKER_MSG_T_H
#define TERN_BROKER_MSG_T_H

#include <stdint.h>

/* An application message, immutable once built and shared by reference. */
typedef struct msg {
    uint32_t refs;
    uint32_t store_refs; /* references that are on disk (queue rows) */
    uint64_t store_id;   /* id of its row in the store; 0 = never stored */
    /* Message Expiry (MQTT 5.0): the core time (now_ms) at which it
     * expires; 0 = never. An expired message is never delivered, and a
     * delivery forwards the interval left (whole seconds, rounded up). */
    uint64_t expiry_ms;
    uint32_t payload_len;
    /* MQTT 5.0 properties forwarded to subscribers, encoded as on the wire
     * (mqtt_prop_*): Payload Format Indicator, Content Type, Response
     * Topic, Correlation Data and User Properties in the publisher's
     * order; never Topic Alias, Message Expiry or Subscription Identifier,
     * which each delivery sets itself. 0 for a 3.1.1 publisher. */
    uint32_t props_len;
    uint16_t topic_len;
    uint8_t qos;      /* QoS it was published with */
    uint8_t retain;   /* published with the retain flag */
    uint8_t data[];   /* topic bytes, payload bytes, then property bytes */
} msg;

#endif
