/*
 * slowsub.c - subscribers that take at most --sub-rate messages a second
 * (a slow consumer: a device on a thin link, a client that does work per
 * message), for the open-loop overload case: publishers at a fixed rate
 * above what their subscribers take, so every message beyond the drain
 * rate waits in some queue, and the latency shows how long the broker's
 * queues let it wait.
 *
 * Each slow subscriber has a budget of messages, refilled on the worker's
 * 1 ms pacing tick (at most SLOW_BURST_MS worth, so a pause is not made up
 * by a burst). With the budget spent it stops reading: EPOLLIN is taken
 * out of its interest until the next refill, and it reads no more bytes
 * than the budget needs, so what waits, waits in the broker or the
 * sockets, not in this process.
 */
#include "bench.h"

/* Largest burst a slow subscriber may take after a pause. */
#define SLOW_BURST_MS 2.0

bool slow_on(const bench_conn *c)
{
    return c->role == ROLE_SUB && c->w->run->o->sub_rate > 0;
}

bool slow_take(bench_conn *c)
{
    if (c->budget < 1.0) {
        c->throttled = true;
        return false;
    }
    c->budget -= 1.0;
    return true;
}

size_t slow_read_cap(const bench_conn *c, size_t room)
{
    const bench_opts *o = c->w->run->o;
    /* A PUBLISH is the payload plus a short topic and header: reading the
     * budget's worth of payloads plus one packet's slack never takes
     * more than a few messages beyond it. */
    double want = (c->budget + 1.0) * (double)(o->size + 32);
    return want < (double)room ? (size_t)want : room;
}

int slow_refill(bench_worker *w, uint64_t now)
{
    const bench_opts *o = w->run->o;
    for (size_t i = 0; i < w->nconns; i++) {
        bench_conn *c = &w->conns[i];
        if (!slow_on(c) || c->state != ST_READY)
            continue;
        if (c->budget_ns == 0)
            c->budget_ns = now;
        double add = o->sub_rate * (double)(now - c->budget_ns) / 1e9;
        double cap = o->sub_rate * SLOW_BURST_MS / 1e3;
        c->budget_ns = now;
        c->budget += add;
        if (c->budget > (cap > 1.0 ? cap : 1.0))
            c->budget = cap > 1.0 ? cap : 1.0;
        if (c->throttled && c->budget >= 1.0) {
            c->throttled = false;
            if (conn_watch(c, c->out_len > c->out_off) != 0)
                return -1;
        }
    }
    return 0;
}
