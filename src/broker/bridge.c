/*
 * bridge.c - the bridge's two client links and the relay between them
 * (bridge.h has the design: identifiers relayed unchanged, the local
 * session as the durable queue, the order of a connection).
 */
#include "broker/bridge.h"

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
    uint8_t level; /* decoding level: 4 remote, 5 local */
} link;

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
    char error[160];
};

/* ---- buffers -------------------------------------------------------------- */

static bool bvec_room(bvec *v, size_t n)
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

static bool bvec_put(bvec *v, const uint8_t *d, size_t n)
{
    if (!bvec_room(v, n))
        return false;
    memcpy(v->p + v->len, d, n);
    v->len += n;
    return true;
}

static void bvec_clear(bvec *v)
{
    v->off = v->len = 0;
}

static void bvec_free(bvec *v)
{
    free(v->p);
    memset(v, 0, sizeof *v);
}

/* ---- settings helpers ----------------------------------------------------- */

/* prefix + pattern into out[0..cap), NUL-terminated; its length or 0. */
static size_t join(const char *a, const char *b, char *out, size_t cap)
{
    size_t na = strlen(a), nb = strlen(b);

    if (na + nb + 1 > cap)
        return 0;
    memcpy(out, a, na);
    memcpy(out + na, b, nb);
    out[na + nb] = '\0';
    return na + nb;
}

size_t broker_bridge_map_topic(const bridge_settings *s, bridge_dir dir, const uint8_t *t, size_t n,
                        char *out, size_t cap)
{
    for (size_t i = 0; i < s->nmaps; i++) {
        const bridge_map *m = &s->maps[i];
        const char *from = dir == BRIDGE_OUT ? m->local_prefix : m->remote_prefix;
        const char *to = dir == BRIDGE_OUT ? m->remote_prefix : m->local_prefix;
        char filter[2 * BRIDGE_TOPIC_MAX];
        size_t flen, nfrom = strlen(from), nto = strlen(to);

        if (!(m->dir & dir))
            continue;
        flen = join(from, m->pattern, filter, sizeof filter);
        if (flen == 0 || !mqtt_topic_matches((const uint8_t *)filter, flen, t, n))
            continue;
        /* The filter starts with the prefix, so a matching topic does too. */
        if (n < nfrom || nto + (n - nfrom) + 1 > cap)
            return 0;
        memcpy(out, to, nto);
        memcpy(out + nto, t + nfrom, n - nfrom);
        out[nto + n - nfrom] = '\0';
        return nto + n - nfrom;
    }
    return 0;
}

uint64_t broker_bridge_backoff_ms(uint32_t min_ms, uint32_t max_ms, uint32_t failures,
                                  uint32_t random)
{
    uint64_t d = min_ms ? min_ms : 1;

    for (uint32_t i = 1; i < failures && d < max_ms; i++)
        d *= 2;
    if (d > max_ms)
        d = max_ms;
    /* Equal jitter: half fixed, half random, so bridges that failed
     * together (the remote restarted) do not all return together. */
    return d - d / 2 + (d / 2 == 0 ? 0 : (uint64_t)random % (d / 2 + 1));
}

/* ---- life ----------------------------------------------------------------- */

bridge *broker_bridge_create(const bridge_settings *s)
{
    bridge *b = calloc(1, sizeof *b);

    if (b == NULL)
        return NULL;
    b->s = *s;
    b->state = BRIDGE_WAIT;
    b->retry_at = 0; /* the first attempt at the first tick */
    b->l[BRIDGE_REMOTE].level = MQTT_LEVEL_311;
    b->l[BRIDGE_LOCAL].level = MQTT_LEVEL_5;
    return b;
}

void broker_bridge_destroy(bridge *b)
{
    if (b == NULL)
        return;
    for (int i = 0; i < 2; i++) {
        bvec_free(&b->l[i].in);
        bvec_free(&b->l[i].out);
    }
    bvec_free(&b->hold);
    free(b);
}

bridge_state broker_bridge_get_state(const bridge *b)
{
    return b->state;
}

const bridge_stats *broker_bridge_get_stats(const bridge *b)
{
    return &b->stats;
}

const char *broker_bridge_last_error(const bridge *b)
{
    return b->error;
}

static void set_error(bridge *b, const char *a, const char *c)
{
    size_t n = 0;

    for (const char *p = a; p && *p && n + 1 < sizeof b->error; p++)
        b->error[n++] = *p;
    for (const char *p = c; p && *p && n + 1 < sizeof b->error; p++)
        b->error[n++] = *p;
    b->error[n] = '\0';
}

void broker_bridge_fail(bridge *b, const char *why, uint32_t random, uint64_t now)
{
    if (b->state == BRIDGE_WAIT)
        return;
    if (why != NULL && why != b->error)
        set_error(b, why, NULL);
    for (int i = 0; i < 2; i++) {
        bvec_clear(&b->l[i].in);
        bvec_clear(&b->l[i].out);
    }
    bvec_clear(&b->hold);
    b->stats.failures++;
    b->attempts++;
    b->state = BRIDGE_WAIT;
    b->retry_at = now + broker_bridge_backoff_ms(b->s.backoff_min_ms, b->s.backoff_max_ms,
                                          b->attempts, random);
}

/* A failure found while handling input: the reason is kept, the platform
 * is told by the false return (and calls nothing else). */
static bool fail_here(bridge *b, const char *a, const char *c, uint64_t now)
{
    set_error(b, a, c);
    /* Jitter from the clock: this path has no random bits at hand, and
     * the point is only that bridges do not retry in lockstep. */
    broker_bridge_fail(b, b->error, (uint32_t)(now * 2654435761u), now);
    return false;
}

/* ---- output --------------------------------------------------------------- */

const uint8_t *broker_bridge_output(const bridge *b, bridge_side side, size_t *len)
{
    const bvec *v = &b->l[side].out;

    *len = v->len - v->off;
    return *len ? v->p + v->off : NULL;
}

void broker_bridge_output_taken(bridge *b, bridge_side side, size_t n)
{
    bvec *v = &b->l[side].out;

    v->off += n <= v->len - v->off ? n : v->len - v->off;
}

/* Reserve room for a packet of at most n bytes on a side's output and
 * return where to write it (commit with emit_done). */
static uint8_t *emit_begin(bridge *b, bridge_side side, size_t n)
{
    bvec *v = &b->l[side].out;

    return bvec_room(v, n) ? v->p + v->len : NULL;
}

static bool emit_done(bridge *b, bridge_side side, size_t n, uint64_t now)
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

static bool emit_ack(bridge *b, bridge_side side, mqtt_type type, uint16_t id, uint64_t now)
{
    uint8_t *w = emit_begin(b, side, 4);

    return w != NULL &&
           emit_done(b, side, mqtt_encode_ack(w, 4, b->l[side].level, type, id), now);
}

/* ---- connecting ----------------------------------------------------------- */

void broker_bridge_opened(bridge *b, bridge_side side, uint64_t now)
{
    mqtt_connect c;
    uint8_t props[8];
    size_t np = 0, n;
    uint8_t *w;

    memset(&c, 0, sizeof c);
    c.client_id.p = (const uint8_t *)b->s.client_id;
    c.client_id.len = strlen(b->s.client_id);
    c.clean_session = false; /* both sessions persist across links */
    if (side == BRIDGE_REMOTE) {
        if (b->state != BRIDGE_DIAL_REMOTE)
            return;
        c.level = MQTT_LEVEL_311;
        c.bridge = b->s.try_private;
        c.keepalive = b->s.keepalive_s;
        b->state = BRIDGE_REMOTE_CONNACK;
        b->last_rx = now;
    } else {
        if (b->state != BRIDGE_DIAL_LOCAL)
            return;
        c.level = MQTT_LEVEL_5;
        c.keepalive = 0; /* an in-process link: no peer to lose silently */
        /* Session Expiry "never": the local session is the durable queue. */
        np = mqtt_prop_u32(props, sizeof props, MQTT_PROP_SESSION_EXPIRY, UINT32_MAX);
        c.props.raw.p = props;
        c.props.raw.len = np;
        b->state = BRIDGE_LOCAL_CONNACK;
    }
    w = emit_begin(b, side, 512);
    n = w ? mqtt_encode_connect(w, 512, &c) : 0;
    if (!emit_done(b, side, n, now))
        (void)fail_here(b, "out of memory for the CONNECT", NULL, now);
}

/* The SUBSCRIBE of a side's mappings (dir: the direction whose source is
 * that side), or false when there is none to send. */
static bool subscribe(bridge *b, bridge_side side, bridge_dir dir, uint64_t now, bool *ok)
{
    mqtt_bytes filters[BRIDGE_MAPS_MAX];
    uint8_t opts[BRIDGE_MAPS_MAX];
    char text[BRIDGE_MAPS_MAX][2 * BRIDGE_TOPIC_MAX];
    size_t count = 0, cap = 16, n;
    uint8_t *w;

    *ok = true;
    for (size_t i = 0; i < b->s.nmaps; i++) {
        const bridge_map *m = &b->s.maps[i];
        const char *prefix = side == BRIDGE_LOCAL ? m->local_prefix : m->remote_prefix;
        size_t len;

        if (!(m->dir & dir))
            continue;
        len = join(prefix, m->pattern, text[count], sizeof text[count]);
        filters[count].p = (const uint8_t *)text[count];
        filters[count].len = len;
        opts[count] = m->qos;
        if (side == BRIDGE_LOCAL) /* no echo of what we relay in; retain kept */
            opts[count] |= MQTT_SUBOPT_NO_LOCAL | MQTT_SUBOPT_RETAIN_AS_PUBLISHED;
        cap += len + 3;
        count++;
    }
    if (count == 0)
        return false;
    /* Packet id 1: nothing else of ours is in flight on this link yet. */
    w = emit_begin(b, side, cap);
    n = w == NULL ? 0
        : side == BRIDGE_LOCAL
            ? mqtt_encode_subscribe5(w, cap, 1, filters, opts, count, NULL)
            : mqtt_encode_subscribe(w, cap, MQTT_LEVEL_311, 1, filters, opts, count);
    if (!emit_done(b, side, n, now))
        *ok = fail_here(b, "out of memory for the SUBSCRIBE", NULL, now);
    return true;
}

/* Every SUBACK code granted? */
static bool granted(const mqtt_list *l)
{
    size_t pos = 0;
    uint8_t code;

    while (mqtt_suback_next(l, &pos, &code))
        if (code >= 0x80)
            return false;
    return true;
}

/* ---- relaying ------------------------------------------------------------- */

/* A PUBLISH from `from`, to the other side under its name there. */
static bool relay_publish(bridge *b, bridge_side from, const mqtt_publish *p, uint64_t now)
{
    bridge_side to = from == BRIDGE_REMOTE ? BRIDGE_LOCAL : BRIDGE_REMOTE;
    char topic[2 * BRIDGE_TOPIC_MAX + 1024];
    mqtt_publish q = *p;
    size_t n, size;
    uint8_t *w;

    n = broker_bridge_map_topic(&b->s, from == BRIDGE_REMOTE ? BRIDGE_IN : BRIDGE_OUT, p->topic.p,
                         p->topic.len, topic, sizeof topic);
    if (n == 0)
        return fail_here(b, from == BRIDGE_REMOTE ? "remote" : "local",
                         " broker sent a topic no mapping covers", now);
    q.topic.p = (const uint8_t *)topic;
    q.topic.len = n;
    size = mqtt_publish_size(b->l[to].level, n, p->payload.len, p->qos);
    w = emit_begin(b, to, size);
    if (w == NULL || !emit_done(b, to, mqtt_encode_publish(w, size, b->l[to].level, &q), now))
        return fail_here(b, "out of memory relaying a message", NULL, now);
    if (from == BRIDGE_REMOTE)
        b->stats.received++;
    else
        b->stats.sent++;
    return true;
}

/* A packet of the publish flows from `from`, relayed to the other side. */
static bool relay(bridge *b, bridge_side from, const mqtt_packet *pk, uint64_t now)
{
    bridge_side to = from == BRIDGE_REMOTE ? BRIDGE_LOCAL : BRIDGE_REMOTE;

    if (pk->type == MQTT_PUBLISH)
        return relay_publish(b, from, &pk->u.publish, now);
    if (from == BRIDGE_LOCAL && (pk->type == MQTT_PUBACK || pk->type == MQTT_PUBREC) &&
        pk->u.ack.reason >= 0x80)
        b->stats.refused++; /* the remote is told it was taken: see ADR-060 */
    if (!emit_ack(b, to, pk->type, pk->u.ack.packet_id, now))
        return fail_here(b, "out of memory relaying an acknowledgement", NULL, now);
    return true;
}

static bool is_flow(mqtt_type t)
{
    return t == MQTT_PUBLISH || t == MQTT_PUBACK || t == MQTT_PUBREC || t == MQTT_PUBREL ||
           t == MQTT_PUBCOMP;
}

static bool replay_held(bridge *b, uint64_t now)
{
    bvec *h = &b->hold;

    while (h->off < h->len) {
        mqtt_packet pk;
        size_t used = 0;

        if (mqtt_decode(h->p + h->off, h->len - h->off, MQTT_FROM_SERVER, MQTT_LEVEL_311, 0, &pk,
                        &used) != MQTT_OK)
            return fail_here(b, "held packet unreadable", NULL, now); /* cannot happen */
        h->off += used;
        if (!relay(b, BRIDGE_REMOTE, &pk, now))
            return false;
    }
    bvec_clear(h);
    return true;
}

static bool go_up(bridge *b, uint64_t now)
{
    b->state = BRIDGE_UP;
    b->attempts = 0;
    b->stats.connects++;
    b->error[0] = '\0';
    return replay_held(b, now);
}

static bool remote_packet(bridge *b, const mqtt_packet *pk, const uint8_t *raw, uint64_t now)
{
    bool ok;
    char code[8];

    if (is_flow(pk->type)) {
        if (b->state == BRIDGE_UP)
            return relay(b, BRIDGE_REMOTE, pk, now);
        if (b->state == BRIDGE_REMOTE_CONNACK)
            return fail_here(b, "remote sent a publish before its CONNACK", NULL, now);
        if (b->hold.len - b->hold.off + pk->size > BRIDGE_HOLD_MAX ||
            !bvec_put(&b->hold, raw, pk->size))
            return fail_here(b, "too much from the remote before the local link was up", NULL,
                             now);
        return true;
    }
    switch (pk->type) {
    case MQTT_CONNACK:
        if (b->state != BRIDGE_REMOTE_CONNACK)
            break;
        if (pk->u.connack.return_code != 0) {
            code[0] = (char)('0' + pk->u.connack.return_code % 10);
            code[1] = '\0';
            return fail_here(b, "remote refused the connection: CONNACK code ", code, now);
        }
        b->state = BRIDGE_REMOTE_SUBACK;
        if (!subscribe(b, BRIDGE_REMOTE, BRIDGE_IN, now, &ok))
            b->state = BRIDGE_DIAL_LOCAL;
        return ok;
    case MQTT_SUBACK:
        if (b->state != BRIDGE_REMOTE_SUBACK || pk->u.suback.packet_id != 1)
            break;
        if (!granted(&pk->u.suback))
            return fail_here(b, "remote refused a subscription of an 'in' mapping", NULL, now);
        b->state = BRIDGE_DIAL_LOCAL;
        return true;
    case MQTT_PINGRESP:
        return true;
    default:
        break;
    }
    return fail_here(b, "remote sent an unexpected packet", NULL, now);
}

/* The local session now exists with its subscriptions: before the first
 * remote connection, the local link ends here (the platform closes it)
 * and messages for the remote queue in the session from now on. */
static bool primed(bridge *b, uint64_t now)
{
    b->primed = true;
    bvec_clear(&b->l[BRIDGE_LOCAL].in);
    bvec_clear(&b->l[BRIDGE_LOCAL].out);
    b->state = BRIDGE_DIAL_REMOTE;
    b->started = now;
    return false; /* stop reading this link's input */
}

static bool local_packet(bridge *b, const mqtt_packet *pk, uint64_t now)
{
    bool ok;

    if (!b->primed && is_flow(pk->type))
        return true; /* not acknowledged: the session delivers it again later */
    if (is_flow(pk->type)) {
        if (b->state < BRIDGE_LOCAL_SUBACK)
            return fail_here(b, "local broker sent a publish before its CONNACK", NULL, now);
        return relay(b, BRIDGE_LOCAL, pk, now);
    }
    switch (pk->type) {
    case MQTT_CONNACK:
        if (b->state != BRIDGE_LOCAL_CONNACK)
            break;
        if (pk->u.connack.return_code != 0)
            return fail_here(b, "local broker refused the bridge's connection (identity, ACL?)",
                             NULL, now);
        /* We ask for no keep alive; a broker that sets one anyway (tern's
         * limits.max_keepalive) is pinged within it. */
        b->local_ka_ms = 0;
        if (pk->u.connack.props.present & MQTT_PROP_BIT(MQTT_PROP_SERVER_KEEP_ALIVE))
            b->local_ka_ms = (uint32_t)pk->u.connack.props.server_keep_alive * 1000u;
        b->state = BRIDGE_LOCAL_SUBACK;
        if (!subscribe(b, BRIDGE_LOCAL, BRIDGE_OUT, now, &ok))
            return b->primed ? go_up(b, now) : primed(b, now);
        return ok;
    case MQTT_SUBACK:
        if (b->state != BRIDGE_LOCAL_SUBACK || pk->u.suback.packet_id != 1)
            break;
        if (!granted(&pk->u.suback))
            return fail_here(b, "local broker refused a subscription of an 'out' mapping (ACL?)",
                             NULL, now);
        return b->primed ? go_up(b, now) : primed(b, now);
    case MQTT_DISCONNECT:
        return fail_here(b, "local broker ended the bridge's session", NULL, now);
    case MQTT_PINGRESP:
        return true;
    default:
        break;
    }
    return fail_here(b, "local broker sent an unexpected packet", NULL, now);
}

bool broker_bridge_input(bridge *b, bridge_side side, const uint8_t *data, size_t len, uint64_t now)
{
    link *k = &b->l[side];

    if (b->state == BRIDGE_WAIT)
        return false;
    if (side == BRIDGE_LOCAL && b->state < BRIDGE_DIAL_LOCAL)
        return true; /* the primed link's last bytes, before the platform closes it */
    if (!bvec_put(&k->in, data, len))
        return fail_here(b, "out of memory for input", NULL, now);
    if (side == BRIDGE_REMOTE)
        b->last_rx = now;
    while (k->in.off < k->in.len) {
        mqtt_packet pk;
        size_t used = 0;
        const uint8_t *raw = k->in.p + k->in.off;
        mqtt_err e = mqtt_decode(raw, k->in.len - k->in.off, MQTT_FROM_SERVER, k->level,
                                 b->s.max_packet, &pk, &used);
        bool ok;

        if (e == MQTT_NEED_MORE)
            break;
        if (e == MQTT_ERR_TOO_LARGE)
            return fail_here(b, side == BRIDGE_REMOTE ? "remote" : "local",
                             " broker sent a packet over limits.max_packet_size", now);
        if (e != MQTT_OK)
            return fail_here(b, side == BRIDGE_REMOTE ? "remote" : "local",
                             " broker sent a malformed packet", now);
        ok = side == BRIDGE_REMOTE ? remote_packet(b, &pk, raw, now) : local_packet(b, &pk, now);
        if (!ok)
            return b->state != BRIDGE_WAIT; /* primed: input dropped, not failed */
        k->in.off += used;
    }
    return true;
}

/* ---- timers --------------------------------------------------------------- */

static bool remote_open(const bridge *b)
{
    return b->primed && b->state >= BRIDGE_REMOTE_CONNACK; /* the prime has no remote */
}

uint64_t broker_bridge_deadline(const bridge *b)
{
    uint64_t ka = (uint64_t)b->s.keepalive_s * 1000u, d;

    if (b->state == BRIDGE_WAIT)
        return b->retry_at;
    d = b->state == BRIDGE_UP ? UINT64_MAX : b->started + BRIDGE_CONNECT_TIMEOUT_MS;
    if (remote_open(b)) {
        uint64_t ping = b->last_tx + ka;
        uint64_t dead = b->last_rx + ka * BRIDGE_KEEPALIVE_GRACE_NUM / BRIDGE_KEEPALIVE_GRACE_DEN;

        if (ping < d)
            d = ping;
        if (dead < d)
            d = dead;
    }
    if (b->state >= BRIDGE_LOCAL_SUBACK && b->local_ka_ms > 0 &&
        b->local_tx + b->local_ka_ms / 2 < d)
        d = b->local_tx + b->local_ka_ms / 2;
    return d;
}

bool broker_bridge_tick(bridge *b, uint32_t random, uint64_t now)
{
    uint64_t ka = (uint64_t)b->s.keepalive_s * 1000u;

    if (b->state == BRIDGE_WAIT) {
        if (now < b->retry_at)
            return true;
        b->state = b->primed ? BRIDGE_DIAL_REMOTE : BRIDGE_DIAL_LOCAL;
        b->started = now;
        return true;
    }
    if (b->state != BRIDGE_UP && now >= b->started + BRIDGE_CONNECT_TIMEOUT_MS) {
        broker_bridge_fail(b, "connect timed out", random, now);
        return false;
    }
    if (b->state >= BRIDGE_LOCAL_SUBACK && b->local_ka_ms > 0 &&
        now >= b->local_tx + b->local_ka_ms / 2) {
        uint8_t *w = emit_begin(b, BRIDGE_LOCAL, 2);

        if (w == NULL ||
            !emit_done(b, BRIDGE_LOCAL, mqtt_encode_empty(w, 2, MQTT_PINGREQ), now)) {
            broker_bridge_fail(b, "out of memory for a PINGREQ", random, now);
            return false;
        }
    }
    if (!remote_open(b))
        return true;
    if (now >= b->last_rx + ka * BRIDGE_KEEPALIVE_GRACE_NUM / BRIDGE_KEEPALIVE_GRACE_DEN) {
        broker_bridge_fail(b, "remote keep alive timed out", random, now);
        return false;
    }
    if (now >= b->last_tx + ka) {
        uint8_t *w = emit_begin(b, BRIDGE_REMOTE, 2);

        if (w == NULL ||
            !emit_done(b, BRIDGE_REMOTE, mqtt_encode_empty(w, 2, MQTT_PINGREQ), now)) {
            broker_bridge_fail(b, "out of memory for a PINGREQ", random, now);
            return false;
        }
    }
    return true;
}
