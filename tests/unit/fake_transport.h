/*
 * fake_transport.h - an in-memory transport under the connection layer
 * (src/conn/transport.h) for the unit tests and the simulator: each link
 * has a byte queue per direction, and the test decides how much a read
 * returns, how much a write takes, when the peer stops sending and when
 * the transport fails.
 */
#ifndef TERN_TEST_FAKE_TRANSPORT_H
#define TERN_TEST_FAKE_TRANSPORT_H

#include "conn/conn.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fake_bytes {
    uint8_t *p; /* owned */
    size_t off, len, cap;
} fake_bytes;

void fake_bytes_put(fake_bytes *q, const void *data, size_t n);
/* Drop the first n bytes (n <= len). */
void fake_bytes_take(fake_bytes *q, size_t n);
/* The bytes queued (NULL while nothing ever was). */
static inline const uint8_t *fake_bytes_data(const fake_bytes *q)
{
    return q->p != NULL ? q->p + q->off : NULL;
}
void fake_bytes_free(fake_bytes *q);

typedef struct fake_link fake_link;

struct fake_link {
    conn c;            /* the layer's part */
    fake_bytes up;     /* client to broker, not read yet */
    fake_bytes down;   /* broker to client, written */
    size_t read_max;   /* most bytes one read returns; 0 = no limit */
    size_t room;       /* bytes writes may still take; SIZE_MAX = no limit */
    bool eof;          /* the client sent its last byte (read then says EOF) */
    bool fail_read;    /* reads report a failed transport */
    bool fail_write;   /* writes report a failed transport */
    bool want_read, want_write; /* the layer's interest */
    bool closed;       /* the layer closed the link */
    conn_close_how how;
    unsigned reads, writes, pushes, interest_calls;
    const char *identity; /* played identity of a plaintext link, or NULL */
    bool is_operator;
    const char *peer;     /* for log lines; NULL = "fake" */
    void *owner;          /* the test's */
    /* Called when the layer closes the link (may be NULL). */
    void (*on_close)(fake_link *l);
    /* Called before every read (may be NULL): the simulator varies
     * read_max here, so each read returns a size of its choosing. */
    void (*on_read)(fake_link *l);
};

/* The transport; its context is unused. */
extern const conn_transport fake_transport;

static inline fake_link *fake_link_of(conn *c)
{
    return (fake_link *)(void *)((char *)c - offsetof(fake_link, c));
}

/* A zeroed link with unlimited reads and room, read interest on. */
void fake_link_init(fake_link *l);
void fake_link_free(fake_link *l);

#endif
