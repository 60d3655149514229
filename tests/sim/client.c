/*
 * client.c - simulated MQTT 3.1.1 clients. They behave like a correct
 * client library: wait for CONNACK, keep their session state (unacknowledged
 * publishes, inbound QoS 2 ids awaiting PUBREL) across reconnects when the
 * broker says the session is present and drop it otherwise, retransmit with
 * DUP after a reconnect, filter QoS 2 duplicates by packet id, and
 * acknowledge in order, sometimes late. Every surprise from the broker is an
 * invariant violation reported through sim_fail.
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

static void write_ack(world *w, int i, uint8_t type, uint16_t pid)
{
    static const uint8_t kinds[16] = {
        [MQTT_PUBACK] = MK_PUBACK, [MQTT_PUBREC] = MK_PUBREC,
        [MQTT_PUBREL] = MK_PUBREL, [MQTT_PUBCOMP] = MK_PUBCOMP,
    };
    uint8_t buf[4];
    mark m = {.kind = kinds[type], .pid = pid};
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
    uint8_t buf[PKT_MAX];
    mark m = {.kind = MK_CONNECT, .clean = clean};
    sim_trace(w, "%s connects on conn %d (%s)", cl->id, k, clean ? "clean" : "persistent");
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
    net_write(w, cl->conn, buf, mqtt_encode_publish(buf, sizeof buf, MQTT_LEVEL_311, &p), m);
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
              mqtt_encode_subscribe(buf, sizeof buf, MQTT_LEVEL_311, pid, &f, &qos, 1), m);
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
              mqtt_encode_unsubscribe(buf, sizeof buf, MQTT_LEVEL_311, pid, &f, 1), m);
}

void client_disconnect(world *w, int i)
{
    sclient *cl = &w->cl[i];
    if (cl->st != CS_READY)
        return;
    uint8_t buf[2];
    mark m = {.kind = MK_DISCONNECT};
    sim_trace(w, "%s disconnects", cl->id);
    net_write(w, cl->conn, buf, mqtt_encode_empty(buf, sizeof buf, MQTT_DISCONNECT), m);
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
        if (ca->return_code != MQTT_CONNACK_NOT_AUTHORIZED || ca->session_present)
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

static void on_publish(world *w, int i, int k, const mqtt_publish *p)
{
    sclient *cl = &w->cl[i];
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
        model_received(w, k, mi, p, first);
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

void client_receive(world *w, int k, const mqtt_packet *p)
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
        on_publish(w, i, k, &p->u.publish);
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
    default:
        sim_fail(w, "%s: unexpected packet type %d", cl->id, p->type);
        break;
    }
}
