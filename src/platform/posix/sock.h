/*
 * sock.h - one client connection as the Linux event loop keeps it: its
 * socket, the epoll interest registered for it, and the connection
 * layer's part (src/conn), which holds everything else (TLS, the core's
 * side, pending input, deadlines).
 *
 * Idle connections are the common case (a broker may hold 100,000 of
 * them), so a connection is one small allocation and owns no buffer while
 * idle.
 */
#ifndef TERN_SOCK_H
#define TERN_SOCK_H

#include <stddef.h>
#include <stdint.h>

#include "conn/conn.h"

/* Everything registered with epoll starts with one of these tags, so the
 * loop can tell from the event's pointer what woke it up. */
typedef enum tern_handle_kind {
    TERN_HANDLE_LISTENER = 1,
    TERN_HANDLE_SIGNAL,
    TERN_HANDLE_CONN,
    TERN_HANDLE_STORE, /* the store thread's completion eventfd (storeq.h) */
    TERN_HANDLE_BRIDGE, /* a bridge's remote socket or local link (bridges.h) */
} tern_handle_kind;

typedef struct tern_sock {
    uint8_t kind;    /* TERN_HANDLE_CONN; must stay the first member */
    uint8_t bridge;  /* 1: the broker's end of a bridge's local link (bridges.h);
                        in the padding before fd, so it costs nothing */
    int fd;          /* owned */
    uint32_t events; /* epoll interest currently registered */
    conn c;          /* the connection layer's part */
} tern_sock;

/* The socket transport (the connection layer's view of a tern_sock); its
 * context is the tern_loop. */
extern const conn_transport tern_sock_transport;

/* The record holding a layer connection. */
static inline tern_sock *tern_sock_of(conn *c)
{
    return (tern_sock *)(void *)((char *)c - offsetof(tern_sock, c));
}

#endif
