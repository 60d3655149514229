/*
 * tls.c - the TLS half of the connection layer: a session from the TLS
 * adapter (src/tls) between the transport and the core.
 *
 * Handshake: every call into the adapter with new bytes while the
 * handshake runs is one step of the turn's budget
 * (CONN_HANDSHAKE_STEPS_PER_TURN, checked by input.c before each). When
 * the handshake succeeds the core meets the client, with the
 * certificate's identity and operator role, and one log line says who it
 * is; MQTT bytes that came with the client's Finished go straight to the
 * core. When it fails, only this connection closes, with a log line
 * saying why and one try to send the alert that tells the client.
 *
 * Output: encrypt-on-drain. The core's output is encrypted only once the
 * adapter's previous records have all been taken by the transport, and
 * then in one go, up to CONN_TLS_OUT_HIGH and the transport's room (full
 * 16 KiB records for bulk data, one record for a turn of small packets).
 *
 * This file is the layer's only user of the adapter, reached through
 * conn_tls_ops, so builds without wolfSSL (the simulator, the fuzzers)
 * link the rest of the layer without it.
 */
#include "conn/internal.h"

static const uint8_t *cipher_peek(conn_server *s, conn *c, size_t *len)
{
    (void)s;
    return tern_tls_out_peek(c->tls, len);
}

static void cipher_consume(conn_server *s, conn *c, size_t n)
{
    (void)s;
    tern_tls_out_consume(c->tls, n);
}

static const conni_source ciphertext = {cipher_peek, cipher_consume};

/* Queued ciphertext to the transport, as far as it takes it. */
static bool send_queued(conn_server *s, conn *c, uint64_t now)
{
    return conni_write_all(s, c, &ciphertext, now);
}

/* The session failed: say why (a flood of failures is rate-limited), one
 * try to send the alert, close. */
static bool failed(conn_server *s, conn *c, bool handshaking, uint64_t now)
{
    char why[TERN_TLS_ERR_SIZE];

    tern_tls_describe_failure(c->tls, why, sizeof why);
    conni_tls_failure(s, c, handshaking, why, now);
    if (!send_queued(s, c, now))
        return false;
    if (s->io->push != NULL)
        s->io->push(s->io_ctx, c);
    return conni_end(s, c, CONN_CLOSE_GRACEFUL, now);
}

/* The handshake is done: introduce the client to the core. */
static bool handshake_done(conn_server *s, conn *c, uint64_t now)
{
    return conni_tls_introduce(s, c, tern_tls_identity(c->tls), tern_tls_is_operator(c->tls),
                               tern_tls_version_name(c->tls), tern_tls_cipher_name(c->tls), now);
}

static bool tls_input(conn_server *s, conn *c, const uint8_t *in, size_t n, uint64_t now)
{
    bool handshaking = c->bc == NULL;
    size_t plain = 0;
    uint64_t t0 = handshaking && s->clock_us != NULL ? s->clock_us() : 0;
    tern_tls_state st = tern_tls_read(c->tls, in, n, s->pbuf, CONN_READ_BUF_SIZE, &plain);

    if (handshaking && s->handshake_steps > 0)
        s->handshake_steps--;
    if (handshaking && s->clock_us != NULL) {
        s->handshake_us += s->clock_us() - t0;
        if (s->handshake_us >= CONN_HANDSHAKE_US_PER_TURN)
            s->handshake_steps = 0; /* this turn's handshake time is spent */
    }
    if (st == TERN_TLS_FAILED)
        return failed(s, c, handshaking, now);
    /* The server's flight, a reply of the adapter's own (key update), or,
     * on TLS 1.2, the server's Finished, which must precede the core's
     * first bytes. */
    if (!send_queued(s, c, now))
        return false;
    if (st == TERN_TLS_PEER_CLOSED) {
        c->peer_eof = 1; /* close_notify: nothing more will come */
        if (handshaking) {
            char peer[CONN_PEER_TEXT];

            conni_peer(s, c, peer);
            conni_log(s, BROKER_LOG_DEBUG, "%s closed during the TLS handshake", peer);
            return conni_end(s, c, CONN_CLOSE_GRACEFUL, now);
        }
    }
    if (handshaking) {
        if (st == TERN_TLS_ESTABLISHED && !handshake_done(s, c, now))
            return false;
        if (s->io->push != NULL)
            s->io->push(s->io_ctx, c);
        /* A flight the transport did not take waits for room. */
        if (!conni_update_interest(s, c, now))
            return false;
    }
    if (plain > 0 && c->bc != NULL && !conni_deliver(s, c, s->pbuf, plain, now))
        return false;
    /* The client's Finished needs no answer, so its acknowledgement would
     * wait for the delayed-ACK timer (40 ms on Linux), and a client with
     * Nagle on would hold its CONNECT that long: acknowledge at once,
     * unless the CONNECT came with the Finished and the core answered it,
     * for then the CONNACK carries the acknowledgement (one segment and
     * one system call less per handshake). */
    if (handshaking && c->bc != NULL && s->io->ack_now != NULL) {
        size_t answer = 0;

        (void)broker_out_peek(c->bc, &answer);
        if (answer == 0 && tern_tls_out_pending(c->tls) == 0)
            s->io->ack_now(s->io_ctx, c);
    }
    return true;
}

static bool tls_flush(conn_server *s, conn *c, uint64_t now)
{
    const conni_source *src = conni_plain_source(c); /* framed on WebSocket */

    if (!send_queued(s, c, now))
        return false;
    if (c->bc == NULL || tern_tls_out_pending(c->tls) > 0)
        return true;
    for (;;) {
        size_t queued = tern_tls_out_pending(c->tls), len = 0, n;
        size_t room = s->io->write_room != NULL ? s->io->write_room(s->io_ctx, c) : SIZE_MAX;
        const uint8_t *out;

        if (queued >= CONN_TLS_OUT_HIGH || queued >= room)
            break;
        out = src->peek(s, c, &len);
        if (len == 0)
            break;
        n = len;
        if (n > CONN_TLS_OUT_HIGH - queued)
            n = CONN_TLS_OUT_HIGH - queued;
        if (n > room - queued)
            n = room - queued;
        if (!tern_tls_write(c->tls, out, n))
            return failed(s, c, false, now);
        src->consume(s, c, n); /* the core refills from the session's queue */
    }
    return send_queued(s, c, now);
}

static bool tls_goodbye(conn_server *s, conn *c, uint64_t now)
{
    tern_tls_shutdown(c->tls);
    return send_queued(s, c, now);
}

const conn_tls_ops conn_tls = {
    .release_server = tern_tls_server_release,
    .start = tern_tls_server_conn,
    .free = tern_tls_conn_free,
    .input = tls_input,
    .has_input = tern_tls_has_input,
    .flush = tls_flush,
    .out_pending = tern_tls_out_pending,
    .goodbye = tls_goodbye,
};
