/*
 * client.c - simulated MQTT 3.1.1 and 5.0 clients. They behave like a correct
 * client library: wait for CONNACK, keep their session state (unacknowledged
 * publishes, inbound QoS 2 ids awaiting PUBREL) across reconnects when the
 * broker says the session is present and drop it otherwise, retransmit with
 * DUP after a reconnect, filter QoS 2 duplicates by packet id, and
 * acknowledge in order, sometimes late. Every surprise from the broker is an
 * invariant violation reported through sim_fail.
 *
 * A 5.0 client (sclient.v5, drawn per seed) announces a Receive Maximum, a
 * Maximum Packet Size and a Topic Alias Maximum in its CONNECT, and a
 * Session Expiry Interval for a persistent session (which its DISCONNECT
 * sometimes sets to 0: the session ends there); it uses Topic Aliases
 * towards the broker up to the broker's maximum, resolves the broker's,
 * and puts a Message Expiry Interval on some of its publishes. It checks
 * on its own side: never more unacknowledged QoS 1/2 PUBLISHes from the
 * broker than its Receive Maximum [MQTT-3.3.4-7], no alias beyond its
 * maximum [MQTT-3.3.2-9] nor one never set, a Message Expiry Interval no
 * larger than the publisher's; net.c checks the Maximum Packet Size.
 */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PKT_MAX = 1024 };

void client_init(world *w, int i)
{
    sclient *cl = &w->cl[i];
    memset(cl, 0, sizeof *cl);
    if (i == SIM_FINAL)
        snprintf(cl->id, sizeof cl->id, "final");
    else
        snprintf(cl->id, sizeof cl->id, "c%d", i);
    cl->conn = -1;
    cl->st = CS_OFF;
    cl->state_inc = -1;
    cl->next_pid = 1;
    for (int t = 0; t < SIM_TOPICS; t++)
        cl->got_retained[t] = -1;
}

const char *sim_identity(const world *w, int client)
{
    if (!w->idents || client >= 5)
        return NULL;
    return client < 3 ? "idA" : "idB";
}

static mqtt_bytes str(const char *s)
{
    return (mqtt_bytes){(const uint8_t *)s, strlen(s)};
}

static int find_infl(const sclient *cl, uint16_t pid)
{
    for (int j = 0; j < cl->ninfl; j++)
        if (cl->infl[j].pid == pid)
            return j;
    return -1;
}

static int find_await(const sclient *cl, uint16_t pid)
{
    for (int j = 0; j < cl->nawait; j++)
        if (cl->await[j] == pid)
            return j;
    return -1;
}

/* A packet id not used by any of the client's unacknowledged publishes. */
static uint16_t alloc_pid(sclient *cl)
{
    for (;;) {
        uint16_t pid = cl->next_pid++;
        if (cl->next_pid == 0)
            cl->next_pid = 1;
        if (find_infl(cl, pid) < 0)
            return pid;
    }
}

/* A PUBLISH of the broker's on connection k is acknowledged (PUBACK or
 * PUBCOMP written): it no longer counts toward the Receive Maximum. */
static void unacked_del(sconn *c, uint16_t pid)
{
    for (int j = 0; j < c->nunacked; j++)
        if (c->unacked[j] == pid) {
            c->unacked[j] = c->unacked[--c->nunacked];
            return;
        }
}

static void write_ack(world *w, int i, uint8_t type, uint16_t pid)
{
    static const uint8_t kinds[16] = {
        [MQTT_PUBACK] = MK_PUBACK, [MQTT_PUBREC] = MK_PUBREC,
        [MQTT_PUBREL] = MK_PUBREL, [MQTT_PUBCOMP] = MK_PUBCOMP,
    };
    uint8_t buf[4];
    mark m = {.kind = kinds[type], .pid = pid};
    if (type == MQTT_PUBACK || type == MQTT_PUBCOMP)
        unacked_del(&w->conns[w->cl[i].conn], pid);
    net_write(w, w->cl[i].conn, buf,
              mqtt_encode_ack(buf, sizeof buf, MQTT_LEVEL_311, (mqtt_type)type, pid), m);
}

/* Acknowledgements go out in the order they were due; some wait. */
static void queue_ack(world *w, int i, uint8_t type, uint16_t pid)
{
    sclient *cl = &w->cl[i];
    if (cl->st == CS_READY && cl->nacks == 0 && (w->quiesce || rng_pct(&w->r, 70))) {
        write_ack(w, i, type, pid);
        return;
    }
    if (cl->nacks == SIM_MAX_ACKS)
        abort(); /* harness limit */
    cl->acks[cl->nacks++] = (pending_ack){type, pid};
}

void client_flush_acks(world *w, int i, int max)
{
    sclient *cl = &w->cl[i];
    if (cl->st != CS_READY)
        return;
    int n = max < cl->nacks ? max : cl->nacks;
    for (int j = 0; j < n; j++)
        write_ack(w, i, cl->acks[j].type, cl->acks[j].pid);
    memmove(cl->acks, cl->acks + n, (size_t)(cl->nacks - n) * sizeof cl->acks[0]);
    cl->nacks -= n;
}

void client_connect(world *w, int i, bool clean)
{
    sclient *cl = &w->cl[i];
    int k = net_open(w, i);
    if (k < 0)
        return;
    cl->conn = k;
    cl->st = CS_CONNECTING;
    cl->nacks = 0; /* acknowledgements owed on the old connection are lost */
    /* State of a session that has ended is gone too. The simulated client
     * knows exactly when: a real client drops it when its clean connection
     * ends (which may be before the broker saw that connection's CONNECT at
     * all) or when it starts clean. Expiry is the broker's doing: a real
     * client learns of it from a CONNACK without session present, which
     * the broker sends only once the deletion is on disk, so until the
     * store has let go of the session the client keeps its half (a crash
     * may bring the session back). */
    const incarnation *si = cl->state_inc >= 0 ? &w->inc[cl->state_inc] : NULL;
    if (si && !si->alive && (!si->expired || w->store_inc[i] != cl->state_inc)) {
        cl->ninfl = 0;
        cl->nawait = 0;
        cl->state_inc = -1;
    }
    mqtt_connect cp = {
        .level = MQTT_LEVEL_311, .clean_session = clean, .keepalive = 0, .client_id = str(cl->id)};
    sconn *c = &w->conns[k];
    c->level = cl->v5 ? MQTT_LEVEL_5 : MQTT_LEVEL_311;
    memset(c->in_alias, 0, sizeof c->in_alias);
    uint8_t props[64];
    size_t pl = 0;
    if (cl->v5) {
        /* Clean Start with no Session Expiry Interval (0): the session ends
         * with the connection, as a 3.1.1 clean session; a persistent one
         * is resumed and lives sess_expiry seconds offline (the broker's
         * session.expiry caps it). */
        cp.level = MQTT_LEVEL_5;
        if (!clean)
            pl += mqtt_prop_u32(props + pl, sizeof props - pl, MQTT_PROP_SESSION_EXPIRY,
                                cl->sess_expiry);
        if (cl->recv_max)
            pl += mqtt_prop_u16(props + pl, sizeof props - pl, MQTT_PROP_RECEIVE_MAXIMUM,
                                cl->recv_max);
        if (cl->max_packet)
            pl += mqtt_prop_u32(props + pl, sizeof props - pl, MQTT_PROP_MAXIMUM_PACKET_SIZE,
                                cl->max_packet);
        if (cl->alias_max)
            pl += mqtt_prop_u16(props + pl, sizeof props - pl, MQTT_PROP_TOPIC_ALIAS_MAXIMUM,
                                cl->alias_max);
        cp.props.raw = (mqtt_bytes){props, pl};
    }
    uint8_t buf[PKT_MAX];
    mark m = {.kind = MK_CONNECT, .clean = clean};
    sim_trace(w, "%s connects on conn %d (%s%s)", cl->id, k, clean ? "clean" : "persistent",
              cl->v5 ? ", MQTT 5.0" : "");
    net_write(w, k, buf, mqtt_encode_connect(buf, sizeof buf, &cp), m);
}

static void write_publish(world *w, int i, int mi, uint16_t pid, bool dup)
{
    const smsg *sm = &w->msgs[mi];
    /* "m<index>", padded in tight mode so output buffers fill up; the
     * padding length is a function of the index so resends are identical. */
    char payload[512];
    int len = snprintf(payload, sizeof payload, "m%d", mi);
    if (w->tight) {
        int pad = (mi * 37) % 400;
        memset(payload + len, '.', (size_t)pad);
        payload[len + pad] = '\0';
    }
    w->msgs[mi].plen = (uint16_t)strlen(payload);
    sclient *cl = &w->cl[i];
    sconn *c = &w->conns[cl->conn];
    if (c->level == MQTT_LEVEL_5) {
        /* Its Message Expiry Interval, the same on a resend; a Topic Alias
         * while the broker allows one per topic: set with the topic, then
         * the alias alone [MQTT-3.3.2-12]. */
        uint8_t props[16];
        size_t pl = 0;
        if (sm->expiry_s)
            pl += mqtt_prop_u32(props + pl, sizeof props - pl, MQTT_PROP_MESSAGE_EXPIRY,
                                sm->expiry_s);
        bool aliased = false;
        if (cl->use_alias && sm->topic + 1u <= c->srv_alias_max) {
            pl += mqtt_prop_u16(props + pl, sizeof props - pl, MQTT_PROP_TOPIC_ALIAS,
                                (uint16_t)(sm->topic + 1));
            aliased = c->alias_set[sm->topic];
            c->alias_set[sm->topic] = true;
            w->n_alias_up += aliased;
        }
        mqtt_publish p = {
            .qos = sm->qos,
            .dup = dup,
            .retain = sm->retain,
            .packet_id = pid,
            .topic = aliased ? (mqtt_bytes){NULL, 0} : str(sim_topics[sm->topic]),
            .payload = str(payload),
        };
        mqtt_bytes blk = {props, pl};
        uint8_t buf[PKT_MAX];
        mark m = {.kind = MK_PUBLISH, .qos = sm->qos, .topic = sm->topic, .pid = pid, .arg = mi};
        net_write(w, cl->conn, buf, mqtt_encode_publish5(buf, sizeof buf, &p, &blk, 1), m);
        return;
    }
    mqtt_publish p = {
        .qos = sm->qos,
        .dup = dup,
        .retain = sm->retain,
        .packet_id = pid,
        .topic = str(sim_topics[sm->topic]),
        .payload = str(payload),
    };
    uint8_t buf[PKT_MAX];
    mark m = {.kind = MK_PUBLISH, .qos = sm->qos, .topic = sm->topic, .pid = pid, .arg = mi};
    net_write(w, w->cl[i].conn, buf, mqtt_encode_publish(buf, sizeof buf, MQTT_LEVEL_311, &p),
              m);
}

void client_publish(world *w, int i, int topic, uint8_t qos, bool retain)
{
    sclient *cl = &w->cl[i];
    if (cl->st != CS_READY || cl->ninfl == SIM_MAX_INFLIGHT || w->nmsgs == SIM_MAX_MSGS)
        return;
    int mi = w->nmsgs++;
    w->msgs[mi] = (smsg){.pub = i, .seq = ++cl->next_seq, .topic = (uint8_t)topic, .qos = qos,
                         .retain = retain};
    /* A 5.0 publisher puts a Message Expiry Interval of 1-10 s on a third
     * of its messages (drawn from the index: other draws stay as they were). */
    if (cl->v5 && mi % 3 == 0) {
        w->msgs[mi].expiry_s = 1 + (uint32_t)(mi / 3 % 10);
        w->n_msg_expiry++;
    }
    uint16_t pid = qos ? alloc_pid(cl) : 0;
    sim_trace(w, "%s publishes m%d to %s qos %u%s pid %u", cl->id, mi, sim_topics[topic], qos,
              retain ? " retained" : "", pid);
    write_publish(w, i, mi, pid, false);
    if (qos)
        cl->infl[cl->ninfl++] =
            (outmsg){mi, pid, (uint8_t)(qos == 1 ? OS_WAIT_PUBACK : OS_WAIT_PUBREC)};
}

void client_clear_retained(world *w, int i, int topic)
{
    sclient *cl = &w->cl[i];
    if (cl->st != CS_READY)
        return;
    mqtt_publish p = {.qos = 0, .retain = true, .topic = str(sim_topics[topic])};
    uint8_t buf[PKT_MAX];
    mark m = {.kind = MK_PUBLISH, .qos = 0, .topic = (uint8_t)topic, .arg = -1};
    sim_trace(w, "%s clears the retained message of %s", cl->id, sim_topics[topic]);
    net_write(w, cl->conn, buf,
              mqtt_encode_publish(buf, sizeof buf, w->conns[cl->conn].level, &p), m);
}

void client_subscribe(world *w, int i, int filter, uint8_t qos)
{
    sclient *cl = &w->cl[i];
    if (cl->st != CS_READY)
        return;
    uint16_t pid = alloc_pid(cl);
    cl->sub_qos[pid % sizeof cl->sub_qos] = qos;
    mqtt_bytes f = str(sim_filters[filter]);
    uint8_t buf[PKT_MAX];
    mark m = {.kind = MK_SUBSCRIBE, .qos = qos, .pid = pid, .arg = filter};
    sim_trace(w, "%s subscribes to %s qos %u", cl->id, sim_filters[filter], qos);
    net_write(w, cl->conn, buf,
              mqtt_encode_subscribe(buf, sizeof buf, w->conns[cl->conn].level, pid, &f, &qos, 1),
              m);
}

void client_unsubscribe(world *w, int i, int filter)
{
    sclient *cl = &w->cl[i];
    if (cl->st != CS_READY)
        return;
    uint16_t pid = alloc_pid(cl);
    mqtt_bytes f = str(sim_filters[filter]);
    uint8_t buf[PKT_MAX];
    mark m = {.kind = MK_UNSUBSCRIBE, .pid = pid, .arg = filter};
    sim_trace(w, "%s unsubscribes from %s", cl->id, sim_filters[filter]);
    net_write(w, cl->conn, buf,
              mqtt_encode_unsubscribe(buf, sizeof buf, w->conns[cl->conn].level, pid, &f, 1), m);
}

void client_disconnect(world *w, int i)
{
    sclient *cl = &w->cl[i];
    if (cl->st != CS_READY)
        return;
    uint8_t buf[16];
    mark m = {.kind = MK_DISCONNECT};
    const incarnation *in = w->conns[cl->conn].inc >= 0 ? &w->inc[w->conns[cl->conn].inc] : NULL;
    if (cl->v5 && in && !in->clean && rng_pct(&w->r, 30)) {
        /* A persistent session's interval changed at DISCONNECT: to 0 it
         * ends there, or to another value [MQTT-3.14.2-2 does not apply:
         * the CONNECT's was not 0]. */
        uint32_t v = rng_pct(&w->r, 50) ? 0 : 1 + rng_below(&w->r, 4);
        uint8_t props[8];
        mqtt_bytes blk = {props, mqtt_prop_u32(props, sizeof props, MQTT_PROP_SESSION_EXPIRY, v)};
        m.clean = v == 0;
        m.arg = (int32_t)v;
        sim_trace(w, "%s disconnects (Session Expiry Interval %u)", cl->id, v);
        net_write(w, cl->conn, buf,
                  mqtt_encode_reason5(buf, sizeof buf, MQTT_DISCONNECT, 0, &blk, 1), m);
    } else {
        m.arg = -1;
        sim_trace(w, "%s disconnects", cl->id);
        net_write(w, cl->conn, buf, mqtt_encode_empty(buf, sizeof buf, MQTT_DISCONNECT), m);
    }
    w->conns[cl->conn].expect_close = true;
    cl->st = CS_DISCONNECTING;
    /* Half the clients also end their sending (EOF) and read until the
     * broker closes; the others wait for the broker to close first. */
    if (rng_pct(&w->r, 50))
        net_fin(w, cl->conn);
}

void client_closed(world *w, int k)
{
    sconn *c = &w->conns[k];
    sclient *cl = &w->cl[c->client];
    if (cl->conn == k) {
        cl->conn = -1;
        cl->st = CS_OFF;
    }
    c->client = -1;
}

static void on_connack(world *w, int i, int k, const mqtt_connack *ca)
{
    sclient *cl = &w->cl[i];
    sconn *c = &w->conns[k];
    if (cl->st != CS_CONNECTING || c->connack_seen) {
        sim_fail(w, "%s: unexpected CONNACK", cl->id);
        return;
    }
    c->connack_seen = true;
    if (c->pred_refused) {
        /* One persistent session too many for its identity: refused, and
         * the broker closes the connection. */
        /* 5.0: Quota exceeded. */
        uint8_t want = c->level == MQTT_LEVEL_5 ? MQTT_RC_QUOTA_EXCEEDED : MQTT_CONNACK_NOT_AUTHORIZED;
        if (ca->return_code != want || ca->session_present)
            sim_fail(w, "%s: CONNACK %u (session present %d), the model expects a refusal "
                        "(0x05: limits.max_sessions_per_identity)",
                     cl->id, ca->return_code, ca->session_present);
        cl->st = CS_DISCONNECTING;
        return;
    }
    if (ca->return_code != 0) {
        sim_fail(w, "%s: CONNACK refused with %u", cl->id, ca->return_code);
        return;
    }
    if (ca->session_present != c->pred_sp) {
        sim_fail(w, "%s: CONNACK session present %d, model expects %d", cl->id,
                 ca->session_present, c->pred_sp);
        return;
    }
    cl->st = CS_READY;
    cl->state_inc = c->inc;
    if (c->level == MQTT_LEVEL_5) {
        c->srv_alias_max = ca->props.topic_alias_maximum;
        memset(c->alias_set, 0, sizeof c->alias_set);
    }
    if (!ca->session_present) {
        /* No session on the broker: the client's half goes too. */
        cl->ninfl = 0;
        cl->nawait = 0;
        return;
    }
    for (int j = 0; j < cl->ninfl; j++) {
        const outmsg *o = &cl->infl[j];
        if (o->state == OS_WAIT_PUBCOMP)
            write_ack(w, i, MQTT_PUBREL, o->pid);
        else
            write_publish(w, i, o->msg, o->pid, true);
    }
}

/* "m<index>" -> index, or -1. */
static int parse_payload(world *w, const mqtt_publish *p)
{
    if (p->payload.len < 2 || p->payload.p[0] != 'm')
        return -1;
    int v = 0;
    size_t j = 1;
    for (; j < p->payload.len && p->payload.p[j] != '.'; j++) {
        uint8_t d = p->payload.p[j];
        if (d < '0' || d > '9' || j > 9)
            return -1;
        v = v * 10 + (d - '0');
    }
    for (; j < p->payload.len; j++)
        if (p->payload.p[j] != '.')
            return -1;
    if (v >= w->nmsgs)
        return -1;
    const char *t = sim_topics[w->msgs[v].topic];
    if (p->topic.len != strlen(t) || memcmp(p->topic.p, t, p->topic.len) != 0)
        return -1;
    return v;
}

/* The broker's Topic Alias on a 5.0 PUBLISH: set or resolved into *p
 * (topic index + 1 in in_alias). false on a violation (reported). */
static bool resolve_alias(world *w, int k, mqtt_publish *p)
{
    sconn *c = &w->conns[k];
    const sclient *cl = &w->cl[c->client];
    if (!(p->props.present & MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS)))
        return true;
    uint16_t a = p->props.topic_alias;
    if (a == 0 || a > cl->alias_max) {
        sim_fail(w, "%s: Topic Alias %u from the broker; its Topic Alias Maximum is %u", cl->id, a,
                 cl->alias_max);
        return false;
    }
    if (p->topic.len > 0) {
        for (int t = 0; t < SIM_TOPICS; t++)
            if (p->topic.len == strlen(sim_topics[t]) &&
                memcmp(p->topic.p, sim_topics[t], p->topic.len) == 0)
                c->in_alias[a] = (uint8_t)(t + 1);
        return true; /* a topic the simulator never used fails in parse_payload */
    }
    if (c->in_alias[a] == 0) {
        sim_fail(w, "%s: Topic Alias %u from the broker was never set on this connection",
                 cl->id, a);
        return false;
    }
    p->topic = str(sim_topics[c->in_alias[a] - 1]);
    w->n_alias_down++;
    return true;
}

static void on_publish(world *w, int i, int k, const mqtt_publish *pp, uint64_t wrote)
{
    sclient *cl = &w->cl[i];
    sconn *c = &w->conns[k];
    mqtt_publish pub = *pp;
    mqtt_publish *p = &pub;
    if (c->level == MQTT_LEVEL_5 && !resolve_alias(w, k, p))
        return;
    if (c->level == MQTT_LEVEL_5 && p->qos > 0 && cl->recv_max) {
        /* [MQTT-3.3.4-7]: no more unacknowledged QoS 1/2 PUBLISHes than
         * the client's Receive Maximum. */
        bool known = false;
        for (int j = 0; j < c->nunacked; j++)
            known |= c->unacked[j] == p->packet_id;
        if (!known) {
            if (c->nunacked == SIM_MAX_AWAIT)
                abort(); /* harness limit */
            c->unacked[c->nunacked++] = p->packet_id;
        }
        if (c->nunacked > cl->recv_max) {
            sim_fail(w, "%s: %d unacknowledged QoS 1/2 PUBLISHes from the broker; its Receive "
                        "Maximum is %u",
                     cl->id, c->nunacked, cl->recv_max);
            return;
        }
        w->n_at_recv_max += c->nunacked == cl->recv_max;
    }
    if (p->payload.len == 0) {
        /* A retained clear routed live; carries no message. */
        if (p->qos != 0 || p->retain)
            sim_fail(w, "%s: unexpected empty PUBLISH", cl->id);
        return;
    }
    int mi = parse_payload(w, p);
    if (mi < 0) {
        sim_fail(w, "%s: PUBLISH with a payload or topic the simulator never sent", cl->id);
        return;
    }
    bool first = true;
    if (p->qos == 2) {
        /* Method B of the spec: deliver on PUBLISH, remember the id until
         * PUBREL, and treat a repeat in between as the same message. */
        first = find_await(cl, p->packet_id) < 0;
        if (first) {
            if (cl->nawait == SIM_MAX_AWAIT)
                abort(); /* harness limit */
            cl->await[cl->nawait++] = p->packet_id;
        }
    }
    if (p->retain && w->msgs[mi].topic == SIM_SHARED_TOPIC && i != SIM_FINAL) {
        /* Only groups cover the shared topic here: no retained message is
         * sent on a shared subscribe (MQTT 5.0 section 4.8.2), and later
         * ones are routed with the flag cleared (no Retain As Published). */
        sim_fail(w, "%s received retained m%d through a shared subscription", cl->id, mi);
        return;
    }
    if (p->retain) {
        /* Sent for a subscription: not a routed copy. The checker client
         * collects these in the end phase. */
        const smsg *sm = &w->msgs[mi];
        if (i == SIM_FINAL && first) {
            if (cl->got_retained[sm->topic] >= 0)
                sim_fail(w, "two retained messages for %s", sim_topics[sm->topic]);
            cl->got_retained[sm->topic] = mi;
        }
    } else {
        model_received(w, k, mi, p, first, wrote);
    }
    if (p->qos == 1)
        queue_ack(w, i, MQTT_PUBACK, p->packet_id);
    else if (p->qos == 2)
        queue_ack(w, i, MQTT_PUBREC, p->packet_id);
}

static void on_ack(world *w, int i, mqtt_type type, uint16_t pid)
{
    sclient *cl = &w->cl[i];
    int j = find_infl(cl, pid);
    outmsg *o = j >= 0 ? &cl->infl[j] : NULL;
    switch (type) {
    case MQTT_PUBACK:
    case MQTT_PUBCOMP:
        if (!o || o->state != (type == MQTT_PUBACK ? OS_WAIT_PUBACK : OS_WAIT_PUBCOMP)) {
            sim_fail(w, "%s: %s for packet id %u not in flight", cl->id,
                     type == MQTT_PUBACK ? "PUBACK" : "PUBCOMP", pid);
            return;
        }
        if (type == MQTT_PUBACK && !w->msgs[o->msg].acked) {
            w->msgs[o->msg].acked = true;
            w->msgs[o->msg].acked_epoch = w->epoch;
        }
        memmove(o, o + 1, (size_t)(cl->ninfl - j - 1) * sizeof *o);
        cl->ninfl--;
        break;
    case MQTT_PUBREC:
        if (!o || o->state == OS_WAIT_PUBACK) {
            sim_fail(w, "%s: PUBREC for packet id %u not in flight", cl->id, pid);
            return;
        }
        if (!w->msgs[o->msg].acked) {
            w->msgs[o->msg].acked = true;
            w->msgs[o->msg].acked_epoch = w->epoch;
        }
        o->state = OS_WAIT_PUBCOMP;
        queue_ack(w, i, MQTT_PUBREL, pid);
        break;
    case MQTT_PUBREL: {
        int a = find_await(cl, pid);
        if (a >= 0) {
            memmove(&cl->await[a], &cl->await[a + 1],
                    (size_t)(cl->nawait - a - 1) * sizeof cl->await[0]);
            cl->nawait--;
        }
        queue_ack(w, i, MQTT_PUBCOMP, pid);
        break;
    }
    default:
        break;
    }
}

void client_receive(world *w, int k, const mqtt_packet *p, uint64_t wrote)
{
    int i = w->conns[k].client;
    sclient *cl = &w->cl[i];
    if (p->type == MQTT_CONNACK) {
        on_connack(w, i, k, &p->u.connack);
        return;
    }
    if (!w->conns[k].connack_seen) {
        sim_fail(w, "%s: packet type %d before CONNACK", cl->id, p->type);
        return;
    }
    switch (p->type) {
    case MQTT_PUBLISH:
        on_publish(w, i, k, &p->u.publish, wrote);
        break;
    case MQTT_PUBACK:
    case MQTT_PUBREC:
    case MQTT_PUBREL:
    case MQTT_PUBCOMP:
        on_ack(w, i, p->type, p->u.ack.packet_id);
        break;
    case MQTT_SUBACK: {
        size_t pos = 0;
        uint8_t code;
        uint8_t want = cl->sub_qos[p->u.suback.packet_id % sizeof cl->sub_qos];
        while (mqtt_suback_next(&p->u.suback, &pos, &code))
            if (code != want)
                sim_fail(w, "%s: SUBACK code %u, asked for QoS %u", cl->id, code, want);
        break;
    }
    case MQTT_UNSUBACK:
        break;
    case MQTT_DISCONNECT:
        /* A 5.0 server ends the connection with a reason (session taken
         * over, a failed store, ...); whether the close was due is judged
         * when the connection ends. */
        sim_trace(w, "%s: DISCONNECT 0x%02x from the broker", cl->id, p->u.disconnect.reason);
        break;
    default:
        sim_fail(w, "%s: unexpected packet type %d", cl->id, p->type);
        break;
    }
}
