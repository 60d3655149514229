/*
 * remote.c - the end of a TLS handshake, once for both places it can run:
 * the layer's TLS half (tls.c, with the adapter in this thread) and a
 * transport that runs sessions itself (conn_transport.runs_tls: the
 * daemon's I/O threads, ADR-065), which hands over only the outcome. So
 * the core meets a client, and the log lines and $SYS counters say the
 * same, wherever its handshake ran.
 */
#include "conn/internal.h"

bool conni_tls_introduce(conn_server *s, conn *c, const char *identity, bool is_operator,
                         const char *version, const char *cipher, uint64_t now)
{
    char peer[CONN_PEER_TEXT];
    broker_conn_info info;

    conni_timer_clear(s, c);
    conni_peer(s, c, peer);
    info.peer = peer;
    info.identity = identity;
    info.is_operator = is_operator;
    info.secure = true;
    c->bc = broker_open(s->b, c, &info, now);
    if (c->bc == NULL) {
        s->stats.refused++;
        conni_log(s, BROKER_LOG_DEBUG, "closing %s: refused by the core", peer);
        return conni_end(s, c, CONN_CLOSE_GRACEFUL, now);
    }
    s->stats.handshakes_ok++;
    conni_log(s, BROKER_LOG_INFO, "TLS client %s: identity %s%s (%s, %s)", peer,
              identity != NULL ? identity : "none (no certificate)",
              is_operator ? ", operator" : "", version, cipher);
    return true;
}

void conni_tls_failure(conn_server *s, conn *c, bool handshaking, const char *why, uint64_t now)
{
    char peer[CONN_PEER_TEXT];

    if (handshaking)
        s->stats.handshakes_failed++;
    if (!conni_log_admit(s, handshaking ? CONN_LOGK_TLS_FAILED : CONN_LOGK_TLS_ERROR,
                         BROKER_LOG_INFO, now))
        return;
    conni_peer(s, c, peer);
    if (handshaking)
        conni_log(s, BROKER_LOG_INFO, "TLS handshake with %s failed: %s", peer, why);
    else
        conni_log(s, BROKER_LOG_INFO, "TLS error, closing %s: %s", peer, why);
}

void conn_tls_abandoned(conn_server *s, conn *c, uint64_t now)
{
    char peer[CONN_PEER_TEXT];

    if (!c->tls_remote || c->bc != NULL)
        tern_panic(__FILE__, __LINE__, "conn_tls_abandoned: not a handshake of the transport's");
    s->stats.handshakes_abandoned++;
    if (s->log_level >= BROKER_LOG_DEBUG) {
        conni_peer(s, c, peer);
        conni_log(s, BROKER_LOG_DEBUG, "%s gave up during the TLS handshake (on an I/O "
                  "thread); not answered", peer);
    }
    (void)conni_end(s, c, CONN_CLOSE_ABORT, now);
}

bool conn_tls_established(conn_server *s, conn *c, const char *identity, bool is_operator,
                          const char *version, const char *cipher, uint64_t now)
{
    if (!c->tls_remote || c->bc != NULL)
        tern_panic(__FILE__, __LINE__, "conn_tls_established: not a handshake of the transport's");
    /* Its ready-list and interest state carry over: input now flows. */
    return conni_tls_introduce(s, c, identity, is_operator, version, cipher, now);
}

void conn_tls_failed(conn_server *s, conn *c, bool handshaking, const char *why, uint64_t now)
{
    conni_tls_failure(s, c, handshaking, why, now);
    (void)conni_end(s, c, CONN_CLOSE_GRACEFUL, now);
}
