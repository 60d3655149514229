/*
 * conn.c - one MQTT connection over lwIP's raw TCP API, glued to the
 * broker core: lwIP's callbacks, the plaintext path, and every way a
 * connection ends. The mutual-TLS half (handshake, decryption, encryption)
 * is tlsconn.c; both share struct kconn (conn_internal.h).
 *
 * Input and back-pressure: lwIP hands us pbuf chains; we keep them until
 * the core (or, on TLS, the adapter) has taken the bytes and call
 * tcp_recved only for what was taken. broker_input may take less (its work
 * budget ran out, or it paused input because the client does not read its
 * output): unread bytes keep lwIP's receive window closed, so a client that
 * floods us stalls itself instead of filling our memory.
 *
 * Output: the core's buffer (or, on TLS, the records encrypted from it) is
 * copied into lwIP with tcp_write up to tcp_sndbuf; the rest waits for the
 * sent callback (or the poll callback, should memory have been short with
 * nothing in flight).
 *
 * Closing, every path ends in broker_closed (exactly once, when the core
 * knows the connection) and in kconn_free, which frees the TLS session, held
 * input and the record:
 *   - the peer's FIN: take what it sent before, write what we can, close;
 *   - an error callback (RST, retransmission timeout): lwIP has already
 *     freed the pcb, so we only tell the core and free our state;
 *   - the core wants the connection closed: after its output is flushed,
 *     or after LINGER_MS if the client does not read it;
 *   - TLS: a failed or timed-out handshake, a TLS error (tlsconn.c);
 *   - tcp_close failing (no memory for the FIN): retried from the poll
 *     callback, then aborted.
 * Before tcp_close the receive window is reopened for every byte we held,
 * otherwise lwIP answers the close with a reset.
 *
 * Who closes first: the side that does keeps the connection's addresses in
 * TIME_WAIT, and lwIP, unlike Linux, refuses a new SYN for an address pair
 * in TIME_WAIT for its whole 2 x MSL (two minutes by lwIP's default, 4 s
 * with net/lwipopts.h's TCP_MSL). Clients (and NATs such
 * as QEMU's user network) reuse source ports, so a broker that closes
 * first after every DISCONNECT makes some later connections hang until
 * then (seen in the kernel tests: one in a few hundred). So once the core
 * is done with a connection and everything is sent, the broker waits up to
 * PEER_CLOSE_MS for the client's FIN (MQTT clients close after DISCONNECT)
 * and only then closes itself.
 */
#include "mqtt/conn_internal.h"

#include "clock.h"
#include "mm/kmalloc.h"

#include <stdio.h>

/* ---- the server's lists ----------------------------------------------- */

void klist_add(struct kconn_list *l, struct kconn *kc, int which)
{
    struct klink *k = &kc->links[which];
    if (k->on)
        return;
    k->on = 1;
    k->next = NULL;
    k->prev = l->tail;
    if (l->tail)
        l->tail->links[which].next = kc;
    else
        l->head = kc;
    l->tail = kc;
    l->len++;
}

void klist_remove(struct kconn_list *l, struct kconn *kc, int which)
{
    struct klink *k = &kc->links[which];
    if (!k->on)
        return;
    if (k->prev)
        k->prev->links[which].next = k->next;
    else
        l->head = k->next;
    if (k->next)
        k->next->links[which].prev = k->prev;
    else
        l->tail = k->prev;
    k->on = 0;
    k->next = k->prev = NULL;
    l->len--;
}

struct kconn *kconn_work_pop(struct mqtt_server *s)
{
    struct kconn *kc = s->work.head;
    if (kc)
        klist_remove(&s->work, kc, KLIST_WORK);
    return kc;
}

void kconn_peer(const struct kconn *kc, char *buf, size_t n)
{
    if (!kc->pcb) {
        snprintf(buf, n, "?");
        return;
    }
    const ip_addr_t *a = &kc->pcb->remote_ip;
    snprintf(buf, n, "%u.%u.%u.%u:%u", ip4_addr1_16(a), ip4_addr2_16(a), ip4_addr3_16(a),
             ip4_addr4_16(a), kc->pcb->remote_port);
}

/* ---- lwIP callbacks: record, queue, return ---------------------------- */

/* Is anyone going to read what arrives? Not once the connection is
 * closing, nor after the peer's FIN (or close_notify). */
static int wants_input(const struct kconn *kc)
{
    if (kc->closing || kc->peer_fin || kc->peer_close_until)
        return 0;
    return kc->bc != NULL ||
           (kc->tls != NULL && tern_tls_state_of(kc->tls) == TERN_TLS_HANDSHAKING);
}

static err_t on_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
    struct kconn *kc = arg;
    (void)err;
    if (!p) {
        kc->peer_fin = 1;
    } else if (!wants_input(kc)) {
        tcp_recved(pcb, p->tot_len);
        pbuf_free(p);
        return ERR_OK;
    } else if (kc->rx) {
        pbuf_cat(kc->rx, p);
    } else {
        kc->rx = p;
    }
    work_add(kc->srv, kc);
    return ERR_OK;
}

static size_t out_pending(const struct kconn *kc)
{
    return (kc->bc ? broker_out_pending(kc->bc) : 0) + (kc->tls ? tls_out_pending(kc) : 0);
}

static err_t on_sent(void *arg, struct tcp_pcb *pcb, u16_t len)
{
    struct kconn *kc = arg;
    (void)pcb;
    (void)len;
    if (out_pending(kc))
        work_add(kc->srv, kc);
    return ERR_OK;
}

static err_t on_poll(void *arg, struct tcp_pcb *pcb)
{
    struct kconn *kc = arg;
    (void)pcb;
    if (kc->closing || kc->linger_until || kc->peer_close_until || out_pending(kc))
        work_add(kc->srv, kc);
    return ERR_OK;
}

static void on_err(void *arg, err_t err)
{
    struct kconn *kc = arg;
    (void)err;
    kc->pcb = NULL; /* already freed by lwIP */
    kc->dead = 1;
    work_add(kc->srv, kc);
}

static void attach(struct kconn *kc)
{
    tcp_arg(kc->pcb, kc);
    tcp_recv(kc->pcb, on_recv);
    tcp_sent(kc->pcb, on_sent);
    tcp_err(kc->pcb, on_err);
    tcp_poll(kc->pcb, on_poll, POLL_TICKS);
}

static void detach(struct tcp_pcb *pcb)
{
    tcp_arg(pcb, NULL);
    tcp_recv(pcb, NULL);
    tcp_sent(pcb, NULL);
    tcp_err(pcb, NULL);
    tcp_poll(pcb, NULL, 0);
}

static struct kconn *kconn_new(struct mqtt_server *s, struct tcp_pcb *pcb)
{
    struct kconn *kc = kzalloc(sizeof *kc);
    if (!kc) {
        s->refused++;
        return NULL;
    }
    kc->srv = s;
    kc->pcb = pcb;
    return kc;
}

static void kconn_start(struct mqtt_server *s, struct kconn *kc)
{
    attach(kc);
    tcp_nagle_disable(kc->pcb); /* MQTT is request/response: latency over packing */
    s->accepted++;
    s->nconns++;
}

err_t kconn_accept(void *arg, struct tcp_pcb *pcb, err_t err)
{
    struct mqtt_server *s = arg;
    if (err != ERR_OK || !pcb)
        return ERR_VAL;
    struct kconn *kc = kconn_new(s, pcb);
    if (!kc)
        return ERR_MEM; /* lwIP aborts the new connection */
    char peer[24];
    kconn_peer(kc, peer, sizeof peer);
    broker_conn_info info = { .peer = peer, .identity = NULL, .is_operator = false };
    kc->bc = broker_open(s->b, kc, &info, clock_mono_ns() / 1000000);
    if (!kc->bc) {
        kfree(kc); /* maximum connections, or no memory */
        s->refused++;
        return ERR_MEM;
    }
    kconn_start(s, kc);
    return ERR_OK;
}

err_t kconn_accept_tls(void *arg, struct tcp_pcb *pcb, err_t err)
{
    struct mqtt_server *s = arg;
    if (err != ERR_OK || !pcb)
        return ERR_VAL;
    struct kconn *kc = kconn_new(s, pcb);
    if (!kc)
        return ERR_MEM;
    /* The core meets the client only once the handshake has decided who
     * it is (tlsconn.c). */
    kc->tls = tern_tls_server_conn(s->tls);
    if (!kc->tls) {
        kfree(kc);
        s->refused++;
        return ERR_MEM;
    }
    kc->hs_deadline = clock_mono_ns() / 1000000 + s->handshake_timeout_ms;
    klist_add(&s->handshakes, kc, KLIST_HANDSHAKE);
    kconn_start(s, kc);
    return ERR_OK;
}

/* ---- ending a connection ---------------------------------------------- */

static void kconn_free(struct mqtt_server *s, struct kconn *kc)
{
    klist_remove(&s->work, kc, KLIST_WORK);
    klist_remove(&s->handshakes, kc, KLIST_HANDSHAKE);
    tern_tls_conn_free(kc->tls);
    kfree(kc->pending);
    s->nconns--;
    kfree(kc);
}

static void core_closed(struct mqtt_server *s, struct kconn *kc, uint64_t now)
{
    if (kc->bc) {
        broker_closed(s->b, kc->bc, now); /* fires the will unless DISCONNECT came */
        kc->bc = NULL;
    }
}

/* Drop held input. With the pcb alive its window is reopened: lwIP resets
 * a connection closed with unacknowledged received data. */
static void rx_release(struct kconn *kc)
{
    if (!kc->rx)
        return;
    if (kc->pcb)
        tcp_recved(kc->pcb, kc->rx->tot_len);
    pbuf_free(kc->rx);
    kc->rx = NULL;
}

void kconn_abort(struct mqtt_server *s, struct kconn *kc, uint64_t now)
{
    core_closed(s, kc, now);
    if (kc->rx)
        pbuf_free(kc->rx);
    kc->rx = NULL;
    if (kc->pcb) {
        detach(kc->pcb);
        tcp_abort(kc->pcb);
        kc->pcb = NULL;
        s->aborted++;
    }
    kconn_free(s, kc);
}

/* Close the pcb gracefully (queued output still goes out before the FIN). */
static void try_close(struct mqtt_server *s, struct kconn *kc, uint64_t now)
{
    /* Callbacks off first: after a successful close lwIP may still report
     * an error on this pcb, and kc will be gone. */
    detach(kc->pcb);
    if (tcp_close(kc->pcb) == ERR_OK) {
        kc->pcb = NULL;
        kconn_free(s, kc);
        return;
    }
    if (++kc->close_tries >= CLOSE_TRIES) {
        kconn_abort(s, kc, now);
        return;
    }
    kc->closing = 1; /* retried from the poll callback */
    attach(kc);
}

void kconn_end(struct mqtt_server *s, struct kconn *kc, uint64_t now)
{
    core_closed(s, kc, now);
    rx_release(kc);
    klist_remove(&s->handshakes, kc, KLIST_HANDSHAKE);
    if (!kc->pcb) {
        kconn_free(s, kc);
        return;
    }
    if (!kc->peer_fin && !kc->peer_close_until) {
        /* Let the client close first (see the top of this file); the poll
         * callback or its FIN brings kc back to kconn_service. */
        kc->peer_close_until = now + PEER_CLOSE_MS;
        return;
    }
    try_close(s, kc, now);
}

int kconn_after_flush(struct mqtt_server *s, struct kconn *kc, uint64_t now, size_t pending,
                     int (*before_close)(struct mqtt_server *, struct kconn *, uint64_t))
{
    broker_conn *bc = kc->bc;
    if (broker_wants_close(bc)) {
        if (pending == 0) {
            if (before_close && !before_close(s, kc, now))
                return 0;
            kconn_end(s, kc, now);
            return 0;
        }
        if (!kc->linger_until) {
            kc->linger_until = now + LINGER_MS;
        } else if (now >= kc->linger_until) {
            kconn_abort(s, kc, now); /* the client does not read: give up */
            return 0;
        }
    } else if ((kc->rx || kc->pending || (kc->tls && tls_has_work(kc))) &&
               !broker_input_paused(bc)) {
        work_add(s, kc); /* output drained enough for the core to read again */
    }
    return 1;
}

/* ---- plaintext input and output --------------------------------------- */

/* Hand held input to the core, one pbuf at a time, acknowledging to lwIP
 * exactly what it took. drain: the peer has closed, so ignore the work
 * budget (nothing else will bring us back). */
static void feed(struct mqtt_server *s, struct kconn *kc, uint64_t now, int drain)
{
    while (kc->rx && kc->bc) {
        if (broker_wants_close(kc->bc) || broker_input_paused(kc->bc))
            return;
        struct pbuf *q = kc->rx;
        if (q->len == 0) { /* an empty pbuf inside a chain: skip it */
            kc->rx = q->next;
            if (q->next)
                pbuf_ref(q->next);
            pbuf_free(q);
            continue;
        }
        u16_t len = q->len;
        size_t n = broker_input(s->b, kc->bc, q->payload, len, now);
        if (n > len)
            n = len; /* cannot happen; keeps the arithmetic below safe */
        if (n) {
            kc->rx = pbuf_free_header(q, (u16_t)n);
            tcp_recved(kc->pcb, (u16_t)n);
        }
        if (n < len && (!drain || n == 0))
            break;
    }
    /* The work budget ran out: the rest waits for the next turn, after the
     * other connections. */
    if (kc->rx && kc->bc && !broker_wants_close(kc->bc) && !broker_input_paused(kc->bc))
        work_add(s, kc);
}

int kconn_push(struct mqtt_server *s, struct kconn *kc, uint64_t now,
               const struct wire_src *src)
{
    if (!kc->pcb)
        return 1;
    for (;;) {
        size_t len;
        const uint8_t *out = src->peek(s, kc, &len);
        u16_t room = tcp_sndbuf(kc->pcb);
        if (len == 0 || room == 0)
            break;
        u16_t n = len < room ? (u16_t)len : room;
        err_t e = tcp_write(kc->pcb, out, n, TCP_WRITE_FLAG_COPY);
        if (e == ERR_MEM)
            break; /* segment queue full: resume from the sent callback */
        if (e != ERR_OK) {
            kconn_abort(s, kc, now);
            return 0;
        }
        src->consume(s, kc, n);
    }
    tcp_output(kc->pcb);
    return 1;
}

static const uint8_t *core_peek(struct mqtt_server *s, struct kconn *kc, size_t *len)
{
    (void)s;
    return broker_out_peek(kc->bc, len);
}

static void core_consume(struct mqtt_server *s, struct kconn *kc, size_t n)
{
    broker_out_consume(s->b, kc->bc, n); /* the core may refill from its queues */
}

static const struct wire_src core_src = {core_peek, core_consume};

/* Returns 0 if kc was freed. */
static int flush(struct mqtt_server *s, struct kconn *kc, uint64_t now)
{
    if (!kc->bc || !kc->pcb)
        return 1;
    if (!kconn_push(s, kc, now, &core_src))
        return 0;
    return kconn_after_flush(s, kc, now, broker_out_pending(kc->bc), NULL);
}

void kconn_flush(struct mqtt_server *s, struct kconn *kc, uint64_t now_ms)
{
    if (kc->tls)
        (void)tls_flush(s, kc, now_ms);
    else
        (void)flush(s, kc, now_ms);
}

void kconn_service(struct mqtt_server *s, struct kconn *kc, uint64_t now_ms)
{
    if (kc->dead) {
        core_closed(s, kc, now_ms);
        if (kc->rx)
            pbuf_free(kc->rx); /* the pcb is gone: nothing to acknowledge */
        kc->rx = NULL;
        kconn_free(s, kc);
        return;
    }
    if (kc->closing) {
        try_close(s, kc, now_ms);
        return;
    }
    if (kc->peer_close_until) {
        if (kc->peer_fin || now_ms >= kc->peer_close_until) {
            rx_release(kc);
            try_close(s, kc, now_ms);
        }
        return;
    }
    if (kc->tls) {
        (void)tls_service(s, kc, now_ms);
        return;
    }
    feed(s, kc, now_ms, kc->peer_fin);
    if (!flush(s, kc, now_ms))
        return;
    if (kc->peer_fin)
        kconn_end(s, kc, now_ms); /* lwIP still sends what we queued, then FIN */
}

void kconn_expire_handshakes(struct mqtt_server *s, uint64_t now_ms)
{
    struct kconn *kc;
    /* Every handshake gets the same time, so the list is in deadline
     * order. */
    while ((kc = s->handshakes.head) != NULL && kc->hs_deadline <= now_ms) {
        char peer[24];
        kconn_peer(kc, peer, sizeof peer);
        mqtt_log(s, BROKER_LOG_INFO, "TLS handshake with %s timed out after %u s", peer,
                 s->handshake_timeout_ms / 1000);
        s->tls_timeouts++;
        kconn_abort(s, kc, now_ms);
    }
}
