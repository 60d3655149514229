/*
 * bridge_internal.h - the bridge's state (struct bridge) and the small
 * helpers its two files share: the byte buffers, the error text, the
 * failure found while handling input, and a packet's room on a side's
 * output. bridge.c runs the links (connecting, input, timers);
 * bridge_relay.c relays the publish flows between them. The helpers stay
 * static (inline here) so the core exports no new names. Internal to
 * src/broker/.
 */
#ifndef TERN_BROKER_BRIDGE_INTERNAL_H
#define TERN_BROKER_BRIDGE_INTERNAL_H

#include "broker/bridge.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mqtt/mqtt.h"

/* A growable byte buffer consumed from the front. */
typedef struct bvec {
    uint8_t *p;
    size_t off, len, cap; /* live bytes are p[off..len) */
} bvec;

typedef struct link {
    bvec in, out;
    uint8_t level; /* the remote's: settings.protocol; the local one's: 5 */
} link;

/* A bitmap of the 65536 packet identifiers. */
#define IDMAP_BYTES (65536u / 8u)

struct bridge {
    bridge_settings s;
    bridge_state state;
    bridge_stats stats;
    link l[2];          /* BRIDGE_REMOTE, BRIDGE_LOCAL */
    bvec hold;          /* remote packets for the local broker, before UP */
    uint32_t attempts;  /* consecutive failed attempts (back-off) */
    bool primed;        /* the local session exists with its subscriptions */
    uint64_t retry_at;  /* WAIT's end */
    uint64_t started;   /* this attempt began (connect timeout) */
    uint64_t last_rx, last_tx; /* remote traffic (keep alive) */
    uint64_t local_tx;         /* our last packet to the local broker */
    uint32_t local_ka_ms;      /* the local broker's Server Keep Alive (0: none) */
    /* What the remote's CONNACK said (5.0; the 3.1.1 defaults otherwise),
     * reset at each remote CONNECT. */
    uint32_t r_max_packet;  /* its Maximum Packet Size; 0: none given */
    uint16_t r_receive_max; /* its Receive Maximum; 0: none given (65535) */
    uint16_t ka_s;          /* keep alive toward it: ours or its Server Keep Alive */
    uint8_t r_max_qos;      /* its Maximum QoS (2 when absent) */
    bool r_retain;          /* its Retain Available (true when absent) */
    /* Local QoS 2 deliveries relayed to the remote at a lower QoS (its
     * Maximum QoS): the bridge answers their PUBREL itself. NULL until the
     * first one. */
    uint8_t *lowered;
    bvec scratch;           /* a message's properties, filtered */
    char error[160];
};
static inline bool bvec_room(bvec *v, size_t n)
{
    if (v->off > 0 && v->off == v->len)
        v->off = v->len = 0;
    if (v->cap - v->len >= n)
        return true;
    if (v->off > 0) { /* slide the live bytes down before growing */
        memmove(v->p, v->p + v->off, v->len - v->off);
        v->len -= v->off;
        v->off = 0;
        if (v->cap - v->len >= n)
            return true;
    }
    size_t cap = v->cap ? v->cap : 256;
    while (cap - v->len < n) {
        if (cap > SIZE_MAX / 2)
            return false;
        cap *= 2;
    }
    uint8_t *p = realloc(v->p, cap);
    if (p == NULL)
        return false;
    v->p = p;
    v->cap = cap;
    return true;
}

static inline bool bvec_put(bvec *v, const uint8_t *d, size_t n)
{
    if (!bvec_room(v, n))
        return false;
    memcpy(v->p + v->len, d, n);
    v->len += n;
    return true;
}

static inline void bvec_clear(bvec *v)
{
    v->off = v->len = 0;
}

static inline void set_error(bridge *b, const char *a, const char *c)
{
    size_t n = 0;

    for (const char *p = a; p && *p && n + 1 < sizeof b->error; p++)
        b->error[n++] = *p;
    for (const char *p = c; p && *p && n + 1 < sizeof b->error; p++)
        b->error[n++] = *p;
    b->error[n] = '\0';
}

/* A failure found while handling input: the reason is kept, the platform
 * is told by the false return (and calls nothing else). */
static inline bool fail_here(bridge *b, const char *a, const char *c, uint64_t now)
{
    set_error(b, a, c);
    /* Jitter from the clock: this path has no random bits at hand, and
     * the point is only that bridges do not retry in lockstep. */
    broker_bridge_fail(b, b->error, (uint32_t)(now * 2654435761u), now);
    return false;
}

/* Reserve room for a packet of at most n bytes on a side's output and
 * return where to write it (commit with emit_done). */
static inline uint8_t *emit_begin(bridge *b, bridge_side side, size_t n)
{
    bvec *v = &b->l[side].out;

    return bvec_room(v, n) ? v->p + v->len : NULL;
}

static inline bool emit_done(bridge *b, bridge_side side, size_t n, uint64_t now)
{
    if (n == 0)
        return false;
    b->l[side].out.len += n;
    if (side == BRIDGE_REMOTE)
        b->last_tx = now;
    else
        b->local_tx = now;
    return true;
}

/* A packet of the publish flows from `from`, relayed to the other side
 * (bridge_relay.c); false when the bridge failed. */
bool bk_bridge_relay(bridge *b, bridge_side from, const mqtt_packet *pk, uint64_t now);

#endif
