/*
 * bridge_relay.c - the bridge's relay of the publish flows between its two
 * links: a PUBLISH crosses with its properties and mapped topic, at the
 * QoS the remote allows (the lowered set answers PUBRELs the remote will
 * never see), and the acknowledgements cross back.
 */
#include "broker/bridge_internal.h"

/* An acknowledgement; at level 5 with its reason code (a 3.1.1 one has
 * none to carry). */
static bool emit_ack(bridge *b, bridge_side side, mqtt_type type, uint16_t id, uint8_t reason,
                     uint64_t now)
{
    uint8_t *w = emit_begin(b, side, 8);

    if (w == NULL)
        return false;
    return emit_done(b, side,
                     b->l[side].level == MQTT_LEVEL_5
                         ? mqtt_encode_ack5(w, 8, type, id, reason, NULL, 0)
                         : mqtt_encode_ack(w, 8, b->l[side].level, type, id),
                     now);
}

/* ---- the lowered set ------------------------------------------------------ */

static bool lowered(const bridge *b, uint16_t id)
{
    return b->lowered != NULL && (b->lowered[id >> 3] >> (id & 7)) & 1u;
}

static bool lower_mark(bridge *b, uint16_t id)
{
    if (b->lowered == NULL && (b->lowered = calloc(1, IDMAP_BYTES)) == NULL)
        return false;
    b->lowered[id >> 3] = (uint8_t)(b->lowered[id >> 3] | (1u << (id & 7)));
    return true;
}

static void lower_clear(bridge *b, uint16_t id)
{
    if (b->lowered != NULL)
        b->lowered[id >> 3] = (uint8_t)(b->lowered[id >> 3] & ~(1u << (id & 7)));
}

/* ---- relaying ------------------------------------------------------------- */

/* The properties a message crosses with (5.0 to 5.0): all of them but a
 * Topic Alias and Subscription Identifiers, which belong to the link they
 * came over (neither is expected: the bridge asks for neither). */
static bool crossing_props(bridge *b, const mqtt_publish *p, mqtt_bytes *out)
{
    const uint64_t drop =
        MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS) | MQTT_PROP_BIT(MQTT_PROP_SUBSCRIPTION_ID);
    size_t n;

    *out = p->props.raw;
    if (!(p->props.present & drop))
        return true;
    bvec_clear(&b->scratch);
    if (!bvec_room(&b->scratch, p->props.raw.len))
        return false;
    n = mqtt_props_filter(&p->props.raw, drop, b->scratch.p, b->scratch.cap);
    if (n == SIZE_MAX)
        return false;
    out->p = b->scratch.p;
    out->len = n;
    return true;
}

/* A local delivery the remote is not sent (too large for it) or is sent
 * at a lower QoS than delivered (its Maximum QoS) is acknowledged to the
 * local broker by the bridge: QoS 1 with a PUBACK; QoS 2 with a PUBREC,
 * and its PUBREL answered here (the lowered set) unless the PUBREC is an
 * error, which ends the delivery there. */
static bool settle_local(bridge *b, const mqtt_publish *p, uint8_t reason, uint64_t now)
{
    if (p->qos == 0)
        return true;
    if (p->qos == 2 && reason < 0x80 && !lower_mark(b, p->packet_id))
        return false;
    return emit_ack(b, BRIDGE_LOCAL, p->qos == 1 ? MQTT_PUBACK : MQTT_PUBREC, p->packet_id, reason,
                    now);
}

/* A PUBLISH from `from`, to the other side under its name there. */
static bool relay_publish(bridge *b, bridge_side from, const mqtt_publish *p, uint64_t now)
{
    bridge_side to = from == BRIDGE_REMOTE ? BRIDGE_LOCAL : BRIDGE_REMOTE;
    char topic[2 * BRIDGE_TOPIC_MAX + 1024];
    mqtt_publish q = *p;
    mqtt_bytes props = {NULL, 0};
    bool v5 = b->l[to].level == MQTT_LEVEL_5;
    size_t n, size;
    uint8_t *w;

    n = broker_bridge_map_topic(&b->s, from == BRIDGE_REMOTE ? BRIDGE_IN : BRIDGE_OUT, p->topic.p,
                         p->topic.len, topic, sizeof topic);
    if (n == 0)
        return fail_here(b, from == BRIDGE_REMOTE ? "remote" : "local",
                         " broker sent a topic no mapping covers", now);
    q.topic.p = (const uint8_t *)topic;
    q.topic.len = n;
    if (v5 && b->l[from].level == MQTT_LEVEL_5 && !crossing_props(b, p, &props))
        return fail_here(b, "out of memory relaying a message", NULL, now);
    if (to == BRIDGE_REMOTE) {
        if (!b->r_retain)
            q.retain = false; /* Retain Available 0: a retained PUBLISH is an error */
        if (q.qos > b->r_max_qos) {
            q.qos = b->r_max_qos;
            q.packet_id = q.qos ? p->packet_id : 0;
            q.dup = q.qos ? p->dup : false;
        }
        size = v5 ? mqtt_publish5_size(n, p->payload.len, q.qos, props.len)
                  : mqtt_publish_size(b->l[to].level, n, p->payload.len, q.qos);
        if (b->r_max_packet > 0 && size > b->r_max_packet) {
            /* Cannot happen while the local broker keeps to the
             * Maximum Packet Size we gave it; dropped as it would drop it. */
            b->stats.dropped++;
            if (!settle_local(b, p, MQTT_RC_UNSPECIFIED_ERROR, now))
                return fail_here(b, "out of memory settling a message", NULL, now);
            return true;
        }
        if (q.qos < p->qos) { /* lowered: the local side is settled by us */
            if (q.qos == 0 && !settle_local(b, p, 0, now))
                return fail_here(b, "out of memory settling a message", NULL, now);
            if (q.qos == 1 && !lower_mark(b, p->packet_id))
                return fail_here(b, "out of memory settling a message", NULL, now);
        } else if (p->qos == 2) {
            lower_clear(b, p->packet_id); /* the remote takes QoS 2 again */
        }
    } else {
        size = v5 ? mqtt_publish5_size(n, p->payload.len, q.qos, props.len)
                  : mqtt_publish_size(b->l[to].level, n, p->payload.len, q.qos);
    }
    w = emit_begin(b, to, size);
    if (w == NULL ||
        !emit_done(b, to,
                   v5 ? mqtt_encode_publish5(w, size, &q, &props, props.len ? 1 : 0)
                      : mqtt_encode_publish(w, size, b->l[to].level, &q),
                   now))
        return fail_here(b, "out of memory relaying a message", NULL, now);
    if (from == BRIDGE_REMOTE)
        b->stats.received++;
    else
        b->stats.sent++;
    return true;
}

/* A packet of the publish flows from `from`, relayed to the other side. */
bool bk_bridge_relay(bridge *b, bridge_side from, const mqtt_packet *pk, uint64_t now)
{
    bridge_side to = from == BRIDGE_REMOTE ? BRIDGE_LOCAL : BRIDGE_REMOTE;

    const mqtt_ack *a = &pk->u.ack;
    mqtt_type type = pk->type;

    if (pk->type == MQTT_PUBLISH)
        return relay_publish(b, from, &pk->u.publish, now);
    if ((type == MQTT_PUBACK || type == MQTT_PUBREC) && a->reason >= 0x80) {
        /* Local: at 3.1.1 the remote is told it was taken (ADR-060).
         * Remote: the local broker is told, and ends the delivery. */
        if (from == BRIDGE_LOCAL)
            b->stats.refused++;
        else
            b->stats.rejected++;
    }
    if (lowered(b, a->packet_id)) {
        if (from == BRIDGE_REMOTE && type == MQTT_PUBACK) {
            /* A QoS 2 delivery the remote took at QoS 1. */
            if (a->reason >= 0x80)
                lower_clear(b, a->packet_id);
            type = MQTT_PUBREC;
        } else if (from == BRIDGE_LOCAL && type == MQTT_PUBREL) {
            lower_clear(b, a->packet_id);
            if (!emit_ack(b, BRIDGE_LOCAL, MQTT_PUBCOMP, a->packet_id, 0, now))
                return fail_here(b, "out of memory relaying an acknowledgement", NULL, now);
            return true;
        }
    }
    if (!emit_ack(b, to, type, a->packet_id, a->reason, now))
        return fail_here(b, "out of memory relaying an acknowledgement", NULL, now);
    return true;
}

