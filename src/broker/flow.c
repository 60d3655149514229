/*
 * flow.c - back-pressure from slow subscribers to the publishers feeding
 * them (SPEC C4, ADR-028).
 *
 * A QoS 1/2 message routed to a live session whose queue of unsent
 * messages has reached the high watermark (limits.hold_queued, default half
 * of max_queued; or half of max_queued_bytes in payload bytes) holds the
 * connection that published it: the core takes no more input from it
 * (broker_input_paused) until that session's queue has drained to the low
 * watermark (half the high one, a quarter of max_queued_bytes). The
 * publisher's TCP window then fills and its unacknowledged messages wait on
 * its side, so a subscriber slower than its publishers slows them down
 * instead of losing messages at max_queued.
 *
 * Bounds, so that back-pressure never becomes a standstill:
 *   - only live sessions hold publishers: an offline session's queue is
 *     bounded by max_queued as before;
 *   - a connection is never held by its own session (it drains that queue
 *     itself, by reading);
 *   - a session that sends nothing for publisher_hold_ms while it holds
 *     publishers (its client stopped reading or acknowledging, or two
 *     clients each wait on the other's queue, neither reading the other's
 *     acknowledgements) is marked stalled: its publishers are released and
 *     it holds no one until it has drained to the low watermark again.
 *     Meanwhile messages beyond max_queued for it are dropped and counted,
 *     as without back-pressure.
 * A held connection is not timed out for keepalive: its silence is ours.
 *
 * The held connections are kept in one unordered array, b->holds, each
 * connection knowing its index: holding, and releasing one, costs O(1) and
 * nothing per session or connection beyond what fitted in their padding.
 * Releasing a session's publishers scans the array, once per drain.
 */
#include "broker/base.h"
#include "broker/broker-t.h"
#include "broker/deliver.h"
#include "broker/flow.h"
#include "broker/mem.h"

static uint32_t unsent(const session *s)
{
    return s->q_count - s->q_sent;
}

static bool over_high(const broker *b, const session *s)
{
    return unsent(s) >= b->lim.hold_queued || s->q_bytes >= b->lim.max_queued_bytes / 2;
}

static bool below_low(const broker *b, const session *s)
{
    return unsent(s) <= b->lim.hold_queued / 2 && s->q_bytes <= b->lim.max_queued_bytes / 4;
}

/* Milliseconds since s last made progress; wraps only after 49 days,
 * far beyond any hold. */
static uint32_t since_progress(const broker *b, const session *s)
{
    return (uint32_t)b->now_ms - s->progress_ms;
}

static void holds_remove(broker *b, uint32_t i)
{
    ALWAYS(i < b->holds_count);
    b->holds[i].c->hold_idx = 0;
    b->holds_count--;
    if (i != b->holds_count) {
        b->holds[i] = b->holds[b->holds_count];
        b->holds[i].c->hold_idx = i + 1;
    }
    if (b->holds_count == 0) {
        /* Holding is an episode: keep nothing between them. */
        bk_mem_free(b, b->holds);
        b->holds = NULL;
        b->holds_cap = 0;
        b->holds_deadline = UINT64_MAX;
    }
}

/* Let every connection s holds read again. */
static void release_all(broker *b, session *s)
{
    s->holding = false;
    uint32_t i = 0;
    while (i < b->holds_count) {
        if (b->holds[i].s != s) {
            i++;
            continue;
        }
        broker_conn *c = b->holds[i].c;
        holds_remove(b, i); /* the last entry moved into i: look at it next */
        /* The silence while held was ours: the keepalive restarts now. */
        if (c->last_rx_ms < b->now_ms)
            c->last_rx_ms = b->now_ms;
        /* The platform looks at dirty connections after the turn and
         * resumes reading those no longer paused. */
        bk_conn_mark_dirty(b, c);
    }
}

void bk_flow_routed(broker *b, session *s)
{
    broker_conn *c = b->publisher;
    if (!c || c->hold_idx || c->state != CONN_ACTIVE || c->sess == s ||
        b->lim.publisher_hold_ms == UINT32_MAX)
        return;
    if (!s->conn || s->conn->state != CONN_ACTIVE || s->stalled || !over_high(b, s))
        return;
    if (b->holds_count == b->holds_cap) {
        uint32_t cap = b->holds_cap ? b->holds_cap * 2 : 8;
        struct hold *h = bk_mem_realloc(b, b->holds, (size_t)cap * sizeof *h);
        if (!h)
            return; /* not held: the queue bounds still apply */
        b->holds = h;
        b->holds_cap = cap;
    }
    if (!s->holding) {
        /* The stall clock starts when the session starts holding. */
        s->holding = true;
        s->progress_ms = (uint32_t)b->now_ms;
    }
    uint64_t deadline = b->now_ms + b->lim.publisher_hold_ms - since_progress(b, s);
    if (deadline < b->holds_deadline)
        b->holds_deadline = deadline;
    b->holds[b->holds_count++] = (struct hold){c, s};
    c->hold_idx = b->holds_count;
    b->stats.publishers_held++;
}

void bk_flow_progress(broker *b, session *s)
{
    if (!s->holding && !s->stalled)
        return;
    s->progress_ms = (uint32_t)b->now_ms;
    if (!below_low(b, s))
        return;
    if (s->stalled) {
        s->stalled = false;
        bk_log_limited(b, BK_LOGK_HOLD, BROKER_LOG_INFO,
                       "client %s: queue drained: it may hold publishers again", s->id);
    }
    if (s->holding)
        release_all(b, s);
}

void bk_flow_session_gone(broker *b, session *s)
{
    if (s->holding)
        release_all(b, s);
    s->stalled = false;
}

void bk_flow_conn_gone(broker *b, broker_conn *c)
{
    if (c->hold_idx)
        holds_remove(b, c->hold_idx - 1);
}

void bk_flow_tick(broker *b, uint64_t now_ms)
{
    if (now_ms < b->holds_deadline)
        return;
    /* The deadline is a lower bound (progress moves the real ones later):
     * find what is really due, and the next one. */
    uint64_t next = UINT64_MAX;
    uint32_t i = 0;
    while (i < b->holds_count) {
        session *s = b->holds[i].s;
        uint32_t idle = since_progress(b, s);
        if (idle < b->lim.publisher_hold_ms) {
            uint64_t d = now_ms + (b->lim.publisher_hold_ms - idle);
            if (d < next)
                next = d;
            i++;
            continue;
        }
        s->stalled = true;
        b->stats.hold_timeouts++;
        bk_log_limited(b, BK_LOGK_HOLD, BROKER_LOG_WARN,
                       "client %s: nothing sent to it for %u ms while it held publishers: they "
                       "are released, and messages beyond max_queued for it are dropped until "
                       "its queue drains",
                       s->id, b->lim.publisher_hold_ms);
        release_all(b, s);
        i = 0; /* entries moved: start over (each pass releases one session) */
        next = UINT64_MAX;
    }
    if (b->holds_count)
        b->holds_deadline = next;
}

uint64_t bk_flow_next_deadline(const broker *b)
{
    return b->holds_deadline;
}
