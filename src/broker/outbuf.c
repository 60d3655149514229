/*
 * outbuf.c - connection output buffers: reserving and committing bytes at
 * the end of a connection's output, freeing the buffer once drained into a
 * small pool of buffers by size class, and the list of connections with
 * output for the platform to write (the dirty list).
 */
#include "broker/base.h"
#include "broker/broker-t.h"
#include "broker/deliver.h"
#include "broker/mem.h"

#include <string.h>

/* Output buffers are freed once drained, so an idle connection costs no
 * buffer. The next one starts at the size the last one's peak needed
 * (bk_out_drained), so a connection that fills a large buffer every turn gets
 * it in one allocation instead of doubling from the minimum with a copy at
 * each step, and one that sends little goes back to the minimum. */
#define OUT_MIN_CAP 4096u

/* A drained buffer goes back to a small pool instead of to the allocator:
 * in a fan-out every subscriber's buffer fills and drains once per loop
 * turn, and allocating and freeing it each time was a third of the
 * instructions per delivery (PERFORMANCE.md). Enough for a fan-out to a
 * thousand subscribers is kept (4 MiB in all classes together); the pool
 * empties after a second without use, so an idle broker still holds no
 * buffers. */
#define OUT_POOL_BYTES (4u * 1024u * 1024u)
#define OUT_POOL_IDLE_MS 1000u

/* A pooled buffer's first bytes hold the next one in its list (buffers
 * are at least 4 KiB); memcpy keeps this free of alignment and aliasing
 * assumptions about bytes that were just output data. */
static uint8_t *link_next(const uint8_t *p)
{
    uint8_t *next;
    memcpy(&next, p, sizeof next);
    return next;
}

static void link_set(uint8_t *p, uint8_t *next)
{
    memcpy(p, &next, sizeof next);
}

/* The pool class of a buffer of cap bytes, or -1 when it is not pooled. */
static int pool_class(size_t cap)
{
    for (int k = 0; k < OUT_POOL_CLASSES; k++)
        if (cap == (size_t)OUT_MIN_CAP << k)
            return k;
    return -1;
}

static uint8_t *pool_get(broker *b, size_t cap)
{
    int k = pool_class(cap);
    if (k < 0 || !b->out_pool[k])
        return NULL;
    uint8_t *p = b->out_pool[k];
    b->out_pool[k] = link_next(p);
    b->out_pool_bytes -= cap;
    b->out_pool_used_ms = b->now_ms;
    return p;
}

/* Give a buffer back: to the pool when its class has room, else freed. */
static void pool_put(broker *b, uint8_t *p, size_t cap)
{
    if (!p)
        return;
    int k = pool_class(cap);
    if (k < 0 || b->out_pool_bytes + cap > OUT_POOL_BYTES) {
        bk_mem_free(b, p);
        return;
    }
    b->out_pool_bytes += cap;
    link_set(p, b->out_pool[k]);
    b->out_pool[k] = p;
    b->out_pool_used_ms = b->now_ms;
}

void bk_out_pool_trim(broker *b)
{
    for (int k = 0; k < OUT_POOL_CLASSES; k++) {
        while (b->out_pool[k]) {
            uint8_t *p = b->out_pool[k];
            b->out_pool[k] = link_next(p);
            bk_mem_free(b, p);
        }
    }
    b->out_pool_bytes = 0;
}

void bk_out_pool_tick(broker *b, uint64_t now_ms)
{
    if (now_ms - b->out_pool_used_ms >= OUT_POOL_IDLE_MS)
        bk_out_pool_trim(b);
}

uint64_t bk_out_pool_next_deadline(const broker *b)
{
    return b->out_pool_bytes > 0 ? b->out_pool_used_ms + OUT_POOL_IDLE_MS : UINT64_MAX;
}

size_t bk_out_pending(const broker_conn *c)
{
    return c->out_len - c->out_head;
}

void broker_set_qos0_out_max(broker_conn *c, size_t bytes)
{
    c->qos0_out_max = bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)bytes;
}

void bk_conn_mark_dirty(broker *b, broker_conn *c)
{
    if (c->in_dirty)
        return;
    c->in_dirty = true;
    c->dirty_next = NULL;
    c->dirty_prev = b->dirty_tail;
    if (b->dirty_tail)
        b->dirty_tail->dirty_next = c;
    else
        b->dirty_head = c;
    b->dirty_tail = c;
}

uint8_t *bk_out_reserve(broker *b, broker_conn *c, size_t n)
{
    size_t pending = bk_out_pending(c);
    if (n > UINT32_MAX - pending)
        return NULL;
    if (c->out_cap - c->out_len >= n)
        return c->out + c->out_len;
    /* Compact only when the bytes moved are no more than the space won, so
     * a buffer that is never fully drained (a slow reader under load) does
     * not pay a memmove of everything pending on every message. */
    if (c->out_head >= pending && c->out_cap - pending >= n) {
        memmove(c->out, c->out + c->out_head, pending);
        c->out_head = 0;
        c->out_len = (uint32_t)pending;
        return c->out + c->out_len;
    }
    size_t cap = c->out_cap ? (size_t)c->out_cap * 2 : (size_t)OUT_MIN_CAP << c->out_next_log2;
    while (cap - pending < n)
        cap *= 2;
    if (cap > UINT32_MAX)
        return NULL;
    uint8_t *p = pool_get(b, cap);
    if (!p)
        p = bk_mem_alloc(b, cap);
    if (!p)
        return NULL;
    if (pending)
        memcpy(p, c->out + c->out_head, pending);
    pool_put(b, c->out, c->out_cap);
    c->out = p;
    c->out_cap = (uint32_t)cap;
    c->out_head = 0;
    c->out_len = (uint32_t)pending;
    return c->out + c->out_len;
}

void bk_out_commit(broker *b, broker_conn *c, size_t n)
{
    ALWAYS(n <= c->out_cap - c->out_len);
    c->out_len += (uint32_t)n;
    if (c->out_len - c->out_head > c->out_peak)
        c->out_peak = c->out_len - c->out_head;
    bk_conn_mark_dirty(b, c);
}

void bk_out_drained(broker *b, broker_conn *c)
{
    uint8_t log2 = 0;
    while (log2 < 16 && ((size_t)OUT_MIN_CAP << log2) < c->out_peak)
        log2++;
    c->out_next_log2 = log2;
    c->out_peak = 0;
    pool_put(b, c->out, c->out_cap);
    c->out = NULL;
    c->out_head = c->out_len = c->out_cap = 0;
}
