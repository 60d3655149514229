/*
 * drain.c - the QoS 0 bound in time (drain.h): the rate a backed-up
 * connection takes its output at, measured per window, times the time
 * QoS 0 may wait.
 */
#include "conn/drain.h"

#include "conn/tunables.h"

void conn_drain_wrote(conn_drain *d, size_t n)
{
    if (d->backed_up)
        d->bytes += n;
}

uint32_t conn_drain_update(conn_drain *d, size_t pending, uint64_t now_ms)
{
    if (pending == 0) {
        /* Everything went: the reader keeps up, no bound. */
        d->backed_up = 0;
        d->bytes = 0;
        d->limit = 0;
        return 0;
    }
    if (!d->backed_up) {
        d->backed_up = 1;
        d->since_ms = now_ms;
        d->bytes = 0;
        return d->limit;
    }
    uint64_t elapsed = now_ms - d->since_ms;
    if (elapsed < CONN_DRAIN_WINDOW_MS)
        return d->limit;
    /* bytes/elapsed is the rate; the bound is what it drains in the wait. */
    uint64_t bound = d->bytes * CONN_QOS0_WAIT_MS / elapsed;
    if (bound < CONN_QOS0_OUT_MIN)
        bound = CONN_QOS0_OUT_MIN;
    d->limit = bound > UINT32_MAX ? UINT32_MAX : (uint32_t)bound;
    d->since_ms = now_ms;
    d->bytes = 0;
    return d->limit;
}
