/*
 * persist-t.h - the types of the core's side of persistence (journal.c):
 * batches of records handed to the store, and acknowledgements held until
 * the batch they depend on is committed. Types only; the calls are in
 * persist.h, the contract with the store in journal.h.
 */
#ifndef TERN_BROKER_PERSIST_T_H
#define TERN_BROKER_PERSIST_T_H

#include "broker/broker.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Held acknowledgements per connection before its input pauses. */
#define MAX_HELD_ACKS 4096u

typedef struct held_ack {
    uint64_t seq;      /* batch that must commit first; 0 = only order */
    uint8_t *codes;    /* (UN)SUBACK reason codes, owned; NULL for other packets */
    uint32_t ncodes;
    uint16_t packet_id;
    uint8_t type;      /* mqtt_type */
    uint8_t reason;    /* MQTT 5.0 reason code of a PUBACK/PUBREC/PUBREL/PUBCOMP */
} held_ack;

typedef struct jbatch {
    struct jbatch *next;
    uint64_t seq;
    uint8_t *data;     /* owned */
    size_t len, cap;
    uint32_t records;
    bool has_reset;
} jbatch;

typedef struct journal {
    jbatch *open;                 /* records being appended; NULL = none yet */
    jbatch *taken, *taken_tail;   /* handed to the store, not yet done */
    uint64_t next_seq;            /* seq the next opened batch gets */
    uint64_t committed_seq;       /* every batch up to this one is on disk */
    uint64_t reset_seq;           /* batch holding the latest snapshot */
    uint64_t records;             /* records appended, ever */
    uint64_t lost;                /* records that could not be appended (out of
                                     memory): each broke the journal */
    size_t pending_bytes;
    bool broken;                  /* a record was lost: snapshot at next append */
    uint64_t next_msg_id;
    broker_conn *waiters;         /* connections holding acknowledgements or
                                     waiting to transmit queue entries */
    uint64_t failures;
} journal;

#endif
