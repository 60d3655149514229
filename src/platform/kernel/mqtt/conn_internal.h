/*
 * conn_internal.h - one connection's state, shared by conn.c (lwIP
 * callbacks, plaintext, closing) and tlsconn.c (the mutual-TLS half).
 * Nothing outside mqtt/conn*.c and mqtt/tlsconn.c sees it.
 */
#ifndef TERN_MQTT_CONN_INTERNAL_H
#define TERN_MQTT_CONN_INTERNAL_H

#include "mqtt/conn.h"

#include "lwip/tcp.h"

#include <stddef.h>
#include <stdint.h>

enum {
    LINGER_MS = 5000,   /* a closing connection's output may take this long */
    POLL_TICKS = 2,     /* poll callback every 2 x 500 ms */
    CLOSE_TRIES = 3,    /* tcp_close attempts before tcp_abort */
    PEER_CLOSE_MS = 2000, /* after our last byte, the client's FIN may take this long */
};

/* Which list a link belongs to. */
enum { KLIST_WORK = 0, KLIST_HANDSHAKE = 1, KLIST_COUNT };

struct klink {
    struct kconn *next, *prev;
    uint8_t on;
};

struct kconn {
    struct klink links[KLIST_COUNT];
    struct mqtt_server *srv;
    struct tcp_pcb *pcb;        /* NULL once lwIP has freed it (error callback) */
    broker_conn *bc;            /* NULL before the TLS handshake ends and once the
                                   core was told the connection closed */
    tern_tls_conn *tls;         /* owned; NULL on the plaintext listener */
    struct pbuf *rx;            /* received, not yet taken (by the core or TLS) */
    uint8_t *pending;           /* owned: decrypted input the core has not taken */
    uint32_t pending_off, pending_len;
    uint64_t linger_until;      /* the core wants a close, output still pending */
    uint64_t hs_deadline;       /* TLS: when the handshake times out */
    uint64_t peer_close_until;  /* ended: waiting for the client to close first */
    uint8_t peer_fin;           /* the peer closed its side (FIN or close_notify) */
    uint8_t dead;               /* the pcb is gone */
    uint8_t closing;            /* tcp_close failed; retrying */
    uint8_t close_tries;
};

/* The server's lists (work, handshakes): append, remove, pop. */
void klist_add(struct kconn_list *l, struct kconn *kc, int which);
void klist_remove(struct kconn_list *l, struct kconn *kc, int which);
static inline void work_add(struct mqtt_server *s, struct kconn *kc)
{
    klist_add(&s->work, kc, KLIST_WORK);
}

/* "a.b.c.d:port" of the peer, for logs and the core ("?" once the pcb is
 * gone). */
void kconn_peer(const struct kconn *kc, char *buf, size_t n);

/* Ending a connection (conn.c). Both tell the core (broker_closed, once)
 * and free kc and everything it owns (kconn_end possibly a little later,
 * from the work list); the caller must not touch kc afterwards.
 *   kconn_end: graceful (lwIP sends what was queued, then FIN);
 *   kconn_abort: RST at once. */
void kconn_end(struct mqtt_server *s, struct kconn *kc, uint64_t now);
void kconn_abort(struct mqtt_server *s, struct kconn *kc, uint64_t now);

/* Bytes bound for the wire, as a peek/consume pair over kc: the core's
 * output for plaintext, the TLS adapter's ciphertext for TLS. */
struct wire_src {
    const uint8_t *(*peek)(struct mqtt_server *s, struct kconn *kc, size_t *len);
    void (*consume)(struct mqtt_server *s, struct kconn *kc, size_t n);
};

/* Hand src's bytes to lwIP as far as its send buffer takes them, then
 * tcp_output. Returns 0 if kc was freed (lwIP refused the data outright). */
int kconn_push(struct mqtt_server *s, struct kconn *kc, uint64_t now,
               const struct wire_src *src);

/* After a flush: the core wants a close (close once everything is out,
 * give up after LINGER_MS), or input waits for the work list. out_pending:
 * bytes not yet handed to lwIP (core and TLS). Returns 0 if kc was freed.
 * Before a graceful TLS close, before_close (may be NULL) queues
 * close_notify and pushes it; it returns 0 if it freed kc. */
int kconn_after_flush(struct mqtt_server *s, struct kconn *kc, uint64_t now, size_t out_pending,
                     int (*before_close)(struct mqtt_server *, struct kconn *, uint64_t));

/* The TLS half (tlsconn.c). Each returns 0 when it freed kc. */
int tls_service(struct mqtt_server *s, struct kconn *kc, uint64_t now);
int tls_flush(struct mqtt_server *s, struct kconn *kc, uint64_t now);
/* Does the TLS half want the work list (input to decrypt or deliver)? */
int tls_has_work(const struct kconn *kc);
/* Output the TLS adapter holds that lwIP has not taken yet. */
size_t tls_out_pending(const struct kconn *kc);

#endif
