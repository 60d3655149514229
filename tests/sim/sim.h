/*
 * sim.h - the deterministic simulator of the broker core (SPEC H5), driven
 * through the connection layer (src/conn) as a platform drives it: types
 * shared by its files.
 *
 *   rng.c     the seeded PRNG every random choice comes from
 *   net.c     connections: the connection layer (src/conn) over the fake
 *             transport (tests/unit/fake_transport.c), network faults, and
 *             which packets the core has handled
 *   client.c  simulated MQTT clients: protocol state, acks, retries
 *   model.c   the oracle: which session should get which message, and the
 *             invariants checked against what the clients saw
 *   store.c   durable seeds: the store (tests/unit/model_store.c),
 *             commits, failures, crash and restore
 *   sim.c     the scenario (random steps, warm-up, quiescent end phase)
 *             and the command line
 *   alloc_track.[ch]  the core's allocator, with exact accounting
 * (alloc_fail.c, the allocation-failure loop, is a separate program.)
 *
 * Per seed the configuration varies too: inflight window and work budget,
 * one seed in three small output buffers and small transport buffers (QoS 0
 * may then be dropped, QoS 1/2 never), one in four session expiry (sessions a tick removes must be
 * exactly the ones due), one in four tiny back-pressure watermarks
 * (publishers held for slow subscribers; when nothing else moves, time
 * passes until holds time out).
 *
 * MQTT 5.0 (drawn from a generator of its own, so the other draws stay
 * what they were): per seed none, all or some of the clients speak 5.0,
 * each announcing its Receive Maximum, Maximum Packet Size and Topic Alias
 * Maximum, with a Session Expiry Interval on persistent sessions (changed
 * or set to 0 by some DISCONNECTs), Topic Aliases towards the broker and a
 * Message Expiry Interval on a third of their messages; the broker's
 * packets are decoded at each connection's level. Checked: the Receive
 * Maximum and Maximum Packet Size on the client's side, the broker's
 * aliases, no expired message sent (from when the broker wrote each
 * packet: net.c's write-time checkpoints), the interval left forwarded,
 * session expiry as the interval in effect says, across crashes too (the
 * broker has a wall clock and stays down a while).
 *
 * Shared subscriptions (one seed in five, from the seed number; their own
 * draws from a generator of their own): clients, 3.1.1 and 5.0, join and
 * leave two groups, `$share/a/s/+/y` and `$share/b/s/#`, whose topic
 * `s/1/y` no ordinary filter of those seeds covers (`#` is not subscribed
 * there), so every copy of it came through a group; a client is a member
 * of one group at a time, so the group is known too. The topic limits
 * are raised to exactly what the longest `$share` filter needs. Checked
 * (model.c): at most one member per routing gets a message, another only
 * once the first has left without a QoS 2 copy [MQTT-4.8.2-5]; no QoS
 * 1/2 message lost while the group kept a member (a QoS 2 one may go
 * with a member that left: sent, perhaps never received); nothing
 * written to a member after it unsubscribed (its unsent messages go to
 * the others); no retained message on a shared subscribe; Message
 * Expiry as for every copy.
 *
 * Hostile-client limits, each on in a share of the seeds chosen from the
 * seed number (so other seeds draw what they did before), set tiny so they
 * are hit often: the connection layer's input budget
 * (limits.max_input_bytes; links holding the most are not read while it
 * is spent, and closed when it stays spent: the model takes such a close
 * as a reset), and identities (clients share certificates' names) with
 * limits.max_sessions_per_identity (a persistent session beyond it gets
 * CONNACK 0x05, predicted by the model) and
 * limits.max_queued_bytes_per_identity (QoS 1/2 messages beyond it are
 * dropped and counted: only that identity's sessions may miss messages,
 * and no more than the core counted). TLS handshakes are not simulated
 * (no TLS here): their budgets are the connection layer's unit tests'
 * (tests/unit/test_conn_tls.c).
 *
 * One seed drives everything, so a failing seed replays exactly. The broker
 * lives in world.b with the layer over it in world.cs, and is reached only
 * through broker.h and conn.h, so a "broker restart" event (drop every
 * link, destroy both, re-create from the durable store) is possible:
 * one seed in three is durable (store.c): batches are committed late or
 * fail, and the broker crashes and is restored from what was committed.
 */
#ifndef TERN_SIM_H
#define TERN_SIM_H

#include "alloc_track.h"
#include "broker/broker.h"
#include "broker/journal.h"
#include "conn/conn.h"
#include "mqtt/mqtt.h"
#include "../unit/fake_transport.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    SIM_CLIENTS = 6,              /* clients taking part in the random phase */
    SIM_FINAL = SIM_CLIENTS,      /* the checker client of the end phase */
    SIM_ALL = SIM_CLIENTS + 1,
    SIM_ORD_TOPICS = 5,           /* topics every seed draws from */
    SIM_SHARED_TOPIC = SIM_ORD_TOPICS, /* the shared subscriptions' own topic */
    SIM_TOPICS = SIM_ORD_TOPICS + 1,
    SIM_ORD_FILTERS = 8,          /* ordinary filters every seed draws from */
    SIM_GROUPS = 2,               /* shared subscription groups (shared seeds) */
    SIM_SHARED_FILTER = SIM_ORD_FILTERS, /* group g's filter: this + g */
    SIM_FILTERS = SIM_ORD_FILTERS + SIM_GROUPS,
    SIM_SH_RCV = 6,               /* members a shared message may reach, at most, per group */
    SIM_MAX_MSGS = 700,
    SIM_MAX_CONNS = 400,
    SIM_MAX_INC = 400,            /* session incarnations per run */
    SIM_MAX_INFLIGHT = 48,        /* a client's own unacknowledged publishes */
    SIM_MAX_AWAIT = 256,          /* inbound QoS 2 ids awaiting PUBREL */
    SIM_MAX_ACKS = 1024,          /* late acknowledgements queued */
    SIM_MAX_PEND = 64,            /* store batches taken, not yet done */
    SIM_HOLD_MS = 2000,           /* limits.publisher_hold_ms */
    SIM_SWEEP_WAIT_MS = 5000,     /* the end phase waits this long at most for the tree's sweep */
    SIM_ALIAS_MAX = 4,            /* Topic Alias Maximum a 5.0 client announces, at most */
    SIM_WTIMES = 16,              /* write-time checkpoints kept per connection */
    SIM_DOWN_MS = 5000,           /* a crash keeps the broker down up to this long */
};

/* The broker's wall clock is this plus the simulator's time (ms since the
 * Unix epoch), as the daemon tells it its clock: session and message
 * expiry times are journaled as wall-clock times (journal.h). */
#define SIM_WALL_MS UINT64_C(1767225600000)

extern const char *const sim_topics[SIM_TOPICS];
extern const char *const sim_filters[SIM_FILTERS];

/* ---- rng.c ---- */
typedef struct rng {
    uint64_t s;
} rng;
void rng_seed(rng *r, uint64_t seed);
uint64_t rng_next(rng *r);
uint32_t rng_below(rng *r, uint32_t n); /* 0..n-1, n > 0 */
bool rng_pct(rng *r, uint32_t percent);

/* ---- connections (net.c) ---- */
typedef enum mark_kind {
    MK_CONNECT,
    MK_PUBLISH,
    MK_PUBACK,
    MK_PUBREC,
    MK_PUBREL,
    MK_PUBCOMP,
    MK_SUBSCRIBE,
    MK_UNSUBSCRIBE,
    MK_DISCONNECT,
} mark_kind;

/* A packet a client wrote, and the stream offset where it ends: once the
 * core has consumed that far, it has handled the packet. */
typedef struct mark {
    uint64_t end;
    uint8_t kind;
    uint8_t qos;
    uint8_t topic;
    bool clean;
    uint16_t pid;
    int32_t arg; /* message index (PUBLISH, -1 = retained clear), filter */
} mark;

/*
 * One connection: the client's end, and the broker's end on the connection
 * layer (src/conn) over the fake transport (tests/unit/fake_transport.h).
 * Client to broker, bytes are first in flight (`up`), then arrive in the
 * transport (`link.up`), from which the layer reads them and gives them to
 * the core, keeping what the core leaves (link.c.pending_len). Broker to
 * client, the layer writes into `link.down` as far as `link.room` lets it
 * and the client reads from there.
 */
typedef struct sconn {
    fake_link link;         /* the transport; link.owner is the world */
    int client;             /* client reading it, -1 once orphaned or closed */
    int owner;              /* client that opened it */
    fake_bytes up;          /* in flight client->broker, not arrived yet */
    uint64_t up_written;    /* bytes the client wrote */
    uint64_t up_arrived;    /* ... of which reached the transport */
    uint64_t up_consumed;   /* ... of which the core took: marks applied up to here */
    mark *marks;
    size_t nmarks, marks_head, marks_cap;
    int inc;                /* session incarnation the model attached, or -1 */
    bool open;              /* the layer has it: opened, neither closed nor dropped */
    bool ended;             /* the model has ended this connection */
    bool expect_close;      /* DISCONNECT sent, orphaned, or dropped */
    bool pred_sp;           /* session present the model predicts */
    bool connack_seen;
    bool pred_refused;      /* the model predicts CONNACK 0x05 (sessions per identity) */
    bool fin;               /* the client sent its last byte: EOF follows them */
    bool silent;            /* abandoned by a peer that acknowledges nothing more */
    bool paused;            /* the layer stopped reading it (counted once a pause) */
    bool closing;           /* the core wants it closed: no more marks apply */
    bool eof;               /* closed: the client sees EOF once link.down drains */
    fake_bytes rx;          /* client side: bytes of an incomplete packet */
    /* MQTT 5.0 (client.c): the level the client speaks on it; the
     * broker's Topic Alias Maximum from its CONNACK and the aliases the
     * client has set on it (topic index + 1 per alias, client to broker);
     * the aliases the broker set (topic index + 1, broker to client); the
     * packet ids of QoS 1/2 PUBLISHes the broker sent on it that the
     * client has not acknowledged (PUBACK, PUBCOMP) yet: never more than
     * the Receive Maximum the client announced [MQTT-3.3.4-7]. */
    uint8_t level;
    uint16_t srv_alias_max;
    bool alias_set[SIM_TOPICS];
    uint8_t in_alias[SIM_ALIAS_MAX + 1];
    uint16_t unacked[SIM_MAX_AWAIT];
    int nunacked;
    /* When the broker wrote what the client reads (net.c): every byte at
     * stream offset >= wt[i].off was written at time >= wt[i].t; rx_off
     * is the offset of rx's first byte. A lower bound of a packet's write
     * time: what the message-expiry invariant needs. */
    uint64_t rx_off;
    struct {
        uint64_t off, t;
    } wt[SIM_WTIMES];
    int nwt;
} sconn;

/* The core's side of connection c, NULL once the layer closed or dropped it. */
static inline broker_conn *sconn_core(const sconn *c)
{
    return conn_core(&c->link.c);
}

/* ---- clients (client.c) ---- */
typedef enum cstate { CS_OFF, CS_CONNECTING, CS_READY, CS_DISCONNECTING } cstate;
typedef enum ostate { OS_WAIT_PUBACK = 1, OS_WAIT_PUBREC, OS_WAIT_PUBCOMP } ostate;

typedef struct outmsg {
    int msg;
    uint16_t pid;
    uint8_t state; /* ostate */
} outmsg;

typedef struct pending_ack {
    uint8_t type; /* mqtt_type */
    uint16_t pid;
} pending_ack;

typedef struct sclient {
    char id[16];
    int conn;               /* current connection, -1 when none */
    uint8_t st;             /* cstate */
    /* Session state the client keeps across reconnects (clean = 0), and
     * the session incarnation it belongs to (-1 none). */
    int state_inc;
    outmsg infl[SIM_MAX_INFLIGHT];
    int ninfl;
    uint16_t await[SIM_MAX_AWAIT];
    int nawait;
    uint8_t sub_qos[65536 / 256]; /* requested QoS by packet id % 256, for SUBACK */
    uint16_t next_pid;
    uint32_t next_seq;
    /* Acknowledgements not yet written (sent late, in order). */
    pending_ack acks[SIM_MAX_ACKS];
    int nacks;
    /* End phase: retained messages the checker received per topic. */
    int got_retained[SIM_TOPICS];
    /* MQTT 5.0 (drawn per seed): whether the client speaks it, and what it
     * announces in CONNECT (0 = the property left out): Receive Maximum,
     * Maximum Packet Size, Topic Alias Maximum; whether it uses Topic
     * Aliases towards the broker, and the Session Expiry Interval of its
     * persistent sessions (UINT32_MAX: never, as a 3.1.1 session). */
    bool v5;
    uint16_t recv_max;
    uint32_t max_packet;
    uint16_t alias_max;
    bool use_alias;
    uint32_t sess_expiry;
} sclient;

/* ---- the oracle (model.c) ---- */
typedef struct smsg {
    int pub;               /* publishing client */
    uint32_t seq;          /* per publisher */
    uint8_t topic, qos;
    bool retain;
    bool acked;            /* PUBACK / PUBREC reached the publisher */
    uint32_t processed;    /* times the core handled the PUBLISH */
    uint32_t acked_epoch;  /* crashes before the acknowledgement arrived */
    uint32_t ret_at;       /* retained-order clock when last set as retained */
    uint16_t plen;         /* payload bytes */
    uint32_t expiry_s;     /* MQTT 5.0 Message Expiry Interval, 0 = none */
    uint64_t expires_at;   /* ... from the core's latest handling of it */
    /* Shared subscriptions, per group (model.c): routings to the group;
     * whether one had every member at QoS >= 1 (then it must not be lost),
     * the crashes before it, and the group's breaks (times it was left
     * without a member), members' departures and QoS 0 joins then; the members that received it (incarnation,
     * the packet id, QoS, whether the core had its PUBACK). */
    struct {
        uint16_t routed;
        bool q12;
        uint32_t epoch, brk, deaths, q0;
        uint32_t last_epoch;   /* crashes before its latest routing */
        uint8_t nrcv;
        struct sh_rcv {
            int inc;
            uint16_t pid;
            uint8_t qos;
            bool acked;
        } rcv[SIM_SH_RCV];
    } sh[SIM_GROUPS];
} smsg;

/* What one session incarnation should receive of one message. */
typedef struct expect {
    uint16_t routed;       /* times routed to the session */
    uint16_t routed_q[3];  /* ... at each effective QoS */
    uint8_t qos_mask;      /* bit q: routed at effective QoS q */
    uint16_t delivered;    /* copies handed to the application */
    uint16_t delivered_q[3];
    uint16_t nodup;        /* copies received without DUP */
    uint32_t first_route;  /* global routing order of the first routing */
    uint32_t latest_route; /* ... and of the latest (a resend routes again) */
    uint32_t route_epoch;  /* crashes before the last routing */
    uint32_t q12_epoch;    /* crashes before the last QoS >= 1 routing */
} expect;

typedef struct incarnation {
    int client;
    bool clean;
    bool alive;
    bool expired;               /* ended by the broker's session expiry */
    int conn;                   /* attached connection or -1 */
    uint64_t offline_since;     /* ms, while persistent and offline */
    uint32_t expiry_s;          /* its Session Expiry Interval in effect, 0 = never */
    uint8_t subs[SIM_FILTERS];  /* 0 none, else granted QoS + 1 */
    uint16_t in_qos2[SIM_MAX_AWAIT];
    int n_in_qos2;
    expect *exp;                /* [SIM_MAX_MSGS] */
    uint32_t last_route[SIM_ALL][SIM_TOPICS];
    bool sh_unsub[SIM_GROUPS];  /* unsubscribed from the group once */
    uint64_t sh_unsub_at[SIM_GROUPS]; /* ... when the core took the last UNSUBSCRIBE */
} incarnation;

struct mstore;

/* ---- the world ---- */
typedef struct world {
    uint64_t seed;
    rng r;
    bool verbose;
    bool quiesce;              /* end phase: clients ack at once */
    bool warming;              /* warm-up: every step must succeed */
    bool tight;                /* small output buffers: QoS 0 may be dropped */
    uint32_t expiry_s;         /* session expiry limit, 0 = kept forever */
    uint64_t max_input;        /* limits.max_input_bytes of the layer, 0 = none */
    bool idents;               /* clients carry identities (sim_identity) */
    uint32_t ident_sessions;   /* limits.max_sessions_per_identity, 0 = default */
    uint32_t ident_bytes;      /* limits.max_queued_bytes_per_identity, 0 = default */
    uint64_t input_closes;     /* the layer's input closes seen so far (net.c) */
    uint64_t step;
    broker *b;
    conn_server *cs;           /* the connection layer over b (net.c) */
    size_t sndbuf;             /* bytes a transport holds for a client that has not read them */
    /* The layer call in progress may feed the core these connections, in
     * this order, whose transports had been read feed_reads[] times before
     * it; marks are applied for feed[0 .. fed) (net.c). */
    int feed[SIM_MAX_CONNS];
    unsigned feed_reads[SIM_MAX_CONNS];
    int nfeed, fed;
    /* The core's bytes_received before the call, and the bytes of input
     * the marks applied since account for: the two must agree. */
    uint64_t feed_rx, feed_taken;
    broker_config cfg;         /* kept to re-create the broker after a crash */
    /* Shared-subscription seeds (sim.c, model.c): their own generator;
     * per group whether it has no member now, the times it was left
     * without one, and the members that left. */
    bool shared;
    rng rsh;
    bool g_empty[SIM_GROUPS];
    uint32_t g_break[SIM_GROUPS], g_deaths[SIM_GROUPS];
    uint32_t g_q0[SIM_GROUPS];   /* members that joined at QoS 0 so far */
    /* Durable seeds (store.c): batches taken and not yet done, each with
     * the model's live incarnations when it was taken (whose records they
     * are); the store model; which incarnation each client's stored
     * session is (-1 none); crashes so far (the "epoch"). */
    bool durable;
    struct mstore *ms;
    broker_store_batch pend[SIM_MAX_PEND];
    int pend_tag[SIM_MAX_PEND][SIM_ALL];
    int npend;
    int store_inc[SIM_ALL];
    uint32_t epoch;
    uint32_t ret_clock;
    uint32_t clear_at[SIM_TOPICS];
    alloc_track at;
    uint64_t now;
    sclient cl[SIM_ALL];
    sconn conns[SIM_MAX_CONNS];
    int nconns;
    smsg msgs[SIM_MAX_MSGS];
    int nmsgs;
    incarnation inc[SIM_MAX_INC];
    int ninc;
    int cur_inc[SIM_ALL];      /* the client's live session, -1 none */
    int retained[SIM_TOPICS];  /* message index, -1 none */
    uint32_t route_counter;
    bool failed;
    char fail_msg[512];
    /* counters for the summary */
    uint64_t n_delivered, n_dups, n_drops, n_takeovers, n_reconnects, n_qos0_dropped,
        n_paused, n_expired, n_commits, n_failed, n_crashes;
    /* ... crashes the broker stayed down across (time passed), and the
     * sessions that expired meanwhile, ended by the restore */
    uint64_t n_downtimes, n_expired_down;
    /* ... of the connection layer: input it kept for the core after a
     * feeding call, closes by kind, lingers that ran out */
    uint64_t n_kept, n_graceful, n_aborts, n_lingers;
    /* ... of the hostile-client limits: input-budget waits and closes,
     * sessions refused per identity, messages an identity's byte limit
     * kept from its sessions */
    uint64_t n_input_waits, n_input_closes, n_sessions_refused, n_ident_lost;
    uint64_t dropped_before;   /* publish_dropped of the cores before the last crash */
    /* ... of MQTT 5.0: 5.0 clients, messages with an expiry, of them the
     * ones that expired undelivered somewhere, aliased publishes both
     * ways, copies a Maximum Packet Size kept back, sessions ended by a
     * DISCONNECT's Session Expiry Interval 0, and the most unacknowledged
     * PUBLISHes a client with a Receive Maximum held at once */
    uint64_t n_v5, n_msg_expiry, n_expired_msgs, n_alias_up, n_alias_down, n_too_large,
        n_disc_end, n_at_recv_max;
    /* ... of shared subscriptions: messages routed to a group, copies a
     * member received first, messages a second member got after the first
     * left, members that left, messages lost with the group excused */
    uint64_t n_sh_routed, n_sh_rcv, n_sh_again, n_sh_left, n_sh_excused;
} world;

/* The identity client i connects with (NULL: anonymous). With
 * world.idents, c0-c2 share "idA", c3-c4 share "idB", c5 and the checker
 * are anonymous (never limited). */
const char *sim_identity(const world *w, int client);

/* Shared seeds: client i's group, the same all the seed long (a copy's
 * group is then known), a share of the clients in each. */
static inline int sim_group(const world *w, int client)
{
    return (int)(((uint64_t)client + w->seed / 5) % SIM_GROUPS);
}

void sim_fail(world *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sim_trace(world *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* net.c */
/* The connection layer over w->b: after broker_create, and again after a
 * crash's restart. */
void net_start(world *w);
/* The layer goes with the broker (a crash, the end of a run): every link is
 * dropped without telling the core, then the layer is destroyed. */
void net_stop(world *w);
void net_free(world *w);
int net_open(world *w, int client);
void net_write(world *w, int k, const uint8_t *p, size_t n, mark m);
/* The client sends nothing more on k: EOF follows what it wrote. */
void net_fin(world *w, int k);
/* A turn of the layer: leftover input first; at the end the core's timers
 * (expiry judged by the model), every connection's output, lingers. */
void net_turn_begin(world *w);
void net_turn_end(world *w);
/* broker_tick now; the model judges the sessions it removed. */
void net_tick(world *w);
/* How much output each transport takes during this step. */
void net_refill(world *w);
/* n bytes of k's in-flight upstream reach the transport. */
void net_arrive(world *w, int k, size_t n);
/* k has something to read (bytes, EOF or an error) that the layer wants to
 * hear about; net_readable tells the layer. */
bool net_has_readable(const sconn *c);
void net_readable(world *w, int k);
/* Hand up to n bytes of k's downstream to its client. */
void net_deliver(world *w, int k, size_t n);
/* Time passed: note, per connection, from where on the broker's output
 * was written at the new time or later. */
void net_time(world *w);
/* The layer waits for room on k and there is some; net_writable tells it. */
bool net_has_writable(const sconn *c);
void net_writable(world *w, int k);
/* The client loses k: a reset, an error the layer finds later, or its
 * socket closed without DISCONNECT (EOF). */
void net_drop(world *w, int k);
/* The client abandons k without closing it (takeover). */
void net_orphan(world *w, int k);
/* Input waits on k while the core holds it (back-pressure). */
bool net_input_held(const sconn *c);
/* The core wants k closed and the layer still has it (lingering). */
bool net_closing(const sconn *c);

/* client.c */
void client_init(world *w, int i);
void client_connect(world *w, int i, bool clean);
void client_publish(world *w, int i, int topic, uint8_t qos, bool retain);
void client_clear_retained(world *w, int i, int topic);
void client_subscribe(world *w, int i, int filter, uint8_t qos);
void client_unsubscribe(world *w, int i, int filter);
void client_disconnect(world *w, int i);
void client_flush_acks(world *w, int i, int max);
/* Packets from the broker arrived on connection k; the broker wrote it at
 * time `wrote` or later. */
void client_receive(world *w, int k, const mqtt_packet *p, uint64_t wrote);
/* The client's connection k reached EOF. */
void client_closed(world *w, int k);

/* model.c */
void model_init(world *w);
void model_free(world *w);
/* The core consumed packet m on connection k. */
void model_apply(world *w, int k, const mark *m);
/* Connection k ended at the core (close, drop, takeover). */
void model_conn_end(world *w, int k);
/* A client received PUBLISH p of message mi on connection k. Returns
 * whether the application gets it (QoS 2 duplicates are filtered by the
 * client before calling with first = false). */
void model_received(world *w, int k, int mi, const mqtt_publish *p, bool first_copy,
                    uint64_t wrote);
/* broker_tick removed `removed` sessions (from clients_total). */
void model_expire(world *w, uint64_t removed);
/* End-phase checks. */
void model_check_final(world *w);
/* After a crash and restore: the model becomes what the store kept. */
void model_crash(world *w);

/* store.c (durable seeds only; no-ops otherwise) */
void store_init(world *w);
void store_free(world *w);
/* Take the core's closed batches into the pending list. */
void store_take(world *w);
/* Commit the oldest n pending batches; returns how many. */
int store_commit(world *w, int n);
/* Fail the oldest pending batch and every later one. */
void store_fail(world *w);
/* Crash: lose what is pending, destroy, re-create, restore. */
void store_crash(world *w);
/* Rows the store model holds (it has a fixed capacity). */
int store_rows(const world *w);

#endif
