/*
 * ws.h - MQTT over WebSocket (RFC 6455), one more layer of the connection
 * layer: between the transport (or the TLS half, for wss) and the core.
 * A platform opens a connection from a WebSocket listener with
 * conn_open_ws instead of conn_open; everything after is the same calls.
 *
 * The core meets the client when the TCP (ws) or TLS (wss) connection is
 * made, as on the other listeners; the opening HTTP request comes first
 * and is bounded in size (CONN_WS_REQUEST_MAX) and in time by the core's
 * CONNECT deadline (limits.connect_timeout). A bad request gets a 400 with
 * its reason and the connection closes. After the 101, client frames are
 * unmasked into MQTT bytes for the core (packets may span frames, frames
 * may hold several packets), pings are answered, a close is answered and
 * closes, a violation closes with its code (wsframe.h); the core's output
 * leaves in binary frames.
 *
 * A WebSocket connection's state lives in a block of its own
 * (struct conn_ws, a few hundred bytes), allocated only for WebSocket
 * connections: struct conn carries one pointer.
 */
#ifndef TERN_CONN_WS_H
#define TERN_CONN_WS_H

#include "conn/conn.h"

/* conn_open for a connection from a WebSocket listener (ws, or wss with
 * tls). Refused (false, c owns nothing) when the server has no SHA-1
 * (conn_server_config.ws_sha1) or no memory. */
bool conn_open_ws(conn_server *s, conn *c, bool tls, uint64_t now);

/* SHA-1 from wolfCrypt (src/conn/ws_sha1.c, linked with the TLS adapter):
 * what a platform gives as conn_server_config.ws_sha1. */
bool conn_ws_sha1(const uint8_t *data, size_t n, uint8_t out[20]);

#endif
