/*
 * tunables.h - every tunable of the connection layer, defined once with
 * its reason (lwIP's opt.h pattern): a platform overrides one by defining
 * it on the compiler's command line before this header is read.
 *
 * Units are the same on every platform: bytes, milliseconds, and
 * "handshake steps" (one call into the TLS adapter with new bytes while a
 * handshake runs; each may cost a public-key operation, ~0.1-0.2 ms).
 */
#ifndef TERN_CONN_TUNABLES_H
#define TERN_CONN_TUNABLES_H

/* The shared read buffer, and the plaintext buffer beside it. Plaintext is
 * never longer than the records it came in, so one read's ciphertext
 * always decrypts into the plaintext buffer without leftovers. */
#ifndef CONN_READ_BUF_SIZE
#define CONN_READ_BUF_SIZE (64u * 1024u)
#endif

/* Bytes read from one connection per turn: a client that always has more
 * to send gets its share, then the others get theirs. */
#ifndef CONN_READ_BUDGET
#define CONN_READ_BUDGET (4u * CONN_READ_BUF_SIZE)
#endif

/* Input the core left over is kept by taking the read buffer itself (the
 * server allocates a fresh one) when at least this long, instead of
 * copying it: under a flood most of a 64 KiB read is left over when the
 * core's work budget ends. */
#ifndef CONN_ADOPT_MIN
#define CONN_ADOPT_MIN (8u * 1024u)
#endif

/* A connection the core wants closed has this long to take its last
 * output before it is reset. */
#ifndef CONN_LINGER_MS
#define CONN_LINGER_MS 5000u
#endif

/* Handshake steps per turn for all connections together: a flood of new
 * TLS clients takes at most ~5-10 ms of public-key work per turn and
 * established clients keep being served. Connections over the budget
 * wait on the ready list for the next turn. */
#ifndef CONN_HANDSHAKE_STEPS_PER_TURN
#define CONN_HANDSHAKE_STEPS_PER_TURN 48u
#endif

/* ... and their time, where the platform gives the layer a clock
 * (conn_server_config.clock_us): ~48 steps of a native core, but one or
 * two under an emulator, whose steps cost 50x more. */
#ifndef CONN_HANDSHAKE_US_PER_TURN
#define CONN_HANDSHAKE_US_PER_TURN 10000u
#endif

/* Under CPU pressure (a turn's handshake steps ran out during the last
 * window) handshakes running at once are bounded by what the last window
 * completed, scaled to CONN_HANDSHAKE_TARGET_MS, and never below
 * CONN_HANDSHAKE_MIN_RUNNING: more would only finish after their clients'
 * connect timeouts (a storm then completes almost nothing, every
 * handshake half done). Without pressure (handshakes wait for the
 * network, not for us) limits.max_handshakes alone bounds them.
 * A quarter of a second's worth: a client admitted behind a full second's
 * worth (the first value) often had only the second left that its
 * retransmitted SYN had cost it, and timed out just before its CONNACK,
 * so a fifth of the work went to clients already gone (the kernel's
 * storm at ten times its peak completed 69% of the peak counted over the
 * storm alone, 90-97% with 250 ms). */
#ifndef CONN_HANDSHAKE_WINDOW_MS
#define CONN_HANDSHAKE_WINDOW_MS 1000u
#endif
#ifndef CONN_HANDSHAKE_TARGET_MS
#define CONN_HANDSHAKE_TARGET_MS 250u
#endif
#ifndef CONN_HANDSHAKE_MIN_RUNNING
#define CONN_HANDSHAKE_MIN_RUNNING 32u
#endif

/* Ciphertext waiting in the TLS adapter for one connection before the
 * layer stops encrypting more of the core's output for it: the rest stays
 * in the core, whose bounds (max_out_bytes, QoS 0 dropped first) then see
 * a slow reader. */
#ifndef CONN_TLS_OUT_HIGH
#define CONN_TLS_OUT_HIGH (1024u * 1024u)
#endif

/* The QoS 0 bound in time (drain.h): QoS 0 messages may wait about
 * CONN_QOS0_WAIT_MS in a backed-up connection's output (at the rate it
 * was measured taking its output over the last CONN_DRAIN_WINDOW_MS),
 * never fewer than CONN_QOS0_OUT_MIN bytes (a reader briefly stalled
 * still gets a burst), never more than limits.max_out_bytes. */
#ifndef CONN_QOS0_WAIT_MS
#define CONN_QOS0_WAIT_MS 50u
#endif
#ifndef CONN_DRAIN_WINDOW_MS
#define CONN_DRAIN_WINDOW_MS 100u
#endif
#ifndef CONN_QOS0_OUT_MIN
#define CONN_QOS0_OUT_MIN (16u * 1024u)
#endif

/* Refusals of new connections (too many handshakes) are logged at most
 * once per this many milliseconds, with the count of the others: a flood
 * of them must not become a flood of log lines. */
#ifndef CONN_REFUSAL_LOG_MS
#define CONN_REFUSAL_LOG_MS 10000u
#endif

/* Defaults of limits.max_handshakes and limits.max_handshakes_per_address
 * (the platforms pass the configured values in conn_server_config).
 * 1024 handshakes are about half a second of one core's handshake work
 * (~0.5 ms each): more running at once would mostly time out in the queue,
 * and what unauthenticated connections may hold stays bounded whatever
 * limits.max_connections is. 128 from one address leaves room for a fleet
 * behind one NAT reconnecting at once while a single host cannot take the
 * whole budget. */
#ifndef CONN_DEFAULT_MAX_HANDSHAKES
#define CONN_DEFAULT_MAX_HANDSHAKES 1024u
#endif
#ifndef CONN_DEFAULT_MAX_HANDSHAKES_PER_ADDRESS
#define CONN_DEFAULT_MAX_HANDSHAKES_PER_ADDRESS 128u
#endif

/* Default of limits.max_input_bytes: input buffered across all connections
 * (unfinished packets the core holds, input it has not taken yet). 64 MiB
 * takes a few large messages arriving at once while a crowd of clients
 * sending unfinished giant packets cannot take the machine's memory. It
 * must be at least limits.max_packet_size (config.c checks), or a packet of
 * the largest allowed size could never arrive. */
#ifndef CONN_DEFAULT_MAX_INPUT_BYTES
#define CONN_DEFAULT_MAX_INPUT_BYTES (64u * 1024u * 1024u)
#endif

/* How long a connection may wait for the input budget (not read, because
 * it holds the most while the budget is spent) before it is closed to
 * free what it holds: without this, connections that all hold unfinished
 * packets could wait for each other for ever. */
#ifndef CONN_INPUT_WAIT_MS
#define CONN_INPUT_WAIT_MS 10000u
#endif

/* Longest "address:port" text of a peer, for log lines. */
#ifndef CONN_PEER_TEXT
#define CONN_PEER_TEXT 64u
#endif

/* WebSocket (src/conn/ws.c). The opening request (its headers) may be at
 * most this long: browsers send a few hundred bytes to a broker; a buffer
 * of this size exists only while the request arrives. */
#ifndef CONN_WS_REQUEST_MAX
#define CONN_WS_REQUEST_MAX 4096u
#endif

/* Frames one WebSocket message may be split into: a client fragmenting a
 * large message into 4 KiB frames still fits a 16 MiB packet, while a
 * storm of tiny fragments is refused (close 1008). */
#ifndef CONN_WS_MAX_FRAGMENTS
#define CONN_WS_MAX_FRAGMENTS 4096u
#endif

/* Payload of one server data frame at most: the core's output is framed
 * as it leaves, a frame per contiguous piece up to this. */
#ifndef CONN_WS_FRAME_OUT_MAX
#define CONN_WS_FRAME_OUT_MAX (64u * 1024u)
#endif

/* Control frames and the opening answer wait here until sent: a pong and
 * a close (2 + 125 bytes each), or the 101/400 answer. */
#ifndef CONN_WS_CTRL_OUT
#define CONN_WS_CTRL_OUT 256u
#endif

#endif
