/*
 * loop_internal.h - shared by the files of the Linux event loop only
 * (loop.c, accept.c, sock.c, loop_store.c): the loop's state and the
 * functions they call in each other. loop.h is the loop's public face.
 *
 *   loop.c        the turn, signals (stop, reload), set-up and tear-down
 *   accept.c      listeners and new connections
 *   sock.c        the socket transport under the connection layer
 *                 (src/conn), and socket events
 *   loop_store.c  durable storage: the store thread's side of the turn
 *   wsock.c       with I/O threads (workers >= 2, worker.c): the transport
 *                 over their rings, and their messages (the threads run
 *                 the TLS sessions, ADR-065)
 *
 * Everything about a connection that is not its socket (TLS, handshakes,
 * pending input, linger and close) is the connection layer's; with I/O
 * threads the TLS sessions are theirs, and the layer keeps the
 * handshake's limits and deadline (ADR-065).
 */
#ifndef TERN_LOOP_INTERNAL_H
#define TERN_LOOP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "broker/acl.h"
#include "broker/broker.h"
#include "config/config.h"
#include "conn/conn.h"
#include "platform/posix/heaptrim.h"
#include "platform/posix/log.h"
#include "platform/posix/loop.h"
#include "platform/posix/sock.h"
#include "platform/posix/worker.h"
#include "tls/tls.h"

enum {
    MAX_EVENTS = 256,
    LISTEN_BACKLOG = 4096,
    /* TLS connections waiting for a handshake slot (accept.c): the
     * backlog is resized every second to LISTEN_WAIT_MS of the handshakes
     * completed in the last one, within these bounds. A longer queue only
     * holds clients past their connect timeout, so under a storm most of
     * what it held would be taken after its client had left; past it Linux
     * drops SYNs and clients retransmit them later. 250 ms, not 500:
     * a client that waited half a second here and then behind the
     * running handshakes (tunables.h, CONN_HANDSHAKE_TARGET_MS) often
     * timed out before its CONNACK. */
    LISTEN_BACKLOG_TLS = 256,
    LISTEN_BACKLOG_TLS_MIN = 32,
    LISTEN_WAIT_MS = 250,
    ACCEPT_PER_TURN = LISTEN_BACKLOG, /* one backlog's worth, then serve others */
    ACCEPT_PAUSE_MS = 100,            /* out of descriptors/memory: retry after */
    ACCEPT_WARN_MS = 10000,           /* at most one such warning this often */
    FD_SLACK = 64,                    /* descriptors besides connections */
    MAX_LISTENERS = 4,                /* plaintext, TLS, WebSocket, WebSocket over TLS */
};

typedef struct listener {
    uint8_t kind; /* TERN_HANDLE_LISTENER; first, like every epoll handle */
    bool tls;     /* connections get a TLS session */
    bool ws;      /* connections speak WebSocket (ws, or wss with tls) */
    int fd;       /* owned; -1 when closed */
    bool held;    /* out of epoll: no room for a new connection (accept.c) */
    int backlog;  /* as last given to listen() */
    bool armed;   /* in the epoll set with EPOLLIN */
    /* workers >= 2: the I/O threads accept from it (accept.c, worker.h);
     * this thread keeps the admission. */
    tern_wlisten wl;
    uint64_t reported; /* their ACCEPTED messages taken */
    uint64_t holds;    /* wl.holds already counted in accept_holds */
} listener;

typedef struct signal_handle {
    uint8_t kind; /* TERN_HANDLE_SIGNAL */
    int fd;       /* owned signalfd */
} signal_handle;

struct tern_loop {
    tern_log *log;          /* not owned */
    broker *b;              /* owned */
    conn_server *cs;        /* owned: the connection layer; holds the TLS context */
    tern_config cfg;        /* copy, for reloads */
    char *config_path;      /* owned copy: relative paths resolve against it */
    bool tls;               /* a TLS listener is configured */
    int ep;                 /* owned epoll instance */
    signal_handle sig;
    listener listeners[MAX_LISTENERS];
    size_t nlisteners;
    bool accept_paused;
    uint64_t accept_resume_ms;
    uint64_t accept_warned_ms;  /* last resource warning, for rate limiting */
    uint64_t accept_failures;   /* pauses not reported since that warning */
    uint64_t accept_holds;      /* listeners held for want of room ($SYS accept_holds) */
    uint64_t backlog_ms;        /* when the TLS backlog was last sized */
    uint64_t backlog_ok;        /* handshakes completed by then */
    tern_sock **by_fd;          /* owned table; owns the connections it points to */
    size_t by_fd_len;
    size_t nconns;
    uint64_t closes;            /* connections closed so far (heaptrim.h) */
    tern_heaptrim trim;         /* when to give freed heap back (loop.c) */
    /* owned: the core's blocks and the socket records (pool.h); outlives
     * both, so destroyed last */
    struct tern_pool *pool;
    int stop_signal;            /* 0 while serving */
    /* The turn's epoll batch, while it is handled: a connection closed
     * during the turn takes its events still waiting here with it
     * (sock.c), so nothing reaches freed memory. */
    struct epoll_event *events;
    int nevents, next_event;
    struct tern_storeq *store;  /* owned; NULL without store.path */
    struct tern_bridges *bridges; /* owned; bridges.h */
    uint64_t wall_clock_ms;     /* core time the core was last told the wall clock */
    /* I/O threads (wsock.c, worker.h); none with workers = 1. */
    struct tern_worker **workers;
    size_t nworkers;
    /* By descriptor (by_fd's length): each connection's record shared with
     * its I/O thread. A table here rather than a pointer in every
     * tern_sock, which idle connections would pay for with one thread
     * too (ADR-062's 8 bytes beside the conn). */
    struct tern_wconn **wby_fd;
    struct tern_wconn **wready; /* connections with an event to serve (level) */
    size_t wready_len, wready_cap;
    bool workers_waiting;       /* messages wait for ring room: retry soon */
};

uint64_t tern_loop_now_ms(void);

/* accept.c */
bool tern_loop_add_listener(tern_loop *l, const tern_listen_addr *a, bool tls, bool ws);
void tern_loop_accept(tern_loop *l, listener *ls, uint64_t now);
void tern_loop_set_accepting(tern_loop *l, bool on);
/* End of a turn: re-arm listeners held for want of room that has come
 * back (handshakes finished or timed out, connections closed). */
void tern_loop_accept_refresh(tern_loop *l, uint64_t now);
/* workers >= 2: an I/O thread accepted w from listener `index` (its
 * ACCEPTED message): the connection's record, and the layer meets it. */
void tern_loop_accepted(tern_loop *l, struct tern_wconn *w, uint8_t index, uint64_t now);
/* Shutdown: take no more connections (the descriptors stay open while
 * I/O threads may still be accepting from them). */
void tern_loop_accept_close(tern_loop *l);

/* sock.c: a connection's socket reported events. */
void tern_loop_sock_event(tern_loop *l, tern_sock *k, uint32_t events, uint64_t now);

/* sock.c: transport calls the socket and the ring transport share. */
void tern_sock_ack_now(void *ctx, conn *c);
void tern_sock_peer(void *ctx, const conn *c, char *buf, size_t n);
size_t tern_sock_peer_addr(void *ctx, const conn *c, uint8_t *buf, size_t cap);

/* wsock.c: connections on I/O threads */
extern const conn_transport tern_wsock_transport;
bool tern_loop_workers_start(tern_loop *l, unsigned n);
/* End of a turn: push queued messages, wake the threads; true while some
 * wait for ring room. */
bool tern_loop_workers_flush(tern_loop *l);
/* Every connection released first; frees what the threads give back. */
void tern_loop_workers_stop(tern_loop *l);
/* A connection an I/O thread accepted: k its record beside w (NULL: refused
 * for want of memory; the thread closes it). */
void tern_loop_wsock_adopt(tern_loop *l, tern_sock *k, struct tern_wconn *w);
/* New TLS connections on every I/O thread start from tls (a reference
 * each; the caller keeps its own). */
void tern_loop_workers_set_tls(tern_loop *l, tern_tls_server *tls);
/* Give k's socket back to its I/O thread to close (the record is freed
 * when it answers). */
void tern_loop_wsock_release(tern_loop *l, tern_sock *k, bool graceful);
/* An I/O thread's eventfd is readable: its messages, then the ready list. */
void tern_loop_worker_event(tern_loop *l, void *handle, uint64_t now);
/* Each turn: the threads' messages, whether or not a wake-up came. */
void tern_loop_workers_poll(tern_loop *l, uint64_t now);
/* Before epoll_wait may block: false when messages wait (do not block);
 * after it, tern_loop_workers_awake. */
bool tern_loop_workers_may_sleep(tern_loop *l);
void tern_loop_workers_awake(tern_loop *l);
/* Serve the ready list (each turn: level-triggered leftovers). */
void tern_loop_wsock_turn(tern_loop *l, uint64_t now);
bool tern_loop_wsock_pending(const tern_loop *l);

/* loop_store.c: durable storage (storeq.h); all no-ops without store.path */
/* Open, check and load the store into l->b and watch its eventfd. */
bool tern_loop_store_open(tern_loop *l);
/* The store's eventfd is readable: report finished batches to the core. */
void tern_loop_store_event(tern_loop *l);
/* End of a turn: hand the core's batches to the store thread. */
void tern_loop_store_submit(tern_loop *l);
/* Shutdown: commit everything and report it (acknowledgements released). */
void tern_loop_store_drain(tern_loop *l);
/* Stop the store thread and close the database. */
void tern_loop_store_close(tern_loop *l);

#endif
