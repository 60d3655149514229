/*
 * conn-t.h - the type of one client connection inside the core: its
 * protocol state, input tail, output buffer, timers, and the
 * acknowledgements it holds for a store commit. Types only; the calls are
 * in conn.h (packets, end of a connection) and deliver.h (output).
 */
#ifndef TERN_BROKER_CONN_T_H
#define TERN_BROKER_CONN_T_H

#include "broker/broker.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct msg msg;
typedef struct session session;
struct held_ack; /* persist-t.h */
struct list_job; /* subscribe.c */

/* [MQTT-3.1.2-24]: a client silent for one and a half keepalive periods is
 * disconnected. Milliseconds of silence allowed per second of keepalive. */
#define KEEPALIVE_GRACE_MS_PER_S 1500u

struct bk_aliases; /* alias.c */

typedef enum conn_state {
    CONN_NEW = 0,     /* waiting for CONNECT */
    CONN_ACTIVE,      /* CONNECT accepted */
    CONN_CLOSING,     /* ended: flushing output, then the platform closes */
    CONN_REFUSING,    /* CONNECT failed its password check: the refusal waits on the
                         wheel (AUTH_FAIL_DELAY_MS), input is discarded */
} conn_state;

/* Every idle client holds one of these, so it is kept to 240 bytes: with
 * the core allocator's header (mem.c, 8 bytes; 16 before ADR-062, whence
 * the 240) that is within the kernel heap's 256-byte size class (the next
 * is 512), and the daemon's pool's 248 or 256 class. Flags are one-bit fields
 * (the core runs on one thread, so sharing a byte is safe) and fields sit
 * where they leave no padding. */
#define BROKER_CONN_MAX_SIZE 240u

struct broker_conn {
    broker_conn *prev, *next;       /* all connections */
    broker_conn *dirty_prev, *dirty_next; /* dirty list */
    broker_conn *wheel_prev, *wheel_next; /* timer wheel slot */
    void *ctx;                      /* platform handle */
    session *sess;                  /* set while ACTIVE */
    msg *will;                      /* owned reference, NULL when none */
    /* Input tail: bytes of an incomplete packet, owned. While `job` is set
     * it holds a SUBSCRIBE or UNSUBSCRIBE begun in an earlier call, all
     * but its last byte (which the platform still holds: broker.h). */
    uint8_t *in;
    uint32_t in_len, in_cap;
    struct list_job *job;           /* owned; NULL = none */
    /* QoS 0 is dropped once this much output is pending, when nonzero and
     * below max_out_bytes: the platform's bound in time (broker.h). */
    uint32_t qos0_out_max;
    /* Receive Maximum towards the broker: QoS 1/2 PUBLISHes received whose
     * PUBACK, PUBCOMP or PUBREC with an error is not sent yet, counted as
     * the client counts its send quota (never below 0). (Here, in what
     * was padding: the struct is sized to a heap class, see below.) */
    uint32_t in_unacked;
    /* Output: bytes [out_head, out_len) are pending, owned. */
    uint8_t *out;
    uint32_t out_head, out_len, out_cap;
    uint32_t in_pause_at;           /* output bytes that pause input */
    uint64_t opened_ms;             /* broker_open: "connected since" (console) */
    uint64_t last_rx_ms;
    uint64_t deadline_ms;           /* keepalive / connect timeout; 0 = none */
    uint16_t keepalive_s;
    uint8_t level;                  /* protocol level from CONNECT */
    /* MQTT 5.0 (conn.c): what the client's CONNECT asked for, kept for the
     * publish path and the CONNACK; all at their 3.1.1 meaning (no limit)
     * for a level 3/4 client. */
    uint16_t client_receive_max;    /* Receive Maximum: the client's window of QoS 1/2
                                       PUBLISHes from us; 65535 when absent */
    uint16_t client_topic_alias_max;/* Topic Alias Maximum: aliases we may set towards
                                       it; 0 = none */
    uint32_t client_max_packet;     /* Maximum Packet Size it accepts; UINT32_MAX when
                                       absent (the protocol's maximum) */
    uint32_t will_delay_s;          /* the will's Will Delay Interval */
    bool request_problem_info : 1;      /* Reason Strings and User Properties wanted beyond
                                       PUBLISH, CONNACK and DISCONNECT [MQTT-3.1.2-29] */
    bool request_response_info : 1;     /* it asked for Response Information */
    bool auth_method : 1;               /* CONNECT named an Authentication Method: AUTH allowed */
    /* What the CONNACK says beyond the session present flag (kept so a
     * CONNACK held for a commit is built the same when it goes out):
     * the client id was assigned, the keep alive or the session expiry
     * interval differ from what the client asked. */
    bool connack_assigned_id : 1;
    bool connack_keepalive : 1;
    bool connack_expiry : 1;
    uint8_t state;                  /* conn_state */
    bool in_dirty : 1;
    bool in_wheel : 1;
    bool is_operator : 1;
    bool secure : 1;                    /* TLS transport (broker_conn_info.secure) */
    bool in_ackw : 1;                   /* on the list of connections waiting for commits */
    bool wire_wait : 1;                 /* its session has entries waiting for a commit */
    bool connack_held : 1;              /* CONNACK waits for a commit: send nothing else */
    bool bridge : 1;                    /* 3.1.1 bridge (level | 0x80): its subscriptions
                                           get No Local and Retain As Published */
    /* Output buffer sizing (deliver.c), in what was padding: the most bytes
     * pending in this buffer's life, and log2 of the size the next buffer
     * starts at (0 = the minimum). */
    uint8_t out_next_log2;
    uint32_t out_peak;
    /* Acknowledgements waiting for a store commit, in order: owned ring. */
    struct held_ack *acks;
    uint32_t acks_head, acks_count, acks_cap;
    uint32_t hold_idx;              /* 1 + its entry in b->holds; 0 = not held */
    broker_conn *ackw_prev, *ackw_next; /* list of connections waiting for commits */
    char *peer;                     /* owned, for logs */
    char *identity;                 /* owned, TLS identity or NULL */
    /* MQTT 5.0 Topic Aliases, both directions (alias.c): allocated on the
     * first alias set or given, NULL until then (most clients use none). */
    struct bk_aliases *aliases;
};
_Static_assert(sizeof(struct broker_conn) <= BROKER_CONN_MAX_SIZE,
               "struct broker_conn outgrew the kernel heap class it is sized for");

#endif
