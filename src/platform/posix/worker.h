/*
 * worker.h - the daemon's I/O threads (`workers = N`, N >= 2; ADR-061,
 * ADR-065): each accepts new connections from the listeners itself
 * (worker_accept.c, ADR-070) and owns the sockets of the connections it
 * accepted, their
 * epoll interest, every recv/send, and their TLS sessions (worker_tls.c:
 * handshakes, certificate checks, records, close_notify); the core thread
 * keeps the core and the connection layer and sees each connection as a
 * plaintext byte stream through the transport in wsock.c, introduced by
 * its certificate's identity once the handshake succeeded.
 *
 * TLS contexts: each thread holds a reference to the server context its
 * new connections start from (tern_worker_set_tls, at start and on every
 * reload); a connection keeps the context it started with. The context
 * is shared read-only by the threads (tls.h, Threading).
 *
 * Between the core thread and each I/O thread: one SPSC ring of message
 * pointers each way (src/ring/spsc.h) and an eventfd each way, written
 * at the end of a producer's turn that queued something, and only while
 * the consumer sleeps (worker.c, chan). One connection's
 * bytes travel one FIFO ring each way, so their order is the socket's.
 *
 * Flow control, per connection and direction, is a byte credit
 * (TERN_WORKER_IN_CREDIT, TERN_WORKER_OUT_CREDIT): the I/O thread reads a
 * socket only while the core thread holds less than the input credit
 * (beyond it TCP's window pushes back, as with one thread), and the core
 * thread's write takes only what the output credit allows (a short write:
 * the connection layer's back-pressure sees a slow reader). A side that
 * stopped for want of credit raises a flag; the other side, having
 * returned credit, clears it and sends a wake-up message (both sides use
 * sequentially consistent operations on the counter and the flag, so a
 * wake-up is never lost).
 *
 * Threading: a tern_wconn's fields are grouped by the thread that writes
 * them; the atomics are the only ones both touch.
 */
#ifndef TERN_WORKER_H
#define TERN_WORKER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "platform/posix/log.h"
#include "tls/tls.h"

/* Tunables (one place). Input: four of the core's reads; output: what a
 * socket's send buffer typically holds, twice. */
#ifndef TERN_WORKER_IN_CREDIT
#define TERN_WORKER_IN_CREDIT (256u * 1024u)
#endif
#ifndef TERN_WORKER_OUT_CREDIT
#define TERN_WORKER_OUT_CREDIT (512u * 1024u)
#endif
/* Message pointers a ring holds; more wait in the producer's overflow
 * list (in order) and are retried every TERN_WORKER_RETRY_MS. */
#ifndef TERN_WORKER_RING_SLOTS
#define TERN_WORKER_RING_SLOTS 16384u
#endif
#define TERN_WORKER_RETRY_MS 1
/* A new connection's ACCEPTED wakes nobody (it rides with the next
 * message that does: TLS_UP, the first input); a core thread asleep
 * that long is woken for it anyway (worker.c, chan_send_lazy). */
#ifndef TERN_WORKER_LAZY_MS
#define TERN_WORKER_LAZY_MS 20
#endif
/* Listeners an I/O thread accepts from (plaintext, TLS, ws, wss). */
#define TERN_WORKER_LISTENERS 4

typedef struct tern_worker tern_worker;
typedef struct tern_wconn tern_wconn;

typedef enum tern_wmsg_kind {
    /* core thread -> I/O thread */
    TERN_WM_DATA = 1, /* bytes to send */
    TERN_WM_CLOSE,   /* send what is queued (up to the linger), then close */
    TERN_WM_ABORT,   /* close at once */
    TERN_WM_RESUME,  /* input credit came back: read again */
    TERN_WM_STOP,    /* shutdown: no lingering; end once every socket is closed */
    TERN_WM_TLS,     /* w NULL; data: a tern_tls_server * whose reference passes */
    TERN_WM_LISTEN,  /* w NULL; data[0]: the slot of a listener to accept from */
    /* I/O thread -> core thread */
    TERN_WM_IN,      /* bytes read */
    TERN_WM_EOF,     /* the peer finished sending */
    TERN_WM_HUP,     /* hang-up or error (len 1: an error) */
    TERN_WM_ROOM,    /* output credit came back */
    TERN_WM_FREED,   /* the socket is closed: the connection's memory may go */
    TERN_WM_TLS_UP,  /* handshake done: flags (1 operator, 2 identity), then NUL-terminated
                        identity (when flag 2), version, cipher */
    TERN_WM_TLS_FAIL, /* TLS failed: data[0] 1 in the handshake, then why, NUL-terminated;
                         the alert is sent (or queued): answer CLOSE */
    TERN_WM_TLS_GAVE_UP, /* the client closed right after the start of its handshake:
                            not answered; answer ABORT */
    TERN_WM_ACCEPTED, /* a connection this thread accepted: data[0] the listener's index
                         (tern_wlisten.index); the first message of w, before any other */
} tern_wmsg_kind;

typedef struct tern_wmsg {
    struct tern_wmsg *next; /* in a list of the thread holding it */
    tern_wconn *w;          /* NULL for STOP */
    uint32_t len, off;      /* data[off..len) not yet used */
    uint8_t kind;           /* tern_wmsg_kind */
    uint8_t data[];
} tern_wmsg;

struct tern_wconn {
    int fd;                 /* owned by the I/O thread from its accept until FREED */
    tern_worker *wk;
    void *owner;            /* the core thread's record (tern_sock) */
    /* Both threads. */
    _Atomic uint32_t in_used;   /* bytes read and not yet taken by the core thread */
    _Atomic uint32_t out_used;  /* bytes written by the core thread and not yet sent */
    _Atomic bool core_waits;    /* the core thread had a short write */
    _Atomic bool io_waits;      /* the I/O thread stopped reading for want of credit */
    /* Core thread only. */
    tern_wmsg *in_head, *in_tail;
    bool want_read, want_write, eof, hup, err, closing, on_ready;
    /* I/O thread only. */
    tern_wmsg *out_head, *out_tail; /* plaintext, sealed into tls as it drains */
    tern_tls_conn *tls;     /* NULL on plaintext */
    bool tls_up, tls_failed, tls_bye; /* established and told / failed / close_notify queued */
    uint32_t events;        /* epoll interest registered */
    bool in_epoll, eof_io, failed, lingering, done_io;
    uint64_t linger_deadline;
    tern_wconn *linger_next;
};

/*
 * A listener the I/O threads accept from themselves (ADR-070): each has
 * it in its epoll set with EPOLLEXCLUSIVE, so a new connection wakes one
 * of them, which accepts it, starts its TLS session at once and tells the
 * core thread (ACCEPTED) without waking it; the core meets the
 * connection with the next message that wakes it (on TLS: the identity).
 *
 * Admission stays the core thread's (accept.c, SPEC B7): every accept
 * takes a ticket first (taken + 1, only while taken < limit), and the
 * core moves `limit` to what it reported plus its room (connections,
 * handshakes) at the end of each turn. A thread that finds no ticket
 * takes the listener out of its epoll set ("held": new connections wait
 * in Linux's backlog) and counts it in `holds`; the core re-arms it once
 * there is room (tern_worker_rearm). Shared by the core and the threads;
 * fd, index, tls and max_fd are set before the threads see it.
 */
typedef struct tern_wlisten {
    int fd;
    uint8_t index;          /* in the core thread's listener table */
    bool tls;
    size_t max_fd;          /* descriptors from here on are refused (the core's tables) */
    _Atomic uint64_t taken; /* tickets taken (given back when no connection came of it) */
    _Atomic uint64_t limit; /* the core's: taken stays below it */
    _Atomic uint64_t holds; /* times a thread left the listener for want of a ticket */
} tern_wlisten;

/* Start an I/O thread; NULL (logged) on failure. */
tern_worker *tern_worker_start(unsigned index, tern_log *log);
/* Queue STOP, wait for the thread, free what is left in its rings (the
 * FREED messages' connections through free_owner). NULL is fine. */
void tern_worker_stop(tern_worker *wk, void (*free_owner)(void *ctx, void *owner), void *ctx);
/* The core thread's eventfd handle for this worker: its epoll data.ptr
 * (starts with a tern_handle_kind byte) and descriptor. */
void *tern_worker_handle(tern_worker *wk);
int tern_worker_fd(const tern_worker *wk);
/* Core thread: new connections on wk start from tls (NULL: none) from
 * its next turn on; the caller's reference passes to the thread. */
void tern_worker_set_tls(tern_worker *wk, tern_tls_server *tls);
/* Core thread: a message for the I/O thread (kept in order) / take the
 * next one from it (NULL: none). */
tern_wmsg *tern_wmsg_new(tern_wconn *w, tern_wmsg_kind kind, const uint8_t *data, size_t len);
void tern_worker_post(tern_worker *wk, tern_wmsg *m);
tern_wmsg *tern_worker_take(tern_worker *wk);
/* Core thread, end of its turn: push what waits, wake the thread. True
 * when messages still wait (retry after TERN_WORKER_RETRY_MS). */
bool tern_worker_flush(tern_worker *wk);
/* Core thread, before the thread's first turn (set-up): accept from ls
 * too. False (logged) when its epoll set refused it. */
bool tern_worker_listen(tern_worker *wk, tern_wlisten *ls);
/* Core thread, after it raised limits: listeners this thread holds for
 * want of a ticket, into its epoll set again where a ticket is free. */
void tern_worker_rearm(tern_worker *wk);
/* Core thread: clear the eventfd before taking messages. */
void tern_worker_ack(tern_worker *wk);
/* Core thread, before epoll_wait may block: false when a message from
 * this thread waits already (do not block); after it, tern_worker_awake.
 * While awake the core thread takes messages every turn (no wake-up is
 * sent to an awake thread). */
bool tern_worker_may_sleep(tern_worker *wk);
void tern_worker_awake(tern_worker *wk);

#endif
