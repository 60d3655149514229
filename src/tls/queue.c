/*
 * queue.c - the byte queues between a connection's transport and wolfSSL.
 * A queue frees its buffer the moment it empties: most connections are idle
 * most of the time, and an idle connection should hold no buffer at all.
 * The buffer's capacity is stored in a header just before the bytes
 * (QUEUE_HEADER), not in the queue: every connection has three queues, and
 * the field would grow each by 8 bytes (padding included).
 */
#include <stdlib.h>
#include <string.h>

#include "tls/internal.h"

/* Smallest buffer allocated; a TLS record header and a short record fit.
 * The header in front of the bytes holds the capacity (8 bytes, so the
 * bytes stay aligned as malloc's). */
enum { QUEUE_MIN_CAP = 512, QUEUE_HEADER = 8 };

static size_t cap_of(const tls_queue *q)
{
    uint32_t cap;

    if (q->buf == NULL)
        return 0;
    memcpy(&cap, q->buf - QUEUE_HEADER, sizeof cap);
    return cap;
}

uint8_t *tls_queue_extend(tls_queue *q, size_t len)
{
    size_t need, have = cap_of(q);
    uint8_t *at;

    if (q->off > 0 && q->off + q->len + len > have) {
        /* Reuse the consumed front before growing. */
        memmove(q->buf, q->buf + q->off, q->len);
        q->off = 0;
    }
    if (len > UINT32_MAX - (size_t)q->off - q->len)
        return NULL; /* a queue holds under 4 GiB */
    need = q->off + q->len + len;
    if (need > have) {
        size_t cap = have < QUEUE_MIN_CAP ? QUEUE_MIN_CAP : have;
        uint32_t cap32;
        uint8_t *grown;

        while (cap < need)
            cap = cap > UINT32_MAX / 2 ? need : cap * 2;
        grown = realloc(q->buf != NULL ? q->buf - QUEUE_HEADER : NULL, QUEUE_HEADER + cap);
        if (grown == NULL)
            return NULL;
        cap32 = (uint32_t)cap;
        memcpy(grown, &cap32, sizeof cap32);
        q->buf = grown + QUEUE_HEADER;
    }
    at = q->buf + q->off + q->len;
    q->len += (uint32_t)len;
    return at;
}

bool tls_queue_append(tls_queue *q, const uint8_t *data, size_t len)
{
    uint8_t *at;

    if (len == 0)
        return true;
    at = tls_queue_extend(q, len);
    if (at == NULL)
        return false;
    memcpy(at, data, len);
    return true;
}

void tls_queue_drop_tail(tls_queue *q, size_t n)
{
    if (n >= q->len)
        tls_queue_free(q);
    else
        q->len -= (uint32_t)n;
}

void tls_queue_consume(tls_queue *q, size_t n)
{
    if (n >= q->len) {
        tls_queue_free(q);
        return;
    }
    q->off += (uint32_t)n;
    q->len -= (uint32_t)n;
}

size_t tls_queue_take(tls_queue *q, uint8_t *dst, size_t max)
{
    size_t n = q->len < max ? q->len : max;

    if (n > 0) {
        memcpy(dst, q->buf + q->off, n);
        tls_queue_consume(q, n);
    }
    return n;
}

void tls_queue_free(tls_queue *q)
{
    if (q->buf != NULL)
        free(q->buf - QUEUE_HEADER);
    q->buf = NULL;
    q->off = q->len = 0;
}
