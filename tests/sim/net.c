/*
 * net.c - the simulated network and the platform side of the core: each
 * connection has a pipe per direction holding bytes in flight. The core is
 * fed random chunks of the upstream pipe (so packets arrive split and
 * coalesced, never reordered), and its output goes into the downstream pipe,
 * sometimes only in part (a slow transport, which makes the core queue and
 * pause input). Closes follow broker.h: close the transport once the core
 * wants it and its output is flushed, then broker_closed().
 */
#include "sim.h"

#include <stdlib.h>
#include <string.h>

int net_open(world *w, int client)
{
    if (w->nconns == SIM_MAX_CONNS)
        return -1;
    int k = w->nconns++;
    sconn *c = &w->conns[k];
    memset(c, 0, sizeof *c);
    c->client = client;
    c->owner = client;
    c->inc = -1;
    broker_conn_info info = {.peer = w->cl[client].id, .identity = NULL, .is_operator = false};
    c->bc = broker_open(w->b, c, &info, w->now);
    if (!c->bc)
        sim_fail(w, "broker_open refused connection %d", k);
    sim_trace(w, "conn %d opened by %s", k, w->cl[client].id);
    return k;
}

void net_write(world *w, int k, const uint8_t *p, size_t n, mark m)
{
    sconn *c = &w->conns[k];
    if (n == 0)
        abort(); /* an encoder failed: a harness bug */
    bq_push(&c->up, p, n);
    c->up_written += n;
    m.end = c->up_written;
    if (c->nmarks == c->marks_cap) {
        size_t cap = c->marks_cap ? c->marks_cap * 2 : 16;
        mark *nm = realloc(c->marks, cap * sizeof *nm);
        if (!nm)
            abort();
        c->marks = nm;
        c->marks_cap = cap;
    }
    c->marks[c->nmarks++] = m;
}

/* Bytes in flight upstream die with the transport. */
static void discard_upstream(sconn *c)
{
    bq_pop(&c->up, c->up.len);
    c->nmarks = c->marks_head = 0;
}

static void close_transport(world *w, int k)
{
    sconn *c = &w->conns[k];
    broker_closed(w->b, c->bc, w->now);
    c->bc = NULL;
    c->eof = true;
    c->blocked = false;
    discard_upstream(c);
    sim_trace(w, "conn %d closed at the core's request", k);
    if (!c->ended) {
        if (!c->expect_close)
            sim_fail(w, "the core closed connection %d (%s) unexpectedly", k,
                     w->cl[c->owner].id);
        model_conn_end(w, k);
    }
}

/* Move what the transport "takes" of k's output into the downstream pipe. */
static void take_output(world *w, int k)
{
    sconn *c = &w->conns[k];
    size_t len;
    const uint8_t *p = broker_out_peek(c->bc, &len);
    size_t take = len;
    if (len > 0 && !w->quiesce && rng_pct(&w->r, w->tight ? 50 : 10))
        take = rng_below(&w->r, (uint32_t)len + 1);
    if (take > 0) {
        bq_push(&c->down, p, take);
        broker_out_consume(w->b, c->bc, take);
    }
    c->blocked = broker_out_pending(c->bc) > 0;
    if (broker_wants_close(c->bc) && broker_out_pending(c->bc) == 0)
        close_transport(w, k);
}

void net_collect(world *w)
{
    broker_conn *bc;
    while ((bc = broker_next_dirty(w->b)) != NULL) {
        sconn *c = broker_conn_ctx(bc);
        if (c->bc != bc) {
            sim_fail(w, "dirty list returned a connection the platform closed");
            return;
        }
        take_output(w, (int)(c - w->conns));
    }
}

void net_unblock(world *w, int k)
{
    if (w->conns[k].bc)
        take_output(w, k);
    net_collect(w);
}

void net_feed(world *w, int k, size_t n)
{
    sconn *c = &w->conns[k];
    if (n > c->up.len)
        n = c->up.len;
    size_t off = 0;
    while (off < n && c->bc && !w->failed) {
        size_t used = broker_input(w->b, c->bc, c->up.p + off, n - off, w->now);
        if (used > n - off) {
            sim_fail(w, "broker_input took more bytes than offered");
            return;
        }
        off += used;
        c->up_fed += used;
        /* The core handled every packet that now ends inside the fed
         * prefix, in order, before anything else happened. */
        while (c->marks_head < c->nmarks && c->marks[c->marks_head].end <= c->up_fed)
            model_apply(w, k, &c->marks[c->marks_head++]);
        net_collect(w);
        if (used == 0) {
            w->n_paused += c->bc && broker_input_paused(c->bc);
            break; /* input paused (back-pressure): retry later */
        }
    }
    if (!c->bc)
        return; /* closed meanwhile: upstream already discarded */
    bq_pop(&c->up, off);
}

void net_deliver(world *w, int k, size_t n)
{
    sconn *c = &w->conns[k];
    if (c->client < 0) {
        bq_pop(&c->down, c->down.len);
        return;
    }
    if (n > c->down.len)
        n = c->down.len;
    if (c->rx_len + n > c->rx_cap) {
        size_t cap = c->rx_cap ? c->rx_cap : 1024;
        while (cap < c->rx_len + n)
            cap *= 2;
        uint8_t *np = realloc(c->rx, cap);
        if (!np)
            abort();
        c->rx = np;
        c->rx_cap = cap;
    }
    if (n) /* down.p may be NULL when empty */
        memcpy(c->rx + c->rx_len, c->down.p, n);
    c->rx_len += n;
    bq_pop(&c->down, n);

    size_t pos = 0;
    while (c->client >= 0 && !w->failed) {
        mqtt_packet p;
        size_t used = 0;
        mqtt_err e = mqtt_decode(c->rx + pos, c->rx_len - pos, MQTT_FROM_SERVER,
                                 MQTT_LEVEL_311, 0, &p, &used);
        if (e == MQTT_NEED_MORE)
            break;
        if (e != MQTT_OK) {
            sim_fail(w, "conn %d: the core sent a malformed packet: %s", k, mqtt_err_str(e));
            return;
        }
        client_receive(w, k, &p);
        pos += used;
    }
    if (c->rx_len > pos)
        memmove(c->rx, c->rx + pos, c->rx_len - pos);
    c->rx_len -= pos;
    if (c->eof && c->down.len == 0 && c->client >= 0)
        client_closed(w, k);
}

void net_drop(world *w, int k)
{
    sconn *c = &w->conns[k];
    c->expect_close = true;
    if (c->bc) {
        broker_closed(w->b, c->bc, w->now);
        c->bc = NULL;
        model_conn_end(w, k);
    }
    sim_trace(w, "conn %d dropped", k);
    discard_upstream(c);
    bq_pop(&c->down, c->down.len);
    c->rx_len = 0;
    c->eof = true;
    c->blocked = false;
    if (c->client >= 0)
        client_closed(w, k);
    net_collect(w);
}

void net_orphan(world *w, int k)
{
    sconn *c = &w->conns[k];
    sim_trace(w, "conn %d abandoned by %s", k, w->cl[c->owner].id);
    c->expect_close = true;
    c->client = -1;
    discard_upstream(c);
    bq_pop(&c->down, c->down.len);
    c->rx_len = 0;
}

void net_free(world *w)
{
    for (int k = 0; k < w->nconns; k++) {
        sconn *c = &w->conns[k];
        bq_free(&c->up);
        bq_free(&c->down);
        free(c->marks);
        free(c->rx);
    }
    w->nconns = 0;
}

void net_lost(world *w, int k)
{
    sconn *c = &w->conns[k];
    c->expect_close = true;
    if (c->bc) {
        c->bc = NULL;
        model_conn_end(w, k);
    }
    discard_upstream(c);
    bq_pop(&c->down, c->down.len);
    c->rx_len = 0;
    c->eof = true;
    c->blocked = false;
    if (c->client >= 0)
        client_closed(w, k);
}
