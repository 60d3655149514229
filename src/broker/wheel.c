/*
 * wheel.c - connection deadlines (CONNECT timeout, keepalive) on a hashed
 * timing wheel. Activity on a connection only updates its last_rx_ms; the
 * wheel entry is not moved. When the entry's slot comes round, the real
 * deadline is recomputed and the connection either expires or is filed
 * again, so a busy connection costs O(1) per keepalive period, not per
 * packet. Deadlines fire up to one tick (WHEEL_TICK_MS) late.
 */
#include "broker/conn.h"
#include "broker/wheel.h"

#include <string.h>

void bk_wheel_init(wheel *w, uint64_t now_ms)
{
    memset(w, 0, sizeof *w);
    w->next_tick = now_ms / WHEEL_TICK_MS;
}

void bk_wheel_remove(wheel *w, broker_conn *c)
{
    if (!c->in_wheel)
        return;
    broker_conn **slot = &w->slots[(c->deadline_ms / WHEEL_TICK_MS) % WHEEL_SLOTS];
    if (c->wheel_prev)
        c->wheel_prev->wheel_next = c->wheel_next;
    else
        *slot = c->wheel_next;
    if (c->wheel_next)
        c->wheel_next->wheel_prev = c->wheel_prev;
    c->wheel_prev = c->wheel_next = NULL;
    c->in_wheel = false;
    w->count--;
}

void bk_wheel_set(wheel *w, broker_conn *c, uint64_t deadline_ms)
{
    bk_wheel_remove(w, c);
    /* A deadline already past is filed in the next tick to process. */
    uint64_t tick = deadline_ms / WHEEL_TICK_MS;
    if (tick < w->next_tick) {
        tick = w->next_tick;
        deadline_ms = tick * WHEEL_TICK_MS;
    }
    c->deadline_ms = deadline_ms;
    broker_conn **slot = &w->slots[tick % WHEEL_SLOTS];
    c->wheel_prev = NULL;
    c->wheel_next = *slot;
    if (*slot)
        (*slot)->wheel_prev = c;
    *slot = c;
    c->in_wheel = true;
    w->count++;
}

void bk_wheel_advance(broker *b, wheel *w, uint64_t now_ms)
{
    /* Process only ticks that are wholly in the past, so every entry of a
     * processed slot whose tick is current has a deadline <= now. */
    uint64_t target = now_ms / WHEEL_TICK_MS;
    while (w->next_tick < target) {
        uint64_t t = w->next_tick;
        if (target - t > WHEEL_SLOTS)
            t = target - WHEEL_SLOTS; /* a long sleep: each slot once is enough */
        w->next_tick = t + 1;
        broker_conn *list = w->slots[t % WHEEL_SLOTS];
        w->slots[t % WHEEL_SLOTS] = NULL;
        while (list) {
            broker_conn *c = list;
            list = c->wheel_next;
            c->wheel_prev = c->wheel_next = NULL;
            c->in_wheel = false;
            w->count--;
            if (c->deadline_ms <= now_ms)
                bk_conn_timeout(b, c, now_ms);
            else
                bk_wheel_set(w, c, c->deadline_ms);
        }
    }
}

uint64_t bk_wheel_next_deadline(const wheel *w)
{
    if (w->count == 0)
        return UINT64_MAX;
    return (w->next_tick + 1) * WHEEL_TICK_MS;
}
