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
#include <sys/epoll.h> /* EPOLLIN, EPOLLOUT: tern_sock.events */

#include "conn/conn.h"

/* Everything registered with epoll starts with one of these tags, so the
 * loop can tell from the event's pointer what woke it up. */
typedef enum tern_handle_kind {
    TERN_HANDLE_LISTENER = 1,
    TERN_HANDLE_SIGNAL,
    TERN_HANDLE_CONN,
    TERN_HANDLE_STORE, /* the store thread's completion eventfd (storeq.h) */
    TERN_HANDLE_WORKER, /* an I/O thread's eventfd to the core thread (worker.h) */
    TERN_HANDLE_BRIDGE, /* a bridge's remote socket or local link (bridges.h) */
} tern_handle_kind;

/* Every idle connection holds one, so it is 8 bytes plus the layer's
 * `conn`: the epoll interest is only ever EPOLLIN and EPOLLOUT, which fit
 * a byte beside the kind (the pool, pool.h, serves it in 8-byte steps). */
typedef struct tern_sock {
    uint8_t kind;   /* TERN_HANDLE_CONN; must stay the first member */
    uint8_t events; /* epoll interest currently registered (EPOLLIN, EPOLLOUT) */
    uint8_t bridge; /* 1: the broker's end of a bridge's local link (bridges.h) */
    int fd;         /* owned (with I/O threads: the thread's, loop->wby_fd[fd]) */
    conn c;         /* the connection layer's part */
} tern_sock;
_Static_assert(sizeof(tern_sock) <= 8 + sizeof(conn), "tern_sock: 8 bytes beside its conn");
_Static_assert(((EPOLLIN | EPOLLOUT) & ~0xffu) == 0, "the epoll interest fits tern_sock.events");

/* The socket transport (the connection layer's view of a tern_sock); its
 * context is the tern_loop. */
extern const conn_transport tern_sock_transport;

/* The record holding a layer connection. */
static inline tern_sock *tern_sock_of(conn *c)
{
    return (tern_sock *)(void *)((char *)c - offsetof(tern_sock, c));
}

#endif
