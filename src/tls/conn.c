/*
 * conn.c - one TLS connection over memory: wolfSSL's I/O callbacks read the
 * caller's ciphertext and append to an output queue, so the adapter never
 * touches a transport.
 *
 * Input without copies in the common case: tern_tls_read lends the caller's
 * buffer to wolfSSL for the duration of the call (the "view"). wolfSSL asks
 * for exactly the bytes it needs next (a record header, then the record), so
 * everything it does not need before the output buffer fills stays in the
 * view; only that remainder is copied into the connection's input queue.
 * With an output buffer at least as large as the input (plaintext is never
 * longer than its records) nothing is ever copied.
 *
 * Output: wolfSSL builds each record and hands it to tls_io_send, which
 * appends it to the output queue; the platform sends from there. The queue
 * never refuses (apart from running out of memory): the platform bounds it
 * by encrypting only what the core has pending, once the queue has drained.
 *
 * The handover (server side, TLS 1.3): wolfSSL runs the handshake, and
 * hands the application traffic secrets to a callback. The moment the
 * handshake completes, nothing of the client's is left inside wolfSSL
 * (it reads exactly the bytes a record needs, and nothing may follow the
 * client's Finished in its record) and nothing has been sent under the
 * application keys (no tickets, no 0.5-RTT data), so both sequence numbers
 * are 0: the WOLFSSL object is freed and record.c protects the records
 * from then on (record_*() below). An idle connection then holds this
 * structure and one block of keys packed by suite (120 bytes for
 * AES-128-GCM), ~250 bytes instead of ~3.5 KB. TLS 1.2 connections and
 * client connections keep wolfSSL throughout.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "tls/internal.h" /* first: wolfSSL's options.h before its headers */

#include <wolfssl/error-ssl.h>

#ifndef HAVE_SECRET_CALLBACK
#error "src/tls needs wolfSSL built with HAVE_SECRET_CALLBACK (deps/wolfssl.sh, user_settings.h)"
#endif

/* ---- wolfSSL's transport --------------------------------------------- */

int tls_io_recv(WOLFSSL *ssl, char *buf, int size, void *ctx)
{
    tern_tls_conn *c = ctx;
    size_t want = size > 0 ? (size_t)size : 0, n;

    (void)ssl;
    if (c->in.len > 0) /* older bytes first */
        return (int)tls_queue_take(&c->in, (uint8_t *)buf, want);
    if (c->view_len == 0)
        return WOLFSSL_CBIO_ERR_WANT_READ;
    n = c->view_len < want ? c->view_len : want;
    memcpy(buf, c->view, n);
    c->view += n;
    c->view_len -= (uint32_t)n;
    return (int)n;
}

int tls_io_send(WOLFSSL *ssl, char *buf, int size, void *ctx)
{
    tern_tls_conn *c = ctx;

    (void)ssl;
    if (size <= 0)
        return 0;
    if (!tls_queue_append(&c->out, (const uint8_t *)buf, (size_t)size)) {
        tls_conn_set_failure(c, TERN_TLS_FAIL_OUT_OF_MEMORY, 0);
        return WOLFSSL_CBIO_ERR_GENERAL;
    }
    return size;
}

/* ---- life ---------------------------------------------------------------- */

/* ---- the record layer's keys, packed ------------------------------------ */

/* One direction's packed bytes: secret, key, IV at the suite's lengths. */
static size_t dir_size(tls_rec_suite s)
{
    return tls_rec_secret_len(s) + tls_rec_key_len(s) + TLS_REC_IV;
}

size_t tls_conn_keys_size(tls_rec_suite s)
{
    return 2 * dir_size(s);
}

static void wipe(void *p, size_t n)
{
    volatile uint8_t *v = p;

    while (n-- > 0)
        *v++ = 0;
}

static void dir_unpack(tls_rec_dir *d, const uint8_t *p, tls_rec_suite s, uint64_t seq)
{
    size_t sl = tls_rec_secret_len(s), kl = tls_rec_key_len(s);

    memcpy(d->secret, p, sl);
    memcpy(d->key, p + sl, kl);
    memcpy(d->iv, p + sl + kl, TLS_REC_IV);
    d->seq = seq;
}

static void dir_pack(const tls_rec_dir *d, uint8_t *p, tls_rec_suite s)
{
    size_t sl = tls_rec_secret_len(s), kl = tls_rec_key_len(s);

    memcpy(p, d->secret, sl);
    memcpy(p + sl, d->key, kl);
    memcpy(p + sl + kl, d->iv, TLS_REC_IV);
}

/* The packed state unpacked for record.c: the per-call copy costs tens of
 * nanoseconds against the AEAD's microsecond, and keeps the idle block at
 * the suite's size (record.c's tls_rec is sized for the largest suite). */
void tls_conn_rec_load(const tern_tls_conn *c, tls_rec *r)
{
    tls_rec_suite s = (tls_rec_suite)c->suite;

    memset(r, 0, sizeof *r); /* a shorter suite's key leaves bytes unset */
    r->suite = c->suite;
    dir_unpack(&r->rd, c->keys, s, c->seq_rd);
    dir_unpack(&r->wr, c->keys + dir_size(s), s, c->seq_wr);
}

/* Back into the connection (sequence numbers, and keys that a KeyUpdate
 * moved), and r wiped. */
void tls_conn_rec_store(tern_tls_conn *c, tls_rec *r)
{
    tls_rec_suite s = (tls_rec_suite)c->suite;

    dir_pack(&r->rd, c->keys, s);
    dir_pack(&r->wr, c->keys + dir_size(s), s);
    c->seq_rd = r->rd.seq;
    c->seq_wr = r->wr.seq;
    tls_rec_wipe(r);
}

/* Drop a server connection's secrets or keys (freed, or keeping wolfSSL). */
static void rec_drop(tern_tls_conn *c)
{
    if (c->server != NULL && c->keys != NULL) {
        wipe(c->keys, c->suite == TLS_REC_NONE ? TLS_CONN_SECRETS
                                               : tls_conn_keys_size((tls_rec_suite)c->suite));
        tls_mem_free(&c->server->alloc, c->keys);
        c->keys = NULL;
        c->suite = TLS_REC_NONE;
    }
}

/* s: the server, whose allocator the connection comes from; NULL on the
 * client side. */
static tern_tls_conn *conn_new(WOLFSSL_CTX *ctx, const tern_tls_server *s)
{
    const tern_tls_allocator *a = s != NULL ? &s->alloc : NULL;
    tern_tls_conn *c = tls_mem_zalloc(a, sizeof *c);

    if (c == NULL)
        return NULL;
    c->ssl = wolfSSL_new(ctx);
    if (c->ssl == NULL) {
        tls_mem_free(a, c);
        return NULL;
    }
    wolfSSL_SetIOReadCtx(c->ssl, c);
    wolfSSL_SetIOWriteCtx(c->ssl, c);
    wolfSSL_SetCertCbCtx(c->ssl, c); /* the verify callback's store->userCtx */
    wolfSSL_SetEccVerifyCtx(c->ssl, c); /* server side: sigcache.c's tls_ecc_verify */
    c->state = TERN_TLS_HANDSHAKING;
    c->peer_alert = -1;
    return c;
}

/* wolfSSL's secret callback (server side): keep the application traffic
 * secrets for the record layer. Returning 0 lets the handshake go on
 * whatever happens here: without both secrets the connection simply keeps
 * wolfSSL. */
static int catch_secret(WOLFSSL *ssl, int id, const unsigned char *secret, int len, void *ctx)
{
    tern_tls_conn *c = ctx;

    (void)ssl;
    if ((id != CLIENT_TRAFFIC_SECRET && id != SERVER_TRAFFIC_SECRET) || len <= 0 ||
        len > TLS_REC_SECRET_MAX)
        return 0;
    if (c->keys == NULL && (c->keys = tls_mem_zalloc(&c->server->alloc, TLS_CONN_SECRETS)) == NULL)
        return 0;
    /* We are the server: the client's secret is the one we read with. */
    memcpy(c->keys + (id == CLIENT_TRAFFIC_SECRET ? 0 : TLS_REC_SECRET_MAX), secret,
           (size_t)len);
    c->secrets |= (uint8_t)(id == CLIENT_TRAFFIC_SECRET ? 1 : 2);
    return 0;
}

tern_tls_conn *tern_tls_server_conn(tern_tls_server *s)
{
    tern_tls_conn *c = conn_new(s->ctx, s);

    if (c != NULL) {
        c->server = s;
        atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
        if (wolfSSL_set_tls13_secret_cb(c->ssl, catch_secret, c) != WOLFSSL_SUCCESS) {
            tern_tls_conn_free(c);
            return NULL;
        }
#ifdef HAVE_SESSION_TICKET
        /* A ticket would be sent under the application key after the
         * handover's sequence numbers were fixed (and resumption is off). */
        (void)wolfSSL_no_ticket_TLSv13(c->ssl);
#endif
    }
    return c;
}

tern_tls_conn *tern_tls_client_conn(tern_tls_client *cl)
{
    tern_tls_conn *c = conn_new(cl->ctx, NULL);

    if (c != NULL) {
        c->client = cl;
        atomic_fetch_add_explicit(&cl->refs, 1, memory_order_relaxed);
    }
    return c;
}

bool tern_tls_client_check_name(tern_tls_conn *c, const char *name)
{
    return c->ssl != NULL && c->client != NULL &&
           wolfSSL_check_domain_name(c->ssl, name) == WOLFSSL_SUCCESS;
}

void tern_tls_conn_free(tern_tls_conn *c)
{
    tern_tls_allocator a = {NULL, NULL, NULL};

    if (c == NULL)
        return;
    if (c->ssl != NULL)
        wolfSSL_free(c->ssl);
    rec_drop(c);
    tls_queue_free(&c->in);
    tls_queue_free(&c->out);
    tls_queue_free(&c->plain);
    if (c->server != NULL) {
        a = c->server->alloc; /* the release may free the server */
        tls_mem_free(&a, c->identity);
        tern_tls_server_release(c->server);
    } else {
        free(c->identity);
        tern_tls_client_release(c->client);
    }
    tls_mem_free(&a, c);
}

void tls_conn_set_failure(tern_tls_conn *c, tern_tls_failure f, int error)
{
    if (c->failure == TERN_TLS_FAIL_NONE) {
        c->failure = (uint8_t)f;
        c->error = error;
    }
}

static void fail(tern_tls_conn *c, int error)
{
    tls_conn_set_failure(c, tls_failure_from_error(error), error);
    c->state = TERN_TLS_FAILED;
    tls_queue_free(&c->in); /* input after a failure means nothing */
}

/* ---- the record layer, after the handover -------------------------------- */

/* The handshake is done (server): take over from wolfSSL if we can. */
static void hand_over(tern_tls_conn *c)
{
    tls_rec r;
    tls_rec_suite suite;
    uint8_t *keys;
    size_t len;
    bool ok;

    if (c->keys == NULL)
        return;
    suite = tls_rec_suite_of((unsigned)wolfSSL_get_current_cipher_suite(c->ssl));
    len = tls_rec_secret_len(suite);
    /* Defensive: wolfSSL holds no decrypted bytes at this point. */
    if (wolfSSL_version(c->ssl) != TLS1_3_VERSION || c->secrets != 3 ||
        suite == TLS_REC_NONE || wolfSSL_has_pending(c->ssl) || wolfSSL_pending(c->ssl) > 0) {
        rec_drop(c);
        return;
    }
    /* Derive keys and IVs from the caught secrets, then keep them packed
     * in a block of the suite's size in place of the secrets' block. */
    memset(&r, 0, sizeof r);
    r.suite = (uint8_t)suite;
    keys = tls_mem_zalloc(&c->server->alloc, tls_conn_keys_size(suite));
    ok = keys != NULL && tls_rec_set_secret(&r.rd, suite, c->keys, len) &&
         tls_rec_set_secret(&r.wr, suite, c->keys + TLS_REC_SECRET_MAX, len);
    rec_drop(c);
    if (!ok) {
        tls_mem_free(&c->server->alloc, keys);
        tls_rec_wipe(&r);
        return;
    }
    c->keys = keys;
    c->suite = (uint8_t)suite;
    tls_conn_rec_store(c, &r); /* sequence numbers 0 */
    wolfSSL_free(c->ssl);
    c->ssl = NULL;
}

static void rec_failed(tern_tls_conn *c, tern_tls_failure f, int error)
{
    tls_conn_set_failure(c, f, error);
    c->state = TERN_TLS_FAILED;
    tls_queue_free(&c->in);
    tls_queue_free(&c->plain);
}

/* Seal one record of content type `type` onto the output. */
static bool rec_send(tern_tls_conn *c, uint8_t type, const uint8_t *data, size_t len)
{
    size_t n = tls_rec_sealed_size(len);
    uint8_t *dst = tls_queue_extend(&c->out, n);
    tls_rec rec;
    tls_rec_result r;

    if (dst == NULL) {
        rec_failed(c, TERN_TLS_FAIL_OUT_OF_MEMORY, 0);
        return false;
    }
    tls_conn_rec_load(c, &rec);
    r = tls_rec_seal(&rec, type, data, len, dst);
    tls_conn_rec_store(c, &rec);
    if (r != TLS_REC_OK) {
        tls_queue_drop_tail(&c->out, n);
        rec_failed(c, TERN_TLS_FAIL_PROTOCOL, ENCRYPT_ERROR);
        return false;
    }
    return true;
}

/* We found the peer at fault: fail, and tell it with a fatal alert. */
static void rec_abort(tern_tls_conn *c, int error, uint8_t alert)
{
    const uint8_t msg[2] = {2, alert}; /* level fatal */

    if (c->state != TERN_TLS_ESTABLISHED)
        return;
    c->state = TERN_TLS_FAILED; /* before sending: one alert at most */
    tls_conn_set_failure(c, tls_failure_from_error(error), error);
    tls_queue_free(&c->in);
    tls_queue_free(&c->plain);
    (void)rec_send(c, TLS_CT_ALERT, msg, sizeof msg);
}

/* An alert from the peer: close_notify ends its sending; any other is
 * fatal in TLS 1.3 (user_canceled precedes a close_notify: ignored). */
static void rec_alert(tern_tls_conn *c, const uint8_t *m, size_t len)
{
    if (len != 2) {
        rec_abort(c, BUFFER_ERROR, TERN_TLS_ALERT_DECODE_ERROR);
        return;
    }
    if (m[1] == 0) {
        c->state = TERN_TLS_PEER_CLOSED;
        tls_queue_free(&c->in);
        return;
    }
    if (m[1] == 90)
        return;
    c->peer_alert = m[1];
    rec_failed(c, TERN_TLS_FAIL_PEER_ALERT, FATAL_ERROR);
}

/* KeyUpdate of one direction (RFC 8446 7.2): write or read. */
static bool rec_update(tern_tls_conn *c, bool write)
{
    tls_rec r;
    bool ok;

    tls_conn_rec_load(c, &r);
    ok = tls_rec_update(write ? &r.wr : &r.rd, (tls_rec_suite)c->suite);
    if (ok)
        tls_conn_rec_store(c, &r);
    else
        tls_rec_wipe(&r);
    return ok;
}

/*
 * A handshake message after the handshake. tern's server issues no
 * tickets and asks for no post-handshake authentication, so a client may
 * send only KeyUpdate (RFC 8446 4.6.3), whole and last in its record (the
 * key changes after it). Its read key moves on; update_requested makes
 * us answer with a KeyUpdate of our own under the old write key, then
 * move the write key on too.
 */
static void rec_handshake(tern_tls_conn *c, const uint8_t *m, size_t len)
{
    static const uint8_t answer[5] = {24, 0, 0, 1, 0}; /* update_not_requested */

    if (len < 4 || m[0] != 24) {
        rec_abort(c, OUT_OF_ORDER_E, TERN_TLS_ALERT_UNEXPECTED_MESSAGE);
        return;
    }
    if (len != 5 || m[1] != 0 || m[2] != 0 || m[3] != 1) {
        rec_abort(c, BUFFER_ERROR, TERN_TLS_ALERT_DECODE_ERROR);
        return;
    }
    if (m[4] > 1) {
        rec_abort(c, BUFFER_ERROR, TERN_TLS_ALERT_ILLEGAL_PARAMETER);
        return;
    }
    if (!rec_update(c, false)) {
        rec_abort(c, ENCRYPT_ERROR, TERN_TLS_ALERT_INTERNAL_ERROR);
        return;
    }
    if (m[4] == 1 && rec_send(c, TLS_CT_HANDSHAKE, answer, sizeof answer) &&
        !rec_update(c, true))
        rec_abort(c, ENCRYPT_ERROR, TERN_TLS_ALERT_INTERNAL_ERROR);
}

/* What is wrong with a record header (h[0..5)): not an encrypted record,
 * or an oversized length; HEADER_OK if nothing. */
typedef enum header_fault { HEADER_OK, HEADER_TYPE, HEADER_LENGTH } header_fault;

static header_fault header_check(const uint8_t *h)
{
    if (h[0] != TLS_CT_APPLICATION_DATA || h[1] != 3 || h[2] != 3)
        return HEADER_TYPE;
    if (tls_rec_size(h, TLS_REC_HEADER) > TLS_REC_HEADER + TLS_REC_BODY_MAX)
        return HEADER_LENGTH;
    return HEADER_OK;
}

/* Check a record's header as soon as it is there, so garbage or an
 * oversized length fails now instead of waiting for 64 KiB. */
static bool rec_header_ok(tern_tls_conn *c, const uint8_t *h)
{
    header_fault f = header_check(h);

    if (f == HEADER_TYPE)
        rec_abort(c, UNKNOWN_RECORD_TYPE, TERN_TLS_ALERT_UNEXPECTED_MESSAGE);
    else if (f == HEADER_LENGTH)
        rec_abort(c, LENGTH_ERROR, TERN_TLS_ALERT_RECORD_OVERFLOW);
    return f == HEADER_OK;
}

/* Open one record at src (size bytes) and act on it; application data
 * lands in out (or, without room there, in c->plain). Returns the
 * plaintext bytes put in out. */
static size_t rec_one(tern_tls_conn *c, const uint8_t *src, size_t size, uint8_t *out,
                      size_t room)
{
    size_t cap = size - TLS_REC_HEADER, len = 0, got = 0;
    uint8_t *scratch = NULL, *dst = out, type = 0;
    tls_rec rec;
    tls_rec_result r;

    if (cap > room) { /* the plaintext could be too big for out */
        scratch = malloc(cap);
        if (scratch == NULL) {
            rec_failed(c, TERN_TLS_FAIL_OUT_OF_MEMORY, 0);
            return 0;
        }
        dst = scratch;
    }
    tls_conn_rec_load(c, &rec);
    r = tls_rec_open(&rec, src, size, dst, &type, &len);
    tls_conn_rec_store(c, &rec); /* the read sequence number, when it authenticated */
    if (r == TLS_REC_BAD_MAC)
        rec_abort(c, VERIFY_MAC_ERROR, TERN_TLS_ALERT_BAD_RECORD_MAC);
    else if (r == TLS_REC_OVERFLOW)
        rec_abort(c, BUFFER_ERROR, TERN_TLS_ALERT_RECORD_OVERFLOW);
    else if (r == TLS_REC_UNEXPECTED)
        rec_abort(c, OUT_OF_ORDER_E, TERN_TLS_ALERT_UNEXPECTED_MESSAGE);
    else if (r != TLS_REC_OK)
        rec_abort(c, DECRYPT_ERROR, TERN_TLS_ALERT_INTERNAL_ERROR);
    else if (type == TLS_CT_APPLICATION_DATA) {
        if (dst == out)
            got = len;
        else {
            got = len < room ? len : room;
            memcpy(out, dst, got);
            if (!tls_queue_append(&c->plain, dst + got, len - got))
                rec_failed(c, TERN_TLS_FAIL_OUT_OF_MEMORY, 0);
        }
    } else if (type == TLS_CT_ALERT)
        rec_alert(c, dst, len);
    else if (type == TLS_CT_HANDSHAKE)
        rec_handshake(c, dst, len);
    else
        rec_abort(c, OUT_OF_ORDER_E, TERN_TLS_ALERT_UNEXPECTED_MESSAGE);
    if (scratch != NULL) {
        memset(scratch, 0, cap);
        free(scratch);
    }
    return got;
}

/* tern_tls_read's work after the handover: whole records from the input
 * queue (when a partial one waits there) or straight from the caller's
 * bytes; a partial record's bytes wait in the queue. */
static size_t rec_read(tern_tls_conn *c, uint8_t *out, size_t out_cap)
{
    size_t got = tls_queue_take(&c->plain, out, out_cap);

    if (c->in.len > 0 && c->view_len > 0) {
        if (!tls_queue_append(&c->in, c->view, c->view_len)) {
            rec_failed(c, TERN_TLS_FAIL_OUT_OF_MEMORY, 0);
            return got;
        }
        c->view_len = 0;
    }
    while (c->state == TERN_TLS_ESTABLISHED && got < out_cap) {
        bool queued = c->in.len > 0;
        const uint8_t *src = queued ? c->in.buf + c->in.off : c->view;
        size_t avail = queued ? c->in.len : c->view_len;
        size_t size = tls_rec_size(src, avail);

        if (size == 0 || !rec_header_ok(c, src) || size > avail)
            break;
        got += rec_one(c, src, size, out + got, out_cap - got);
        if (queued)
            tls_queue_consume(&c->in, size);
        else {
            c->view += size;
            c->view_len -= (uint32_t)size;
        }
    }
    return got;
}

/* ---- handshake and records ----------------------------------------------- */

static void handshake_done(tern_tls_conn *c)
{
    const tern_tls_server *s = c->server;

    /* Defensive: resumption is off, so the verify callback ran for every
     * certificate; a required certificate without an identity means it did
     * not, and the connection must not go on as anonymous. */
    if (s != NULL && (wolfSSL_session_reused(c->ssl) ||
                      (s->require_client_cert && c->identity == NULL))) {
        tls_conn_set_failure(c, TERN_TLS_FAIL_NO_CERT, 0);
        c->state = TERN_TLS_FAILED;
        return;
    }
    c->state = TERN_TLS_ESTABLISHED;
}

/*
 * A TLS 1.3 client that does not trust our certificate gives up before it
 * has keys, so its alert comes in a plaintext record (after an optional
 * middlebox-compatibility ChangeCipherSpec); wolfSSL, already expecting
 * encrypted records, only reports a parse error. Recognise it in the bytes
 * of the failing call, so the log can say what the client said.
 */
static int plaintext_alert(const uint8_t *in, size_t len)
{
    static const uint8_t ccs[6] = {20, 3, 3, 0, 1, 1};

    if (len >= sizeof ccs && memcmp(in, ccs, sizeof ccs) == 0) {
        in += sizeof ccs;
        len -= sizeof ccs;
    }
    /* type 21 (alert), version 3.x, length 2, level 2 (fatal), description */
    if (len >= 7 && in[0] == 21 && in[1] == 3 && in[3] == 0 && in[4] == 2 && in[5] == 2)
        return in[6];
    return -1;
}

static void handshake_step(tern_tls_conn *c)
{
    int rc = c->server != NULL ? wolfSSL_accept(c->ssl) : wolfSSL_connect(c->ssl);
    int e;

    if (rc == WOLFSSL_SUCCESS) {
        handshake_done(c);
        if (c->state == TERN_TLS_ESTABLISHED && c->server != NULL)
            hand_over(c);
        else
            rec_drop(c);
        return;
    }
    e = wolfSSL_get_error(c->ssl, rc);
    if (e != WOLFSSL_ERROR_WANT_READ && e != WOLFSSL_ERROR_WANT_WRITE)
        fail(c, e);
}

tern_tls_state tern_tls_read(tern_tls_conn *c, const uint8_t *in, size_t in_len, uint8_t *out,
                             size_t out_cap, size_t *out_len)
{
    size_t got = 0;

    if (c->state == TERN_TLS_FAILED || c->state == TERN_TLS_PEER_CLOSED)
        goto done;
    if (in_len > UINT32_MAX) { /* more than any transport reads at once */
        tls_conn_set_failure(c, TERN_TLS_FAIL_OUT_OF_MEMORY, 0);
        c->state = TERN_TLS_FAILED;
        goto done;
    }
    c->view = in;
    c->view_len = (uint32_t)in_len;
    if (c->state == TERN_TLS_HANDSHAKING) {
        handshake_step(c);
        if (c->state == TERN_TLS_FAILED && in != NULL) {
            c->peer_alert = (int16_t)plaintext_alert(in, in_len);
            if (c->peer_alert >= 0 &&
                (c->failure == TERN_TLS_FAIL_PROTOCOL || c->failure == TERN_TLS_FAIL_NOT_TLS))
                c->failure = TERN_TLS_FAIL_PEER_ALERT;
        }
    }
    /* The client's first records often follow its Finished in the same
     * segment: read them in the same call. */
    if (c->ssl == NULL)
        got = rec_read(c, out, out_cap);
    while (c->ssl != NULL && c->state == TERN_TLS_ESTABLISHED && got < out_cap) {
        size_t room = out_cap - got;
        int n = wolfSSL_read(c->ssl, out + got, room > INT_MAX ? INT_MAX : (int)room);
        int e;

        if (n > 0) {
            got += (size_t)n;
            continue;
        }
        e = wolfSSL_get_error(c->ssl, n);
        if (e == WOLFSSL_ERROR_WANT_READ || e == WOLFSSL_ERROR_WANT_WRITE)
            break;
        if (e == WOLFSSL_ERROR_ZERO_RETURN) {
            c->state = TERN_TLS_PEER_CLOSED; /* close_notify */
            break;
        }
        fail(c, e);
    }
    if (c->view_len > 0 && (c->state == TERN_TLS_HANDSHAKING || c->state == TERN_TLS_ESTABLISHED) &&
        !tls_queue_append(&c->in, c->view, c->view_len)) {
        tls_conn_set_failure(c, TERN_TLS_FAIL_OUT_OF_MEMORY, 0);
        c->state = TERN_TLS_FAILED;
    }
    c->view = NULL;
    c->view_len = 0;
done:
    *out_len = got;
    return c->state;
}

bool tern_tls_has_input(const tern_tls_conn *c)
{
    size_t size;

    if (c->state != TERN_TLS_HANDSHAKING && c->state != TERN_TLS_ESTABLISHED)
        return false;
    if (c->ssl != NULL)
        return c->in.len > 0 || wolfSSL_has_pending(c->ssl);
    if (c->in.len == 0) /* in.buf may be NULL: even NULL + 0 is undefined */
        return c->plain.len > 0;
    size = tls_rec_size(c->in.buf + c->in.off, c->in.len);
    /* A bad header behind plaintext the last read had no room for was not
     * checked yet: reading on fails the connection, a state change. */
    return c->plain.len > 0 ||
           (size > 0 && (size <= c->in.len || header_check(c->in.buf + c->in.off) != HEADER_OK));
}

bool tern_tls_write(tern_tls_conn *c, const uint8_t *data, size_t len)
{
    size_t done = 0;

    if (c->state != TERN_TLS_ESTABLISHED)
        return false;
    while (c->ssl == NULL && done < len) {
        size_t n = len - done < TLS_REC_PLAIN_MAX ? len - done : TLS_REC_PLAIN_MAX;

        if (!rec_send(c, TLS_CT_APPLICATION_DATA, data + done, n))
            return false;
        done += n;
    }
    while (done < len) {
        size_t rest = len - done;
        int n = wolfSSL_write(c->ssl, data + done, rest > INT_MAX ? INT_MAX : (int)rest);

        if (n <= 0) {
            fail(c, wolfSSL_get_error(c->ssl, n));
            return false;
        }
        done += (size_t)n;
    }
    return true;
}

const uint8_t *tern_tls_out_peek(const tern_tls_conn *c, size_t *len)
{
    *len = c->out.len;
    return c->out.len > 0 ? c->out.buf + c->out.off : NULL;
}

void tern_tls_out_consume(tern_tls_conn *c, size_t n)
{
    tls_queue_consume(&c->out, n);
}

size_t tern_tls_out_pending(const tern_tls_conn *c)
{
    return c->out.len;
}

void tern_tls_shutdown(tern_tls_conn *c)
{
    /* Queues close_notify; the answer (not done: the peer's close_notify
     * is not awaited) does not matter, the transport closes next. */
    static const uint8_t close_notify[2] = {1, 0};

    if (c->state != TERN_TLS_ESTABLISHED && c->state != TERN_TLS_PEER_CLOSED)
        return;
    if (c->ssl != NULL)
        (void)wolfSSL_shutdown(c->ssl);
    else if (!c->close_sent) {
        c->close_sent = true;
        (void)rec_send(c, TLS_CT_ALERT, close_notify, sizeof close_notify);
    }
}

bool tern_tls_key_update(tern_tls_conn *c, bool ask_peer)
{
    const uint8_t msg[5] = {24, 0, 0, 1, ask_peer ? 1 : 0}; /* KeyUpdate */
    int rc;

    if (c->state != TERN_TLS_ESTABLISHED)
        return false;
    if (c->ssl != NULL) {
        if (wolfSSL_version(c->ssl) != TLS1_3_VERSION)
            return false;
        rc = wolfSSL_update_keys(c->ssl);
        if (rc != WOLFSSL_SUCCESS && wolfSSL_get_error(c->ssl, rc) != WOLFSSL_ERROR_WANT_WRITE) {
            fail(c, wolfSSL_get_error(c->ssl, rc));
            return false;
        }
        return true;
    }
    if (!rec_send(c, TLS_CT_HANDSHAKE, msg, sizeof msg))
        return false;
    if (!rec_update(c, true)) {
        rec_failed(c, TERN_TLS_FAIL_PROTOCOL, ENCRYPT_ERROR);
        return false;
    }
    return true;
}

/* ---- what the handshake decided ------------------------------------------ */

tern_tls_state tern_tls_state_of(const tern_tls_conn *c)
{
    return (tern_tls_state)c->state;
}

const char *tern_tls_identity(const tern_tls_conn *c)
{
    return c->state == TERN_TLS_HANDSHAKING ? NULL : c->identity;
}

bool tern_tls_is_operator(const tern_tls_conn *c)
{
    return c->state != TERN_TLS_HANDSHAKING && c->identity != NULL && c->is_operator;
}

const char *tern_tls_version_name(const tern_tls_conn *c)
{
    return c->ssl != NULL ? wolfSSL_get_version(c->ssl) : "TLSv1.3";
}

const char *tern_tls_cipher_name(const tern_tls_conn *c)
{
    const char *name;

    if (c->ssl == NULL)
        return tls_rec_suite_name((tls_rec_suite)c->suite);
    name = wolfSSL_get_cipher_name(c->ssl);

    return name != NULL ? name : "none";
}

tern_tls_failure tern_tls_failure_of(const tern_tls_conn *c)
{
    return (tern_tls_failure)c->failure;
}

int tern_tls_error_code(const tern_tls_conn *c)
{
    return c->error;
}

int tern_tls_peer_alert(const tern_tls_conn *c)
{
    WOLFSSL_ALERT_HISTORY h;

    if (c->ssl != NULL && wolfSSL_get_alert_history(c->ssl, &h) == WOLFSSL_SUCCESS &&
        h.last_rx.level == 2)
        return h.last_rx.code; /* level 2 = fatal */
    return c->peer_alert;
}
