/*
 * broker.h - the broker core: the whole public face of src/broker/.
 *
 * The core is portable and I/O-free. It never reads a clock, opens a socket,
 * touches a file or keeps global state: everything lives in a `broker` the
 * platform creates, and it is driven by events (a connection opened, bytes
 * arrived, the connection went away, time passed) and answers with actions
 * the platform pulls after each batch of events:
 *
 *   - bytes to send: every connection owns an output buffer inside the core;
 *     the platform writes as much as the transport takes and reports how much;
 *   - a connection to close: after its remaining output has been flushed.
 *
 * Typical platform loop turn:
 *
 *     for each readable connection:  broker_input(b, c, buf, n, now);
 *     broker_tick(b, now) when broker_next_deadline(b) has passed;
 *     while ((c = broker_next_dirty(b)) != NULL) {
 *         out = broker_out_peek(c, &len);  write up to len bytes;
 *         broker_out_consume(b, c, written);
 *         if (broker_out_pending(c) == 0 && broker_wants_close(c))
 *             close transport, broker_closed(b, c, now);
 *         else if (broker_out_pending(c) > 0) wait for writability;
 *     }
 *
 * Output produced by one event is batched with everything else produced in
 * the same turn, so the platform makes one write per connection per turn.
 *
 * Threading: a broker is used by one thread at a time.
 */
#ifndef TERN_BROKER_H
#define TERN_BROKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct broker broker;
typedef struct broker_conn broker_conn;

/* Allocator the core uses for everything it allocates, so a platform can
 * supply its own (kernel heap) and tests can fail the Nth allocation.
 * NULL members mean the C library's malloc/realloc/free. */
typedef struct broker_allocator {
    void *ctx;
    void *(*alloc)(void *ctx, size_t size);
    void *(*realloc)(void *ctx, void *p, size_t size);
    void (*free)(void *ctx, void *p);
} broker_allocator;

/* Log levels; the platform decides where lines go. */
typedef enum broker_log_level {
    BROKER_LOG_ERROR = 0,
    BROKER_LOG_WARN = 1,
    BROKER_LOG_INFO = 2,
    BROKER_LOG_DEBUG = 3,
} broker_log_level;

typedef void (*broker_log_fn)(void *ctx, broker_log_level level, const char *msg);

/* "error", "warn", "info", "debug" (the config's words), "log" otherwise:
 * for platforms that print the level beside a line. */
const char *broker_log_level_name(broker_log_level level);

/* Limits (SPEC C4). Zero in any field means "use the default": the
 * defaults are TERN_DEFAULT_* in limits_default.h, one table shared with
 * the configuration parser, where each says what it bounds and why. */
typedef struct broker_limits {
    uint32_t max_connections;      /* connections open at once */
    uint32_t max_packet_size;      /* inbound, whole packet; a larger one closes the
                                      connection. At most max_queued_bytes (lowered to it,
                                      with a warning, by broker_create) */
    uint32_t max_inflight;         /* outbound QoS 1/2 unacknowledged per session */
    uint32_t max_queued;           /* QoS 1/2 messages waiting per session (offline or window
                                      full) */
    uint32_t max_queued_bytes;     /* payload bytes waiting per session */
    uint32_t max_out_bytes;        /* bytes pending in one connection's output buffer; QoS 0
                                      messages beyond it are dropped (counted) */
    uint32_t max_inbound_qos2;     /* QoS 2 packet ids awaiting PUBREL per session */
    uint32_t connect_timeout_ms;   /* time allowed from open to CONNECT */
    uint32_t session_expiry_s;     /* persistent session kept after disconnect; 0 = forever */
    uint32_t sys_interval_s;       /* $SYS refresh period; UINT32_MAX = off */
    uint32_t max_retained;         /* retained messages kept */
    uint32_t max_retained_bytes;   /* their topic + payload bytes */
    uint32_t work_budget;          /* packets handled per broker_input call before it
                                      returns and asks to be called again */
    /* Back-pressure from slow subscribers to their publishers (flow.c): a
     * QoS 1/2 message that finds a live session with this many unsent
     * messages queued (or half of max_queued_bytes) holds the connection
     * that published it until the queue is down to half of that. Default
     * max_queued / 2. */
    uint32_t hold_queued;
    /* A session that sends nothing for this long while it holds publishers
     * releases them and holds no one until its queue drains (messages
     * beyond max_queued for it are then dropped and counted). UINT32_MAX =
     * never hold publishers. */
    uint32_t publisher_hold_ms;
    /* Subscriptions one session holds; a SUBSCRIBE filter beyond it (one
     * the session does not hold already) gets return code 0x80. */
    uint32_t max_subscriptions;
    /* Levels and bytes of a topic filter (SUBSCRIBE: return code 0x80) or
     * topic name (PUBLISH, will: the connection is closed, 3.1.1 having no
     * negative acknowledgement). */
    uint32_t max_topic_levels;
    uint32_t max_topic_length;
    /* Persistent sessions of one TLS identity: a CONNECT that would create
     * one more is refused with CONNACK 0x05 (not authorized). Resuming one
     * and clean sessions are never refused; restored ones count. Sessions
     * without an identity (anonymous) are not counted. */
    uint32_t max_sessions_per_identity;
    /* Payload bytes queued across all sessions of one TLS identity; a
     * message beyond it is dropped for that session (counted), as beyond
     * max_queued_bytes. */
    uint32_t max_queued_bytes_per_identity;
    /* MQTT 5.0. The longest keep alive a client may ask for, in seconds:
     * a 5.0 client asking more (or 0) is told this one in CONNACK's Server
     * Keep Alive; a 3.1.1 client keeps its own (it cannot be told). */
    uint32_t max_keepalive;
    /* Topic aliases a 5.0 client may set towards the broker (CONNACK's
     * Topic Alias Maximum; each holds a topic of at most max_topic_length
     * bytes). UINT32_MAX = none (the field's 0 means the default). */
    uint32_t max_topic_alias;
    /* QoS 1/2 PUBLISHes a 5.0 client may have unacknowledged towards the
     * broker (CONNACK's Receive Maximum); one more is a protocol error
     * (DISCONNECT 0x93). At most 65535. */
    uint32_t receive_maximum;
} broker_limits;

/* PBKDF2-HMAC-SHA512 of pw under salt, `iterations` rounds, into
 * out[0..out_len): the password file's hash (passwd.h), which the core
 * does not implement itself. False on failure. */
typedef bool (*broker_pbkdf2_fn)(const uint8_t *pw, size_t pw_len, const uint8_t *salt,
                                 size_t salt_len, uint32_t iterations, uint8_t *out,
                                 size_t out_len);

typedef struct broker_config {
    broker_limits limits;
    broker_allocator allocator;
    broker_log_fn log;             /* may be NULL */
    void *log_ctx;
    broker_log_level log_level;
    const char *version;           /* published in $SYS/broker/version; copied */
    bool allow_anonymous;          /* plaintext listeners: accept CONNECT without identity */
    /* Password checks (passwd.h, broker_set_passwd): the hash, and whether
     * a password may be checked when it came over a plaintext listener
     * (off: such a CONNECT is refused, the password unchecked). */
    broker_pbkdf2_fn pbkdf2;       /* NULL: every password check fails */
    bool allow_plaintext_passwords;
    bool sys_public;               /* everyone may read $SYS, not only operators */
    bool durable;                  /* produce store records and hold acknowledgements
                                      until they are committed: see journal.h */
    /* MQTT 5.0 switches, off = the feature is available (the default):
     * retained messages, and shared subscriptions ($share/GROUP/FILTER).
     * A disabled feature is announced in CONNACK and refused as 5.0
     * says (a retained PUBLISH: DISCONNECT 0x9A; a shared filter: SUBACK
     * 0x9E; 3.1.1 clients: closed / 0x80). */
    bool retain_disabled;
    bool shared_subs_disabled;
    /* Optional: all the heap the broker's process holds (the core plus the
     * platform's TLS sessions and buffers). When set, $SYS/broker/memory/used
     * reports it; $SYS/broker/memory/core always reports the core's own. */
    uint64_t (*memory_used)(void *ctx);
    void *memory_ctx;
    /* Key of the core's hash tables (topic levels, client ids): random
     * from the platform, so clients cannot aim their names at one bucket.
     * Zero (tests, the simulator) gives reproducible tables. */
    uint64_t hash_key[2];
} broker_config;

/* What the platform knows about a new transport connection. Strings are
 * copied; they need not outlive the call. */
typedef struct broker_conn_info {
    const char *peer;       /* "address:port" for logs, may be NULL */
    const char *identity;   /* verified TLS identity, NULL on plaintext */
    bool is_operator;       /* identity carries the operator role */
    bool secure;            /* the transport is encrypted (TLS): passwords may cross it */
} broker_conn_info;

/* Create a broker; NULL on allocation failure or invalid config. */
broker *broker_create(const broker_config *cfg, uint64_t now_ms);
/* Free everything, including connections the platform never closed. */
void broker_destroy(broker *b);
/*
 * The broker is about to stop (SIGTERM, a halt): every connection ends,
 * a level-5 client being sent DISCONNECT 0x8B (Server shutting down)
 * first; no wills are published. The connections become dirty with that
 * output and a close request: the platform writes what each socket takes
 * at once, then calls broker_destroy. Nothing else may be called before.
 */
void broker_shutdown(broker *b, uint64_t now_ms);

/*
 * A transport connection was accepted. `ctx` is the platform's handle, given
 * back by broker_conn_ctx(). Returns NULL when the connection must be refused
 * (maximum connections, or allocation failure): the platform closes it.
 */
broker_conn *broker_open(broker *b, void *ctx, const broker_conn_info *info, uint64_t now_ms);

/*
 * Bytes arrived on c. The core parses every whole packet in data (without
 * copying it) and keeps an incomplete tail itself, so the platform may reuse
 * its read buffer at once. Returns the number of bytes taken: less than len
 * only when the per-call work budget ran out; the platform then calls again
 * with the rest (after serving other connections). Malformed input or a
 * protocol violation makes the connection want to close.
 *
 * The budget (broker_limits.work_budget) counts packets, and a SUBSCRIBE
 * or UNSUBSCRIBE one unit per filter: one with more filters than the
 * budget is worked through over several calls (its retained messages
 * counting too). The core then keeps the packet itself and leaves its last
 * byte untaken until the packet is finished, so the platform comes back;
 * such a call may take 0 bytes without the connection being paused.
 * Nothing after that packet is handled before it is finished.
 */
size_t broker_input(broker *b, broker_conn *c, const uint8_t *data, size_t len, uint64_t now_ms);

/*
 * The transport is gone (peer closed, error, or the platform closed it after
 * broker_wants_close). Fires the will when the client did not DISCONNECT,
 * detaches or ends the session, and frees c: c is invalid after this call.
 */
void broker_closed(broker *b, broker_conn *c, uint64_t now_ms);

/*
 * The wall-clock time (milliseconds since the Unix epoch) at core time
 * now_ms. MQTT 5.0 expiries that must run while the broker is down
 * (session expiry, message expiry) are journaled as wall-clock times and
 * turned back into core time at restore. Call before restoring and again
 * whenever the platform's clock is corrected. Until it is called (or with
 * wall_ms 0: no trustworthy clock) such expiries restart from the moment
 * of restore, and the store says so in its log.
 */
void broker_set_wall_clock(broker *b, uint64_t wall_ms, uint64_t now_ms);

/* Time passed: keepalive and connect timeouts, session expiry, $SYS. */
void broker_tick(broker *b, uint64_t now_ms);
/* Earliest time broker_tick has work to do (UINT64_MAX = none). */
uint64_t broker_next_deadline(const broker *b);

/* Pop the next connection with output pending or a close request, or NULL.
 * Each connection appears at most once until it becomes dirty again. */
broker_conn *broker_next_dirty(broker *b);

/* Output not yet written: pointer valid until the next call into the core. */
const uint8_t *broker_out_peek(const broker_conn *c, size_t *len);
/* n bytes of the output were written by the transport. Lets the core refill
 * the buffer from the session's queue. */
void broker_out_consume(broker *b, broker_conn *c, size_t n);
size_t broker_out_pending(const broker_conn *c);
/* The platform's bound on c's pending output for QoS 0 messages, from how
 * fast c has been taking it (a bound in time rather than bytes: see
 * src/conn/drain.h): QoS 0 messages beyond min(bytes, max_out_bytes) are
 * dropped and counted like those beyond max_out_bytes. 0 = no bound of the
 * platform's, only max_out_bytes. QoS 1/2 messages are not affected: they
 * wait in the session's queue whatever the bound. */
void broker_set_qos0_out_max(broker_conn *c, size_t bytes);

/* The core wants the transport closed once pending output is flushed (or at
 * once if the platform prefers). The platform then calls broker_closed(). */
bool broker_wants_close(const broker_conn *c);

/* True while the core takes no more input from c: because c's output is
 * backed up (the client is not reading what it is sent, acknowledgements
 * included), or because a subscriber c publishes to is behind (held until
 * that subscriber's queue drains: see broker_limits.hold_queued).
 * broker_input then returns 0. The platform stops reading c and retries
 * its unconsumed input when c comes off the dirty list no longer paused
 * (the core marks a released connection dirty). */
bool broker_input_paused(const broker_conn *c);

/* Bytes the core holds for c's unfinished packet (the tail broker_input
 * keeps until the rest arrives), for the platform's budget of buffered
 * input across connections. */
size_t broker_input_held(const broker_conn *c);

void *broker_conn_ctx(const broker_conn *c);

/* Counters, for $SYS and the platform's own reporting. */
typedef struct broker_stats {
    uint64_t clients_connected;
    uint64_t clients_total;       /* sessions known: connected + persistent offline */
    uint64_t clients_maximum;     /* most connected at once */
    uint64_t msgs_received;       /* PUBLISH packets in */
    uint64_t msgs_sent;           /* PUBLISH packets out */
    uint64_t bytes_received;
    uint64_t bytes_sent;          /* bytes the transport consumed */
    uint64_t publish_dropped;     /* messages not delivered because of limits */
    uint64_t retained_count;
    uint64_t retained_bytes;      /* topic + payload bytes of retained messages */
    uint64_t subscriptions_count;
    uint64_t memory_used;         /* bytes allocated by the core, live */
    uint64_t protocol_errors;     /* connections closed for malformed input */
    uint64_t packets_too_large;   /* connections closed for a packet above max_packet_size */
    uint64_t acl_denied;          /* publishes and subscriptions refused by access rules */
    uint64_t publishers_held;     /* times a publisher's input was held for a slow subscriber */
    uint64_t hold_timeouts;       /* times a subscriber released its publishers unsent to */
    uint64_t subscriptions_refused; /* filters answered 0x80 for a limit (count, levels, length) */
    uint64_t topics_refused;      /* PUBLISH and will topics beyond the levels or length limit
                                     (the connection was closed) */
    uint64_t sessions_refused;    /* CONNECTs refused at limits.max_sessions_per_identity */
    uint64_t auth_failed;         /* CONNECTs refused for their user name or password */
    /* MQTT 5.0 publish path. */
    uint64_t msgs_expired;        /* copies of messages dropped unsent: their Message Expiry
                                     Interval passed first [MQTT-3.3.2-5] */
    uint64_t msgs_over_client_max;/* copies of messages dropped unsent: above the receiving
                                     client's Maximum Packet Size [MQTT-3.1.2-25] */
} broker_stats;

void broker_get_stats(const broker *b, broker_stats *out);

/* Counters of the layer below the core (the connection layer, src/conn),
 * which sees connections before the core does: $SYS publishes them beside
 * the core's own. */
typedef struct broker_layer_stats {
    uint64_t handshakes_failed;       /* TLS handshakes that failed */
    uint64_t handshake_timeouts;      /* ... that did not finish in tls.handshake_timeout */
    uint64_t handshakes_refused;      /* TLS connections refused at limits.max_handshakes */
    uint64_t handshakes_refused_address; /* ... at limits.max_handshakes_per_address */
    uint64_t handshakes_abandoned;    /* clients gone before their handshake's first answer */
    uint64_t accept_holds;            /* new connections left to the network stack: a limit */
    uint64_t syns_dropped;            /* SYNs dropped by the platform's admission (kernel) */
    uint64_t input_waits;             /* connections not read: limits.max_input_bytes spent */
    uint64_t input_closes;            /* ... closed because it stayed spent */
    uint64_t input_bytes;             /* input buffered now, across connections */
    uint64_t ws_refused;              /* WebSocket opening requests answered 400 */
    uint64_t ws_errors;               /* WebSocket connections closed for a framing error */
} broker_layer_stats;

/* The layer's counters now: it reports them before each broker_tick that
 * is due, and every $SYS refresh publishes the latest (none: no topics). */
void broker_set_layer_stats(broker *b, const broker_layer_stats *st);

/* A platform's own $SYS topic (the kernel's telemetry journal): topic must
 * start with "$SYS/"; value is published retained, as the core's own
 * $SYS topics are, to whoever may read $SYS. Returns -1 (nothing
 * published) for any other topic. */
int broker_sys_put(broker *b, const char *topic, const char *value);

/* Messages session client_id holds for its client: those waiting to be
 * sent and those in flight (sent, not yet fully acknowledged), into
 * *waiting; false (and 0) when there is no such session. The daemon's
 * bridges publish their own session's as $SYS/broker/bridges/NAME/queued. */
bool broker_session_waiting(broker *b, const char *client_id, uint64_t *waiting);

/* Provided by the platform, not the core: report a broken invariant (a bug)
 * on every console and stop. Never returns. */
_Noreturn void tern_panic(const char *file, int line, const char *what);

#endif
