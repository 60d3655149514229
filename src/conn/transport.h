/*
 * transport.h - what the connection layer needs from a platform to move
 * bytes of one connection: a socket on the Linux daemon, an lwIP pcb in
 * the unikernel, a pair of byte queues in the tests and the simulator.
 * Each call gets the platform's context (conn_server_config.io_ctx) and
 * the connection.
 *
 * Every call states its contract for short transfers, end of input and
 * errors (the way Redis's connection.h documents each call), because the
 * layer's correctness rests on them. None blocks. The platform embeds the
 * layer's `conn` in its own connection record and finds that record from
 * the `conn *` each call receives (container_of).
 */
#ifndef TERN_CONN_TRANSPORT_H
#define TERN_CONN_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct conn conn;

/* Results of read and write besides a byte count. */
enum {
    CONN_IO_AGAIN = 0,  /* read: nothing to read now */
    CONN_IO_EOF = -1,   /* read: the peer finished sending */
    CONN_IO_ERROR = -2, /* read/write: the transport failed and is unusable */
};

/* How the layer ends a transport. */
typedef enum conn_close_how {
    /* Queued bytes still go out, then the end of the stream (FIN). */
    CONN_CLOSE_GRACEFUL = 0,
    /* At once (reset where the transport has one); queued bytes are lost.
     * Used when the peer failed, stalled or never read. */
    CONN_CLOSE_ABORT,
} conn_close_how;

typedef struct conn_transport {
    /*
     * Read up to cap (> 0) bytes the peer sent into buf.
     *   > 0            bytes read, possibly fewer than cap; fewer does not
     *                  promise the transport is drained;
     *   CONN_IO_AGAIN  nothing available now: the platform calls
     *                  conn_readable() when more arrives (while read
     *                  interest is on);
     *   CONN_IO_EOF    the peer finished sending, and every byte it sent
     *                  before has been read; repeated on later calls;
     *   CONN_IO_ERROR  reset or failure: nothing more can be read or sent.
     * Bytes the layer does not read stay in the transport (and, on TCP,
     * keep the receive window closed: that is the input back-pressure).
     */
    long (*read)(void *ctx, conn *c, uint8_t *buf, size_t cap);

    /* True when a read returning fewer bytes than asked means nothing more
     * is there now (a socket, lwIP's queue): the layer then stops reading
     * until the next conn_readable() instead of asking again only to hear
     * CONN_IO_AGAIN (one system call per read event saved). False for
     * transports that return less for other reasons (tests). */
    bool short_read_drains;

    /*
     * Queue up to len (> 0) bytes for the peer.
     *   0..len         bytes taken; the caller may reuse data at once.
     *                  Fewer than len means the transport is full for now:
     *                  the platform calls conn_writable() when room
     *                  appears (while write interest is on);
     *   CONN_IO_ERROR  the transport failed: nothing more can be sent.
     */
    long (*write)(void *ctx, conn *c, const uint8_t *data, size_t len);

    /* Bytes write() would take now without holding them back, or SIZE_MAX
     * when the transport cannot tell (then the layer bounds what it
     * prepares by CONN_TLS_OUT_HIGH alone). May be NULL (= SIZE_MAX). */
    size_t (*write_room)(void *ctx, const conn *c);

    /* A batch of writes is complete: put it on the wire (lwIP's
     * tcp_output). May be NULL when every write goes out by itself. */
    void (*push)(void *ctx, conn *c);

    /* Acknowledge what the peer sent at once instead of delaying the
     * acknowledgement: the peer is waiting for it before it sends more
     * (a client with Nagle's algorithm on holds its first MQTT packet
     * until its last TLS handshake flight is acknowledged, and we have
     * nothing to send that would carry the acknowledgement). May be NULL. */
    void (*ack_now)(void *ctx, conn *c);

    /* What the layer wants to be told about from now on: conn_readable()
     * when input arrives (read), conn_writable() when room appears
     * (write). Called only when one of them changes; both start on for
     * a new connection (read) and off (write). Returns false when the
     * platform could not arrange it: the layer then ends the connection. */
    bool (*interest)(void *ctx, conn *c, bool read, bool write);

    /*
     * The layer is done with c: the core has been told (when it knew c)
     * and c owns nothing any more. The platform ends the transport `how`
     * and may free the memory holding c during this call; the layer never
     * touches c afterwards, and every layer call that can get here
     * returns false to say so.
     */
    void (*close)(void *ctx, conn *c, conn_close_how how);

    /* "address:port" of the peer, NUL-terminated, for log lines ("?" when
     * unknown). */
    void (*peer)(void *ctx, const conn *c, char *buf, size_t n);

    /* The peer's network address as bytes (4 for IPv4, 16 for IPv6; no
     * port), written to buf (cap >= 16); 0 when unknown. Keys the limit on
     * handshakes per address. May be NULL (no per-address limit). */
    size_t (*peer_addr)(void *ctx, const conn *c, uint8_t *buf, size_t cap);

    /* For plaintext connections: an identity the transport established
     * itself, with *is_operator saying whether it has the operator role
     * (NULL op, or NULL returned: none). TLS connections take theirs from
     * the certificate. Sockets and lwIP have none; in-process transports
     * (the tests, the simulator) use it to play authenticated clients. */
    const char *(*identity)(void *ctx, const conn *c, bool *is_operator);

    /* The transport runs TLS sessions itself (the daemon's I/O threads,
     * ADR-065): conn_open(tls = true) starts no session but counts the
     * handshake (the limits, its deadline); the transport reads nothing
     * for the layer until it calls conn_tls_established (then only
     * plaintext) or conn_tls_failed, once, and may report the end of
     * input or a hang-up before either (the client left). On a graceful
     * close of an established connection it sends the close_notify. */
    bool runs_tls;
} conn_transport;

#endif
