/*
 * model.c - the oracle. It mirrors, from the packets the core has consumed,
 * the little the invariants need: which session incarnation each client id
 * has, its subscriptions, and the inbound QoS 2 ids it holds (to know when a
 * resent PUBLISH is a duplicate). From that it predicts, for every message,
 * which incarnations it is routed to and at which effective QoS, and it
 * judges every copy a client receives:
 *
 *   - no delivery the routing does not explain (topic, session, QoS);
 *   - QoS 2: at most one copy reaches the application per routing;
 *   - QoS 1: a copy without DUP only once per routing;
 *   - per session, publisher and topic, QoS >= 1 messages first reach the
 *     application in the order the core routed them;
 * and at the end, after a quiescent drain with every persistent session
 * reconnected: every QoS >= 1 routing to a live incarnation was delivered.
 *
 * An "incarnation" is one life of a session: created by CONNECT, ended by a
 * clean CONNECT, by the end of a clean session's connection, by a 5.0
 * DISCONNECT setting its Session Expiry Interval to 0, or by expiry.
 *
 * MQTT 5.0: each incarnation has its Session Expiry Interval (the
 * CONNECT's, changed by DISCONNECT, capped by session.expiry); a message
 * with a Message Expiry Interval is never sent after it expired
 * [MQTT-3.3.2-5] (judged by when the broker wrote the copy, net.c), and
 * may be missing at the end once expired; a copy to a 5.0 client carries
 * the interval left [MQTT-3.3.2-6]; a message too large for a client's
 * Maximum Packet Size may be missing for it [MQTT-3.1.2-25].
 *
 * Shared subscriptions (docs/OPERATIONS.md "Shared subscriptions"): which
 * member gets a message is the core's choice, so a routing to a group is
 * judged when copies arrive: a member receives it only while fewer
 * members hold it than it was routed to the group (members that left
 * hold it no more, unless they received it at QoS 2 [MQTT-4.8.2-5]); at
 * the end, one routed while every member took QoS >= 1 must have reached
 * a member that acknowledged it or is still there, unless the group was
 * left without a member since, or a member left since and a crash came
 * after the routing (restored messages stay with their member, a clean
 * member's go with the crash), or, for
 * QoS 2, any member left since (one sent it keeps it [MQTT-4.8.2-5]), or
 * the member it was sent to unsubscribed before it left (docs/OPERATIONS.md:
 * those sent are completed with it, and go when it goes), or
 * a member joined at QoS 0 since (a leaver's messages may go to it).
 */
#include "sim.h"

#include "../unit/model_store.h"

#include <stdlib.h>
#include <string.h>

void model_init(world *w)
{
    w->ninc = 0;
    for (int i = 0; i < SIM_ALL; i++)
        w->cur_inc[i] = -1;
    for (int t = 0; t < SIM_TOPICS; t++)
        w->retained[t] = -1;
}

void model_free(world *w)
{
    for (int j = 0; j < w->ninc; j++)
        free(w->inc[j].exp);
    w->ninc = 0;
}

/* The Session Expiry Interval in effect (0 = never) for a CONNECT's or
 * DISCONNECT's value v of a 5.0 client (UINT32_MAX never; 0 ends the
 * session with its connection) or of a 3.1.1 client (v unused):
 * session.expiry (w->expiry_s, 0 = no limit) caps it. */
static uint32_t eff_expiry(const world *w, bool v5, uint32_t v)
{
    if (!v5 || v == UINT32_MAX)
        return w->expiry_s;
    return w->expiry_s && w->expiry_s < v ? w->expiry_s : v;
}

static int new_inc(world *w, int client, bool clean)
{
    if (w->ninc == SIM_MAX_INC)
        abort(); /* harness limit: the scenario bounds reconnects */
    int j = w->ninc++;
    incarnation *in = &w->inc[j];
    memset(in, 0, sizeof *in);
    in->client = client;
    in->clean = clean;
    in->alive = true;
    in->conn = -1;
    in->exp = calloc(SIM_MAX_MSGS, sizeof *in->exp);
    if (!in->exp)
        abort();
    w->cur_inc[client] = j;
    sim_trace(w, "model: %s session #%d created (%s)", w->cl[client].id, j,
              clean ? "clean" : "persistent");
    return j;
}

/* Shared seeds: note groups left without any member (their messages may
 * then be lost). */
static void groups_update(world *w)
{
    for (int g = 0; g < SIM_GROUPS && w->shared; g++) {
        bool has = false;
        for (int i = 0; i < SIM_ALL && !has; i++) {
            int j = w->cur_inc[i];
            has = j >= 0 && w->inc[j].subs[SIM_SHARED_FILTER + g];
        }
        if (!has && !w->g_empty[g])
            w->g_break[g]++;
        w->g_empty[g] = !has;
    }
}

static void kill_inc(world *w, int j)
{
    incarnation *in = &w->inc[j];
    for (int g = 0; g < SIM_GROUPS; g++)
        if (in->alive && in->subs[SIM_SHARED_FILTER + g]) {
            w->g_deaths[g]++;
            w->n_sh_left++;
        }
    in->alive = false;
    in->conn = -1;
    if (w->cur_inc[in->client] == j)
        w->cur_inc[in->client] = -1;
    groups_update(w);
    sim_trace(w, "model: %s session #%d ended", w->cl[in->client].id, j);
}

void model_conn_end(world *w, int k)
{
    sconn *c = &w->conns[k];
    if (c->ended)
        return;
    c->ended = true;
    int j = c->inc;
    if (j >= 0 && w->inc[j].alive && w->inc[j].conn == k) {
        w->inc[j].conn = -1;
        w->inc[j].offline_since = w->now;
        if (w->inc[j].clean)
            kill_inc(w, j);
    }
}

/* Expiry is judged from the outside: the sessions a tick removed must be
 * exactly the persistent ones offline for the whole expiry interval (a tick
 * may also remove none: the core checks on its own cadence). */
void model_expire(world *w, uint64_t removed)
{
    if (removed == 0)
        return;
    uint64_t due = 0;
    for (int j = 0; j < w->ninc; j++) {
        const incarnation *in = &w->inc[j];
        due += in->alive && !in->clean && in->conn < 0 && in->expiry_s &&
               in->offline_since + (uint64_t)in->expiry_s * 1000u <= w->now;
    }
    if (removed != due) {
        sim_fail(w, "a tick removed %llu sessions, %llu were due to expire",
                 (unsigned long long)removed, (unsigned long long)due);
        return;
    }
    for (int j = 0; j < w->ninc; j++) {
        incarnation *in = &w->inc[j];
        if (in->alive && !in->clean && in->conn < 0 && in->expiry_s &&
            in->offline_since + (uint64_t)in->expiry_s * 1000u <= w->now) {
            sim_trace(w, "model: %s session #%d expired", w->cl[in->client].id, j);
            kill_inc(w, j);
            in->expired = true;
            w->n_expired++;
        }
    }
}

/* A routing of message mi to each group with a member: one of them gets
 * it (judged as copies arrive). */
static void route_shared(world *w, int mi)
{
    smsg *sm = &w->msgs[mi];
    for (int g = 0; g < SIM_GROUPS; g++) {
        int members = 0, minq = 2;
        for (int i = 0; i < SIM_ALL; i++) {
            int j = w->cur_inc[i];
            uint8_t q = j >= 0 ? w->inc[j].subs[SIM_SHARED_FILTER + g] : 0;
            if (q == 0)
                continue;
            members++;
            minq = q - 1 < minq ? q - 1 : minq;
        }
        if (members == 0)
            continue;
        sim_trace(w, "model: m%d routed to group %c (%d members, lowest QoS %d)", mi, 'a' + g,
                  members, minq);
        sm->sh[g].routed++;
        sm->sh[g].last_epoch = w->epoch;
        w->n_sh_routed++;
        if (sm->qos > 0 && minq > 0) {
            sm->sh[g].q12 = true;
            sm->sh[g].epoch = w->epoch;
            sm->sh[g].brk = w->g_break[g];
            sm->sh[g].deaths = w->g_deaths[g];
            sm->sh[g].q0 = w->g_q0[g];
        }
    }
}

static void route(world *w, int mi)
{
    const smsg *sm = &w->msgs[mi];
    const char *topic = sim_topics[sm->topic];
    if (sm->topic == SIM_SHARED_TOPIC)
        route_shared(w, mi);
    for (int i = 0; i < SIM_ALL; i++) {
        int j = w->cur_inc[i];
        if (j < 0)
            continue;
        incarnation *in = &w->inc[j];
        int best = -1;
        for (int f = 0; f < SIM_ORD_FILTERS; f++)
            if (in->subs[f] && in->subs[f] - 1 > best &&
                mqtt_topic_matches((const uint8_t *)sim_filters[f], strlen(sim_filters[f]),
                                   (const uint8_t *)topic, strlen(topic)))
                best = in->subs[f] - 1;
        if (best < 0)
            continue;
        int eff = best < sm->qos ? best : sm->qos;
        if (eff == 0 && in->conn < 0)
            continue; /* offline sessions do not queue QoS 0 */
        expect *e = &in->exp[mi];
        sim_trace(w, "model: m%d routed to %s session #%d at qos %d", mi, w->cl[i].id, j, eff);
        e->routed++;
        e->route_epoch = w->epoch;
        e->routed_q[eff]++;
        e->qos_mask |= (uint8_t)(1u << eff);
        if (eff > 0) {
            e->latest_route = ++w->route_counter;
            if (e->first_route == 0)
                e->first_route = e->latest_route;
            e->q12_epoch = w->epoch;
        }
    }
}

static int in_qos2_find(const incarnation *in, uint16_t pid)
{
    for (int j = 0; j < in->n_in_qos2; j++)
        if (in->in_qos2[j] == pid)
            return j;
    return -1;
}

/* Would a CONNECT of client cid be refused for its identity's persistent
 * sessions (limits.max_sessions_per_identity)? Only one creating a
 * persistent session: not clean, and no session to resume (a clean one
 * does not count). Sessions of the identity the model holds alive are the
 * ones the core counts, restored ones included. */
static bool connect_refused(const world *w, int cid, bool clean)
{
    const char *id = sim_identity(w, cid);
    int cur = w->cur_inc[cid];
    if (clean || id == NULL || w->ident_sessions == 0 || (cur >= 0 && !w->inc[cur].clean))
        return false;
    uint32_t held = 0;
    for (int i = 0; i < SIM_ALL; i++) {
        const char *other = sim_identity(w, i);
        int j = w->cur_inc[i];
        held += other != NULL && strcmp(other, id) == 0 && j >= 0 && !w->inc[j].clean;
    }
    return held >= w->ident_sessions;
}

void model_apply(world *w, int k, const mark *m)
{
    sconn *c = &w->conns[k];
    if (m->kind == MK_CONNECT) {
        int cid = c->owner;
        int cur = w->cur_inc[cid];
        if (connect_refused(w, cid, m->clean)) {
            /* Before any takeover: the refusal changes nothing. */
            sim_trace(w, "model: %s refused: identity %s holds %u persistent sessions",
                      w->cl[cid].id, sim_identity(w, cid), w->ident_sessions);
            c->pred_refused = true;
            c->expect_close = true;
            c->closing = true; /* nothing it sent after is handled */
            w->n_sessions_refused++;
            model_conn_end(w, k);
            return;
        }
        /* Takeover: the session's other connection ends first. */
        if (cur >= 0 && w->inc[cur].conn >= 0 && w->inc[cur].conn != k)
            model_conn_end(w, w->inc[cur].conn);
        cur = w->cur_inc[cid];
        if (cur >= 0 && m->clean) {
            kill_inc(w, cur);
            cur = -1;
        }
        c->pred_sp = cur >= 0;
        if (cur < 0)
            cur = new_inc(w, cid, m->clean);
        w->inc[cur].conn = k;
        w->inc[cur].expiry_s = eff_expiry(w, w->cl[cid].v5, w->cl[cid].sess_expiry);
        c->inc = cur;
        return;
    }
    if (c->ended && sconn_core(c) && broker_wants_close(sconn_core(c)))
        return; /* the rest of a read the core took whole with the packet closing it */
    if (c->inc < 0 || !w->inc[c->inc].alive || w->inc[c->inc].conn != k) {
        sim_fail(w, "model: conn %d sent a packet without a session", k);
        return;
    }
    incarnation *in = &w->inc[c->inc];
    switch (m->kind) {
    case MK_SUBSCRIBE:
        in->subs[m->arg] = (uint8_t)(m->qos + 1);
        if (m->arg >= SIM_SHARED_FILTER && m->qos == 0)
            w->g_q0[m->arg - SIM_SHARED_FILTER]++;
        groups_update(w);
        break;
    case MK_UNSUBSCRIBE:
        if (m->arg >= SIM_SHARED_FILTER && in->subs[m->arg])
        {
            in->sh_unsub[m->arg - SIM_SHARED_FILTER] = true;
            in->sh_unsub_at[m->arg - SIM_SHARED_FILTER] = w->now;
        }
        in->subs[m->arg] = 0;
        groups_update(w);
        /* With no member left, its unsent messages stay with it. */
        if (m->arg >= SIM_SHARED_FILTER && w->g_empty[m->arg - SIM_SHARED_FILTER])
            in->sh_unsub_at[m->arg - SIM_SHARED_FILTER] = UINT64_MAX;
        break;
    case MK_PUBACK:
        /* A member acknowledged a shared message: it is settled. */
        for (int mi = 0; mi < w->nmsgs && w->shared; mi++)
            for (int g = 0; g < SIM_GROUPS; g++)
                for (int r = 0; r < w->msgs[mi].sh[g].nrcv; r++)
                    if (w->msgs[mi].sh[g].rcv[r].inc == c->inc &&
                        w->msgs[mi].sh[g].rcv[r].pid == m->pid &&
                        w->msgs[mi].sh[g].rcv[r].qos == 1)
                        w->msgs[mi].sh[g].rcv[r].acked = true;
        break;
    case MK_PUBLISH:
        if (m->arg < 0) {
            w->retained[m->topic] = -1;
            w->clear_at[m->topic] = ++w->ret_clock;
            break;
        }
        if (m->qos == 2) {
            if (in_qos2_find(in, m->pid) >= 0)
                break; /* a resend of a message already routed */
            if (in->n_in_qos2 == SIM_MAX_AWAIT)
                abort();
            in->in_qos2[in->n_in_qos2++] = m->pid;
        }
        w->msgs[m->arg].processed++;
        if (w->msgs[m->arg].expiry_s)
            w->msgs[m->arg].expires_at = w->now + w->msgs[m->arg].expiry_s * 1000ull;
        if (w->msgs[m->arg].retain) {
            w->retained[m->topic] = m->arg;
            w->msgs[m->arg].ret_at = ++w->ret_clock;
        }
        route(w, m->arg);
        break;
    case MK_PUBREL: {
        int j = in_qos2_find(in, m->pid);
        if (j >= 0)
            in->in_qos2[j] = in->in_qos2[--in->n_in_qos2];
        break;
    }
    case MK_DISCONNECT:
        if (m->arg > 0)
            in->expiry_s = eff_expiry(w, true, (uint32_t)m->arg);
        model_conn_end(w, k);
        if (m->arg == 0 && !in->clean && in->alive) {
            /* Session Expiry Interval 0 at DISCONNECT: the session ends with
             * its connection (3.14.2.2.2, [MQTT-3.1.2-23]). A crash before
             * its removal is committed brings it back as it was stored. */
            kill_inc(w, c->inc);
            w->n_disc_end++;
        }
        break;
    default:
        break;
    }
}

static bool check_expiry(world *w, const sconn *c, int mi, const mqtt_publish *p,
                         uint64_t wrote);

/* The group a copy of shared message mi to incarnation j came through:
 * its client's (sim_group), if the message was routed there; else -1. */
static int shared_group(const world *w, int j, int mi)
{
    int g = sim_group(w, w->inc[j].client);
    return w->msgs[mi].sh[g].routed ? g : -1;
}

/* A copy of shared message mi reached incarnation j: at most one member
 * per routing holds it; one that left holds it no more, unless it was sent
 * it at QoS 2 ([MQTT-4.8.2-5]: not handed to another). False on a
 * violation (reported). */
static bool received_shared(world *w, int j, int mi, const mqtt_publish *p, uint64_t wrote)
{
    smsg *sm = &w->msgs[mi];
    const char *who = w->cl[w->inc[j].client].id;
    int g = shared_group(w, j, mi);
    if (g < 0) {
        sim_fail(w, "%s (session #%d) received m%d on the shared topic, routed to no group", who,
                 j, mi);
        return false;
    }
    if (p->qos > sm->qos) {
        sim_fail(w, "%s received shared m%d at QoS %u, published at QoS %u", who, mi, p->qos,
                 sm->qos);
        return false;
    }
    int holders = 0;
    for (int r = 0; r < sm->sh[g].nrcv; r++) {
        if (sm->sh[g].rcv[r].inc == j) {
            /* The same delivery again (DUP, or resent after a crash). */
            sm->sh[g].rcv[r].pid = p->packet_id;
            return true;
        }
        holders += w->inc[sm->sh[g].rcv[r].inc].alive || sm->sh[g].rcv[r].qos == 2;
    }
    /* A copy read after its session ended was written before: the member
     * left holding it, and another may have it since, but not after one at
     * QoS 2 [MQTT-4.8.2-5]. */
    bool late = !w->inc[j].alive && (p->qos < 2 || sm->sh[g].nrcv < sm->sh[g].routed);
    if (holders >= sm->sh[g].routed && !late) {
        sim_fail(w, "%s (session #%d) received m%d of group %c (QoS %u), routed to the group %u "
                    "time(s), and %d other member(s) that are still there or got it at QoS 2 "
                    "hold it (first: session #%d)",
                 who, j, mi, 'a' + g, p->qos, sm->sh[g].routed, holders, sm->sh[g].rcv[0].inc);
        return false;
    }
    /* A member that unsubscribed hands its unsent messages to the others
     * (docs/OPERATIONS.md): none is written to it afterwards, unless a
     * crash came between (restored messages stay with their member). */
    const incarnation *in = &w->inc[j];
    /* Only where delivery cannot have started before without a write: a
     * durable QoS 2 copy waits for its id's commit, a small output buffer
     * for room, both after the id (and the delivery) was given. */
    if (!p->dup && p->qos < 2 && !w->durable && !w->tight && in->alive &&
        !in->subs[SIM_SHARED_FILTER + g] && in->sh_unsub[g] &&
        wrote > in->sh_unsub_at[g] && sm->sh[g].last_epoch == w->epoch) {
        sim_fail(w, "%s (session #%d) received m%d of group %c written at t=%llu or later, after "
                    "it unsubscribed at t=%llu",
                 who, j, mi, 'a' + g, (unsigned long long)wrote,
                 (unsigned long long)in->sh_unsub_at[g]);
        return false;
    }
    if (sm->sh[g].nrcv == SIM_SH_RCV)
        abort(); /* harness limit */
    w->n_sh_again += sm->sh[g].nrcv > 0;
    w->n_sh_rcv++;
    sm->sh[g].rcv[sm->sh[g].nrcv++] = (struct sh_rcv){j, p->packet_id, p->qos, false};
    return true;
}

void model_received(world *w, int k, int mi, const mqtt_publish *p, bool first_copy,
                    uint64_t wrote)
{
    sconn *c = &w->conns[k];
    const smsg *sm = &w->msgs[mi];
    const char *who = w->cl[c->owner].id;
    if (c->inc < 0) {
        sim_fail(w, "%s: PUBLISH on a connection without a session", who);
        return;
    }
    incarnation *in = &w->inc[c->inc];
    expect *e = &in->exp[mi];
    sim_trace(w, "%s (session #%d) receives m%d qos %u pid %u%s%s", who, c->inc, mi, p->qos,
              p->packet_id,
              p->dup ? " dup" : "", first_copy ? "" : " (repeat)");
    if (sm->topic == SIM_SHARED_TOPIC) {
        if (received_shared(w, c->inc, mi, p, wrote))
            check_expiry(w, c, mi, p, wrote);
        if (!w->failed && first_copy)
            w->n_delivered++;
        return;
    }
    if (e->routed == 0) {
        sim_fail(w, "%s (session #%d) received m%d (%s from %s), which was never routed to it",
                 who, c->inc, mi, sim_topics[sm->topic], w->cl[sm->pub].id);
        return;
    }
    if (!(e->qos_mask & (1u << p->qos))) {
        sim_fail(w, "%s received m%d at QoS %u; routed at QoS mask 0x%x", who, mi, p->qos,
                 e->qos_mask);
        return;
    }
    if (!p->dup && ++e->nodup > e->routed) {
        sim_fail(w, "%s received m%d (QoS %u) %u times without DUP, routed %u times", who, mi,
                 p->qos, e->nodup, e->routed);
        return;
    }
    if (!check_expiry(w, c, mi, p, wrote))
        return;
    if (p->dup)
        w->n_dups++;
    if (!first_copy)
        return;
    e->delivered++;
    e->delivered_q[p->qos]++;
    w->n_delivered++;
    /* QoS 1 may repeat (DUP); QoS 0 and 2 reach the application at most
     * once per routing at that QoS. */
    if (p->qos != 1 && e->delivered_q[p->qos] > e->routed_q[p->qos]) {
        sim_fail(w, "%s received m%d at QoS %u %u times, routed so %u times", who, mi, p->qos,
                 e->delivered_q[p->qos], e->routed_q[p->qos]);
        return;
    }
    if (p->qos >= 1 && e->delivered_q[1] + e->delivered_q[2] == 1) {
        /* A message routed more than once (the publisher resent it, or a
         * crash lost the first routing) may arrive in the place of any of
         * its routings; the earliest that keeps the order is taken. Only
         * the first and the latest are kept: enough for one resend. */
        uint32_t *last = &in->last_route[sm->pub][sm->topic];
        uint32_t at = e->first_route >= *last ? e->first_route : e->latest_route;
        if (at < *last) {
            sim_fail(w, "%s received m%d (seq %u of %s on %s) out of order", who, mi, sm->seq,
                     w->cl[sm->pub].id, sim_topics[sm->topic]);
            return;
        }
        *last = at;
    }
}

/* The Message Expiry checks of a copy of mi on connection c; false on a
 * violation (reported). */
static bool check_expiry(world *w, const sconn *c, int mi, const mqtt_publish *p,
                         uint64_t wrote)
{
    const smsg *sm = &w->msgs[mi];
    const char *who = w->cl[c->owner].id;
    if (sm->expiry_s && !p->dup) {
        /* [MQTT-3.3.2-5]: no onward delivery starts once it expired (a
         * resend, DUP, completes one that started). Its start is when the
         * broker writes it, whatever waited before (deliver.c). */
        if (wrote >= sm->expires_at) {
            sim_fail(w, "%s received m%d at t=%llu or later, expired at t=%llu (Message Expiry "
                        "Interval %u s)",
                     who, mi, (unsigned long long)wrote, (unsigned long long)sm->expires_at,
                     sm->expiry_s);
            return false;
        }
        /* [MQTT-3.3.2-6]: a 5.0 receiver gets the interval left. */
        if (c->level == MQTT_LEVEL_5 &&
            (!(p->props.present & MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY)) ||
             p->props.message_expiry == 0 ||
             p->props.message_expiry > sm->expiry_s)) {
            sim_fail(w, "%s received m%d with Message Expiry Interval %u (present %d); it was "
                        "published with %u",
                     who, mi, p->props.message_expiry,
                     (int)!!(p->props.present & MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY)),
                     sm->expiry_s);
            return false;
        }
    }
    return true;
}

/* The shared messages no member finished: lost, unless excused (see the
 * top of the file, and the excuses of ordinary copies). */
static void check_final_shared(world *w)
{
    for (int mi = 0; mi < w->nmsgs && !w->failed; mi++) {
        const smsg *sm = &w->msgs[mi];
        if (sm->topic != SIM_SHARED_TOPIC)
            continue;
        for (int g = 0; g < SIM_GROUPS; g++) {
            if (!sm->sh[g].q12)
                continue;
            bool settled = false;
            bool unsub = false;
            for (int r = 0; r < sm->sh[g].nrcv; r++) {
                const incarnation *h = &w->inc[sm->sh[g].rcv[r].inc];
                settled |= sm->sh[g].rcv[r].acked || sm->sh[g].rcv[r].qos != 1 || h->alive;
                unsub |= h->sh_unsub[g];
            }
            if (settled)
                continue;
            bool due = sm->sh[g].epoch == w->epoch ||
                       (sm->acked && sm->acked_epoch == sm->sh[g].epoch);
            bool excused = !due || w->g_break[g] != sm->sh[g].brk ||
                           (sm->sh[g].epoch != w->epoch &&
                            w->g_deaths[g] != sm->sh[g].deaths) ||
                           (sm->expiry_s && sm->expires_at <= w->now) || w->ident_bytes != 0 ||
                           /* sent to a member that left: it stays with it
                            * [MQTT-4.8.2-5], received or not */
                           (sm->qos == 2 && w->g_deaths[g] != sm->sh[g].deaths) ||
                           /* sent to a member that unsubscribed, then left:
                            * its to complete [MQTT-3.10.4-3], never handed on */
                           unsub ||
                           /* handed on to a member at QoS 0 */
                           w->g_q0[g] != sm->sh[g].q0;
            for (int i = 0; i < SIM_CLIENTS; i++)
                excused |= w->cl[i].v5 && w->cl[i].max_packet &&
                           mqtt_publish5_size(strlen(sim_topics[sm->topic]), sm->plen, 2, 8) >
                               w->cl[i].max_packet;
            if (excused) {
                w->n_sh_excused++;
                continue;
            }
            sim_fail(w, "lost: shared m%d (QoS %u, from %s, %s) routed to group %c %u time(s), "
                        "%u member(s) received it, none finished it or is still there",
                     mi, sm->qos, w->cl[sm->pub].id,
                     sm->acked ? "acknowledged" : "not acknowledged", 'a' + g, sm->sh[g].routed,
                     sm->sh[g].nrcv);
        }
    }
}

void model_check_final(world *w)
{
    check_final_shared(w);
    for (int i = 0; i < SIM_ALL; i++) {
        int j = w->cur_inc[i];
        if (j < 0)
            continue;
        const incarnation *in = &w->inc[j];
        for (int mi = 0; mi < w->nmsgs; mi++) {
            const expect *e = &in->exp[mi];
            const smsg *sm = &w->msgs[mi];
            /* A QoS >= 1 routing a crash came after is guaranteed only if
             * the publisher had its acknowledgement before that crash (a
             * later QoS 0 routing guarantees nothing). */
            bool due = e->q12_epoch == w->epoch ||
                       (sm->acked && sm->acked_epoch == e->q12_epoch);
            if ((e->qos_mask & 6u) && e->delivered == 0 && due && sm->expiry_s &&
                sm->expires_at <= w->now) {
                w->n_expired_msgs++; /* expired before it could be sent */
                continue;
            }
            const sclient *cl = &w->cl[i];
            if ((e->qos_mask & 6u) && e->delivered == 0 && due && cl->v5 && cl->max_packet &&
                mqtt_publish5_size(strlen(sim_topics[sm->topic]), sm->plen, 2, 8) >
                    cl->max_packet) {
                w->n_too_large++; /* its PUBLISH may exceed the client's limit */
                continue;
            }
            if ((e->qos_mask & 6u) && e->delivered == 0 && due &&
                w->ident_bytes != 0 && sim_identity(w, i) != NULL) {
                /* Beyond limits.max_queued_bytes_per_identity: dropped for
                 * this session and counted (checked against the count). */
                w->n_ident_lost++;
                continue;
            }
            if ((e->qos_mask & 6u) && e->delivered == 0 && due) {
                sim_fail(w, "lost: m%d (QoS %u, %s from %s, %s) routed to %s session #%d at "
                         "QoS mask 0x%x was never delivered",
                         mi, sm->qos, sim_topics[sm->topic], w->cl[sm->pub].id,
                         sm->acked ? "acknowledged" : "not acknowledged", w->cl[i].id, j,
                         e->qos_mask);
                return;
            }
        }
    }
}

/* "m<index>..." -> index, or -1. */
static int payload_msg(const world *w, const uint8_t *p, uint32_t len)
{
    if (len < 2 || p[0] != 'm')
        return -1;
    int v = 0;
    for (uint32_t j = 1; j < len && p[j] != '.' && j < 10; j++) {
        if (p[j] < '0' || p[j] > '9')
            return -1;
        v = v * 10 + (p[j] - '0');
    }
    return v < w->nmsgs ? v : -1;
}

static int client_by_id(const world *w, const char *id)
{
    for (int i = 0; i < SIM_ALL; i++)
        if (strcmp(w->cl[i].id, id) == 0)
            return i;
    return -1;
}

/* The retained value the store kept for topic t must be the last
 * acknowledged retained publish or a later one (or a later clear). */
static void crash_retained(world *w, int t, int kept)
{
    uint32_t acked_at = 0;
    int acked = -1;
    for (int mi = 0; mi < w->nmsgs; mi++) {
        const smsg *sm = &w->msgs[mi];
        if (sm->topic == t && sm->retain && sm->acked && sm->ret_at > acked_at) {
            acked_at = sm->ret_at;
            acked = mi;
        }
    }
    /* A retained message that expired is gone [MQTT-3.3.2-5]: the
     * acknowledged one or one that replaced it. */
    bool gone = false;
    for (int mi = 0; mi < w->nmsgs && acked >= 0; mi++) {
        const smsg *sm = &w->msgs[mi];
        gone |= sm->topic == t && sm->retain && sm->ret_at >= acked_at && sm->expiry_s &&
                sm->expires_at <= w->now;
    }
    if (kept >= 0 ? w->msgs[kept].ret_at < acked_at || w->msgs[kept].topic != t
                  : acked >= 0 && w->clear_at[t] < acked_at && !gone)
        sim_fail(w, "crash: retained on %s restored as m%d, but m%d was acknowledged later",
                 sim_topics[t], kept, acked);
    w->retained[t] = kept;
}

void model_crash(world *w)
{
    const mstore *ms = w->ms;
    w->epoch++;
    sim_trace(w, "model: crash %u", w->epoch);
    /* The connections are gone (clean sessions with them). Sessions are
     * what the store kept: possibly an older incarnation whose end was not
     * committed, with the subscriptions and inbound QoS 2 ids committed. */
    for (int i = 0; i < SIM_ALL; i++) {
        int s = w->store_inc[i], cur = w->cur_inc[i];
        if (cur >= 0 && cur != s)
            kill_inc(w, cur);
        if (s < 0)
            continue;
        incarnation *in = &w->inc[s];
        if (!in->alive)
            sim_trace(w, "model: %s session #%d restored from the store", w->cl[i].id, s);
        in->alive = true;
        in->expired = false;
        in->conn = -1;
        in->offline_since = w->now;
        memset(in->subs, 0, sizeof in->subs);
        in->n_in_qos2 = 0;
        w->cur_inc[i] = s;
    }
    int kept[SIM_TOPICS];
    for (int t = 0; t < SIM_TOPICS; t++)
        kept[t] = -1;
    for (size_t r = 0; r < sizeof ms->rows / sizeof ms->rows[0]; r++) {
        const mrow *row = &ms->rows[r];
        if (!row->used)
            continue;
        if (row->table == 'R') {
            for (int t = 0; t < SIM_TOPICS; t++)
                if (strcmp(row->key, sim_topics[t]) == 0)
                    kept[t] = payload_msg(w, row->data, row->data_len);
            continue;
        }
        if (!strchr("SBIQ", row->table))
            continue;
        int i = client_by_id(w, row->cid);
        int s = i >= 0 ? w->store_inc[i] : -1;
        if (s < 0) {
            sim_fail(w, "crash: the store has a '%c' row of %s, whose session it does not "
                        "hold", row->table, row->cid);
            return;
        }
        incarnation *in = &w->inc[s];
        if (row->table == 'S') {
            /* Its interval as the store kept it (0: not recorded, a 3.1.1
             * session's: session.expiry), and its expiry: recorded when it
             * went offline (a wall time, or the time left), else the whole
             * interval from the restore. One that passed while the broker
             * was down is ended by the restore. */
            uint32_t v = row->expiry_interval;
            in->expiry_s = v == 0 ? w->expiry_s : v == UINT32_MAX ? 0 : v;
            uint64_t t = row->expiry_at, due = 0;
            if (t & JOURNAL_TIME_LEFT)
                due = w->now + (t & ~JOURNAL_TIME_LEFT);
            else if (t != 0)
                due = t - SIM_WALL_MS;
            if (in->expiry_s && due) {
                uint64_t span = (uint64_t)in->expiry_s * 1000u;
                in->offline_since = due > span ? due - span : 0;
            }
            continue;
        }
        if (row->table == 'B') {
            for (int f = 0; f < SIM_FILTERS; f++)
                if (strcmp(row->key, sim_filters[f]) == 0)
                    in->subs[f] = (uint8_t)(row->qos + 1);
        } else if (row->table == 'I') {
            if (in->n_in_qos2 == SIM_MAX_AWAIT)
                abort();
            in->in_qos2[in->n_in_qos2++] = row->packet_id;
        }
    }
    /* What expired while the broker was down is gone at restore. */
    for (int i = 0; i < SIM_ALL; i++) {
        int j = w->cur_inc[i];
        incarnation *in = j >= 0 ? &w->inc[j] : NULL;
        if (in && in->expiry_s && in->offline_since + (uint64_t)in->expiry_s * 1000u <= w->now) {
            sim_trace(w, "model: %s session #%d expired while the broker was down",
                      w->cl[i].id, j);
            kill_inc(w, j);
            in->expired = true;
            w->n_expired++;
            w->n_expired_down++;
        }
    }
    groups_update(w);
    for (int t = 0; t < SIM_TOPICS && !w->failed; t++)
        crash_retained(w, t, kept[t]);
    /* A copy sent before the crash whose new state was not committed is
     * sent again, as a first send: without DUP. */
    for (int j = 0; j < w->ninc; j++)
        for (int mi = 0; mi < w->nmsgs; mi++)
            w->inc[j].exp[mi].nodup = 0;
}
