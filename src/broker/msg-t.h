/*
 * msg-t.h - the type of an application message (msg.c): topic and payload
 * in one allocation, shared by reference between the retained store,
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
    uint32_t payload_len;
    uint16_t topic_len;
    uint8_t qos;      /* QoS it was published with */
    uint8_t retain;   /* published with the retain flag */
    uint8_t data[];   /* topic bytes, then payload bytes */
} msg;

#endif
