/*
 * tlsconn.c - the mutual-TLS half of a kernel connection: lwIP's pbufs
 * through the daemon's TLS adapter (src/tls) to the core, and the core's
 * output back through it to tcp_write.
 *
 * Handshake: each step (one received pbuf into tern_tls_read) counts
 * against the turn's HANDSHAKE_STEPS_PER_TURN, so a burst of new clients
 * costs established ones at most that much public-key work per turn; a
 * connection over budget waits on the work list. When the handshake
 * succeeds the core is told about the client with the certificate's
 * identity and operator role (as the daemon does); when it fails, or its
 * deadline passes (conn.c), only that connection is closed, with a log
 * line saying why and, on failure, the alert that tells the client.
 *
 * Input back-pressure: a pbuf goes to the adapter only when the core has
 * taken every decrypted byte so far and the adapter holds no complete
 * record, so at most one pbuf's worth of ciphertext and one record's worth
 * of plaintext wait per connection; the rest stays in lwIP's window.
 *
 * Output back-pressure: the core's output is encrypted only once the
 * adapter's previous records have all gone to lwIP, and only as much as
 * lwIP's send buffer has room for; the rest stays in the core, whose
 * bounds (max_out_bytes, QoS 0 dropped first) then see a slow reader, as
 * on the daemon.
 */
#include "mqtt/conn_internal.h"

#include "mm/kmalloc.h"

#include <string.h>

size_t tls_out_pending(const struct kconn *kc)
{
    return tern_tls_out_pending(kc->tls);
}

int tls_has_work(const struct kconn *kc)
{
    return kc->pending != NULL || tern_tls_has_input(kc->tls);
}

static const uint8_t *tls_peek(struct mqtt_server *s, struct kconn *kc, size_t *len)
{
    (void)s;
    return tern_tls_out_peek(kc->tls, len);
}

static void tls_consume(struct mqtt_server *s, struct kconn *kc, size_t n)
{
    (void)s;
    tern_tls_out_consume(kc->tls, n);
}

static const struct wire_src tls_src = {tls_peek, tls_consume};

/* Ciphertext from the adapter into lwIP, as much as it takes now.
 * Returns 0 if kc was freed (lwIP refused the data outright). */
static int push_out(struct mqtt_server *s, struct kconn *kc, uint64_t now)
{
    return kconn_push(s, kc, now, &tls_src);
}

/* Alerts a client sends when it does not accept the server's certificate. */
static int refuses_our_certificate(int alert)
{
    return alert == 42 || alert == 43 || alert == 45 || alert == 46 || alert == 48;
}

/* The adapter failed: say why, one try to send its alert, close. */
static void tls_failed(struct mqtt_server *s, struct kconn *kc, int handshaking, uint64_t now)
{
    char peer[24];
    tern_tls_failure f = tern_tls_failure_of(kc->tls);
    int alert = tern_tls_peer_alert(kc->tls);
    kconn_peer(kc, peer, sizeof peer);
    if (handshaking)
        s->tls_failed++;
    if (f == TERN_TLS_FAIL_PEER_ALERT && alert >= 0)
        mqtt_log(s, BROKER_LOG_INFO, "TLS %s %s failed: %s (%s)%s",
                 handshaking ? "handshake with" : "connection from", peer,
                 tern_tls_failure_text(f), tern_tls_alert_text(alert),
                 refuses_our_certificate(alert)
                     ? ": the client does not accept tls.cert (does it trust the CA that "
                       "issued it, and the name it connects to?)"
                     : "");
    else
        mqtt_log(s, BROKER_LOG_INFO, "TLS %s %s failed: %s (%d)",
                 handshaking ? "handshake with" : "connection from", peer,
                 tern_tls_failure_text(f), tern_tls_error_code(kc->tls));
    if (!push_out(s, kc, now))
        return;
    kconn_end(s, kc, now);
}

/* The handshake is done: introduce the client to the core. Returns 0 if
 * kc was freed. */
static int handshake_done(struct mqtt_server *s, struct kconn *kc, uint64_t now)
{
    char peer[24];
    kconn_peer(kc, peer, sizeof peer);
    klist_remove(&s->handshakes, kc, KLIST_HANDSHAKE);
    const char *identity = tern_tls_identity(kc->tls);
    broker_conn_info info = {.peer = peer, .identity = identity,
                             .is_operator = tern_tls_is_operator(kc->tls)};
    kc->bc = broker_open(s->b, kc, &info, now);
    if (!kc->bc) {
        s->refused++;
        mqtt_log(s, BROKER_LOG_DEBUG, "closing %s: refused by the core", peer);
        kconn_end(s, kc, now);
        return 0;
    }
    s->tls_ok++;
    mqtt_log(s, BROKER_LOG_INFO, "TLS client %s: identity %s%s (%s, %s)", peer,
             identity ? identity : "none (no certificate)", info.is_operator ? ", operator" : "",
             tern_tls_version_name(kc->tls), tern_tls_cipher_name(kc->tls));
    return 1;
}

/* Decrypted bytes to the core; what it does not take is kept. Returns 0
 * if kc was freed (no memory to keep it). */
static int deliver(struct mqtt_server *s, struct kconn *kc, const uint8_t *data, size_t len,
                   uint64_t now)
{
    size_t n = broker_input(s->b, kc->bc, data, len, now);
    if (n >= len || broker_wants_close(kc->bc))
        return 1;
    kc->pending = kmalloc(len - n);
    if (!kc->pending) {
        mqtt_log(s, BROKER_LOG_WARN, "out of memory holding input; closing");
        kconn_abort(s, kc, now);
        return 0;
    }
    memcpy(kc->pending, data + n, len - n);
    kc->pending_off = 0;
    kc->pending_len = (uint32_t)(len - n);
    return 1;
}

/* Give the core what waits in kc->pending. Returns 1 when all was taken. */
static int serve_pending(struct mqtt_server *s, struct kconn *kc, uint64_t now)
{
    size_t n = broker_input(s->b, kc->bc, kc->pending + kc->pending_off, kc->pending_len, now);
    if (n >= kc->pending_len || broker_wants_close(kc->bc)) {
        kfree(kc->pending);
        kc->pending = NULL;
        kc->pending_off = kc->pending_len = 0;
        return 1;
    }
    kc->pending_off += (uint32_t)n;
    kc->pending_len -= (uint32_t)n;
    return 0;
}

/* The first pbuf of the chain that holds bytes (empty ones are dropped). */
static struct pbuf *next_pbuf(struct kconn *kc)
{
    while (kc->rx && kc->rx->len == 0) {
        struct pbuf *q = kc->rx;
        kc->rx = q->next;
        if (q->next)
            pbuf_ref(q->next);
        pbuf_free(q);
    }
    return kc->rx;
}

/*
 * Move input along: pending plaintext to the core, records the adapter
 * holds, then received pbufs, until the core stops taking, the input runs
 * out or the turn's budgets are spent (then the connection waits on the
 * work list). drain: the peer has closed, ignore the core's work budget.
 * Returns 0 if kc was freed.
 */
static int tls_input(struct mqtt_server *s, struct kconn *kc, uint64_t now, int drain)
{
    for (;;) {
        if (kc->bc) {
            if (broker_wants_close(kc->bc) || broker_input_paused(kc->bc))
                return 1; /* the flush brings it back when output drains */
            if (kc->pending) {
                if (!serve_pending(s, kc, now) && !drain) {
                    work_add(s, kc); /* work budget spent: next turn */
                    return 1;
                }
                continue;
            }
        }
        int handshaking = tern_tls_state_of(kc->tls) == TERN_TLS_HANDSHAKING;
        if (handshaking && s->handshake_steps == 0) {
            if (kc->rx || tern_tls_has_input(kc->tls))
                work_add(s, kc); /* this turn's handshake budget is spent */
            return 1;
        }
        struct pbuf *q = NULL;
        const uint8_t *in = NULL;
        u16_t in_len = 0;
        if (!tern_tls_has_input(kc->tls)) {
            q = next_pbuf(kc);
            if (!q)
                return 1;
            in = q->payload;
            in_len = q->len;
        }
        size_t plain = 0;
        tern_tls_state st = tern_tls_read(kc->tls, in, in_len, s->plain, sizeof s->plain, &plain);
        if (q) {
            /* The adapter took the whole pbuf (keeping what it could not use
             * yet); acknowledge it to lwIP. */
            kc->rx = pbuf_free_header(q, in_len);
            tcp_recved(kc->pcb, in_len);
        }
        if (handshaking)
            s->handshake_steps--;
        if (st == TERN_TLS_FAILED) {
            tls_failed(s, kc, handshaking, now);
            return 0;
        }
        if (st == TERN_TLS_ESTABLISHED && !kc->bc && !handshake_done(s, kc, now))
            return 0;
        if (st == TERN_TLS_PEER_CLOSED) {
            kc->peer_fin = 1; /* close_notify: nothing more will come */
            drain = 1;
            if (!kc->bc) {
                kconn_end(s, kc, now);
                return 0;
            }
        }
        /* The server's handshake flight, or a reply of the adapter's own. */
        if (!push_out(s, kc, now))
            return 0;
        if (plain > 0 && kc->bc && !deliver(s, kc, s->plain, plain, now))
            return 0;
    }
}

/* Before a graceful close: close_notify, one try. */
static int say_goodbye(struct mqtt_server *s, struct kconn *kc, uint64_t now)
{
    tern_tls_shutdown(kc->tls);
    return push_out(s, kc, now);
}

int tls_flush(struct mqtt_server *s, struct kconn *kc, uint64_t now)
{
    if (!kc->pcb)
        return 1;
    if (!push_out(s, kc, now))
        return 0;
    if (!kc->bc)
        return 1; /* handshake output only */
    /* Encrypt only once the previous records are all in lwIP, and only
     * what its send buffer has room for. */
    while (tern_tls_out_pending(kc->tls) == 0) {
        size_t len;
        const uint8_t *out = broker_out_peek(kc->bc, &len);
        u16_t room = tcp_sndbuf(kc->pcb);
        if (len == 0 || room == 0)
            break;
        size_t n = len < room ? len : room;
        if (!tern_tls_write(kc->tls, out, n)) {
            tls_failed(s, kc, 0, now);
            return 0;
        }
        broker_out_consume(s->b, kc->bc, n); /* the core may refill from its queues */
        if (!push_out(s, kc, now))
            return 0;
    }
    return kconn_after_flush(s, kc, now,
                            broker_out_pending(kc->bc) + tern_tls_out_pending(kc->tls),
                            say_goodbye);
}

int tls_service(struct mqtt_server *s, struct kconn *kc, uint64_t now)
{
    if (!tls_input(s, kc, now, kc->peer_fin))
        return 0;
    if (!tls_flush(s, kc, now))
        return 0;
    if (!kc->peer_fin)
        return 1;
    /* FIN or close_notify: once what came before it has reached the core
     * (or the core takes no more), close; lwIP still sends what we queued,
     * then FIN. A handshake over this turn's budget finishes first. */
    int more = kc->pending || kc->rx || tern_tls_has_input(kc->tls);
    if (!more || (kc->bc && (broker_wants_close(kc->bc) || broker_input_paused(kc->bc)))) {
        kconn_end(s, kc, now);
        return 0;
    }
    return 1;
}
