/*
 * bridge.c - the bridge's two client links: connecting, their input and
 * timers (bridge.h has the design: identifiers relayed unchanged, the
 * local session as the durable queue, the order of a connection). The
 * relay between them is bridge_relay.c's.
 */
#include "broker/bridge.h"
#include "broker/bridge_internal.h"

#include <stdlib.h>
#include <string.h>

#include "mqtt/mqtt.h"

/* ---- buffers (the rest are inline in bridge_internal.h) ------------------ */

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
    b->l[BRIDGE_REMOTE].level = s->protocol == MQTT_LEVEL_5 ? MQTT_LEVEL_5 : MQTT_LEVEL_311;
    b->l[BRIDGE_LOCAL].level = MQTT_LEVEL_5;
    b->ka_s = s->keepalive_s;
    b->r_max_qos = 2;
    b->r_retain = true;
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
    bvec_free(&b->scratch);
    free(b->lowered);
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

/* Append to the error: a reason code as " 0xNN", then the peer's Reason
 * String if it sent one, as ": TEXT" with anything but printable ASCII
 * shown as '?' (the text is the peer's and goes to the log). */
static void append_reason(bridge *b, uint8_t code, const mqtt_props *pr)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = strlen(b->error);
    char tail[5] = {' ', '0', 'x', hex[code >> 4], hex[code & 15]};

    for (size_t i = 0; i < sizeof tail && n + 1 < sizeof b->error; i++)
        b->error[n++] = tail[i];
    if (pr != NULL && (pr->present & MQTT_PROP_BIT(MQTT_PROP_REASON_STRING))) {
        for (size_t i = 0; i < 2 && n + 1 < sizeof b->error; i++)
            b->error[n++] = ": "[i];
        for (size_t i = 0; i < pr->reason_string.len && n + 1 < sizeof b->error; i++) {
            uint8_t c = pr->reason_string.p[i];
            b->error[n++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
        }
    }
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

/* The Maximum Packet Size to give the source side of direction dir so
 * that what it sends still fits `limit` on the other side after crossing:
 * the limit less the longest prefix growth of that direction's mappings
 * and then up to 3 more bytes of Remaining Length. */
static uint32_t fit_packet(const bridge *b, bridge_dir dir, uint32_t limit)
{
    size_t grow = 0;

    for (size_t i = 0; i < b->s.nmaps; i++) {
        const bridge_map *m = &b->s.maps[i];
        size_t from = strlen(dir == BRIDGE_OUT ? m->local_prefix : m->remote_prefix);
        size_t to = strlen(dir == BRIDGE_OUT ? m->remote_prefix : m->local_prefix);

        if ((m->dir & dir) && to > from && to - from > grow)
            grow = to - from;
    }
    if (grow > 0)
        grow += 3;
    return limit > grow ? limit - (uint32_t)grow : 1;
}

/* ---- connecting ----------------------------------------------------------- */

void broker_bridge_opened(bridge *b, bridge_side side, uint64_t now)
{
    mqtt_connect c;
    uint8_t props[32];
    size_t np = 0, n;
    uint8_t *w;

    memset(&c, 0, sizeof c);
    c.client_id.p = (const uint8_t *)b->s.client_id;
    c.client_id.len = strlen(b->s.client_id);
    c.clean_session = false; /* both sessions persist across links */
    /* Session Expiry "never" at 5.0: the session is the durable queue
     * (locally), or keeps what the remote has for us (remotely). */
    np = mqtt_prop_u32(props, sizeof props, MQTT_PROP_SESSION_EXPIRY, UINT32_MAX);
    if (side == BRIDGE_REMOTE) {
        if (b->state != BRIDGE_DIAL_REMOTE)
            return;
        c.level = b->l[BRIDGE_REMOTE].level;
        c.bridge = c.level == MQTT_LEVEL_311 && b->s.try_private;
        c.keepalive = b->s.keepalive_s;
        b->ka_s = b->s.keepalive_s;
        b->r_max_packet = 0;
        b->r_receive_max = 0;
        b->r_max_qos = 2;
        b->r_retain = true;
        if (c.level == MQTT_LEVEL_5) {
            /* No more in flight toward us than the local broker takes from
             * the bridge, no packet larger than it takes once crossed (the
             * remote drops a larger one rather than have it fail the local
             * link); no Topic Alias Maximum: the remote sends no aliases. */
            if (b->s.receive_max > 0 && b->s.receive_max < UINT16_MAX)
                np += mqtt_prop_u16(props + np, sizeof props - np, MQTT_PROP_RECEIVE_MAXIMUM,
                                    b->s.receive_max);
            if (b->s.max_packet > 0)
                np += mqtt_prop_u32(props + np, sizeof props - np,
                                    MQTT_PROP_MAXIMUM_PACKET_SIZE,
                                    fit_packet(b, BRIDGE_IN, b->s.max_packet));
            c.props.raw.p = props;
            c.props.raw.len = np;
        }
        b->state = BRIDGE_REMOTE_CONNACK;
        b->last_rx = now;
    } else {
        if (b->state != BRIDGE_DIAL_LOCAL)
            return;
        c.level = MQTT_LEVEL_5;
        c.keepalive = 0; /* an in-process link: no peer to lose silently */
        /* The remote's limits become ours toward the local broker, which
         * then keeps to them (its window, its size check): the bridge
         * relays without holding messages of its own. */
        if (b->r_receive_max > 0)
            np += mqtt_prop_u16(props + np, sizeof props - np, MQTT_PROP_RECEIVE_MAXIMUM,
                                b->r_receive_max);
        if (b->r_max_packet > 0)
            np += mqtt_prop_u32(props + np, sizeof props - np, MQTT_PROP_MAXIMUM_PACKET_SIZE,
                                fit_packet(b, BRIDGE_OUT, b->r_max_packet));
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
        /* At 5.0 (always locally): no echo of what we relay in, which is
         * the loop prevention; the retain flag kept as published. */
        if (b->l[side].level == MQTT_LEVEL_5)
            opts[count] |= MQTT_SUBOPT_NO_LOCAL | MQTT_SUBOPT_RETAIN_AS_PUBLISHED;
        cap += len + 3;
        count++;
    }
    if (count == 0)
        return false;
    /* Packet id 1: nothing else of ours is in flight on this link yet. */
    w = emit_begin(b, side, cap);
    n = w == NULL ? 0
        : b->l[side].level == MQTT_LEVEL_5
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

        if (mqtt_decode(h->p + h->off, h->len - h->off, MQTT_FROM_SERVER,
                        b->l[BRIDGE_REMOTE].level, 0, &pk, &used) != MQTT_OK)
            return fail_here(b, "held packet unreadable", NULL, now); /* cannot happen */
        h->off += used;
        if (!bk_bridge_relay(b, BRIDGE_REMOTE, &pk, now))
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

/* A 5.0 remote's CONNACK properties: kept for the local CONNECT and the
 * relay. Its Server Keep Alive is the keep alive from now on
 * [MQTT-3.2.2-21]; a Server Reference is ignored (bridge.h). */
static void remote_limits(bridge *b, const mqtt_props *pr)
{
    if (pr->present & MQTT_PROP_BIT(MQTT_PROP_RECEIVE_MAXIMUM))
        b->r_receive_max = pr->receive_maximum;
    if (pr->present & MQTT_PROP_BIT(MQTT_PROP_MAXIMUM_PACKET_SIZE))
        b->r_max_packet = pr->maximum_packet_size;
    if (pr->present & MQTT_PROP_BIT(MQTT_PROP_MAXIMUM_QOS))
        b->r_max_qos = pr->maximum_qos;
    if (pr->present & MQTT_PROP_BIT(MQTT_PROP_RETAIN_AVAILABLE))
        b->r_retain = pr->retain_available != 0;
    if (pr->present & MQTT_PROP_BIT(MQTT_PROP_SERVER_KEEP_ALIVE))
        b->ka_s = pr->server_keep_alive;
}

static bool remote_packet(bridge *b, const mqtt_packet *pk, const uint8_t *raw, uint64_t now)
{
    bool ok;
    char code[8];

    if (is_flow(pk->type)) {
        if (b->state == BRIDGE_UP)
            return bk_bridge_relay(b, BRIDGE_REMOTE, pk, now);
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
        if (pk->u.connack.return_code != 0 && b->l[BRIDGE_REMOTE].level == MQTT_LEVEL_5) {
            set_error(b, "remote refused the connection: CONNACK reason", NULL);
            append_reason(b, pk->u.connack.return_code, &pk->u.connack.props);
            return fail_here(b, b->error, NULL, now);
        }
        if (pk->u.connack.return_code != 0) {
            code[0] = (char)('0' + pk->u.connack.return_code % 10);
            code[1] = '\0';
            return fail_here(b, "remote refused the connection: CONNACK code ", code, now);
        }
        if (b->l[BRIDGE_REMOTE].level == MQTT_LEVEL_5)
            remote_limits(b, &pk->u.connack.props);
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
    case MQTT_DISCONNECT: /* 5.0 only (the decoder refuses it from a 3.1.1 server) */
        /* A Server Reference (redirection) is ignored: the bridge goes
         * where it is configured to, and retries there. */
        set_error(b, "remote disconnected the bridge: reason", NULL);
        append_reason(b, pk->u.disconnect.reason, &pk->u.disconnect.props);
        return fail_here(b, b->error, NULL, now);
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
        return bk_bridge_relay(b, BRIDGE_LOCAL, pk, now);
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
        set_error(b, "local broker ended the bridge's session: reason", NULL);
        append_reason(b, pk->u.disconnect.reason, &pk->u.disconnect.props);
        return fail_here(b, b->error, NULL, now);
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

/* The remote link's keep alive runs (a Server Keep Alive of 0 turns it
 * off). */
static bool remote_open(const bridge *b)
{
    /* The prime has no remote. */
    return b->primed && b->state >= BRIDGE_REMOTE_CONNACK && b->ka_s > 0;
}

uint64_t broker_bridge_deadline(const bridge *b)
{
    uint64_t ka = (uint64_t)b->ka_s * 1000u, d;

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
    uint64_t ka = (uint64_t)b->ka_s * 1000u;

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
