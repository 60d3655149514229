/*
 * bridge.h - one bridge (SPEC C7, ADR-060): tern as an MQTT client of a
 * remote broker, relaying topics both ways. Portable and I/O-free: the
 * platform moves bytes and says when transports open and fail; this module
 * is the two client state machines and the relay between them.
 *
 * A bridge has two links, both MQTT client connections made by it:
 *
 *   remote  to the other broker, as MQTT 3.1.1 (with try_private the
 *           protocol level byte has 0x80 set, Mosquitto's bridge convention,
 *           so the remote neither echoes our publishes nor clears their
 *           retain) or as MQTT 5.0 (Clean Start 0, Session Expiry "never";
 *           the subscriptions have No Local and Retain As Published set,
 *           which is 5.0's own loop prevention);
 *   local   to this broker, over an in-process transport the platform gives
 *           it (a socketpair on Linux), as MQTT 5.0 with a persistent session
 *           (Clean Start 0, Session Expiry "never") whose subscriptions have
 *           No Local and Retain As Published set.
 *
 * Messages for the remote are the local session's deliveries: while the
 * remote is away the local link is closed, so they queue in that session,
 * durably when the broker has a store, with the ack-after-commit contract
 * of every client (ADR-019). A delivery is acknowledged to the local broker
 * only when the remote acknowledged it, so nothing the remote has not taken
 * leaves the queue. The packet identifiers are relayed unchanged: those of
 * the local broker's deliveries become ours toward the remote, those of the
 * remote's deliveries ours toward the local broker, so the relay keeps no
 * table and a reconnect's retransmissions (DUP publishes, PUBRELs) flow
 * through as they are.
 *
 * At 5.0 toward the remote the relay also carries each message's
 * properties (user properties, content type, message expiry left, payload
 * format, response topic, correlation data) and the reason codes of the
 * acknowledgements both ways, and honours the remote's CONNACK: its
 * Receive Maximum and Maximum Packet Size become the local CONNECT's (so
 * the local broker's window and size check are the bridge's flow control,
 * with no per-message state here), its Maximum QoS lowers what is relayed
 * (a QoS 2 delivery sent at QoS 1 or 0 is completed toward the local
 * broker by the bridge, remembered in a bitmap of packet identifiers),
 * Retain Available 0 clears the retain flag, its Server Keep Alive
 * replaces ours. Topic aliases are not used (Topic Alias Maximum 0 both
 * ways) and a Server Reference (redirection) is ignored. A negative
 * PUBACK / PUBREC reason from the remote is relayed to the local broker,
 * which then ends that delivery: the message is dropped, not retried, and
 * counted (stats.rejected).
 *
 * The order of a connection (so that our one SUBSCRIBE per link never
 * shares an identifier with a relayed publish in flight):
 *
 *   DIAL_REMOTE -> REMOTE_CONNACK -> REMOTE_SUBACK -> DIAL_LOCAL ->
 *   LOCAL_CONNACK -> LOCAL_SUBACK -> UP
 *
 * Before the first of them the bridge primes its local session (DIAL_LOCAL
 * -> LOCAL_CONNACK -> LOCAL_SUBACK, then DIAL_REMOTE with the local link
 * to be closed by the platform), so that messages for the remote queue
 * from the start even when the remote is away then; deliveries during the
 * prime are left unacknowledged in the session.
 *
 * Packets from the remote for the local broker that arrive before UP are
 * held (not acknowledged) and relayed at UP; past BRIDGE_HOLD_MAX bytes the
 * bridge fails and reconnects. Any failure of either link ends both; the
 * next attempt comes after an exponential back-off with jitter.
 */
#ifndef TERN_BRIDGE_H
#define TERN_BRIDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes of remote packets held while the local link comes up. */
#define BRIDGE_HOLD_MAX (1024u * 1024u)
/* A remote that sends nothing (not even a PINGRESP) for this many keep
 * alive periods is gone. */
#define BRIDGE_KEEPALIVE_GRACE_NUM 3u
#define BRIDGE_KEEPALIVE_GRACE_DEN 2u
/* A link that has not reached UP within this long is given up. */
#define BRIDGE_CONNECT_TIMEOUT_MS 10000u

typedef enum bridge_dir {
    BRIDGE_IN = 1,   /* remote -> local */
    BRIDGE_OUT = 2,  /* local -> remote */
    BRIDGE_BOTH = 3,
} bridge_dir;

/* One topic mapping: PATTERN is a topic filter relative to both prefixes;
 * locally the filter is local_prefix + pattern, remotely remote_prefix +
 * pattern, and a topic crossing swaps one prefix for the other. */
#define BRIDGE_TOPIC_MAX 128u
typedef struct bridge_map {
    char pattern[BRIDGE_TOPIC_MAX];
    char local_prefix[BRIDGE_TOPIC_MAX];
    char remote_prefix[BRIDGE_TOPIC_MAX];
    uint8_t dir; /* bridge_dir */
    uint8_t qos; /* 0..2: the subscription's maximum QoS on the source side */
} bridge_map;

#define BRIDGE_MAPS_MAX 16u
#define BRIDGE_ID_MAX 128u

typedef struct bridge_settings {
    char client_id[BRIDGE_ID_MAX]; /* used toward both brokers */
    uint16_t keepalive_s;          /* toward the remote; > 0 */
    uint8_t protocol;              /* toward the remote: MQTT_LEVEL_311 (0 too) or
                                      MQTT_LEVEL_5 */
    bool try_private;              /* the 0x80 protocol level bit (3.1.1 only) */
    /* The local broker's Receive Maximum (limits.receive_maximum), sent to
     * a 5.0 remote so it never has more in flight toward us than the local
     * broker takes from the bridge (0: not sent, 65535). */
    uint16_t receive_max;
    uint32_t backoff_min_ms, backoff_max_ms;
    /* Largest packet taken from either broker (0: the protocol's
     * maximum); a larger one fails the bridge before it is buffered. The
     * daemon passes limits.max_packet_size. */
    uint32_t max_packet;
    bridge_map maps[BRIDGE_MAPS_MAX];
    size_t nmaps;
} bridge_settings;

typedef enum bridge_state {
    BRIDGE_WAIT = 0,       /* back-off: nothing open, next try at retry_at */
    BRIDGE_DIAL_REMOTE,    /* the platform opens the remote transport */
    BRIDGE_REMOTE_CONNACK, /* CONNECT sent */
    BRIDGE_REMOTE_SUBACK,  /* SUBSCRIBE sent */
    BRIDGE_DIAL_LOCAL,     /* the platform opens the local link */
    BRIDGE_LOCAL_CONNACK,
    BRIDGE_LOCAL_SUBACK,
    BRIDGE_UP,
} bridge_state;

typedef enum bridge_side {
    BRIDGE_REMOTE = 0,
    BRIDGE_LOCAL = 1,
} bridge_side;

typedef struct bridge_stats {
    uint64_t connects;   /* times the bridge reached UP */
    uint64_t failures;   /* times it went down (or failed to come up) */
    uint64_t sent;       /* publishes relayed to the remote */
    uint64_t received;   /* publishes relayed from the remote */
    uint64_t refused;    /* publishes the local broker refused (reason >= 0x80) */
    uint64_t rejected;   /* publishes the remote refused (5.0: PUBACK / PUBREC reason
                            >= 0x80): dropped, not retried */
    uint64_t dropped;    /* publishes not sent: above the remote's Maximum Packet Size */
} bridge_stats;

typedef struct bridge bridge;

/* NULL when out of memory. The settings are copied. */
bridge *broker_bridge_create(const bridge_settings *s);
void broker_bridge_destroy(bridge *b);

bridge_state broker_bridge_get_state(const bridge *b);
const bridge_stats *broker_bridge_get_stats(const bridge *b);
/* Why the bridge last failed ("" before any failure). */
const char *broker_bridge_last_error(const bridge *b);

/* The platform opened the transport of the state's DIAL_* side (TLS, if
 * any, done): the CONNECT is queued. */
void broker_bridge_opened(bridge *b, bridge_side side, uint64_t now);

/* Bytes that arrived on a side. False when the bridge failed (the platform
 * then closes both transports; the bridge is already in WAIT). After the
 * prime the state is DIAL_REMOTE with the local link still open: the
 * platform closes it (the rest of its input is dropped). */
bool broker_bridge_input(bridge *b, bridge_side side, const uint8_t *data, size_t len,
                         uint64_t now);

/* Output for a side: *len bytes at the returned pointer (NULL, 0: none).
 * The platform writes what it can and reports it with broker_bridge_output_taken. */
const uint8_t *broker_bridge_output(const bridge *b, bridge_side side, size_t *len);
void broker_bridge_output_taken(bridge *b, bridge_side side, size_t n);

/* A transport failed or closed, or the platform could not open one: both
 * links are over (the platform closes the other). random: 32 random bits
 * for the back-off's jitter. */
void broker_bridge_fail(bridge *b, const char *why, uint32_t random, uint64_t now);

/* Timers: WAIT's end (-> DIAL_REMOTE), the remote's keep alive, the
 * connect timeout. False when the bridge failed (as for broker_bridge_input). */
bool broker_bridge_tick(bridge *b, uint32_t random, uint64_t now);
/* When broker_bridge_tick next has work (UINT64_MAX: none). */
uint64_t broker_bridge_deadline(const bridge *b);

/* The back-off before attempt number `failures` (1 = after the first
 * failure): min * 2^(failures-1), capped at max, then a uniformly random
 * point in its upper half ("equal jitter"). Exposed for the unit tests. */
uint64_t broker_bridge_backoff_ms(uint32_t min_ms, uint32_t max_ms, uint32_t failures,
                                  uint32_t random);

/* Topic crossing, exposed for the unit tests: the other side's name of
 * topic t[0..n) by the first mapping of direction dir whose source filter
 * matches it, written NUL-terminated to out[0..cap); its length, or 0 when
 * no mapping matches or the result does not fit. */
size_t broker_bridge_map_topic(const bridge_settings *s, bridge_dir dir, const uint8_t *t, size_t n,
                        char *out, size_t cap);

#endif
