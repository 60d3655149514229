/*
 * echo.c - TCP echo on the lwIP raw API with back-pressure: received data
 * is acknowledged to lwIP (tcp_recved, which reopens the window) only once
 * it has been queued for sending back, so a client that does not read
 * stalls its own sending instead of filling our memory. Unsent data waits
 * as a pbuf chain and resumes from the sent callback.
 */
#include "net/echo.h"

#include "mm/kmalloc.h"

#include "lwip/tcp.h"

#ifdef TERN_TEST_HOOKS

enum { ECHO_PORT = 7 };

struct echo {
    struct tcp_pcb *pcb;
    struct pbuf *pending;     /* received, not yet queued for sending */
    u16_t off;                /* bytes of pending's first pbuf already queued */
    int closing;              /* the peer closed: finish sending, then close */
};

static void echo_free(struct echo *e)
{
    if (e->pending)
        pbuf_free(e->pending);
    kfree(e);
}

static void echo_close(struct echo *e)
{
    struct tcp_pcb *pcb = e->pcb;
    tcp_arg(pcb, NULL);
    tcp_recv(pcb, NULL);
    tcp_sent(pcb, NULL);
    tcp_err(pcb, NULL);
    echo_free(e);
    if (tcp_close(pcb) != ERR_OK)
        tcp_abort(pcb);
}

static void echo_send(struct echo *e)
{
    while (e->pending) {
        struct pbuf *q = e->pending;
        u16_t room = tcp_sndbuf(e->pcb);
        u16_t n = (u16_t)(q->len - e->off);
        if (n > room)
            n = room;
        if (n == 0 && q->len != e->off)
            break;
        if (n && tcp_write(e->pcb, (u8_t *)q->payload + e->off, n, TCP_WRITE_FLAG_COPY) !=
                     ERR_OK)
            break; /* queue full: resume from the sent callback */
        tcp_recved(e->pcb, n);
        e->off = (u16_t)(e->off + n);
        if (e->off == q->len) {
            e->pending = q->next;
            if (q->next)
                pbuf_ref(q->next);
            pbuf_free(q);
            e->off = 0;
        }
    }
    tcp_output(e->pcb);
    if (e->closing && !e->pending)
        echo_close(e);
}

static err_t on_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
    struct echo *e = arg;
    (void)pcb;
    if (!p) {
        e->closing = 1;
        echo_send(e);
        return ERR_OK;
    }
    if (err != ERR_OK) {
        pbuf_free(p);
        return err;
    }
    if (e->pending)
        pbuf_cat(e->pending, p);
    else
        e->pending = p;
    echo_send(e);
    return ERR_OK;
}

static err_t on_sent(void *arg, struct tcp_pcb *pcb, u16_t len)
{
    (void)pcb;
    (void)len;
    echo_send(arg);
    return ERR_OK;
}

static void on_err(void *arg, err_t err)
{
    (void)err;
    if (arg)
        echo_free(arg); /* lwIP has already freed the pcb */
}

static err_t on_accept(void *arg, struct tcp_pcb *pcb, err_t err)
{
    (void)arg;
    if (err != ERR_OK || !pcb)
        return ERR_VAL;
    struct echo *e = kzalloc(sizeof *e);
    if (!e)
        return ERR_MEM;
    e->pcb = pcb;
    tcp_arg(pcb, e);
    tcp_recv(pcb, on_recv);
    tcp_sent(pcb, on_sent);
    tcp_err(pcb, on_err);
    tcp_nagle_disable(pcb);
    return ERR_OK;
}

int echo_start(void)
{
    struct tcp_pcb *pcb = tcp_new();
    if (!pcb)
        return -1;
    if (tcp_bind(pcb, IP_ADDR_ANY, ECHO_PORT) != ERR_OK) {
        tcp_close(pcb);
        return -1;
    }
    struct tcp_pcb *l = tcp_listen(pcb);
    if (!l)
        return -1;
    tcp_accept(l, on_accept);
    return 0;
}

#else

int echo_start(void) { return -1; }

#endif
