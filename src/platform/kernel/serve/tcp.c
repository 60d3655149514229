/*
 * tcp.c - client connections over lwIP's raw TCP API: lwIP's callbacks,
 * the TCP transport the connection layer (src/conn) reads and writes
 * through, and the end of a pcb once the layer is done with it.
 *
 * Input and back-pressure: lwIP hands us pbuf chains; we keep them until
 * the layer reads the bytes and call tcp_recved only for what it read.
 * While the layer does not read (the core paused the client, or its work
 * budget ran out) unread bytes keep lwIP's receive window closed, so a
 * client that floods us stalls itself instead of filling our memory.
 *
 * Output: tcp_write copies up to tcp_sndbuf; the layer learns the room
 * from write_room and comes back when the sent callback reports more (or
 * the poll callback, should memory have been short with nothing in
 * flight); push is tcp_output.
 *
 * Ending: the layer's close tells us how. An abort is tcp_abort (RST). A
 * graceful close keeps the record alive after the layer let go of it:
 *   - who closes first keeps the addresses in TIME_WAIT, and lwIP, unlike
 *     Linux, refuses a new SYN for an address pair in TIME_WAIT for its
 *     whole 2 x MSL (4 s with net/lwipopts.h's TCP_MSL). Clients (and NATs
 *     such as QEMU's user network) reuse source ports, so a broker that
 *     closes first after every DISCONNECT makes some later connections
 *     hang (seen in the kernel tests: one in a few hundred). So the broker
 *     waits up to PEER_CLOSE_MS for the client's FIN (MQTT clients close
 *     after DISCONNECT) and only then closes itself;
 *   - tcp_close can fail for want of memory: retried from the poll
 *     callback, then aborted;
 *   - before tcp_close the receive window is reopened for every byte we
 *     held, otherwise lwIP answers the close with a reset.
 * An error callback means lwIP has freed the pcb already: the layer is
 * told (conn_failed) and only our record is left to free.
 */
#include "serve/tcp.h"

#include "clock.h"
#include "conn/ws.h"
#include "mm/kmalloc.h"

#include "lwip/tcp.h"

#include <stdio.h>
#include <string.h>

enum {
    POLL_TICKS = 2,       /* poll callback every 2 x 500 ms */
    CLOSE_TRIES = 3,      /* tcp_close attempts before tcp_abort */
    PEER_CLOSE_MS = 2000, /* after our last byte, the client's FIN may take this long */
};

static struct kconn *kconn_of(conn *c)
{
    return (struct kconn *)(void *)((char *)c - offsetof(struct kconn, c));
}

static uint64_t now_ms(void)
{
    return clock_mono_ns() / 1000000;
}

/* ---- the work list ------------------------------------------------------ */

/* A FIFO, singly linked: connections leave it only at its head. One freed
 * while still queued stays (marked freed) until its turn comes, and
 * kconn_service frees it then: that keeps struct kconn a pointer smaller
 * than a list with removal from the middle would. */
static void work_add(struct kserver *s, struct kconn *kc)
{
    if (kc->on_work)
        return;
    kc->on_work = 1;
    kc->work_next = NULL;
    if (s->work.tail)
        s->work.tail->work_next = kc;
    else
        s->work.head = kc;
    s->work.tail = kc;
    s->work.len++;
}

struct kconn *kconn_work_pop(struct kserver *s)
{
    struct kconn *kc = s->work.head;
    if (!kc)
        return NULL;
    s->work.head = kc->work_next;
    if (!s->work.head)
        s->work.tail = NULL;
    kc->on_work = 0;
    kc->work_next = NULL;
    s->work.len--;
    return kc;
}

/* ---- lwIP callbacks: record, queue, return ---------------------------- */

static err_t on_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
    struct kconn *kc = arg;
    (void)err;
    if (!p) {
        kc->peer_fin = 1;
    } else if (kc->ended) {
        /* Nobody reads any more: take it off the window and drop it. */
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
    if (kc->want_write && !kc->ended)
        work_add(kc->srv, kc);
    return ERR_OK;
}

static err_t on_poll(void *arg, struct tcp_pcb *pcb)
{
    struct kconn *kc = arg;
    (void)pcb;
    if (kc->ended ? kc->closing || kc->peer_close_wait : kc->want_write)
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

static err_t accept_one(struct kserver *s, struct tcp_pcb *pcb, err_t err, bool tls, bool ws)
{
    if (err != ERR_OK || !pcb)
        return ERR_VAL;
    struct kconn *kc = kzalloc(sizeof *kc);
    if (!kc) {
        s->refused++;
        return ERR_MEM; /* lwIP aborts the new connection */
    }
    kc->srv = s;
    kc->pcb = pcb;
    /* A WebSocket listener's connection gets the layer's WebSocket
     * block; everything after is the same calls (conn/ws.h). */
    if (!(ws ? conn_open_ws(s->cs, &kc->c, tls, now_ms())
             : conn_open(s->cs, &kc->c, tls, now_ms()))) { /* the layer said why */
        kfree(kc);
        s->refused++;
        return ERR_MEM;
    }
    attach(kc);
    tcp_nagle_disable(pcb); /* MQTT is request/response: latency over packing */
    s->accepted++;
    s->nconns++;
    return ERR_OK;
}

/* ---- SYN admission ------------------------------------------------------- */

enum {
    /* pcbs kept for what is not a new client: lingering closes, the
     * listeners, DHCP/SNTP (UDP has its own pool, but be generous). */
    PCB_RESERVE = 64,
};

/* Connections lwIP is still completing for listener l (SYN received,
 * handshake not finished): they will reach the accept callback. */
static uint32_t half_open(const struct tcp_pcb *l)
{
    return l ? ((const struct tcp_pcb_listen *)(const void *)l)->accepts_pending : 0;
}

/* Would a new connection to the listener (tls or not) from src be served
 * now? O(1): counters and one hash lookup. */
static bool syn_room(struct kserver *s, bool tls, const uint8_t src[4])
{
    /* TLS handshakes lwIP is still completing, on either TLS listener:
     * they share the layer's handshake budget. */
    uint32_t tls_pending = half_open(s->tls_listener) + half_open(s->wss_listener);
    uint32_t pending = half_open(s->listener) + half_open(s->ws_listener) + tls_pending;
    uint32_t used = s->nconns + pending;
    if (used >= s->max_conns || used + PCB_RESERVE >= MEMP_NUM_TCP_PCB)
        return false;
    if (!tls)
        return true;
    return conn_handshake_room_from(s->cs, src, 4) > tls_pending;
}

/* Is port one of our listeners'? *tls says whether a TLS handshake
 * follows there (listener.tls, listener.wss: they count against the
 * handshake budget; listener.plain and listener.ws do not). */
static bool our_port(const struct kserver *s, uint16_t port, bool *tls)
{
    *tls = (s->tls_listener && port == s->tls_port) || (s->wss_listener && port == s->wss_port);
    return *tls || (s->listener && port == s->port) || (s->ws_listener && port == s->ws_port);
}

bool kconn_syn_gate(void *ctx, const uint8_t *frame, uint32_t len)
{
    struct kserver *s = ctx;
    syn_flow f;
    if (!syn_parse(frame, len, &f))
        return true;
    bool tls;
    if (!our_port(s, f.dport, &tls))
        return true; /* not a listener of ours: lwIP answers as it does */
    uint64_t now = now_ms();
    if (!syn_table_has(&s->refused_flows, &f, now)) {
        if (syn_room(s, tls, f.src))
            return true;
        syn_table_add(&s->refused_flows, &f, now);
    }
    s->syns_dropped++;
    conn_server_set_admission(s->cs, 0, s->syns_dropped);
    return false;
}

err_t kconn_accept(void *arg, struct tcp_pcb *pcb, err_t err)
{
    return accept_one(arg, pcb, err, false, false);
}

err_t kconn_accept_tls(void *arg, struct tcp_pcb *pcb, err_t err)
{
    return accept_one(arg, pcb, err, true, false);
}

err_t kconn_accept_ws(void *arg, struct tcp_pcb *pcb, err_t err)
{
    return accept_one(arg, pcb, err, false, true);
}

err_t kconn_accept_wss(void *arg, struct tcp_pcb *pcb, err_t err)
{
    return accept_one(arg, pcb, err, true, true);
}

/* ---- the transport ------------------------------------------------------ */

static long tcp_read_op(void *ctx, conn *c, uint8_t *buf, size_t cap)
{
    struct kconn *kc = kconn_of(c);
    size_t n = 0;
    (void)ctx;
    if (kc->dead)
        return CONN_IO_ERROR;
    while (kc->rx && n < cap) {
        struct pbuf *q = kc->rx;
        if (q->len == 0) { /* an empty pbuf inside a chain: skip it */
            kc->rx = q->next;
            if (q->next)
                pbuf_ref(q->next);
            pbuf_free(q);
            continue;
        }
        size_t take = q->len < cap - n ? q->len : cap - n;
        memcpy(buf + n, q->payload, take);
        n += take;
        /* Frees the pbufs it used up; the chain starts at what is left. */
        kc->rx = pbuf_free_header(q, (u16_t)take);
    }
    for (size_t left = n; left > 0 && kc->pcb;) {
        u16_t part = left > 0xffff ? 0xffff : (u16_t)left;
        tcp_recved(kc->pcb, part);
        left -= part;
    }
    if (n > 0)
        return (long)n;
    return kc->peer_fin ? CONN_IO_EOF : CONN_IO_AGAIN;
}

static long tcp_write_op(void *ctx, conn *c, const uint8_t *data, size_t len)
{
    struct kconn *kc = kconn_of(c);
    (void)ctx;
    if (!kc->pcb)
        return CONN_IO_ERROR;
    u16_t room = tcp_sndbuf(kc->pcb);
    u16_t n = len < room ? (u16_t)len : room;
    if (n == 0)
        return 0;
    err_t e = tcp_write(kc->pcb, data, n, TCP_WRITE_FLAG_COPY);
    if (e == ERR_MEM)
        return 0; /* segment queue full: the sent callback brings us back */
    return e == ERR_OK ? (long)n : CONN_IO_ERROR;
}

static size_t tcp_room_op(void *ctx, const conn *c)
{
    const struct kconn *kc = kconn_of((conn *)c);
    (void)ctx;
    return kc->pcb ? tcp_sndbuf(kc->pcb) : 0;
}

static void tcp_push_op(void *ctx, conn *c)
{
    struct kconn *kc = kconn_of(c);
    (void)ctx;
    if (kc->pcb)
        tcp_output(kc->pcb);
}

static void tcp_ack_now_op(void *ctx, conn *c)
{
    struct kconn *kc = kconn_of(c);
    (void)ctx;
    /* lwIP's tcp_ack_now() is in its private header: the same, through
     * the public flags (tcp.h). A delayed acknowledgement becomes an
     * immediate one, sent by tcp_output. */
    if (kc->pcb && (kc->pcb->flags & TF_ACK_DELAY)) {
        tcp_clear_flags(kc->pcb, TF_ACK_DELAY);
        tcp_set_flags(kc->pcb, TF_ACK_NOW);
        tcp_output(kc->pcb);
    }
}

static bool tcp_interest_op(void *ctx, conn *c, bool read, bool write)
{
    struct kserver *s = ctx;
    struct kconn *kc = kconn_of(c);
    kc->want_read = read;
    kc->want_write = write;
    /* Bytes that arrived while the layer was not reading are not announced
     * by lwIP again. */
    if (read && (kc->rx || kc->peer_fin))
        work_add(s, kc);
    return true;
}

static void kconn_free(struct kserver *s, struct kconn *kc)
{
    if (kc->rx)
        pbuf_free(kc->rx);
    kc->rx = NULL;
    s->nconns--;
    if (kc->on_work) {
        kc->freed = 1; /* its turn on the work list frees it (kconn_service) */
        return;
    }
    kfree(kc);
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

static void abort_pcb(struct kserver *s, struct kconn *kc)
{
    if (kc->pcb) {
        detach(kc->pcb);
        tcp_abort(kc->pcb);
        kc->pcb = NULL;
        s->aborted++;
    }
    kconn_free(s, kc);
}

/* Close the pcb gracefully (queued output still goes out before the FIN). */
static void try_close(struct kserver *s, struct kconn *kc)
{
    rx_release(kc);
    /* Callbacks off first: after a successful close lwIP may still report
     * an error on this pcb, and kc will be gone. */
    detach(kc->pcb);
    if (tcp_close(kc->pcb) == ERR_OK) {
        kc->pcb = NULL;
        kconn_free(s, kc);
        return;
    }
    if (++kc->close_tries >= CLOSE_TRIES) {
        abort_pcb(s, kc);
        return;
    }
    kc->closing = 1; /* retried from the poll callback */
    attach(kc);
}

static void tcp_close_op(void *ctx, conn *c, conn_close_how how)
{
    struct kserver *s = ctx;
    struct kconn *kc = kconn_of(c);
    kc->ended = 1;
    kc->want_read = kc->want_write = 0;
    if (!kc->pcb) {
        kconn_free(s, kc);
        return;
    }
    if (how == CONN_CLOSE_ABORT) {
        abort_pcb(s, kc);
        return;
    }
    rx_release(kc);
    if (!kc->peer_fin) {
        /* Let the client close first (see the top of this file); its FIN
         * or the poll callback brings kc back to kconn_service. */
        kc->peer_close_until = (uint32_t)(now_ms() + PEER_CLOSE_MS);
        kc->peer_close_wait = 1;
        return;
    }
    try_close(s, kc);
}

static void tcp_peer_op(void *ctx, const conn *c, char *buf, size_t n)
{
    const struct kconn *kc = kconn_of((conn *)c);
    (void)ctx;
    if (!kc->pcb) {
        snprintf(buf, n, "?");
        return;
    }
    const ip_addr_t *a = &kc->pcb->remote_ip;
    snprintf(buf, n, "%u.%u.%u.%u:%u", ip4_addr1_16(a), ip4_addr2_16(a), ip4_addr3_16(a),
             ip4_addr4_16(a), kc->pcb->remote_port);
}

/* No identity of its own: plaintext clients are anonymous. */
static size_t tcp_peer_addr_op(void *ctx, const conn *c, uint8_t *buf, size_t cap)
{
    const struct kconn *kc = kconn_of((conn *)c);
    (void)ctx;
    if (!kc->pcb || cap < 4)
        return 0;
    const ip_addr_t *a = &kc->pcb->remote_ip;
    buf[0] = ip4_addr1(a);
    buf[1] = ip4_addr2(a);
    buf[2] = ip4_addr3(a);
    buf[3] = ip4_addr4(a);
    return 4;
}

const conn_transport kconn_transport = {
    .read = tcp_read_op,         .short_read_drains = true,
    .write = tcp_write_op,
    .write_room = tcp_room_op,   .push = tcp_push_op,
    .ack_now = tcp_ack_now_op,
    .interest = tcp_interest_op, .close = tcp_close_op,
    .peer = tcp_peer_op,         .peer_addr = tcp_peer_addr_op,
};

/* ---- the turn's events ---------------------------------------------------- */

void kconn_service(struct kserver *s, struct kconn *kc, uint64_t now)
{
    if (kc->freed) { /* kconn_free ran while it was queued */
        kfree(kc);
        return;
    }
    if (kc->ended) {
        if (!kc->pcb)
            kconn_free(s, kc);
        else if (kc->closing)
            try_close(s, kc);
        else if (kc->peer_close_wait &&
                 (kc->peer_fin || (int32_t)((uint32_t)now - kc->peer_close_until) >= 0))
            try_close(s, kc);
        return;
    }
    if (kc->dead) {
        conn_failed(s->cs, &kc->c, now);
        return;
    }
    if ((kc->rx || kc->peer_fin) && !conn_readable(s->cs, &kc->c, now))
        return;
    if (kc->want_write)
        (void)conn_writable(s->cs, &kc->c, now);
}
