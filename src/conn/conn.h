/*
 * conn.h - the connection layer: everything about one client connection
 * that is neither a socket nor an lwIP pcb, once for both platforms.
 *
 * It owns, per connection: plain or TLS state, input the core has not
 * taken yet, the TLS handshake (its deadline, the per-turn budget of
 * handshake steps, the identity decision and its log line, failures and
 * their alerts), encrypt-on-drain output, the linger/close policy and the
 * "is this connection still alive" contract. Below it is a transport
 * (transport.h); above it the broker core (broker.h), which only ever
 * sees authenticated clients.
 *
 * The alive contract: every call taking a conn returns false when the
 * connection is gone, i.e. the transport's close() has run and the
 * memory holding c may have been freed. The caller must not touch c then.
 *
 * A platform's turn:
 *
 *     conn_turn_begin(s, now);           leftover input, delayed handshakes
 *     for each transport event:
 *         conn_readable / conn_writable / conn_hangup / conn_failed
 *     conn_turn_end(s, now);             core tick, all output written,
 *                                        deadlines expired
 *     sleep until an event or conn_next_deadline(s)
 *
 * Reading: a connection is read for at most CONN_READ_BUDGET bytes per
 * turn; input the core's work budget leaves is kept in the connection and
 * served first next turn (the connection waits on the ready list), so one
 * busy client cannot starve the others. While the core pauses a
 * connection's input nothing is read, and the transport's own buffers
 * (TCP's window) push back on the client.
 *
 * Writing: once per turn for each connection with output (the core's dirty
 * list). Plaintext goes from the core's buffer to the transport. On TLS,
 * once the adapter's previous records are all taken by the transport, the
 * core's output is encrypted in one go (bounded by CONN_TLS_OUT_HIGH and
 * the transport's room); while ciphertext is still waiting the core keeps
 * its output, so its back-pressure rules see a slow reader.
 *
 * Closing: when the core wants a connection closed it stops being read,
 * its output gets CONN_LINGER_MS to leave (then a TLS close_notify and a
 * graceful close), else it is aborted. When the peer finishes sending,
 * what it sent before still reaches the core, the answers are written
 * once, and the connection closes. Transport errors and handshake
 * failures close at once (after one try to send the TLS alert).
 */
#ifndef TERN_CONN_H
#define TERN_CONN_H

#include "conn/conn-t.h"
#include "conn/tunables.h"

/* The TLS half, in src/conn/tls.c (linked where the adapter is). */
extern const conn_tls_ops conn_tls;

/* NULL when out of memory or cfg is unusable (TLS context without
 * tls_ops). cfg->tls's reference passes to the server (released on
 * failure too). */
conn_server *conn_server_create(const conn_server_config *cfg);
/* Every connection must have been ended or dropped first. */
void conn_server_destroy(conn_server *s);
/* A new TLS context for handshakes that start from now on (reload);
 * running connections keep theirs. The caller's reference passes to the
 * server, which releases the one it held. */
void conn_server_set_tls(conn_server *s, tern_tls_server *tls);
void conn_server_get_stats(const conn_server *s, conn_stats *out);
/* The platform's admission counters (conn_stats.accept_holds,
 * syns_dropped), for the next $SYS refresh. */
void conn_server_set_admission(conn_server *s, uint64_t accept_holds, uint64_t syns_dropped);
/* The level of the lines the layer writes from now on (the operator
 * console's log-level). */
void conn_server_set_log_level(conn_server *s, broker_log_level level);

/*
 * A transport connection was accepted into c (zeroed by the platform,
 * embedded in its record). Plaintext: introduced to the core at once. TLS:
 * a session and a handshake deadline; the core meets the client once the
 * handshake decided who it is. False when refused (the reason is logged;
 * c owns nothing): the platform closes the transport itself.
 */
bool conn_open(conn_server *s, conn *c, bool tls, uint64_t now);

/* TLS handshakes worth starting now: 0 while handshakes already wait for
 * this turn's spent handshake steps (CPU, not the network, is short);
 * else limits.max_handshakes minus those running (UINT32_MAX without a
 * limit), or under CPU pressure in the last second the handshakes that
 * second completed (at least CONN_HANDSHAKE_MIN_RUNNING) minus those
 * running: what can finish before clients give up. A platform takes new TLS connections from its listener only
 * while this is above 0 and leaves the rest to the network stack (Linux's
 * listen backlog, the kernel's SYN admission), so a storm of new clients
 * is held off before it costs anything instead of being accepted and
 * closed. O(1). */
uint32_t conn_handshake_room(const conn_server *s);
/* The same without this turn's spent steps: the bound alone. For a
 * platform whose refusal lasts longer than a turn: a SYN dropped costs its
 * client a retransmission a second or more later, while the steps run out
 * in nearly every turn of a busy emulated CPU (two or three steps of its
 * 10 ms), so a SYN refused for them would leave the handshakes running to
 * drain with nothing admitted behind them, the CPU idle for the round
 * trip that brings the next ClientHello. */
uint32_t conn_handshake_slots(const conn_server *s);
/* conn_handshake_slots for a client at addr[0..n) (the transport's
 * peer_addr form), also bounded by limits.max_handshakes_per_address: a
 * platform that sees the address before it accepts (the kernel, at the
 * SYN) refuses there. */
uint32_t conn_handshake_room_from(const conn_server *s, const uint8_t *addr, size_t n);

/* Transport events. Each returns false when c is gone. */
/* Input (or the end of it) may be available. */
bool conn_readable(conn_server *s, conn *c, uint64_t now);
/* Room to write appeared. */
bool conn_writable(conn_server *s, conn *c, uint64_t now);
/* The peer is gone in both directions (a socket's hang-up or error):
 * input the transport still holds is read first when the layer can take
 * it now (the read then reports the end or the error), otherwise the
 * connection ends. */
bool conn_hangup(conn_server *s, conn *c, uint64_t now);
/* The transport failed (reset, error): end at once. Always "gone". */
void conn_failed(conn_server *s, conn *c, uint64_t now);

/* A TLS connection whose session the transport runs (runs_tls): its
 * handshake succeeded. The core meets the client (identity NULL: it sent
 * no certificate) and one log line names it, with the protocol version
 * and cipher suite. Alive contract. */
bool conn_tls_established(conn_server *s, conn *c, const char *identity, bool is_operator,
                          const char *version, const char *cipher, uint64_t now);
/* ... its session failed (handshaking: in the handshake), why in words
 * (tern_tls_describe_failure): counted, logged (rate-limited) and closed
 * gracefully, so the transport still sends the alert it holds. Always
 * "gone". */
void conn_tls_failed(conn_server *s, conn *c, bool handshaking, const char *why, uint64_t now);

/* ... its client closed right after the start of its handshake, which
 * was not answered (it gave up, maybe while waiting in the backlog):
 * counted in handshakes_abandoned and aborted. Always "gone". */
void conn_tls_abandoned(conn_server *s, conn *c, uint64_t now);

/* Shutdown only: free what c owns without telling the core (it is going
 * away and must not publish wills for a shutdown) or the transport. */
void conn_drop(conn_server *s, conn *c);

/* The turn. */
void conn_turn_begin(conn_server *s, uint64_t now);
void conn_turn_end(conn_server *s, uint64_t now);
/* When conn_turn_end next has work without a transport event: the core's
 * deadline, a handshake's or a linger's; 0 while connections wait on the
 * ready list (do not sleep); UINT64_MAX for none. */
uint64_t conn_next_deadline(const conn_server *s);

/* Write what c has for the transport now (shutdown's last flush). */
bool conn_flush(conn_server *s, conn *c, uint64_t now);
/* Bytes of c not yet taken by the transport (the core's and TLS's). */
size_t conn_out_pending(const conn_server *s, const conn *c);
/* The core's side of c, NULL while a TLS handshake runs. */
broker_conn *conn_core(const conn *c);

#endif
