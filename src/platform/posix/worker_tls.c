/*
 * worker_tls.c - TLS sessions on the I/O thread that owns their socket
 * (ADR-065): the handshake with its certificate checks, record opening
 * and sealing, key updates, alerts and close_notify, so the core thread
 * sees plaintext and, once, the outcome of the handshake (TLS_UP with
 * the identity, or TLS_FAIL with why); it counts, logs and decides
 * (src/conn/remote.c), as for a handshake of its own.
 *
 * Budget: each thread runs at most CONN_HANDSHAKE_STEPS_PER_TURN
 * handshake steps, and CONN_HANDSHAKE_US_PER_TURN of their time, per
 * turn of its loop (the layer's rule, per thread), so established
 * clients on the thread keep their turns during a storm; the limits on
 * handshakes running (limits.max_handshakes, per address) and their
 * deadline stay the core thread's, which accepts.
 *
 * Output: the core thread's plaintext waits in the connection's queue
 * and is sealed only while fewer than CONN_TLS_OUT_HIGH bytes of records
 * wait for the socket (encrypt-on-drain), so a slow reader's output stays
 * plaintext, counted against the core thread's output credit; the credit
 * comes back as it is sealed.
 *
 * Input: decrypted bytes are posted within the input credit; records the
 * credit does not allow stay in the session until RESUME.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "conn/tunables.h"
#include "platform/posix/worker_internal.h"

static uint64_t now_us(void)
{
    struct timespec ts;

    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

bool tern_wtls_budget_spent(const tern_worker *wk)
{
    return wk->hs_steps == 0;
}

/* The session failed: its alert goes out (one try), and the core thread
 * hears why; it answers CLOSE. Nothing more is read. */
static void failed(tern_worker *wk, tern_wconn *w, bool handshaking)
{
    char why[1 + TERN_TLS_ERR_SIZE];

    why[0] = handshaking ? 1 : 0;
    tern_tls_describe_failure(w->tls, why + 1, sizeof why - 1);
    w->tls_failed = true;
    (void)tern_wtls_send(wk, w);
    tern_wk_post(wk, w, TERN_WM_TLS_FAIL, (const uint8_t *)why, 1 + strlen(why + 1) + 1);
}

bool tern_wtls_open(tern_worker *wk, tern_wconn *w)
{
    static const char why[] = "\001out of memory for TLS";

    w->tls = wk->tls != NULL ? tern_tls_server_conn(wk->tls) : NULL;
    if (w->tls != NULL)
        return true;
    w->tls_failed = true;
    tern_wk_post(wk, w, TERN_WM_TLS_FAIL, (const uint8_t *)why, sizeof why);
    return false;
}

/* The handshake is done: who the client is, for the core thread. */
static void established(tern_worker *wk, tern_wconn *w)
{
    const char *id = tern_tls_identity(w->tls), *version = tern_tls_version_name(w->tls);
    const char *cipher = tern_tls_cipher_name(w->tls);
    size_t id_len = id != NULL ? strlen(id) + 1 : 0, v_len = strlen(version) + 1;
    size_t c_len = strlen(cipher) + 1;
    uint8_t msg[1 + TERN_TLS_IDENTITY_MAX + 1 + 64 + 64];

    if (1 + id_len + v_len + c_len > sizeof msg) /* names of ours: cannot happen */
        tern_panic(__FILE__, __LINE__, "TLS names too long for a message");
    msg[0] = (uint8_t)((tern_tls_is_operator(w->tls) ? 1 : 0) | (id != NULL ? 2 : 0));
    memcpy(msg + 1, id != NULL ? id : "", id_len);
    memcpy(msg + 1 + id_len, version, v_len);
    memcpy(msg + 1 + id_len + v_len, cipher, c_len);
    w->tls_up = true;
    tern_wk_post(wk, w, TERN_WM_TLS_UP, msg, 1 + id_len + v_len + c_len);
}

void tern_wtls_input(tern_worker *wk, tern_wconn *w, const uint8_t *in, size_t n)
{
    for (;;) {
        bool handshaking = !w->tls_up;
        uint32_t used = atomic_load(&w->in_used);
        size_t cap = used < TERN_WORKER_IN_CREDIT ? TERN_WORKER_IN_CREDIT - used : 0, got = 0;
        uint64_t t0 = handshaking ? now_us() : 0;
        tern_tls_state st;

        if (cap > sizeof wk->plain)
            cap = sizeof wk->plain;
        if (cap == 0 && in == NULL) {
            /* Records wait for credit: RESUME comes when the core thread
             * takes some (flag first, then look again: no lost wake-up). */
            atomic_store(&w->io_waits, true);
            if (atomic_load(&w->in_used) >= TERN_WORKER_IN_CREDIT)
                break;
            continue;
        }
        st = tern_tls_read(w->tls, in, n, wk->plain, cap, &got);
        in = NULL;
        n = 0;
        if (handshaking) {
            if (wk->hs_steps > 0)
                wk->hs_steps--;
            wk->hs_us += now_us() - t0;
            if (wk->hs_us >= CONN_HANDSHAKE_US_PER_TURN)
                wk->hs_steps = 0; /* this turn's handshake time is spent */
        }
        if (st == TERN_TLS_FAILED) {
            failed(wk, w, handshaking);
            return;
        }
        if (st == TERN_TLS_ESTABLISHED && !w->tls_up)
            established(wk, w);
        if (got > 0) {
            (void)atomic_fetch_add(&w->in_used, (uint32_t)got);
            tern_wk_post(wk, w, TERN_WM_IN, wk->plain, got);
        }
        if (st == TERN_TLS_PEER_CLOSED && !w->eof_io) {
            /* close_notify (or the client left mid-handshake): the end of
             * input, after every byte before it. */
            w->eof_io = true;
            tern_wk_post(wk, w, TERN_WM_EOF, NULL, 0);
        }
        if (w->eof_io || !tern_tls_has_input(w->tls))
            break;
    }
    /* The server's flight, an answer of the session's own (key update). */
    (void)tern_wtls_send(wk, w);
}

/* Plaintext queued by the core thread into records, while fewer than
 * CONN_TLS_OUT_HIGH bytes of them wait. */
static bool seal(tern_worker *wk, tern_wconn *w)
{
    while (w->out_head != NULL) {
        tern_wmsg *m = w->out_head;
        size_t queued = tern_tls_out_pending(w->tls), n = m->len - m->off;

        if (queued >= CONN_TLS_OUT_HIGH)
            break;
        if (n > CONN_TLS_OUT_HIGH - queued)
            n = CONN_TLS_OUT_HIGH - queued;
        if (!tern_tls_write(w->tls, m->data + m->off, n)) {
            failed(wk, w, false);
            return false;
        }
        m->off += (uint32_t)n;
        tern_wk_sent(wk, w, n);
        if (m->off == m->len) {
            w->out_head = m->next;
            if (w->out_head == NULL)
                w->out_tail = NULL;
            free(m);
        }
    }
    if (w->tls_bye && w->out_head == NULL) {
        tern_tls_shutdown(w->tls); /* last: after everything the core sent */
        w->tls_bye = false;
    }
    return true;
}

bool tern_wtls_send(tern_worker *wk, tern_wconn *w)
{
    while (!w->failed) {
        const uint8_t *p;
        size_t len;
        ssize_t r;

        if (w->tls_up && !w->tls_failed && !seal(wk, w))
            return !w->failed;
        p = tern_tls_out_peek(w->tls, &len);
        if (len == 0)
            break;
        r = send(w->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            tern_wk_failed(wk, w);
            return false;
        }
        tern_tls_out_consume(w->tls, (size_t)r);
        if ((size_t)r < len)
            break; /* the socket is full: EPOLLOUT */
    }
    return !w->failed;
}

bool tern_wtls_pending(const tern_wconn *w)
{
    return tern_tls_out_pending(w->tls) > 0 ||
           (w->out_head != NULL && w->tls_up && !w->tls_failed);
}

void tern_wtls_goodbye(tern_worker *wk, tern_wconn *w)
{
    (void)wk;
    if (w->tls_up && !w->tls_failed)
        w->tls_bye = true; /* sealed after the queued output (seal) */
}

void tern_wtls_free(tern_wconn *w)
{
    tern_tls_conn_free(w->tls);
    w->tls = NULL;
}
