/*
 * conn.c - one MQTT connection over lwIP's raw TCP API, glued to the
 * broker core.
 *
 * Input and back-pressure: lwIP hands us pbuf chains; we keep them until
 * the core has taken the bytes (broker_input may take less: its work
 * budget ran out, or it paused input because the client does not read its
 * output) and call tcp_recved only for what it took. Unread bytes thus
 * keep lwIP's receive window closed, and a client that floods us stalls
 * itself instead of filling our memory.
 *
 * Output: the core's buffer is copied into lwIP with tcp_write up to
 * tcp_sndbuf; the rest stays in the core and is written when the sent
 * callback reports room (or the poll callback, should memory have been
 * short with nothing in flight).
 *
 * Closing, every path ends in broker_closed (exactly once) and kfree:
 *   - the peer's FIN: take what it sent before, write what we can, close;
 *   - an error callback (RST, retransmission timeout): lwIP has already
 *     freed the pcb, so we only tell the core and free our state;
 *   - the core wants the connection closed: after its output is flushed,
 *     or after LINGER_MS if the client does not read it;
 *   - tcp_close failing (no memory for the FIN): retried from the poll
 *     callback, then aborted.
 * Before tcp_close the receive window is reopened for every byte we held,
 * otherwise lwIP answers the close with a reset.
 */
#include "mqtt/conn.h"

#include "clock.h"
#include "mm/kmalloc.h"

#include "lwip/tcp.h"

#include <stdio.h>

enum {
    LINGER_MS = 5000,   /* a closing connection's output may take this long */
    POLL_TICKS = 2,     /* poll callback every 2 x 500 ms */
    CLOSE_TRIES = 3,    /* tcp_close attempts before tcp_abort */
};

struct kconn {
    struct kconn *next, *prev;  /* on the server's work list */
    struct mqtt_server *srv;
    struct tcp_pcb *pcb;        /* NULL once lwIP has freed it (error callback) */
    broker_conn *bc;            /* NULL once the core was told the connection closed */
    struct pbuf *rx;            /* received, not yet taken by the core */
    uint64_t linger_until;      /* the core wants a close, output still pending */
    uint8_t on_work;
    uint8_t peer_fin;           /* the peer closed its side */
    uint8_t dead;               /* the pcb is gone */
    uint8_t closing;            /* tcp_close failed; retrying */
    uint8_t close_tries;
};

/* ---- the work list ---------------------------------------------------- */

static void work_add(struct mqtt_server *s, struct kconn *kc)
{
    if (kc->on_work)
        return;
    kc->on_work = 1;
    kc->next = NULL;
    kc->prev = s->work_tail;
    if (s->work_tail)
        s->work_tail->next = kc;
    else
        s->work_head = kc;
    s->work_tail = kc;
    s->work_len++;
}

static void work_remove(struct mqtt_server *s, struct kconn *kc)
{
    if (!kc->on_work)
        return;
    if (kc->prev)
        kc->prev->next = kc->next;
    else
        s->work_head = kc->next;
    if (kc->next)
        kc->next->prev = kc->prev;
    else
        s->work_tail = kc->prev;
    kc->on_work = 0;
    kc->next = kc->prev = NULL;
    s->work_len--;
}

struct kconn *kconn_work_pop(struct mqtt_server *s)
{
    struct kconn *kc = s->work_head;
    if (kc)
        work_remove(s, kc);
    return kc;
}

/* ---- lwIP callbacks: record, queue, return ---------------------------- */

static err_t on_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
    struct kconn *kc = arg;
    (void)err;
    if (!p) {
        kc->peer_fin = 1;
    } else if (!kc->bc || kc->peer_fin) {
        /* Closing already: nobody will read it. */
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

static err_t on_sent(void *arg, struct tcp_pcb *pcb, u16_t len)
{
    struct kconn *kc = arg;
    (void)pcb;
    (void)len;
    if (kc->bc && broker_out_pending(kc->bc))
        work_add(kc->srv, kc);
    return ERR_OK;
}

static err_t on_poll(void *arg, struct tcp_pcb *pcb)
{
    struct kconn *kc = arg;
    (void)pcb;
    if (kc->closing || kc->linger_until || (kc->bc && broker_out_pending(kc->bc)))
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

err_t kconn_accept(void *arg, struct tcp_pcb *pcb, err_t err)
{
    struct mqtt_server *s = arg;
    if (err != ERR_OK || !pcb)
        return ERR_VAL;
    struct kconn *kc = kzalloc(sizeof *kc);
    if (!kc) {
        s->refused++;
        return ERR_MEM; /* lwIP aborts the new connection */
    }
    char peer[24];
    const ip_addr_t *a = &pcb->remote_ip;
    snprintf(peer, sizeof peer, "%u.%u.%u.%u:%u", ip4_addr1_16(a), ip4_addr2_16(a),
             ip4_addr3_16(a), ip4_addr4_16(a), pcb->remote_port);
    broker_conn_info info = { .peer = peer, .identity = NULL, .is_operator = false };
    kc->srv = s;
    kc->pcb = pcb;
    kc->bc = broker_open(s->b, kc, &info, clock_mono_ns() / 1000000);
    if (!kc->bc) {
        kfree(kc); /* maximum connections, or no memory */
        s->refused++;
        return ERR_MEM;
    }
    attach(kc);
    tcp_nagle_disable(pcb); /* MQTT is request/response: latency over packing */
    s->accepted++;
    s->nconns++;
    return ERR_OK;
}

/* ---- ending a connection ---------------------------------------------- */

static void conn_free(struct mqtt_server *s, struct kconn *kc)
{
    work_remove(s, kc);
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

static void conn_abort(struct mqtt_server *s, struct kconn *kc, uint64_t now)
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
    conn_free(s, kc);
}

/* Close the pcb gracefully (queued output still goes out before the FIN). */
static void try_close(struct mqtt_server *s, struct kconn *kc, uint64_t now)
{
    /* Callbacks off first: after a successful close lwIP may still report
     * an error on this pcb, and kc will be gone. */
    detach(kc->pcb);
    if (tcp_close(kc->pcb) == ERR_OK) {
        kc->pcb = NULL;
        conn_free(s, kc);
        return;
    }
    if (++kc->close_tries >= CLOSE_TRIES) {
        conn_abort(s, kc, now);
        return;
    }
    kc->closing = 1; /* retried from the poll callback */
    attach(kc);
}

static void conn_end(struct mqtt_server *s, struct kconn *kc, uint64_t now)
{
    core_closed(s, kc, now);
    rx_release(kc);
    if (kc->pcb)
        try_close(s, kc, now);
    else
        conn_free(s, kc);
}

/* ---- input and output ------------------------------------------------- */

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

/* Returns 0 if kc was freed. */
static int flush(struct mqtt_server *s, struct kconn *kc, uint64_t now)
{
    if (!kc->bc || !kc->pcb)
        return 1;
    broker_conn *bc = kc->bc;
    for (;;) {
        size_t len;
        const uint8_t *out = broker_out_peek(bc, &len);
        u16_t room = tcp_sndbuf(kc->pcb);
        if (len == 0 || room == 0)
            break;
        u16_t n = len < room ? (u16_t)len : room;
        err_t e = tcp_write(kc->pcb, out, n, TCP_WRITE_FLAG_COPY);
        if (e == ERR_MEM)
            break; /* segment queue full: resume from the sent callback */
        if (e != ERR_OK) {
            conn_abort(s, kc, now);
            return 0;
        }
        broker_out_consume(s->b, bc, n); /* the core may refill from its queues */
    }
    tcp_output(kc->pcb);
    if (broker_wants_close(bc)) {
        if (broker_out_pending(bc) == 0) {
            conn_end(s, kc, now);
            return 0;
        }
        if (!kc->linger_until) {
            kc->linger_until = now + LINGER_MS;
        } else if (now >= kc->linger_until) {
            conn_abort(s, kc, now); /* the client does not read: give up */
            return 0;
        }
    } else if (kc->rx && !broker_input_paused(bc)) {
        work_add(s, kc); /* output drained enough for the core to read again */
    }
    return 1;
}

void kconn_flush(struct mqtt_server *s, struct kconn *kc, uint64_t now_ms)
{
    (void)flush(s, kc, now_ms);
}

void kconn_service(struct mqtt_server *s, struct kconn *kc, uint64_t now_ms)
{
    if (kc->dead) {
        core_closed(s, kc, now_ms);
        if (kc->rx)
            pbuf_free(kc->rx); /* the pcb is gone: nothing to acknowledge */
        kc->rx = NULL;
        conn_free(s, kc);
        return;
    }
    if (kc->closing) {
        try_close(s, kc, now_ms);
        return;
    }
    feed(s, kc, now_ms, kc->peer_fin);
    if (!flush(s, kc, now_ms))
        return;
    if (kc->peer_fin)
        conn_end(s, kc, now_ms); /* lwIP still sends what we queued, then FIN */
}
