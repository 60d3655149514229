/*
 * conn.h - one client connection as the Linux event loop keeps it: the
 * socket, the TLS session on TLS listeners, the core's broker_conn, input
 * the core has not taken yet, and the links that put it on at most one of
 * the loop's work lists.
 *
 * Idle connections are the common case (a broker may hold 100,000 of them),
 * so a connection is one small allocation and owns no buffer while idle: the
 * read buffers are shared by the loop, output lives in the core (and, for
 * TLS, in the adapter only until the socket takes it), and `pending` exists
 * only while the core's work budget left input unconsumed.
 *
 * A TLS connection has no broker_conn until its handshake succeeds: the
 * core only ever sees authenticated clients.
 */
#ifndef TERN_CONN_H
#define TERN_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/broker.h"
#include "tls/tls.h"

/* Everything registered with epoll starts with one of these tags, so the
 * loop can tell from the event's pointer what woke it up. */
typedef enum tern_handle_kind {
    TERN_HANDLE_LISTENER = 1,
    TERN_HANDLE_SIGNAL,
    TERN_HANDLE_CONN,
    TERN_HANDLE_STORE, /* the store thread's completion eventfd (storeq.h) */
} tern_handle_kind;

/* The loop's work lists; a connection is on at most one. */
typedef enum tern_conn_list_id {
    TERN_LIST_NONE = 0,
    TERN_LIST_READY,   /* has pending input and the core may take more */
    TERN_LIST_CLOSING, /* core wants it closed; flushing output until a deadline */
    TERN_LIST_HANDSHAKE, /* TLS handshake in progress, until a deadline */
    TERN_LIST_COUNT,
} tern_conn_list_id;

typedef struct tern_conn tern_conn;

struct tern_conn {
    uint8_t kind;       /* TERN_HANDLE_CONN; must stay the first member */
    uint8_t list;       /* tern_conn_list_id of the list holding it */
    bool input_blocked; /* core paused its input: not reading until output drains */
    int fd;             /* owned */
    uint32_t events;    /* epoll interest currently registered */
    uint32_t pending_off, pending_len;
    broker_conn *bc;    /* the core's side; freed by broker_closed(); NULL while a TLS
                           handshake runs */
    tern_tls_conn *tls; /* owned; NULL on plaintext listeners */
    char *peer;         /* owned "address:port" while a TLS handshake runs (for its log
                           lines; the core keeps its own copy after), else NULL */
    uint8_t *pending;   /* owned: plaintext not yet taken by the core, NULL when none */
    tern_conn *prev, *next;
    uint64_t deadline_ms; /* closing list: when to give up flushing; handshake list:
                             when the handshake times out */
};

typedef struct tern_conn_list {
    tern_conn *head, *tail;
    size_t count;
    uint8_t id; /* tern_conn_list_id written into members */
} tern_conn_list;

/* A zeroed connection owning fd; NULL when out of memory. */
tern_conn *tern_conn_new(int fd);
/* Frees c, its TLS session and its pending input; the caller closes the fd
 * and tells the core first. */
void tern_conn_free(tern_conn *c);

void tern_conn_list_init(tern_conn_list *list, tern_conn_list_id id);
/* Append c, which must be on no list. */
void tern_conn_list_push(tern_conn_list *list, tern_conn *c);
/* Remove and return the first connection, or NULL. */
tern_conn *tern_conn_list_pop(tern_conn_list *list);
/* Remove c, which must be on this list. */
void tern_conn_list_remove(tern_conn_list *list, tern_conn *c);

/* Copy input the core did not take; c must hold none already. False when
 * out of memory. */
bool tern_conn_keep_input(tern_conn *c, const uint8_t *data, size_t len);
/* The same without a copy: c takes ownership of buf (from malloc), whose
 * bytes [off, off + len) are the input to keep. */
void tern_conn_adopt_input(tern_conn *c, uint8_t *buf, size_t off, size_t len);
/* The core took n bytes of the pending input; frees it once all are taken. */
void tern_conn_input_taken(tern_conn *c, size_t n);
/* Forget pending input (the connection is closing). */
void tern_conn_drop_input(tern_conn *c);

#endif
