/*
 * loop_internal.h - shared by the files of the Linux event loop only
 * (loop.c, accept.c, io.c, handshake.c): the loop's state and the functions
 * they call in each other. loop.h is the loop's public face.
 *
 *   loop.c       the turn, signals (stop, reload), set-up and tear-down
 *   accept.c     listeners and new connections
 *   io.c         reading and writing connections the core knows, plaintext
 *                or TLS, and closing them
 *   handshake.c  TLS connections before the core knows them: handshake
 *                steps under a per-turn budget, deadlines, failures
 */
#ifndef TERN_LOOP_INTERNAL_H
#define TERN_LOOP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "broker/acl.h"
#include "broker/broker.h"
#include "config/config.h"
#include "platform/posix/conn.h"
#include "platform/posix/log.h"
#include "platform/posix/loop.h"
#include "tls/tls.h"

enum {
    READ_BUF_SIZE = 64 * 1024,
    /* Plaintext is never longer than the records it came in, so one read's
     * worth of ciphertext always decrypts into this without leftovers. */
    PLAIN_BUF_SIZE = READ_BUF_SIZE,
    READ_BUDGET = 4 * READ_BUF_SIZE, /* bytes read from one connection per turn */
    MAX_EVENTS = 256,
    LISTEN_BACKLOG = 4096,
    ACCEPT_PER_TURN = LISTEN_BACKLOG, /* one backlog's worth, then serve others */
    ACCEPT_PAUSE_MS = 100,            /* out of descriptors/memory: retry after */
    ACCEPT_WARN_MS = 10000,           /* at most one such warning this often */
    LINGER_MS = 5000,                 /* closing connection's time to take its output */
    FD_SLACK = 64,                    /* descriptors besides connections */
    MAX_LISTENERS = 2,                /* plaintext and TLS */
    /* TLS handshake steps (reads that feed a handshake) per turn: each costs
     * up to ~0.2 ms of public-key crypto, so a flood of new TLS clients
     * takes at most ~10 ms of a turn and established clients keep being
     * served. The rest wait in the kernel (level-triggered epoll). */
    HANDSHAKE_STEPS_PER_TURN = 48,
    /* Ciphertext queued for one connection before the loop stops encrypting
     * more of the core's output for it (the core then holds the rest). */
    TLS_OUT_HIGH = 1024 * 1024,
};

typedef struct listener {
    uint8_t kind; /* TERN_HANDLE_LISTENER; first, like every epoll handle */
    bool tls;     /* connections get a TLS session */
    int fd;       /* owned; -1 when closed */
} listener;

typedef struct signal_handle {
    uint8_t kind; /* TERN_HANDLE_SIGNAL */
    int fd;       /* owned signalfd */
} signal_handle;

struct tern_loop {
    tern_log *log;          /* not owned */
    broker *b;              /* owned */
    tern_config cfg;        /* copy, for reloads */
    char *config_path;      /* owned copy: relative paths resolve against it */
    tern_tls_server *tls;   /* owned reference; NULL without listener.tls */
    int ep;                 /* owned epoll instance */
    signal_handle sig;
    listener listeners[MAX_LISTENERS];
    size_t nlisteners;
    bool accept_paused;
    uint64_t accept_resume_ms;
    uint64_t accept_warned_ms;  /* last resource warning, for rate limiting */
    uint64_t accept_failures;   /* pauses not reported since that warning */
    unsigned handshake_steps;   /* left this turn */
    uint8_t *rbuf;              /* owned, READ_BUF_SIZE: every read lands here */
    uint8_t *pbuf;              /* owned, PLAIN_BUF_SIZE: decrypted input */
    tern_conn_list lists[TERN_LIST_COUNT];
    tern_conn **by_fd;          /* owned table; owns the connections it points to */
    size_t by_fd_len;
    size_t nconns;
    int stop_signal;            /* 0 while serving */
    struct tern_storeq *store;  /* owned; NULL without store.path */
};

uint64_t tern_loop_now_ms(void);

/* accept.c */
bool tern_loop_add_listener(tern_loop *l, const tern_listen_addr *a, bool tls);
void tern_loop_accept(tern_loop *l, listener *ls, uint64_t now);
void tern_loop_set_accepting(tern_loop *l, bool on);

/* io.c */
/* The transport is gone or given up: tell the core (if it knows c), free c. */
void tern_loop_close(tern_loop *l, tern_conn *c, uint64_t now);
/* Register the epoll interest c's state calls for. False on failure. */
bool tern_loop_set_interest(tern_loop *l, tern_conn *c);
/* Plaintext for the core from c (the socket's, or decrypted); keeps what
 * the core leaves, then places c on the right list. False when c closed. */
bool tern_loop_deliver(tern_loop *l, tern_conn *c, const uint8_t *data, size_t len,
                       uint64_t now);
/* Bytes waiting to go out on c: the core's and the TLS adapter's. */
size_t tern_loop_out_pending(const tern_conn *c);
/* Send what the TLS adapter holds for c. False when c was closed. */
bool tern_loop_send_tls(tern_loop *l, tern_conn *c, uint64_t now);
void tern_loop_conn_event(tern_loop *l, tern_conn *c, uint32_t events, uint64_t now);
void tern_loop_serve_ready(tern_loop *l, uint64_t now);
/* Write everything the turn produced; close what the core wants closed. */
void tern_loop_flush_dirty(tern_loop *l, uint64_t now);
bool tern_loop_flush(tern_loop *l, tern_conn *c, uint64_t now);
void tern_loop_expire_closing(tern_loop *l, uint64_t now);

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

/* handshake.c */
/* A TLS connection was accepted from peer: give it a session and a
 * deadline. False when out of memory. */
bool tern_loop_handshake_start(tern_loop *l, tern_conn *c, const char *peer, uint64_t now);
/* c (handshaking) is readable: one step, if the turn's budget allows. */
void tern_loop_handshake_event(tern_loop *l, tern_conn *c, uint32_t events, uint64_t now);
void tern_loop_expire_handshakes(tern_loop *l, uint64_t now);

#endif
