/*
 * net.c - connections, and the platform side of the simulation. The
 * broker's end of every connection is the connection layer (src/conn) over
 * the fake transport (tests/unit/fake_transport.c), driven in turns the way
 * a platform drives it; the client's end is client.c.
 *
 * The network keeps its randomness: bytes in flight arrive in the
 * transport in random chunks and each read returns a random amount, so
 * packets reach the core split and coalesced, never reordered; each step a
 * transport takes a random amount of output within the room its client's
 * unread bytes leave (a client that does not read fills it, and the core
 * queues, drops QoS 0 in tight seeds, pauses input); a link is reset, fails
 * on its next read or write, or ends with EOF; an abandoned link's peer may
 * take nothing more, so the core's close of it lingers until the layer
 * aborts it.
 *
 * Which packets the core has handled (the model's marks). A mark is applied
 * once the core has consumed the stream up to the end of its packet; the
 * bytes the core has consumed on a link are those the layer read from the
 * transport less those it keeps for the core (link.c.pending_len). The
 * simulator used to call broker_input itself and applied the marks right
 * after the call that consumed them. Now they are applied after every
 * layer call that can feed the core, for the links that call can feed, in
 * the order it feeds them: conn_readable and conn_hangup feed their own
 * link; conn_turn_begin serves the layer's ready list, each link once, in
 * list order (read beforehand from the links' ready_link fields); the
 * other calls (conn_open, conn_writable, conn_failed, conn_turn_end) feed
 * nothing: they write output, and a flush that resumes paused input only
 * puts the link on the ready list or turns its read interest back on
 * (output.c). The order is the old one because inside one layer call
 * nothing the model sees happens between its broker_input calls: the core
 * is fed one link at a time, output reaches a client only in net_deliver,
 * store batches are taken and the core's timers run only between calls.
 *
 * Except a close (on_close). When the layer closes a link it is feeding,
 * the links it served before are done, so their marks go first; the link's
 * own pending input is already gone, but if the layer read its transport
 * in this call it did so holding none of its input (it reads only then),
 * and a read leads to a close only by reporting the end or an error (or a
 * failed write of the last answers after the end): so all it read reached
 * the core. If it did not read, the call gave the core nothing (conn_hangup
 * ends at once a link it cannot read now). After every call two checks
 * hold this to account: the core's bytes_received grew by exactly the bytes
 * the marks applied in it account for, and the links it could not feed
 * consumed nothing. Input the layer drops once the core wants a link closed
 * is exempt (the core would discard it), and from then on none of that
 * link's marks is applied (model_apply skipped them before).
 *
 * Closes: the layer closes the transport (fake_link.on_close) when the core
 * wanted it and its output left (or its linger ran out: then an abort), on
 * the peer's EOF after the answers were written once (graceful), and at
 * once on transport errors. A graceful close lets the client read what was
 * written, then EOF; an abort loses it.
 */
#include "sim.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static sconn *sconn_of(fake_link *l)
{
    return (sconn *)(void *)((char *)l - offsetof(sconn, link));
}

static int index_of(world *w, const conn *c)
{
    return (int)(sconn_of(fake_link_of((conn *)c)) - w->conns);
}

/* Bytes of c the layer has read from the transport. */
static uint64_t given(const sconn *c)
{
    return c->up_arrived - c->link.up.len;
}

/* ... of which the core has taken all but what the layer keeps. */
static uint64_t consumed(const sconn *c)
{
    return given(c) - c->link.c.pending_len;
}

/* ---- marks ----------------------------------------------------------- */

void net_write(world *w, int k, const uint8_t *p, size_t n, mark m)
{
    sconn *c = &w->conns[k];
    if (n == 0 || c->fin)
        abort(); /* an encoder failed, or a write after the last byte: harness bugs */
    fake_bytes_put(&c->up, p, n);
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

/* The core handled every packet of k that ends inside what it consumed. */
static void apply_marks(world *w, int k)
{
    sconn *c = &w->conns[k];
    uint64_t done = consumed(c);
    if (c->closing)
        return; /* what it sent after is discarded, by the core or the layer */
    if (done < c->up_consumed) {
        sim_fail(w, "conn %d: the core's consumed input went back from %llu to %llu", k,
                 (unsigned long long)c->up_consumed, (unsigned long long)done);
        return;
    }
    w->feed_taken += done - c->up_consumed;
    c->up_consumed = done;
    while (c->marks_head < c->nmarks && c->marks[c->marks_head].end <= done && !w->failed)
        model_apply(w, k, &c->marks[c->marks_head++]);
}

/* The client's bytes the layer has not read die with the transport, and
 * their marks with them (the layer keeps what it read; the stream goes on
 * from there). */
static void discard_unread(sconn *c)
{
    uint64_t keep = given(c);
    fake_bytes_take(&c->up, c->up.len);
    fake_bytes_take(&c->link.up, c->link.up.len);
    c->up_written = c->up_arrived = keep;
    while (c->nmarks > c->marks_head && c->marks[c->nmarks - 1].end > keep)
        c->nmarks--;
}

/* ---- layer calls ----------------------------------------------------- */

/* The links the next layer call may feed, in the order it feeds them. */
static void feed_begin(world *w, const int *ks, int n)
{
    for (int i = 0; i < n; i++) {
        w->feed[i] = ks[i];
        w->feed_reads[i] = w->conns[ks[i]].link.reads;
    }
    w->nfeed = n;
    w->fed = 0;
    broker_stats st;
    broker_get_stats(w->b, &st);
    w->feed_rx = st.bytes_received;
    w->feed_taken = 0;
}

/* Apply the marks of the links fed up to feed[upto]. */
static void feed_catch_up(world *w, int upto)
{
    for (; w->fed <= upto && w->fed < w->nfeed; w->fed++) {
        apply_marks(w, w->feed[w->fed]);
        w->n_kept += w->conns[w->feed[w->fed]].link.c.pending != NULL;
    }
}

/* The layer's input accounting (limits.max_input_bytes): each open link
 * counts what it holds (the core's unfinished packet and input the core
 * has not taken), and the layer's total is their sum. */
static void check_input_budget(world *w)
{
    uint64_t sum = 0;
    for (int k = 0; k < w->nconns && !w->failed; k++) {
        const sconn *c = &w->conns[k];
        broker_conn *bc = sconn_core(c);
        if (!c->open)
            continue;
        sum += c->link.c.held;
        if (bc != NULL && !broker_wants_close(bc) &&
            c->link.c.held != broker_input_held(bc) + c->link.c.pending_len)
            sim_fail(w, "conn %d: the layer counts %u bytes held, it holds %zu", k,
                     c->link.c.held, broker_input_held(bc) + c->link.c.pending_len);
    }
    conn_stats st;
    conn_server_get_stats(w->cs, &st);
    if (st.input_held != sum && !w->failed)
        sim_fail(w, "the layer counts %llu bytes of input held, its links %llu",
                 (unsigned long long)st.input_held, (unsigned long long)sum);
}

/* After a layer call: the marks of the links it fed, then every other link
 * must have consumed nothing; pauses are counted. */
static void feed_end(world *w)
{
    feed_catch_up(w, w->nfeed - 1);
    w->nfeed = w->fed = 0;
    /* The core counts every byte it takes (all of a read that ends a
     * connection); the marks must account for exactly those. */
    broker_stats st;
    broker_get_stats(w->b, &st);
    if (st.bytes_received - w->feed_rx != w->feed_taken && !w->failed) {
        sim_fail(w, "the core took %llu bytes in a layer call, the marks account for %llu",
                 (unsigned long long)(st.bytes_received - w->feed_rx),
                 (unsigned long long)w->feed_taken);
        return;
    }
    for (int k = 0; k < w->nconns && !w->failed; k++) {
        sconn *c = &w->conns[k];
        if (!c->open)
            continue;
        broker_conn *bc = sconn_core(c);
        if (bc != NULL && broker_wants_close(bc))
            c->closing = true;
        if (consumed(c) != c->up_consumed && !(c->closing && c->link.c.pending == NULL)) {
            sim_fail(w, "conn %d: the layer fed the core in a call that feeds nothing to it",
                     k);
            return;
        }
        if (c->link.c.input_blocked && !c->paused)
            w->n_paused++;
        c->paused = c->link.c.input_blocked;
    }
    check_input_budget(w);
}

static void on_close(fake_link *l)
{
    world *w = l->owner;
    sconn *c = sconn_of(l);
    int k = (int)(c - w->conns);
    int i = w->fed;
    while (i < w->nfeed && w->feed[i] != k)
        i++;
    if (i < w->nfeed) {
        /* Closed while fed. The links served before it are done. It read
         * its transport in this call, which the layer does only when it
         * holds none of its input, so everything read reached the core;
         * or it did not, and then this call gave the core none of it
         * either (conn_hangup ending a link it cannot read now). */
        feed_catch_up(w, i - 1);
        if (l->reads != w->feed_reads[i])
            apply_marks(w, k);
        w->fed = i + 1;
    }
    c->open = false;
    /* The input budget stayed spent while it waited: the layer reset it,
     * as the network might have. */
    conn_stats st;
    conn_server_get_stats(w->cs, &st);
    if (st.input_closes > w->input_closes) {
        w->input_closes = st.input_closes;
        c->expect_close = true;
        sim_trace(w, "conn %d closed for the input budget", k);
    }
    discard_unread(c);
    c->nmarks = c->marks_head = 0; /* what the core did not take died with it */
    if (l->how == CONN_CLOSE_ABORT)
        fake_bytes_take(&l->down, l->down.len); /* a reset loses what was not read */
    c->eof = true;
    w->n_graceful += l->how == CONN_CLOSE_GRACEFUL;
    w->n_aborts += l->how == CONN_CLOSE_ABORT;
    sim_trace(w, "conn %d closed by the layer (%s)", k,
              l->how == CONN_CLOSE_ABORT ? "abort" : "graceful");
    if (!c->ended) {
        if (!c->expect_close)
            sim_fail(w, "the core closed connection %d (%s) unexpectedly", k,
                     w->cl[c->owner].id);
        model_conn_end(w, k);
    }
}

/* Each read returns what the RNG says (0: all there is), like net_arrive's
 * chunks. */
static void on_read(fake_link *l)
{
    world *w = l->owner;
    /* With an input budget, warm-up and the end phase read whole: no
     * unfinished packet waits for the budget, so their steps (which must
     * all succeed) are not cut short by its closes. */
    if (w->max_input != 0 && (w->warming || w->quiesce)) {
        l->read_max = 0;
        return;
    }
    l->read_max = l->up.len == 0 || rng_pct(&w->r, 50)
                      ? 0
                      : 1 + rng_below(&w->r, (uint32_t)l->up.len);
}

static void layer_log(void *ctx, broker_log_level level, const char *msg)
{
    (void)level;
    sim_trace(ctx, "layer: %s", msg);
}

void net_start(world *w)
{
    conn_server_config cc;
    memset(&cc, 0, sizeof cc);
    cc.b = w->b;
    cc.io = &fake_transport;
    cc.max_input_bytes = w->max_input;
    w->input_closes = 0;
    /* The layer's own memory comes from malloc: the tracked allocator
     * accounts for the core's alone (memory_used). */
    if (w->verbose) {
        cc.log = layer_log;
        cc.log_ctx = w;
        cc.log_level = BROKER_LOG_DEBUG;
    }
    w->cs = conn_server_create(&cc);
    if (!w->cs)
        abort();
}

/* The transport vanishes with the broker (crash): no broker_closed. */
static void lost(world *w, int k)
{
    sconn *c = &w->conns[k];
    c->expect_close = true;
    if (c->open) {
        conn_drop(w->cs, &c->link.c);
        c->open = false;
        model_conn_end(w, k);
    }
    discard_unread(c);
    c->nmarks = c->marks_head = 0;
    fake_bytes_take(&c->link.down, c->link.down.len);
    fake_bytes_take(&c->rx, c->rx.len);
    c->eof = true;
    if (c->client >= 0)
        client_closed(w, k);
}

void net_stop(world *w)
{
    if (!w->cs)
        return;
    for (int k = 0; k < w->nconns; k++)
        lost(w, k);
    conn_stats st;
    conn_server_get_stats(w->cs, &st);
    w->n_lingers += st.linger_timeouts;
    w->n_input_waits += st.input_waits;
    w->n_input_closes += st.input_closes;
    conn_server_destroy(w->cs);
    w->cs = NULL;
}

void net_free(world *w)
{
    for (int k = 0; k < w->nconns; k++) {
        sconn *c = &w->conns[k];
        fake_bytes_free(&c->up);
        fake_link_free(&c->link);
        fake_bytes_free(&c->rx);
        free(c->marks);
    }
    w->nconns = 0;
}

int net_open(world *w, int client)
{
    if (w->nconns == SIM_MAX_CONNS)
        return -1;
    int k = w->nconns++;
    sconn *c = &w->conns[k];
    memset(c, 0, sizeof *c);
    fake_link_init(&c->link);
    c->link.owner = w;
    c->link.on_close = on_close;
    c->link.on_read = on_read;
    c->link.peer = w->cl[client].id;
    c->link.identity = sim_identity(w, client);
    c->client = client;
    c->owner = client;
    c->inc = -1;
    feed_begin(w, NULL, 0);
    c->open = conn_open(w->cs, &c->link.c, false, w->now);
    feed_end(w);
    if (!c->open)
        sim_fail(w, "the layer refused connection %d", k);
    sim_trace(w, "conn %d opened by %s", k, w->cl[client].id);
    return k;
}

/* The core's timers, judged by the model. net_turn_end runs them under
 * conn_turn_end's condition, just before it (which then finds nothing due),
 * to tell which sessions the tick removed before the closes of the flush
 * change clients_total too. */
void net_tick(world *w)
{
    broker_stats before, after;
    broker_get_stats(w->b, &before);
    broker_tick(w->b, w->now);
    broker_get_stats(w->b, &after);
    if (after.clients_total > before.clients_total)
        sim_fail(w, "a tick created sessions");
    else
        model_expire(w, before.clients_total - after.clients_total);
}

void net_turn_begin(world *w)
{
    if (w->cs == NULL)
        return; /* a failed restart */
    /* The ready list, head first, from the links' own list fields. */
    int n = 0, on = 0;
    const conn *head = NULL;
    for (int k = 0; k < w->nconns; k++) {
        const sconn *c = &w->conns[k];
        if (c->open && c->link.c.on_ready) {
            on++;
            if (c->link.c.ready_link.prev == NULL)
                head = &c->link.c;
        }
    }
    int ks[SIM_MAX_CONNS];
    for (const conn *c = head; c != NULL && n < on; c = c->ready_link.next)
        ks[n++] = index_of(w, c);
    if (n != on) {
        sim_fail(w, "the layer's ready list holds %d links, %d say they are on it", n, on);
        return;
    }
    feed_begin(w, ks, n);
    conn_turn_begin(w->cs, w->now);
    feed_end(w);
}

void net_turn_end(world *w)
{
    if (w->cs == NULL)
        return;
    if (w->now >= broker_next_deadline(w->b))
        net_tick(w);
    feed_begin(w, NULL, 0);
    conn_turn_end(w->cs, w->now);
    feed_end(w);
}

/* ---- the network ----------------------------------------------------- */

void net_refill(world *w)
{
    for (int k = 0; k < w->nconns; k++) {
        sconn *c = &w->conns[k];
        if (!c->open)
            continue;
        size_t unread = c->link.down.len;
        size_t room = unread < w->sndbuf ? w->sndbuf - unread : 0;
        if (c->silent)
            room = 0;
        else if (!w->quiesce && rng_pct(&w->r, w->tight ? 50 : 10))
            room = rng_below(&w->r, (uint32_t)room + 1);
        c->link.room = room;
    }
}

void net_arrive(world *w, int k, size_t n)
{
    sconn *c = &w->conns[k];
    if (!c->open)
        return;
    if (n > c->up.len)
        n = c->up.len;
    if (n > 0) {
        fake_bytes_put(&c->link.up, fake_bytes_data(&c->up), n);
        fake_bytes_take(&c->up, n);
        c->up_arrived += n;
    }
    if (c->fin && c->up.len == 0)
        c->link.eof = true;
}

void net_fin(world *w, int k)
{
    sconn *c = &w->conns[k];
    sim_trace(w, "conn %d: the client sends EOF", k);
    c->fin = true;
    net_arrive(w, k, 0);
}

/* The budget is spent and c holds at least the average of the links
 * holding any, with nothing of its own left to serve: the layer must not
 * read its transport. */
static bool input_must_wait(world *w, const sconn *c)
{
    conn_stats st;
    uint64_t holders = 0;
    broker_conn *bc = sconn_core(c);
    if (w->max_input == 0 || bc == NULL || c->link.c.pending != NULL || c->link.c.on_ready ||
        c->link.c.held == 0 || broker_wants_close(bc) || broker_input_paused(bc))
        return false;
    conn_server_get_stats(w->cs, &st);
    for (int k = 0; k < w->nconns; k++)
        holders += w->conns[k].open && w->conns[k].link.c.held > 0;
    return st.input_held >= w->max_input && c->link.c.held * holders >= st.input_held;
}

bool net_has_readable(const sconn *c)
{
    /* An error is reported whatever the layer waits for. */
    return c->open && (c->link.fail_read ||
                       (c->link.want_read && (c->link.up.len > 0 || c->link.eof)));
}

void net_readable(world *w, int k)
{
    sconn *c = &w->conns[k];
    if (!net_has_readable(c))
        return;
    bool must_wait = input_must_wait(w, c);
    unsigned reads = c->link.reads;
    feed_begin(w, &k, 1);
    if (c->link.fail_read)
        (void)conn_hangup(w->cs, &c->link.c, w->now);
    else
        (void)conn_readable(w->cs, &c->link.c, w->now);
    feed_end(w);
    if (must_wait && c->link.reads != reads)
        sim_fail(w, "conn %d was read while the input budget was spent and it held at least "
                    "the average", k);
}

bool net_has_writable(const sconn *c)
{
    return c->open && c->link.want_write && c->link.room > 0;
}

void net_writable(world *w, int k)
{
    sconn *c = &w->conns[k];
    if (!net_has_writable(c))
        return;
    feed_begin(w, NULL, 0);
    (void)conn_writable(w->cs, &c->link.c, w->now);
    feed_end(w);
}

void net_deliver(world *w, int k, size_t n)
{
    sconn *c = &w->conns[k];
    fake_bytes *down = &c->link.down;
    if (c->client < 0) {
        fake_bytes_take(down, down->len); /* nobody reads it */
        return;
    }
    if (n > down->len)
        n = down->len;
    if (n > 0) {
        fake_bytes_put(&c->rx, fake_bytes_data(down), n);
        fake_bytes_take(down, n);
    }
    size_t pos = 0;
    const sclient *cl = &w->cl[c->client];
    while (pos < c->rx.len && c->client >= 0 && !w->failed) {
        mqtt_packet p;
        size_t used = 0;
        /* Decoded at the connection's level: what the broker sends a 5.0
         * client must be a valid 5.0 packet, and no larger than the
         * Maximum Packet Size it announced [MQTT-3.1.2-24]. */
        mqtt_err e = mqtt_decode(fake_bytes_data(&c->rx) + pos, c->rx.len - pos,
                                 MQTT_FROM_SERVER, c->level ? c->level : MQTT_LEVEL_311, 0, &p,
                                 &used);
        if (e == MQTT_NEED_MORE)
            break;
        if (e != MQTT_OK) {
            sim_fail(w, "conn %d: the core sent a malformed packet: %s", k, mqtt_err_str(e));
            return;
        }
        if (cl->v5 && cl->max_packet && used > cl->max_packet) {
            sim_fail(w, "conn %d: %s received a packet of %zu bytes; its Maximum Packet Size "
                        "is %u",
                     k, cl->id, used, cl->max_packet);
            return;
        }
        /* The latest checkpoint at or before the packet's first byte. */
        uint64_t at = c->rx_off + pos, wrote = 0;
        for (int j = 0; j < c->nwt && c->wt[j].off <= at; j++)
            wrote = c->wt[j].t;
        client_receive(w, k, &p, wrote);
        pos += used;
    }
    fake_bytes_take(&c->rx, pos);
    c->rx_off += pos;
    /* Checkpoints wholly behind what was read are no longer needed (the
     * last one at or before the next packet stays). */
    int drop = 0;
    while (drop + 1 < c->nwt && c->wt[drop + 1].off <= c->rx_off)
        drop++;
    if (drop) {
        memmove(c->wt, c->wt + drop, (size_t)(c->nwt - drop) * sizeof c->wt[0]);
        c->nwt -= drop;
    }
    if (c->eof && down->len == 0 && c->client >= 0)
        client_closed(w, k);
}

void net_time(world *w)
{
    for (int k = 0; k < w->nconns; k++) {
        sconn *c = &w->conns[k];
        if (c->client < 0)
            continue;
        /* Bytes from here on are encoded now or later: past what the
         * client holds, the transport holds, and what the core and the
         * layer hold for the transport (encoded already). */
        uint64_t off = c->rx_off + c->rx.len + c->link.down.len;
        if (c->open)
            off += conn_out_pending(w->cs, &c->link.c);
        if (c->nwt && c->wt[c->nwt - 1].off == off) {
            c->wt[c->nwt - 1].t = w->now;
            continue;
        }
        if (c->nwt == SIM_WTIMES) {
            /* Full: forget the second oldest (the bound for its bytes
             * becomes the oldest's earlier time: still a lower bound). */
            memmove(c->wt + 1, c->wt + 2, (size_t)(SIM_WTIMES - 2) * sizeof c->wt[0]);
            c->nwt--;
        }
        c->wt[c->nwt].off = off;
        c->wt[c->nwt].t = w->now;
        c->nwt++;
    }
}

void net_drop(world *w, int k)
{
    sconn *c = &w->conns[k];
    c->expect_close = true;
    if (!c->open)
        sim_trace(w, "conn %d dropped", k);
    else {
        uint32_t how = rng_below(&w->r, 4);
        sim_trace(w, "conn %d dropped (%s)", k,
                  how == 0   ? "reset"
                  : how == 1 ? "hang-up"
                  : how == 2 ? "fails on its next read or write"
                             : "EOF without DISCONNECT");
        if (how < 3)
            discard_unread(c);
        if (how == 0) {
            feed_begin(w, NULL, 0);
            conn_failed(w->cs, &c->link.c, w->now);
            feed_end(w);
        } else if (how < 3) {
            c->link.fail_read = c->link.fail_write = true;
            if (how == 1)
                net_readable(w, k);
        } else if (!c->fin) {
            net_fin(w, k); /* what the client wrote still arrives */
        }
    }
    /* The client is gone: it reads nothing more. */
    fake_bytes_take(&c->link.down, c->link.down.len);
    fake_bytes_take(&c->rx, c->rx.len);
    c->eof = true;
    if (c->client >= 0)
        client_closed(w, k);
}

void net_orphan(world *w, int k)
{
    sconn *c = &w->conns[k];
    c->expect_close = true;
    c->client = -1;
    if (c->open) {
        discard_unread(c);
        /* Half the abandoned peers stop acknowledging: the transport takes
         * nothing more, and a close lingers until the layer aborts it. */
        c->silent = rng_pct(&w->r, 50);
    }
    sim_trace(w, "conn %d abandoned by %s%s", k, w->cl[c->owner].id,
              c->silent ? ", which acknowledges nothing more" : "");
    fake_bytes_take(&c->link.down, c->link.down.len);
    fake_bytes_take(&c->rx, c->rx.len);
}

bool net_input_held(const sconn *c)
{
    broker_conn *bc = sconn_core(c);
    return c->open && bc != NULL && broker_input_paused(bc) &&
           (c->up.len > 0 || c->link.up.len > 0 || c->link.c.pending_len > 0);
}

bool net_closing(const sconn *c)
{
    broker_conn *bc = sconn_core(c);
    return c->open && bc != NULL && broker_wants_close(bc);
}
