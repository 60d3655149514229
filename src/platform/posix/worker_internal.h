/*
 * worker_internal.h - shared by the I/O thread's files only (worker.c: the
 * rings and the socket loop; worker_tls.c: TLS sessions on the thread).
 * worker.h is the public face.
 */
#ifndef TERN_WORKER_INTERNAL_H
#define TERN_WORKER_INTERNAL_H

#include <pthread.h>

#include "platform/posix/worker.h"
#include "ring/spsc.h"

enum { IO_EVENTS = 256, IO_READ_SIZE = 64 * 1024, IO_IOV = 16 };

/* One direction: the ring, the consumer's eventfd, the producer's
 * overflow list (messages the full ring did not take, in order).
 *
 * Wake-ups: the eventfd is written only while the consumer sleeps (or is
 * about to), so two busy threads exchange messages without a system call.
 * The consumer sets `sleeping`, then (after a full fence) looks into the
 * ring; the producer pushes, then (after a full fence) takes `sleeping`
 * back with an exchange and writes the eventfd if it was set. With the
 * fences on both sides (Dekker's pattern) at least one of them sees the
 * other: the consumer finds the message, or the producer finds it asleep.
 * An awake consumer therefore drains its ring every turn, event or not. */
typedef struct chan {
    struct spsc_ring ring;
    void **slots;
    int efd;
    _Atomic bool sleeping;            /* consumer sets, producer takes */
    tern_wmsg *held;                  /* consumer's: popped while checking for work */
    tern_wmsg *over_head, *over_tail; /* producer's */
    bool pushed;                      /* producer's: wake the consumer at flush */
    uint64_t lazy_due;                /* producer's: lazy messages wait; wake by then (0: none) */
} chan;

struct tern_worker {
    uint8_t kind;       /* TERN_HANDLE_WORKER (the core thread's epoll); first */
    unsigned index;
    tern_log *log;
    chan to_io, to_core;
    pthread_t thread;
    bool started;
    /* The I/O thread's. */
    int ep;
    size_t live;        /* connections between their accept and FREED */
    bool stop;
    tern_wconn *lingering;
    tern_wconn *finished; /* closed this turn: FREED goes at its end, after the batch */
    tern_tls_server *tls;  /* new TLS connections start from it (reference held) */
    unsigned hs_steps;     /* handshake steps left in this turn */
    uint64_t hs_us;        /* spent on handshake steps this turn */
    /* Listeners (worker_accept.c): the core thread's table, each slot
     * written before its LISTEN message; the thread's count of those it
     * took. */
    tern_wlisten *listens[TERN_WORKER_LISTENERS];
    size_t nlistens, listening;
    _Atomic bool held[TERN_WORKER_LISTENERS]; /* out of epoll for want of a ticket */
    uint64_t paused_until[TERN_WORKER_LISTENERS]; /* the thread's: out after an error (0: no) */
    uint64_t accept_warned_ms;
    _Atomic bool exited;   /* io_main returned: tern_worker_stop joins */
    uint8_t buf[IO_READ_SIZE];
    uint8_t plain[IO_READ_SIZE]; /* decrypted input, before it is posted */
};

/* worker.c */
/* A message to the core thread (out of memory: the process stops). */
void tern_wk_post(tern_worker *wk, tern_wconn *w, tern_wmsg_kind kind, const uint8_t *data,
                  size_t len);
/* n bytes of the core thread's output are done with: credit back. */
void tern_wk_sent(tern_worker *wk, tern_wconn *w, size_t n);
/* The socket failed: nothing more moves; the core thread hears HUP. */
void tern_wk_failed(tern_worker *wk, tern_wconn *w);

/* ... without waking the core thread (ACCEPTED): it goes with the next
 * message that does, or after TERN_WORKER_LAZY_MS. */
void tern_wk_post_lazy(tern_worker *wk, tern_wconn *w, tern_wmsg_kind kind, const uint8_t *data,
                       size_t len, uint64_t now);
/* A connection accepted here starts: its TLS session when tls, its
 * socket into the epoll set. */
void tern_wk_adopt(tern_worker *wk, tern_wconn *w, bool tls);
uint64_t tern_wk_now_ms(void);

/* worker_accept.c */
/* Listener `slot` is readable: accept what tickets allow. */
void tern_wk_accept(tern_worker *wk, size_t slot, uint64_t now);
/* Listeners paused after an error back into the epoll set when due; the
 * earliest still due into *next (left alone when none is). */
void tern_wk_accept_resume(tern_worker *wk, uint64_t now, uint64_t *next);
/* LISTEN: accept from the listener in slot. */
void tern_wk_listen(tern_worker *wk, size_t slot);
/* STOP: accept no more. */
void tern_wk_accept_stop(tern_worker *wk);

/* worker_tls.c */
/* Start w's session from wk's context (accepted on TLS); false: out of memory
 * or no context (the core thread has been told). */
bool tern_wtls_open(tern_worker *wk, tern_wconn *w);
/* n bytes of ciphertext read (in NULL, n 0: what the session holds): the
 * handshake, decrypted input posted within the input credit, what the
 * session has to send sent. */
void tern_wtls_input(tern_worker *wk, tern_wconn *w, const uint8_t *in, size_t n);
/* Seal queued plaintext and send records while the socket takes them;
 * false when the socket failed. */
bool tern_wtls_send(tern_worker *wk, tern_wconn *w);
/* Bytes still to go out: plaintext queued or records sealed. */
bool tern_wtls_pending(const tern_wconn *w);
/* A graceful close: close_notify after the queued output. */
void tern_wtls_goodbye(tern_worker *wk, tern_wconn *w);
/* The handshake budget of this turn is spent (steps or time). */
bool tern_wtls_budget_spent(const tern_worker *wk);
void tern_wtls_free(tern_wconn *w);

#endif
