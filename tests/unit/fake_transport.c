/*
 * fake_transport.c - the in-memory transport of fake_transport.h.
 */
#include "fake_transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fake_bytes_put(fake_bytes *q, const void *data, size_t n)
{
    if (n == 0)
        return;
    if (q->off > 0 && q->off + q->len + n > q->cap) {
        memmove(q->p, q->p + q->off, q->len);
        q->off = 0;
    }
    if (q->len + n > q->cap) {
        size_t cap = q->cap ? q->cap : 4096;
        while (cap < q->len + n)
            cap *= 2;
        q->p = realloc(q->p, cap);
        if (!q->p)
            abort();
        q->cap = cap;
    }
    memcpy(q->p + q->off + q->len, data, n);
    q->len += n;
}

void fake_bytes_take(fake_bytes *q, size_t n)
{
    if (n > q->len)
        abort();
    q->off += n;
    q->len -= n;
    if (q->len == 0)
        q->off = 0;
}

void fake_bytes_free(fake_bytes *q)
{
    free(q->p);
    memset(q, 0, sizeof *q);
}

void fake_link_init(fake_link *l)
{
    memset(l, 0, sizeof *l);
    l->room = SIZE_MAX;
    l->want_read = true;
}

void fake_link_free(fake_link *l)
{
    fake_bytes_free(&l->up);
    fake_bytes_free(&l->down);
}

static long fake_read(void *ctx, conn *c, uint8_t *buf, size_t cap)
{
    fake_link *l = fake_link_of(c);
    size_t n = l->up.len < cap ? l->up.len : cap;

    (void)ctx;
    l->reads++;
    if (l->closed)
        abort(); /* the layer used a link it closed */
    if (l->on_read)
        l->on_read(l);
    if (l->fail_read)
        return CONN_IO_ERROR;
    if (l->read_max && n > l->read_max)
        n = l->read_max;
    if (n == 0)
        return l->eof ? CONN_IO_EOF : CONN_IO_AGAIN;
    memcpy(buf, fake_bytes_data(&l->up), n);
    fake_bytes_take(&l->up, n);
    return (long)n;
}

static long fake_write(void *ctx, conn *c, const uint8_t *data, size_t len)
{
    fake_link *l = fake_link_of(c);
    size_t n = len < l->room ? len : l->room;

    (void)ctx;
    l->writes++;
    if (l->closed)
        abort();
    if (l->fail_write)
        return CONN_IO_ERROR;
    fake_bytes_put(&l->down, data, n);
    if (l->room != SIZE_MAX)
        l->room -= n;
    return (long)n;
}

static size_t fake_room(void *ctx, const conn *c)
{
    (void)ctx;
    return fake_link_of((conn *)c)->room;
}

static void fake_push(void *ctx, conn *c)
{
    (void)ctx;
    if (fake_link_of(c)->closed)
        abort(); /* the layer used a link it closed */
    fake_link_of(c)->pushes++;
}

static bool fake_interest(void *ctx, conn *c, bool read, bool write)
{
    fake_link *l = fake_link_of(c);

    (void)ctx;
    if (l->closed)
        abort(); /* the layer used a link it closed */
    l->want_read = read;
    l->want_write = write;
    l->interest_calls++;
    return true;
}

static void fake_close(void *ctx, conn *c, conn_close_how how)
{
    fake_link *l = fake_link_of(c);

    (void)ctx;
    if (l->closed)
        abort(); /* closed twice */
    l->closed = true;
    l->how = how;
    l->want_read = l->want_write = false;
    if (l->on_close)
        l->on_close(l);
}

static void fake_peer(void *ctx, const conn *c, char *buf, size_t n)
{
    const fake_link *l = fake_link_of((conn *)c);

    (void)ctx;
    snprintf(buf, n, "%s", l->peer ? l->peer : "fake");
}

/* The address is the peer text's first bytes: links with the same peer
 * text share an address. */
static size_t fake_peer_addr(void *ctx, const conn *c, uint8_t *buf, size_t cap)
{
    const fake_link *l = fake_link_of((conn *)c);
    const char *peer = l->peer ? l->peer : "fake";
    size_t n = strlen(peer);

    (void)ctx;
    n = n < cap ? n : cap;
    memcpy(buf, peer, n);
    return n;
}

static const char *fake_identity(void *ctx, const conn *c, bool *is_operator)
{
    const fake_link *l = fake_link_of((conn *)c);

    (void)ctx;
    *is_operator = l->is_operator;
    return l->identity;
}

const conn_transport fake_transport = {
    .read = fake_read,           .write = fake_write,         .write_room = fake_room,
    .push = fake_push,           .interest = fake_interest,   .close = fake_close,
    .peer = fake_peer,           .peer_addr = fake_peer_addr, .identity = fake_identity,
};
