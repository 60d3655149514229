/*
 * log-t.h - the types of the core's rate-limited log lines (log.c): the
 * kinds of line one client can make the broker repeat without bound (one
 * per message, packet or connection), and the window each kind is counted
 * in. Types only; the calls are in base.h.
 */
#ifndef TERN_BROKER_LOG_T_H
#define TERN_BROKER_LOG_T_H

#include <stdint.h>

typedef enum bk_log_kind {
    BK_LOGK_CONN_REFUSED = 0, /* a connection refused: max_connections */
    BK_LOGK_CONNECT_FAILED,   /* a connection closed before its CONNECT was accepted */
    BK_LOGK_PROTOCOL,         /* a client closed for a protocol error */
    BK_LOGK_TOO_LARGE,        /* a packet above limits.max_packet_size */
    BK_LOGK_DENIED,           /* a publish or subscription the ACL denies */
    BK_LOGK_RETAINED,         /* a retained message not kept (limits) */
    BK_LOGK_DROPPED,          /* a QoS 1/2 message not delivered to a session (limits) */
    BK_LOGK_DROPPED_QOS0,     /* a QoS 0 message not delivered (output buffer full) */
    BK_LOGK_NOMEM,            /* out of memory on a message's path */
    BK_LOGK_HOLD,             /* back-pressure: a subscriber released its publishers */
    BK_LOGK_UNKNOWN_ACK,      /* an acknowledgement for an unknown packet id */
    BK_LOGK_EXPIRED,          /* a session expired */
    BK_LOGK_TOPIC_LIMITS,     /* filters or topics refused (limits, ACL) */
    BK_LOGK_SESSIONS,         /* a CONNECT refused: max_sessions_per_identity */
    BK_LOGK_BAD_PAYLOAD,      /* MQTT 5.0: a payload not UTF-8 as its indicator says */
    BK_LOGK_OVER_CLIENT_MAX,  /* MQTT 5.0: a message above a client's Maximum Packet Size */
    BK_LOGK_AUTH,             /* a CONNECT refused for its user name or password */
    BK_LOGK_COUNT
} bk_log_kind;

/* The lines of one kind in its current window. */
typedef struct bk_log_window {
    uint64_t start_ms;    /* when the window began (its first line) */
    uint32_t lines;       /* lines written in it; 0 = no window open */
    uint32_t suppressed;  /* lines not written in it */
    uint8_t level;        /* most severe level suppressed */
} bk_log_window;

typedef struct bk_log_state {
    bk_log_window w[BK_LOGK_COUNT];
    uint64_t deadline;    /* earliest end of a window with lines suppressed;
                             UINT64_MAX = none */
} bk_log_state;

#endif
