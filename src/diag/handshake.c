/*
 * handshake.c - the handshake measurement (handshake.h). Each round makes
 * a server connection from one server context and a client connection from
 * one client context, then passes the bytes each side writes to the other
 * until both are established. The server's time is the sum of its own
 * calls: making the connection, reading the client's flights (where wolfSSL
 * does all of the server's handshake work) and taking its output; freeing
 * the connection afterwards is not counted (a broker does that when the
 * client leaves). Certificates come from handshake_pki.c.
 */
#include "diag/handshake.h"

#include "diag/crypto_stats.h"
#include "diag/handshake_pki.h"
#include "tls/tls.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rounds of flights before a handshake counts as stuck (a full TLS 1.3
 * handshake needs 2 client flights). */
#define HS_MAX_ROUNDS 8

typedef struct hs_ctx {
    diag_pki pki;
    tern_tls_server *server;
    tern_tls_client *client;
    uint8_t plain[256]; /* nothing is sent in the handshake: just room */
} hs_ctx;

static tern_tls_bytes bytes_of(const diag_pem *p)
{
    tern_tls_bytes b = {p->text, p->len};
    return b;
}

static int contexts(hs_ctx *h, const char **why)
{
    tern_tls_server_config s;
    tern_tls_client_config c;
    char err[TERN_TLS_ERR_SIZE];

    memset(&s, 0, sizeof s);
    s.cert_chain = bytes_of(&h->pki.server_cert);
    s.key = bytes_of(&h->pki.server_key);
    s.client_ca = bytes_of(&h->pki.ca_cert);
    s.min_version = TERN_TLS_1_3;
    s.require_client_cert = true;
    s.identity = TERN_TLS_IDENTITY_CN;
    h->server = tern_tls_server_create(&s, err, sizeof err);
    if (h->server == NULL) {
        *why = "the TLS adapter refused the server context";
        return -1;
    }
    memset(&c, 0, sizeof c);
    c.ca = bytes_of(&h->pki.ca_cert);
    c.cert_chain = bytes_of(&h->pki.client_cert);
    c.key = bytes_of(&h->pki.client_key);
    c.min_version = TERN_TLS_1_3;
    c.max_version = TERN_TLS_1_3;
    h->client = tern_tls_client_create(&c, err, sizeof err);
    if (h->client == NULL) {
        *why = "the TLS adapter refused the client context";
        return -1;
    }
    return 0;
}

/* Hand what the client wrote to the server (all server calls but the
 * client's peek and consume, which are a few loads): the server's state. */
static tern_tls_state deliver(hs_ctx *h, tern_tls_conn *from, tern_tls_conn *to)
{
    size_t len = 0, plain_len = 0;
    const uint8_t *out = tern_tls_out_peek(from, &len);
    tern_tls_state st = tern_tls_read(to, out, len, h->plain, sizeof h->plain, &plain_len);

    tern_tls_out_consume(from, len);
    return st;
}

/* One handshake: the server's ns in *server_ns; 0, or -1 with *why. */
static int one(hs_ctx *h, const struct diag_clock *clk, uint64_t *server_ns, diag_hs_result *r,
               const char **why)
{
    tern_tls_conn *sc, *cc = NULL;
    tern_tls_state ss = TERN_TLS_HANDSHAKING, cs;
    size_t plain_len = 0;
    uint64_t t0, spent;
    int rc = -1;

    t0 = clk->now_ns(clk->ctx);
    sc = tern_tls_server_conn(h->server);
    spent = clk->now_ns(clk->ctx) - t0;
    if (sc == NULL || (cc = tern_tls_client_conn(h->client)) == NULL) {
        *why = "out of memory";
        goto done;
    }
    cs = tern_tls_read(cc, NULL, 0, h->plain, sizeof h->plain, &plain_len); /* ClientHello */
    for (int round = 0; round < HS_MAX_ROUNDS; round++) {
        if (tern_tls_out_pending(cc) > 0) {
            t0 = clk->now_ns(clk->ctx);
            ss = deliver(h, cc, sc);
            spent += clk->now_ns(clk->ctx) - t0;
        }
        if (tern_tls_out_pending(sc) > 0) {
            /* Taking the server's output is a server call: timed; the
             * client reading it is not. */
            size_t len = 0;
            const uint8_t *out;

            t0 = clk->now_ns(clk->ctx);
            out = tern_tls_out_peek(sc, &len);
            spent += clk->now_ns(clk->ctx) - t0;
            cs = tern_tls_read(cc, out, len, h->plain, sizeof h->plain, &plain_len);
            t0 = clk->now_ns(clk->ctx);
            tern_tls_out_consume(sc, len);
            spent += clk->now_ns(clk->ctx) - t0;
        }
        if (ss == TERN_TLS_FAILED || cs == TERN_TLS_FAILED) {
            *why = ss == TERN_TLS_FAILED ? tern_tls_failure_text(tern_tls_failure_of(sc))
                                         : tern_tls_failure_text(tern_tls_failure_of(cc));
            goto done;
        }
        if (ss == TERN_TLS_ESTABLISHED && cs == TERN_TLS_ESTABLISHED &&
            tern_tls_out_pending(cc) == 0 && tern_tls_out_pending(sc) == 0)
            break;
    }
    if (ss != TERN_TLS_ESTABLISHED || cs != TERN_TLS_ESTABLISHED) {
        *why = "the handshake did not complete";
        goto done;
    }
    if (tern_tls_identity(sc) == NULL || strcmp(tern_tls_identity(sc), DIAG_PKI_CLIENT_CN) != 0) {
        *why = "the server did not see the client's identity";
        goto done;
    }
    if (r->cipher[0] == '\0') {
        snprintf(r->cipher, sizeof r->cipher, "%s", tern_tls_cipher_name(sc));
        snprintf(r->version, sizeof r->version, "%s", tern_tls_version_name(sc));
    }
    *server_ns = spent;
    rc = 0;
done:
    if (cc != NULL)
        tern_tls_conn_free(cc);
    if (sc != NULL)
        tern_tls_conn_free(sc);
    return rc;
}

void diag_handshake_measure(const struct diag_clock *clk, uint64_t deadline_ns,
                            diag_hs_result *r)
{
    hs_ctx *h = calloc(1, sizeof *h);
    uint64_t start = clk->now_ns(clk->ctx);
    const char *why = NULL;

    memset(r, 0, sizeof *r);
    if (h == NULL) {
        r->why = "out of memory";
        return;
    }
    if (diag_pki_make(&h->pki, &why) != 0 || contexts(h, &why) != 0)
        goto done;
    do {
        uint64_t ns;

        if (one(h, clk, &ns, r, &why) != 0)
            break;
        r->server_ns[r->count++] = ns;
        r->total_ns += ns;
    } while (r->count < DIAG_HS_MAX && clk->now_ns(clk->ctx) < deadline_ns);
done:
    if (r->count > 0) {
        diag_sort_u64(r->server_ns, r->count);
        r->median_ns = diag_rank_u64(r->server_ns, r->count, 50);
        r->p90_ns = diag_rank_u64(r->server_ns, r->count, 90);
    }
    /* A failure after some handshakes completed is said too. */
    r->why = why != NULL ? why : r->count == 0 ? "no handshake completed" : NULL;
    if (h->client != NULL)
        tern_tls_client_release(h->client);
    if (h->server != NULL)
        tern_tls_server_release(h->server);
    diag_pki_wipe(&h->pki);
    free(h);
    r->wall_ns = clk->now_ns(clk->ctx) - start;
}
