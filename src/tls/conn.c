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
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "tls/internal.h"

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
    c->view_len -= n;
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

static tern_tls_conn *conn_new(WOLFSSL_CTX *ctx)
{
    tern_tls_conn *c = calloc(1, sizeof *c);

    if (c == NULL)
        return NULL;
    c->ssl = wolfSSL_new(ctx);
    if (c->ssl == NULL) {
        free(c);
        return NULL;
    }
    wolfSSL_SetIOReadCtx(c->ssl, c);
    wolfSSL_SetIOWriteCtx(c->ssl, c);
    wolfSSL_SetCertCbCtx(c->ssl, c); /* the verify callback's store->userCtx */
    c->state = TERN_TLS_HANDSHAKING;
    c->plain_alert = -1;
    return c;
}

tern_tls_conn *tern_tls_server_conn(tern_tls_server *s)
{
    tern_tls_conn *c = conn_new(s->ctx);

    if (c != NULL) {
        c->server = s;
        s->refs++;
    }
    return c;
}

tern_tls_conn *tern_tls_client_conn(tern_tls_client *cl)
{
    tern_tls_conn *c = conn_new(cl->ctx);

    if (c != NULL) {
        c->client = cl;
        cl->refs++;
    }
    return c;
}

void tern_tls_conn_free(tern_tls_conn *c)
{
    if (c == NULL)
        return;
    wolfSSL_free(c->ssl);
    tls_queue_free(&c->in);
    tls_queue_free(&c->out);
    free(c->identity);
    tern_tls_server_release(c->server);
    tern_tls_client_release(c->client);
    free(c);
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
    c->view = in;
    c->view_len = in_len;
    if (c->state == TERN_TLS_HANDSHAKING) {
        handshake_step(c);
        if (c->state == TERN_TLS_FAILED && in != NULL) {
            c->plain_alert = (int16_t)plaintext_alert(in, in_len);
            if (c->plain_alert >= 0 &&
                (c->failure == TERN_TLS_FAIL_PROTOCOL || c->failure == TERN_TLS_FAIL_NOT_TLS))
                c->failure = TERN_TLS_FAIL_PEER_ALERT;
        }
    }
    /* The client's first records often follow its Finished in the same
     * segment: read them in the same call. */
    while (c->state == TERN_TLS_ESTABLISHED && got < out_cap) {
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
    if (c->state != TERN_TLS_HANDSHAKING && c->state != TERN_TLS_ESTABLISHED)
        return false;
    return c->in.len > 0 || wolfSSL_has_pending(c->ssl);
}

bool tern_tls_write(tern_tls_conn *c, const uint8_t *data, size_t len)
{
    size_t done = 0;

    if (c->state != TERN_TLS_ESTABLISHED)
        return false;
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
    if (c->state == TERN_TLS_ESTABLISHED || c->state == TERN_TLS_PEER_CLOSED)
        (void)wolfSSL_shutdown(c->ssl);
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
    return wolfSSL_get_version(c->ssl);
}

const char *tern_tls_cipher_name(const tern_tls_conn *c)
{
    const char *name = wolfSSL_get_cipher_name(c->ssl);

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

    if (wolfSSL_get_alert_history(c->ssl, &h) == WOLFSSL_SUCCESS && h.last_rx.level == 2)
        return h.last_rx.code; /* level 2 = fatal */
    return c->plain_alert;
}
