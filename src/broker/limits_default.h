/*
 * limits_default.h - the default of every tunable limit of the broker, each
 * defined once (the model is lwIP's opt.h). The core applies them to a
 * broker_limits field left at 0 (broker_create); the configuration parser
 * (src/config) starts from them, so a key left out of the file means the
 * same as in the core. docs/CONFIG.md states the same values for operators.
 *
 * Each may be overridden at build time (-DTERN_DEFAULT_MAX_INFLIGHT=64):
 * a build for a small machine can lower them all in one place. Values are
 * in the unit of the configuration file (seconds, bytes, counts); the core
 * converts to milliseconds where it counts in them.
 */
#ifndef TERN_BROKER_LIMITS_DEFAULT_H
#define TERN_BROKER_LIMITS_DEFAULT_H

#include "mqtt/mqtt.h"

#include <stdint.h>

/* Connections open at once; more are accepted and closed at once. High
 * enough not to be what limits a large server; the daemon warns at start
 * when the process's open-file limit allows fewer. */
#ifndef TERN_DEFAULT_MAX_CONNECTIONS
#define TERN_DEFAULT_MAX_CONNECTIONS 100000u
#endif

/* Bytes of one inbound packet, fixed header included (1 MiB). A PUBLISH is
 * buffered whole before it is handled, so this is what one connection can
 * make the broker hold for a packet it has not finished sending: with the
 * protocol's maximum (256 MiB), four clients each sending 200 MB of a
 * declared 256 MB packet held 1 GB. 1 MiB is EMQX's default
 * (mqtt.max_packet_size), above the payload limits of the large hosted
 * MQTT services (AWS IoT Core 128 KB, Azure IoT Hub 256 KB) and what the
 * benchmarks configure for Mosquitto and tern alike (PERFORMANCE.md); a
 * larger packet closes the connection (docs/CONFIG.md). It must fit
 * max_queued_bytes, so that every message the broker accepts can be
 * queued for a QoS 1/2 subscriber: 16 of the largest fit one queue. */
#ifndef TERN_DEFAULT_MAX_PACKET_SIZE
#define TERN_DEFAULT_MAX_PACKET_SIZE (1u << 20)
#endif

/* Outbound QoS 1/2 messages sent to one session and not yet acknowledged;
 * more wait in its queue. A subscriber receives at most this many per
 * round trip: measured through a delaying proxy (PERFORMANCE.md, "QoS 1
 * window at the defaults"), one subscriber gets window / RTT messages/s
 * until the broker is the limit, so 32 capped a 50 ms link at 640/s and
 * a local QoS 1 flood at a fraction of the broker's rate; 1024 gives
 * 20,000/s at 50 ms and the full local rate. The payload in flight is
 * bounded by max_queued_bytes as well (deliver.c), so a larger window
 * does not let one session hold max_inflight large messages, and an idle
 * session holds no queue at all (session.c). At most 65535: packet ids
 * are 16 bits. */
#ifndef TERN_DEFAULT_MAX_INFLIGHT
#define TERN_DEFAULT_MAX_INFLIGHT 1024u
#endif

/* QoS 1/2 messages waiting for one session (offline, or its inflight
 * window full); beyond it new ones are dropped and counted. Bounds the
 * memory an absent persistent client can make the broker hold. */
#ifndef TERN_DEFAULT_MAX_QUEUED
#define TERN_DEFAULT_MAX_QUEUED 1000u
#endif

/* Payload bytes waiting for one session, the same bound in bytes (16 MiB),
 * so a thousand large messages cannot hold gigabytes. */
#ifndef TERN_DEFAULT_MAX_QUEUED_BYTES
#define TERN_DEFAULT_MAX_QUEUED_BYTES (16u << 20)
#endif

/* Bytes pending in one connection's output buffer (1 MiB); QoS 0 messages
 * beyond it are dropped (counted), and input from a client that does not
 * read what it is sent pauses at twice this. */
#ifndef TERN_DEFAULT_MAX_OUT_BYTES
#define TERN_DEFAULT_MAX_OUT_BYTES (1u << 20)
#endif

/* Inbound QoS 2 packet ids awaiting PUBREL per session: each is remembered
 * until released, so a client cannot make the broker remember unbounded
 * ids. */
#ifndef TERN_DEFAULT_MAX_INBOUND_QOS2
#define TERN_DEFAULT_MAX_INBOUND_QOS2 1024u
#endif

/* Seconds from a connection's open to its CONNECT before it is closed, so
 * idle sockets cannot pile up. */
#ifndef TERN_DEFAULT_CONNECT_TIMEOUT_S
#define TERN_DEFAULT_CONNECT_TIMEOUT_S 10u
#endif

/* Seconds between two refreshes of the $SYS topics (Mosquitto's default). */
#ifndef TERN_DEFAULT_SYS_INTERVAL_S
#define TERN_DEFAULT_SYS_INTERVAL_S 10u
#endif

/* Retained messages kept; at the limit a retained message on a new topic is
 * delivered but not kept. */
#ifndef TERN_DEFAULT_MAX_RETAINED
#define TERN_DEFAULT_MAX_RETAINED 100000u
#endif

/* Topic and payload bytes of all retained messages together (256 MiB). */
#ifndef TERN_DEFAULT_MAX_RETAINED_BYTES
#define TERN_DEFAULT_MAX_RETAINED_BYTES (256u << 20)
#endif

/* Packets handled from one connection per broker_input call before the
 * others are served, so one busy client cannot starve the rest. */
#ifndef TERN_DEFAULT_WORK_BUDGET
#define TERN_DEFAULT_WORK_BUDGET 256u
#endif

/* Seconds a subscriber may hold its publishers (back-pressure, ADR-028)
 * while nothing is sent to it, before it releases them. */
#ifndef TERN_DEFAULT_PUBLISHER_HOLD_S
#define TERN_DEFAULT_PUBLISHER_HOLD_S 2u
#endif

/* Subscriptions one session may hold. A device has a handful; a backend
 * or a home-automation hub subscribing per device or entity has thousands;
 * beyond that a wildcard is the tool. Bounds what one client holds in the
 * topic tree (with the two limits below, see docs/CONFIG.md), and with the
 * per-session index the cost of a SUBSCRIBE no longer grows with it. */
#ifndef TERN_DEFAULT_MAX_SUBSCRIPTIONS
#define TERN_DEFAULT_MAX_SUBSCRIPTIONS 10000u
#endif

/* Levels of a topic name or filter. Every level of a filter or retained
 * topic is a node of the topic tree (about 110 bytes with its table slot,
 * measured), so levels multiply memory: 400 filters of 30,000 levels made
 * 1.3 GB. Real hierarchies have under a dozen levels (AWS IoT allows 8);
 * 64 leaves ample room and keeps one session's worst case near 70 MB
 * (max_subscriptions filters of 64 new levels each; 200 levels would allow
 * 215 MB). Mosquitto's fixed limit is 200: raise it to that for topics
 * only Mosquitto took. */
#ifndef TERN_DEFAULT_MAX_TOPIC_LEVELS
#define TERN_DEFAULT_MAX_TOPIC_LEVELS 64u
#endif

/* Bytes of a topic name or filter. MQTT allows 65,535; real topics are
 * tens of bytes (AWS IoT allows 256). 4 KiB leaves room for long device
 * ids and property-bag topics while bounding the filter text one session
 * holds to 40 MiB at max_subscriptions. */
#ifndef TERN_DEFAULT_MAX_TOPIC_LENGTH
#define TERN_DEFAULT_MAX_TOPIC_LENGTH 4096u
#endif

/* MQTT 5.0: the longest keep alive a 5.0 client may ask for (seconds);
 * the protocol's largest, so only a client asking for none (0) is given
 * one. An operator who wants dead connections found sooner lowers it. */
#ifndef TERN_DEFAULT_MAX_KEEPALIVE
#define TERN_DEFAULT_MAX_KEEPALIVE 65535u
#endif

/* MQTT 5.0: topic aliases a client may set towards the broker, per
 * connection. Mosquitto's default; each alias holds one topic name. */
#ifndef TERN_DEFAULT_MAX_TOPIC_ALIAS
#define TERN_DEFAULT_MAX_TOPIC_ALIAS 10u
#endif

/* MQTT 5.0: QoS 1/2 PUBLISHes a client may have unacknowledged towards
 * the broker. Acknowledgements wait for the store's commit (ADR-019), so
 * a client needs a window to keep its link busy; its acknowledgements are
 * held at most MAX_HELD_ACKS (persist-t.h) per connection. */
#ifndef TERN_DEFAULT_RECEIVE_MAXIMUM
#define TERN_DEFAULT_RECEIVE_MAXIMUM 1024u
#endif

/* Persistent sessions (clean_session = 0) of one TLS identity; a CONNECT
 * that would create one more is refused (CONNACK 0x05). Session expiry
 * defaults to never, so without it one certificate opened 10,000 sessions,
 * each allowed max_queued_bytes. A certificate names one device (one
 * session) or one service (a session per worker or instance): 100 leaves a
 * scaled-out service sharing a certificate ample room. Anonymous clients
 * have no identity to count under and are not limited (docs/CONFIG.md). */
#ifndef TERN_DEFAULT_MAX_SESSIONS_PER_IDENTITY
#define TERN_DEFAULT_MAX_SESSIONS_PER_IDENTITY 100u
#endif

/* Payload bytes queued across all sessions of one TLS identity (64 MiB),
 * beyond which a message is dropped for the session it would go to:
 * four sessions' worth of max_queued_bytes, so a few sessions of one
 * client can each fill their queue, while one certificate's sessions
 * together cannot hold more (filling 30 sessions of one certificate took
 * 548 MB; 100 full sessions would hold 1.6 GB). */
#ifndef TERN_DEFAULT_MAX_QUEUED_BYTES_PER_IDENTITY
#define TERN_DEFAULT_MAX_QUEUED_BYTES_PER_IDENTITY (64u << 20)
#endif

/* What the conversions and fields above rely on. */
_Static_assert(TERN_DEFAULT_MAX_INFLIGHT >= 1 && TERN_DEFAULT_MAX_INFLIGHT <= UINT16_MAX,
               "max_inflight: packet ids are 16 bits");
_Static_assert(TERN_DEFAULT_MAX_PACKET_SIZE >= 16 &&
                   TERN_DEFAULT_MAX_PACKET_SIZE <= MQTT_MAX_REMAINING + MQTT_MAX_FIXED_HEADER,
               "max_packet_size: 16 (the configuration's minimum) up to the protocol maximum");
_Static_assert(TERN_DEFAULT_MAX_PACKET_SIZE <= TERN_DEFAULT_MAX_QUEUED_BYTES,
               "max_packet_size: a message the broker accepts must fit a session's queue "
               "(max_queued_bytes), or it could never reach a QoS 1/2 subscriber");
_Static_assert(TERN_DEFAULT_CONNECT_TIMEOUT_S >= 1 &&
                   TERN_DEFAULT_CONNECT_TIMEOUT_S <= UINT32_MAX / 1000u,
               "connect_timeout: the core counts it in 32-bit milliseconds");
_Static_assert(TERN_DEFAULT_PUBLISHER_HOLD_S >= 1 &&
                   TERN_DEFAULT_PUBLISHER_HOLD_S < UINT32_MAX / 1000u,
               "publisher_hold: 32-bit milliseconds in the core, UINT32_MAX meaning never");
_Static_assert(TERN_DEFAULT_SYS_INTERVAL_S >= 1 && TERN_DEFAULT_SYS_INTERVAL_S < UINT32_MAX,
               "sys_interval: 0 and UINT32_MAX mean off");
_Static_assert(TERN_DEFAULT_MAX_TOPIC_LENGTH >= 1 && TERN_DEFAULT_MAX_TOPIC_LENGTH <= UINT16_MAX,
               "max_topic_length: an MQTT string holds at most 65535 bytes");
_Static_assert(TERN_DEFAULT_MAX_TOPIC_LEVELS >= 1 &&
                   TERN_DEFAULT_MAX_TOPIC_LEVELS <= UINT16_MAX / 2 + 1,
               "max_topic_levels: a 65535-byte topic has at most 32768 levels");
_Static_assert(TERN_DEFAULT_MAX_SUBSCRIPTIONS >= 1, "max_subscriptions: at least one");
_Static_assert(TERN_DEFAULT_MAX_SESSIONS_PER_IDENTITY >= 1,
               "max_sessions_per_identity: at least one");
_Static_assert(TERN_DEFAULT_MAX_QUEUED_BYTES_PER_IDENTITY >= TERN_DEFAULT_MAX_PACKET_SIZE,
               "max_queued_bytes_per_identity: a message the broker accepts must fit, or it "
               "could never reach a QoS 1/2 subscriber that has an identity");

#endif
