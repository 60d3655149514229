/*
 * sim.c - the simulator's scenario and command line.
 *
 *   sim --seed N [--verbose]         run one seed (replays a failure exactly)
 *   sim --seeds COUNT [--start S]    run seeds S .. S+COUNT-1 (default S = 1)
 *   --durable / --no-durable         every seed durable / none (default: the
 *                                    seeds divisible by 3; see store.c)
 *   --keep-going                     report every failing seed
 *
 * A run: warm-up (so the core's grow-only tables and scratch reach their
 * final size, giving a memory baseline), a random phase of client actions,
 * network deliveries and time steps, then a quiescent end phase: every
 * persistent session reconnects and everything drains; the delivery
 * invariants are checked, a fresh client checks the retained messages, and
 * after every session is removed the core's memory must be back at the
 * baseline and, after broker_destroy, at zero.
 */
#include "sim.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The last topic is the shared subscriptions' (shared seeds only): of the
 * ordinary filters only "#" covers it, which those seeds never subscribe. */
const char *const sim_topics[SIM_TOPICS] = {"t/0", "t/1", "t/2/x", "u/0", "u/1", "s/1/y"};
const char *const sim_filters[SIM_FILTERS] = {"t/0", "t/+", "t/#",  "#",
                                              "u/+", "+/0", "+/+/x", "u/1",
                                              "$share/a/s/+/y", "$share/b/s/#"};
enum { FILTER_ALL = 3 };

void sim_fail(world *w, const char *fmt, ...)
{
    if (w->failed)
        return; /* the first violation is the one that matters */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->fail_msg, sizeof w->fail_msg, fmt, ap);
    va_end(ap);
    w->failed = true;
    sim_trace(w, "VIOLATION: %s", w->fail_msg);
}

void sim_trace(world *w, const char *fmt, ...)
{
    if (!w->verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[%6llu t=%llu] ", (unsigned long long)w->step,
            (unsigned long long)w->now);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void check_memory(world *w)
{
    broker_stats st;
    broker_get_stats(w->b, &st);
    if (st.memory_used != w->at.live_bytes)
        sim_fail(w, "memory_used %llu but the allocator holds %llu bytes",
                 (unsigned long long)st.memory_used, (unsigned long long)w->at.live_bytes);
}

/* Let ms of time pass: timeouts, session expiry (the model follows). The
 * core's clock moves with the simulator's: broker_store_done takes no time
 * and ends connections at the core's last known one, which the model
 * takes to be now. */
static void advance(world *w, uint64_t ms)
{
    w->now += ms;
    net_time(w);
    net_tick(w);
}

/* Nothing moves, but something waits for a deadline: a connection the core
 * wants closed lingers in the layer (its peer takes nothing), or a publisher
 * is held for a slow subscriber (two clients may hold each other) and the
 * hold times out. Let time pass until it does; false when nothing waits. */
static bool wait_for_deadline(world *w)
{
    bool held = false, closing = false, budget = false;
    for (int k = 0; k < w->nconns; k++) {
        held |= net_input_held(&w->conns[k]);
        closing |= net_closing(&w->conns[k]);
        budget |= w->conns[k].open && w->conns[k].link.c.timer == CONN_TIMER_INPUT;
    }
    if (budget && !closing) {
        /* Links wait for the input budget, which stays spent: the layer
         * promises to close them within CONN_INPUT_WAIT_MS. */
        uint64_t d = conn_next_deadline(w->cs);
        if (d <= w->now || d > w->now + CONN_INPUT_WAIT_MS) {
            sim_fail(w, "links wait for the input budget, and the layer's next deadline is "
                        "%lld ms away",
                     (long long)(d - w->now));
            return false;
        }
        sim_trace(w, "waiting %llu ms for the input budget", (unsigned long long)(d - w->now));
        advance(w, d - w->now);
        return true;
    }
    if (closing) {
        /* The layer promises to end it within CONN_LINGER_MS. */
        uint64_t d = conn_next_deadline(w->cs);
        if (d <= w->now || d > w->now + CONN_LINGER_MS) {
            sim_fail(w, "a connection the core wants closed stays open, and the layer's "
                        "next deadline is %lld ms away",
                     (long long)(d - w->now));
            return false;
        }
        sim_trace(w, "waiting %llu ms for a linger", (unsigned long long)(d - w->now));
        advance(w, d - w->now);
        return true;
    }
    uint64_t d = broker_next_deadline(w->b);
    if (!held || d > w->now + SIM_HOLD_MS)
        return false;
    sim_trace(w, "waiting %llu ms for held publishers", (unsigned long long)(d - w->now));
    advance(w, d > w->now ? d - w->now : 0);
    return true;
}

/* What settle watches to tell whether anything moved. */
static uint64_t fingerprint(const world *w)
{
    uint64_t h = 0xcbf29ce484222325ull;
#define MIX(v) (h = (h ^ (uint64_t)(v)) * 0x100000001b3ull)
    broker_stats st;
    broker_get_stats(w->b, &st);
    MIX(st.bytes_sent);
    MIX(st.bytes_received);
    MIX(st.clients_connected);
    MIX(st.clients_total);
    MIX(w->npend);
    for (int k = 0; k < w->nconns; k++) {
        const sconn *c = &w->conns[k];
        MIX(c->up.len);
        MIX(c->link.up.len);
        MIX(c->link.c.pending_len);
        MIX(c->link.down.len);
        MIX(c->rx.len);
        MIX(c->open);
        MIX(c->client);
    }
    for (int i = 0; i < SIM_ALL; i++)
        MIX(w->cl[i].nacks);
#undef MIX
    return h;
}

/* Deliver everything in flight, both ways, until nothing moves: one turn of
 * the layer per round, every transport taking all its client left room for. */
static void settle(world *w)
{
    for (int iter = 0; iter < 100000 && !w->failed; iter++) {
        uint64_t before = fingerprint(w);
        net_refill(w);
        net_turn_begin(w);
        for (int k = 0; k < w->nconns && !w->failed; k++) {
            sconn *c = &w->conns[k];
            net_arrive(w, k, c->up.len);
            net_readable(w, k);
            if (c->link.down.len || (c->eof && c->client >= 0))
                net_deliver(w, k, c->link.down.len);
            net_writable(w, k);
        }
        for (int i = 0; i < SIM_ALL; i++)
            if (w->cl[i].st == CS_READY && w->cl[i].nacks)
                client_flush_acks(w, i, w->cl[i].nacks);
        store_take(w);
        bool committed = store_commit(w, w->npend) > 0;
        net_turn_end(w);
        if (w->failed)
            return;
        /* Moving on: the layer's ready list, and links it now waits on
         * (input resumed by the flush, output blocked before the refill). */
        bool moved = committed || fingerprint(w) != before || conn_next_deadline(w->cs) == 0;
        for (int k = 0; k < w->nconns && !moved; k++)
            moved = net_has_readable(&w->conns[k]) || net_has_writable(&w->conns[k]);
        if (!moved && !wait_for_deadline(w))
            return;
    }
    sim_fail(w, "the network never became quiet");
}

/* A random connection satisfying a condition, or -1. */
static int pick_conn(world *w, int which)
{
    if (w->nconns == 0)
        return -1;
    int start = (int)rng_below(&w->r, (uint32_t)w->nconns);
    for (int n = 0; n < w->nconns; n++) {
        int k = (start + n) % w->nconns;
        const sconn *c = &w->conns[k];
        bool ok = which == 0   ? (c->open && c->up.len) || net_has_readable(c)
                  : which == 1 ? c->link.down.len || (c->eof && c->client >= 0)
                               : net_has_writable(c);
        if (ok)
            return k;
    }
    return -1;
}

static size_t chunk(world *w, size_t len)
{
    if (len == 0 || rng_pct(&w->r, 50))
        return len;
    return 1 + rng_below(&w->r, (uint32_t)len);
}

static void takeover(world *w, int i)
{
    sclient *cl = &w->cl[i];
    sim_trace(w, "%s takes over its own client id", cl->id);
    net_orphan(w, cl->conn);
    cl->conn = -1;
    cl->st = CS_OFF;
    w->n_takeovers++;
    client_connect(w, i, rng_pct(&w->r, 30));
}

/* Shared seeds: the filter drawn f, or half the time (and always for "#",
 * which would cover the shared topic) client i's group's. */
static int shared_filter(world *w, int i, int f)
{
    if (!w->shared || (f != FILTER_ALL && rng_pct(&w->rsh, 50)))
        return f;
    return SIM_SHARED_FILTER + sim_group(w, i);
}

/* Shared seeds: the topic drawn t, or 40% of the time the group's. */
static int shared_topic(world *w, int t)
{
    return w->shared && rng_pct(&w->rsh, 40) ? SIM_SHARED_TOPIC : t;
}

static void client_action(world *w)
{
    int i = (int)rng_below(&w->r, SIM_CLIENTS);
    sclient *cl = &w->cl[i];
    uint32_t r = rng_below(&w->r, 100);
    switch (cl->st) {
    case CS_OFF:
        if (r < 60 && w->ninc < SIM_MAX_INC - 2 * SIM_ALL - 4) {
            w->n_reconnects++;
            client_connect(w, i, rng_pct(&w->r, 30));
        }
        break;
    case CS_CONNECTING:
        if (r < 5)
            net_drop(w, cl->conn);
        else if (r < 8 && w->ninc < SIM_MAX_INC - 2 * SIM_ALL - 4)
            takeover(w, i);
        break;
    case CS_READY:
        /* The store model has a fixed number of rows: keep well inside. */
        if (r < 40 && store_rows(w) > 250)
            break;
        /* The draws as the calls make them (in the compiler's order of
         * arguments: other seeds draw what they did before); shared seeds
         * turn some into the group's topic and filters. */
        if (r < 40)
            client_publish(w, i, shared_topic(w, (int)rng_below(&w->r, SIM_ORD_TOPICS)),
                           (uint8_t)rng_below(&w->r, 3), rng_pct(&w->r, 15));
        else if (r < 55)
            client_subscribe(w, i, shared_filter(w, i, (int)rng_below(&w->r, SIM_ORD_FILTERS)),
                             (uint8_t)rng_below(&w->r, 3));
        else if (r < 60)
            client_unsubscribe(w, i, shared_filter(w, i, (int)rng_below(&w->r, SIM_ORD_FILTERS)));
        else if (r < 80)
            client_flush_acks(w, i, 1 + (int)rng_below(&w->r, 8));
        else if (r < 84)
            client_disconnect(w, i);
        else if (r < 88) {
            w->n_drops++;
            net_drop(w, cl->conn);
        } else if (r < 90 && w->ninc < SIM_MAX_INC - 2 * SIM_ALL - 4)
            takeover(w, i);
        break;
    case CS_DISCONNECTING:
        if (r < 10)
            net_drop(w, cl->conn);
        break;
    }
}

/* Durable seeds: the store commits late, in prefixes; sometimes fails;
 * rarely the broker crashes. */
static void store_step(world *w)
{
    store_take(w);
    uint32_t r = rng_below(&w->r, 1000);
    if (r < 250)
        store_commit(w, 1 + (int)rng_below(&w->r, (uint32_t)w->npend + 1));
    else if (r < 256)
        store_fail(w);
    else if (r < 259)
        store_crash(w);
}

/* Time passes; now and then exactly until a lingering close is due. */
static void time_step(world *w)
{
    bool closing = false;
    for (int k = 0; k < w->nconns && !closing; k++)
        closing = net_closing(&w->conns[k]);
    uint64_t d = conn_next_deadline(w->cs);
    if (rng_pct(&w->r, 20) && closing && d > w->now && d <= w->now + CONN_LINGER_MS)
        advance(w, d - w->now);
    else
        advance(w, rng_below(&w->r, 500));
}

/* One turn of the layer around one random event. */
static void random_step(world *w)
{
    net_refill(w);
    net_turn_begin(w);
    uint32_t r = rng_below(&w->r, 100);
    int k;
    if (r < 30 && (k = pick_conn(w, 0)) >= 0) {
        net_arrive(w, k, chunk(w, w->conns[k].up.len));
        net_readable(w, k);
    } else if (r < 60 && (k = pick_conn(w, 1)) >= 0) {
        net_deliver(w, k, chunk(w, w->conns[k].link.down.len));
    } else if (r < 65 && (k = pick_conn(w, 2)) >= 0) {
        net_writable(w, k);
    } else if (r < 70) {
        time_step(w);
    } else {
        client_action(w);
    }
    if (w->durable && !w->failed)
        store_step(w);
    net_turn_end(w);
}

/* Every client subscribes to every filter and every topic gets a retained
 * message, then all of it goes away: the grow-only parts of the core (hash
 * tables, match scratch) reach the size the rest of the run needs. */
static uint64_t warm_up(world *w)
{
    w->warming = true;
    for (int i = 0; i < SIM_ALL; i++)
        client_connect(w, i, true);
    settle(w);
    /* Shared seeds: the groups too, one per client, but not "#". */
    int ntopics = w->shared ? SIM_TOPICS : SIM_ORD_TOPICS;
    for (int i = 0; i < SIM_ALL; i++)
        for (int f = 0; f < SIM_ORD_FILTERS; f++)
            if (!w->shared || f != FILTER_ALL)
                client_subscribe(w, i, f, 2);
    for (int i = 0; i < SIM_ALL && w->shared; i++)
        client_subscribe(w, i, SIM_SHARED_FILTER + sim_group(w, i), 2);
    settle(w);
    for (int t = 0; t < ntopics; t++) {
        client_publish(w, 0, t, 1, true);
        client_publish(w, 0, t, 2, false);
    }
    settle(w);
    for (int t = 0; t < ntopics; t++)
        client_clear_retained(w, 0, t);
    settle(w);
    for (int i = 0; i < SIM_ALL; i++)
        client_disconnect(w, i);
    settle(w);
    w->warming = false;
    broker_stats st;
    broker_get_stats(w->b, &st);
    if (st.clients_total != 0 || st.retained_count != 0)
        sim_fail(w, "warm-up left %llu sessions, %llu retained",
                 (unsigned long long)st.clients_total, (unsigned long long)st.retained_count);
    return st.memory_used;
}

static void end_phase(world *w, uint64_t baseline)
{
    w->quiesce = true;
    sim_trace(w, "end phase");
    for (int k = 0; k < w->nconns; k++)
        if (w->conns[k].client < 0 && w->conns[k].open)
            net_drop(w, k); /* abandoned connections */
    settle(w);
    sim_trace(w, "end phase: settled");
    /* Reconnect every persistent session until all is delivered. */
    for (int round = 0; round < 20 && !w->failed; round++) {
        bool again = false;
        for (int i = 0; i < SIM_CLIENTS; i++) {
            if (w->cl[i].st == CS_OFF && w->cur_inc[i] >= 0) {
                client_connect(w, i, false);
                again = true;
            }
        }
        sim_trace(w, "end phase: round %d", round);
        settle(w);
        if (!again)
            break;
    }
    for (int i = 0; i < SIM_CLIENTS && !w->failed; i++)
        if (w->cl[i].st == CS_READY && w->cl[i].ninfl > 0)
            sim_fail(w, "%s: %d publishes still unacknowledged after the drain", w->cl[i].id,
                     w->cl[i].ninfl);
    if (w->failed)
        return;
    model_check_final(w);
    broker_stats st;
    broker_get_stats(w->b, &st);
    w->n_qos0_dropped = st.publish_dropped;
    uint64_t dropped = st.publish_dropped + w->dropped_before;
    /* A copy too large for a 5.0 client's Maximum Packet Size is dropped
     * and counted too [MQTT-3.1.2-25]. */
    bool limited = false;
    for (int i = 0; i < SIM_CLIENTS; i++)
        limited |= w->cl[i].v5 && w->cl[i].max_packet != 0;
    /* A group's QoS 0 message with no member connected is dropped and
     * counted too (docs/OPERATIONS.md "Shared subscriptions"). */
    if (dropped != 0 && !w->tight && w->ident_bytes == 0 && !limited && !w->shared)
        sim_fail(w, "publish_dropped = %llu with limits that should drop nothing",
                 (unsigned long long)dropped);
    else if (w->n_ident_lost > dropped)
        sim_fail(w, "%llu QoS 1/2 messages never reached sessions of limited identities, the "
                    "core dropped %llu",
                 (unsigned long long)w->n_ident_lost, (unsigned long long)dropped);
    if (w->failed)
        return;

    /* Retained: a fresh client sees exactly the last retained value. */
    sclient *fin = &w->cl[SIM_FINAL];
    for (int t = 0; t < SIM_TOPICS; t++)
        fin->got_retained[t] = -1;
    client_connect(w, SIM_FINAL, true);
    settle(w);
    client_subscribe(w, SIM_FINAL, FILTER_ALL, 2);
    settle(w);
    for (int t = 0; t < SIM_TOPICS && !w->failed; t++) {
        /* An expired retained message is not sent [MQTT-3.3.2-5] (one
         * that expired since it was sent was sent in time). */
        int want = w->retained[t], got = fin->got_retained[t];
        bool expired = want >= 0 && w->msgs[want].expiry_s && w->msgs[want].expires_at <= w->now;
        if (got != want && !(expired && got == -1))
            sim_fail(w, "retained on %s: got m%d, the last retained publish was m%d%s",
                     sim_topics[t], got, want, expired ? " (expired by now)" : "");
    }
    for (int t = 0; t < SIM_TOPICS; t++)
        if (w->retained[t] >= 0)
            client_clear_retained(w, SIM_FINAL, t);
    client_disconnect(w, SIM_FINAL);
    settle(w);

    /* Everyone leaves and every session is removed. */
    for (int i = 0; i < SIM_CLIENTS; i++)
        client_disconnect(w, i);
    settle(w);
    for (int i = 0; i < SIM_CLIENTS; i++) {
        if (w->cur_inc[i] >= 0) {
            client_connect(w, i, true);
            settle(w);
            client_disconnect(w, i);
            settle(w);
        }
    }
    if (w->failed)
        return;
    /* Nodes a walk emptied (an expired retained message's) wait for the
     * tree's sweep, which runs on the core's timer: let time pass until
     * nothing is due within a few seconds, so the memory is the core's at
     * rest, as a live broker's is within seconds. */
    for (int i = 0; i < 16 && !w->failed; i++) {
        uint64_t d = broker_next_deadline(w->b);
        if (d > w->now + SIM_SWEEP_WAIT_MS)
            break;
        advance(w, d > w->now ? d - w->now : 1);
        settle(w);
    }
    if (w->failed)
        return;
    broker_get_stats(w->b, &st);
    if (st.clients_total || st.clients_connected || st.retained_count ||
        st.subscriptions_count)
        sim_fail(w, "after everyone left: %llu sessions, %llu connected, %llu retained, %llu "
                 "subscriptions",
                 (unsigned long long)st.clients_total, (unsigned long long)st.clients_connected,
                 (unsigned long long)st.retained_count,
                 (unsigned long long)st.subscriptions_count);
    else if (st.memory_used != baseline && w->n_crashes == 0) /* a restored core is not warmed up */
        sim_fail(w, "memory_used %llu after everyone left, baseline %llu",
                 (unsigned long long)st.memory_used, (unsigned long long)baseline);
}

typedef struct run_stats {
    uint64_t steps, msgs, delivered, dups, drops, takeovers, reconnects, tight, dropped,
        paused, expiry_seeds, expired, durable, commits, failed, crashes, downtimes,
        expired_down, hold_seeds, held,
        hold_timeouts, kept, graceful, aborts, lingers, input_seeds, input_waits, input_closes,
        ident_seeds, sessions_refused, ident_lost, v5, msg_expiry, expired_msgs, alias_up,
        alias_down, too_large, disc_end, at_recv_max, sh_seeds, sh_routed, sh_rcv, sh_again,
        sh_left, sh_excused;
} run_stats;

/* MQTT 5.0 clients, from a generator of their own (the other draws stay
 * what they were): one seed in four none, one in four all of c0-c5, the
 * rest each client at even odds; the checker stays 3.1.1. What each
 * announces: a Receive Maximum of 1-4 (or none), a Maximum Packet Size of
 * 100-599 bytes in one of three (small enough for padded messages), a
 * Topic Alias Maximum of 0-SIM_ALIAS_MAX; half use the broker's aliases;
 * the Session Expiry Interval of a persistent session: never (as 3.1.1)
 * or 1-6 s. */
static void draw_v5(world *w)
{
    rng r;
    rng_seed(&r, w->seed ^ 0x5ec5ull << 32);
    uint32_t mix = (uint32_t)(w->seed % 4);
    for (int i = 0; i < SIM_CLIENTS; i++) {
        sclient *cl = &w->cl[i];
        cl->v5 = mix == 1 || (mix >= 2 && rng_pct(&r, 50));
        cl->recv_max = rng_pct(&r, 70) ? (uint16_t)(1 + rng_below(&r, 4)) : 0;
        cl->max_packet = rng_below(&r, 3) == 0 ? 100 + rng_below(&r, 500) : 0;
        cl->alias_max = (uint16_t)rng_below(&r, SIM_ALIAS_MAX + 1);
        cl->use_alias = rng_pct(&r, 50);
        cl->sess_expiry = rng_pct(&r, 50) ? UINT32_MAX : 1 + rng_below(&r, 6);
        w->n_v5 += cl->v5;
        if (cl->v5)
            sim_trace(w, "%s speaks MQTT 5.0: receive maximum %u, maximum packet size %u, topic "
                         "alias maximum %u, %s aliases, session expiry %u",
                      cl->id, cl->recv_max, cl->max_packet, cl->alias_max,
                      cl->use_alias ? "uses" : "no", cl->sess_expiry);
    }
}

/* One seed; returns false on a violation (already printed). */
static bool run_seed(const char *argv0, uint64_t seed, bool verbose, int durable, run_stats *rs)
{
    world *w = calloc(1, sizeof *w);
    if (!w)
        abort();
    w->seed = seed;
    w->verbose = verbose;
    rng_seed(&w->r, seed);
    alloc_track_init(&w->at);

    /* One seed in three is durable: chosen from the seed itself, so the
     * other seeds draw exactly what they did before the mode existed. */
    w->durable = durable < 0 ? seed % 3 == 0 : durable > 0;
    broker_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.durable = w->durable;
    /* Limits large enough that nothing may be dropped; a small inflight
     * window and work budget so queues and partial input are exercised. */
    /* One seed in three runs with small output buffers: the core then
     * drops QoS 0 (counted) and pauses input; QoS 1/2 must still arrive. */
    w->tight = rng_below(&w->r, 3) == 0;
    if (w->tight)
        cfg.limits.max_out_bytes = 256 + rng_below(&w->r, 2048);
    /* One seed in four lets offline persistent sessions expire. */
    if (rng_below(&w->r, 4) == 0)
        w->expiry_s = 1 + rng_below(&w->r, 4);
    cfg.limits.session_expiry_s = w->expiry_s;
    cfg.limits.max_inflight = 1 + rng_below(&w->r, 8);
    cfg.limits.work_budget = 1 + rng_below(&w->r, 6);
    cfg.limits.max_queued = 100000;
    cfg.limits.max_queued_bytes = 1u << 30;
    /* One seed in four holds publishers for slow subscribers from 1-4
     * unsent messages on (the default is max_queued / 2: never here).
     * Chosen from the seed, so every seed draws what it did before. */
    if (seed % 4 == 1)
        cfg.limits.hold_queued = 1 + (uint32_t)(seed / 4 % 4);
    cfg.limits.publisher_hold_ms = SIM_HOLD_MS;
    cfg.limits.connect_timeout_ms = 24u * 3600u * 1000u;
    cfg.limits.sys_interval_s = UINT32_MAX;
    /* The subscription and topic limits at exactly what the clients reach
     * (every filter at once; "t/2/x": 3 levels, 5 bytes), so a limit off by
     * one refuses a SUBSCRIBE or closes a publisher: failures the model
     * allows nowhere. */
    cfg.limits.max_subscriptions = SIM_ORD_FILTERS;
    cfg.limits.max_topic_levels = 3;
    cfg.limits.max_topic_length = 5;
    /* One seed in five has shared subscriptions (draws of their own): the
     * limits count the whole "$share/a/s/+/y" (5 levels, 14 bytes), and a
     * client holds at most the 7 ordinary filters besides "#" and one
     * group's. */
    if (seed % 5 == 1) {
        w->shared = true;
        rng_seed(&w->rsh, seed ^ 0x5ba3ull << 32);
        cfg.limits.max_topic_levels = 5;
        cfg.limits.max_topic_length = (uint32_t)strlen(sim_filters[SIM_SHARED_FILTER]);
        for (int g = 0; g < SIM_GROUPS; g++)
            w->g_empty[g] = true;
    }
    /* Hostile-client limits, from the seed number (other seeds draw what
     * they did before). One seed in five: clients carry identities
     * (sim_identity), one or two persistent sessions each; in half of
     * those 0.5-1.25 KiB queued per identity (the core lowers
     * max_packet_size to it: the clients' largest packet must still fit). One seed in seven:
     * an input budget of a few hundred bytes across all links: more than
     * one link holds for an unfinished packet (the core's tail buffer, 256
     * bytes or 512 with the padding of small-output seeds, and a packet),
     * or a lone holder would wait for itself, as the configuration's rule
     * (at least limits.max_packet_size) prevents in real use. */
    if (seed % 5 == 2) {
        w->idents = true;
        w->ident_sessions = 1 + (uint32_t)(seed / 5 % 2);
        if (seed / 10 % 2 == 0)
            w->ident_bytes = 512 + (uint32_t)(seed / 20 % 4) * 256;
    }
    cfg.limits.max_sessions_per_identity = w->ident_sessions;
    cfg.limits.max_queued_bytes_per_identity = w->ident_bytes;
    if (seed % 7 == 3)
        w->max_input = w->tight ? 768 + seed / 7 % 4 * 128 : 320 + seed / 7 % 4 * 64;
    cfg.allocator = alloc_track_allocator(&w->at);
    cfg.allow_anonymous = true;
    cfg.version = "sim";
    w->now = 1000000;
    w->cfg = cfg;
    /* A transport holds this much output its client has not read: one seed
     * in three (those with small output buffers) little. */
    w->sndbuf = w->tight ? 256 + rng_below(&w->r, 4096) : 64u * 1024u;
    w->b = broker_create(&cfg, w->now);
    if (!w->b)
        abort();
    broker_set_wall_clock(w->b, SIM_WALL_MS + w->now, w->now);
    net_start(w);
    sim_trace(w, "seed %llu: %s%s, expiry %u s, inflight %u, work budget %u, hold %u, "
                 "transport buffer %zu, input budget %llu, identities %s (sessions %u, "
                 "bytes %u)",
              (unsigned long long)seed, w->durable ? "durable" : "not durable",
              w->tight ? ", small output buffers" : "", w->expiry_s, cfg.limits.max_inflight,
              cfg.limits.work_budget, cfg.limits.hold_queued, w->sndbuf,
              (unsigned long long)w->max_input, w->idents ? "on" : "off", w->ident_sessions,
              w->ident_bytes);
    model_init(w);
    store_init(w);
    for (int i = 0; i < SIM_ALL; i++)
        client_init(w, i);
    draw_v5(w);

    uint64_t baseline = warm_up(w);
    bool in_warm_up = w->failed;
    uint64_t steps = 300 + rng_below(&w->r, 1200);
    for (w->step = 1; w->step <= steps && !w->failed; w->step++) {
        random_step(w);
        check_memory(w);
        if (w->failed)
            break;
    }
    if (!w->failed)
        end_phase(w, baseline);
    if (!w->failed)
        check_memory(w);

    bool ok = !w->failed;
    if (!ok) {
        /* The replay line repeats a forced durable mode: without it the
         * seed would run in its default mode, which may not fail. */
        fprintf(stderr, "sim: seed %llu: %s %llu: %s\n  replay: %s --seed %llu%s --verbose\n",
                (unsigned long long)seed,
                in_warm_up ? "warm-up, step" : w->quiesce ? "end phase after step" : "step",
                (unsigned long long)(w->quiesce ? w->step - 1 : w->step), w->fail_msg, argv0,
                (unsigned long long)seed,
                durable > 0 ? " --durable" : durable == 0 ? " --no-durable" : "");
    }
    rs->steps += w->step;
    rs->msgs += (uint64_t)w->nmsgs;
    rs->delivered += w->n_delivered;
    rs->dups += w->n_dups;
    rs->drops += w->n_drops;
    rs->takeovers += w->n_takeovers;
    rs->reconnects += w->n_reconnects;
    rs->tight += w->tight;
    rs->dropped += w->n_qos0_dropped;
    rs->paused += w->n_paused;
    rs->kept += w->n_kept;
    rs->graceful += w->n_graceful;
    rs->aborts += w->n_aborts;
    rs->expiry_seeds += w->expiry_s != 0;
    rs->expired += w->n_expired;
    rs->durable += w->durable;
    rs->commits += w->n_commits;
    rs->failed += w->n_failed;
    rs->crashes += w->n_crashes;
    rs->downtimes += w->n_downtimes;
    rs->expired_down += w->n_expired_down;
    rs->hold_seeds += w->cfg.limits.hold_queued != 0;
    if (w->b) {
        broker_stats st; /* since the last crash, if any */
        broker_get_stats(w->b, &st);
        rs->held += st.publishers_held;
        rs->hold_timeouts += st.hold_timeouts;
    }

    net_stop(w);
    rs->lingers += w->n_lingers;
    rs->input_seeds += w->max_input != 0;
    rs->input_waits += w->n_input_waits;
    rs->input_closes += w->n_input_closes;
    rs->ident_seeds += w->idents;
    rs->sessions_refused += w->n_sessions_refused;
    rs->ident_lost += w->n_ident_lost;
    rs->v5 += w->n_v5;
    rs->msg_expiry += w->n_msg_expiry;
    rs->expired_msgs += w->n_expired_msgs;
    rs->alias_up += w->n_alias_up;
    rs->alias_down += w->n_alias_down;
    rs->too_large += w->n_too_large;
    rs->disc_end += w->n_disc_end;
    rs->at_recv_max += w->n_at_recv_max;
    rs->sh_seeds += w->shared;
    rs->sh_routed += w->n_sh_routed;
    rs->sh_rcv += w->n_sh_rcv;
    rs->sh_again += w->n_sh_again;
    rs->sh_left += w->n_sh_left;
    rs->sh_excused += w->n_sh_excused;
    if (w->b)
        broker_destroy(w->b);
    if (ok && (w->at.live_bytes != 0 || w->at.live_blocks != 0)) {
        fprintf(stderr, "sim: seed %llu: %llu bytes in %llu blocks left after broker_destroy\n",
                (unsigned long long)seed, (unsigned long long)w->at.live_bytes,
                (unsigned long long)w->at.live_blocks);
        ok = false;
    }
    net_free(w);
    model_free(w);
    store_free(w);
    free(w);
    return ok;
}

static int usage(void)
{
    fprintf(stderr, "usage: sim --seed N [--verbose] | sim --seeds COUNT [--start S]\n"
                    "           [--durable | --no-durable]   (default: seeds divisible by 3)\n"
                    "           [--keep-going]   report every failing seed, not only the first\n");
    return 2;
}

int main(int argc, char **argv)
{
    uint64_t start = 1, count = 0;
    bool single = false, verbose = false;
    int durable = -1;
    bool keep_going = false;
    uint64_t nfailed = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            start = strtoull(argv[++i], NULL, 0);
            count = 1;
            single = true;
        } else if (!strcmp(argv[i], "--seeds") && i + 1 < argc) {
            count = strtoull(argv[++i], NULL, 0);
        } else if (!strcmp(argv[i], "--start") && i + 1 < argc) {
            start = strtoull(argv[++i], NULL, 0);
        } else if (!strcmp(argv[i], "--keep-going")) {
            keep_going = true;
        } else if (!strcmp(argv[i], "--durable")) {
            durable = 1;
        } else if (!strcmp(argv[i], "--no-durable")) {
            durable = 0;
        } else if (!strcmp(argv[i], "--verbose") || !strcmp(argv[i], "-v")) {
            verbose = true;
        } else {
            return usage();
        }
    }
    if (count == 0)
        return usage();
    run_stats rs;
    memset(&rs, 0, sizeof rs);
    clock_t t0 = clock();
    uint64_t done = 0;
    for (uint64_t s = start; s < start + count; s++, done++) {
        if (!run_seed(argv[0], s, verbose && single, durable, &rs)) {
            nfailed++;
            if (!keep_going)
                return 1;
        }
    }
    printf("sim: %llu seeds from %llu ok: %llu steps, %llu messages, %llu deliveries, "
           "%llu DUP copies, %llu drops, %llu takeovers, %llu reconnects; %llu seeds with "
           "small output buffers, %llu QoS 0 dropped there, input paused %llu times; %llu seeds with "
           "session expiry, %llu sessions expired; %llu durable seeds, %llu commits, %llu "
           "failed batches, %llu crashes (%llu with the broker down a while, %llu sessions "
           "expired meanwhile); %llu seeds holding publishers, held %llu times, "
           "%llu hold timeouts; connection layer: input kept %llu times, %llu graceful closes, "
           "%llu aborts, %llu lingers ran out; %llu seeds with an input budget, %llu waits, "
           "%llu closes; %llu seeds with identities, %llu sessions refused, %llu messages "
           "dropped for an identity's bytes; %.1f s\n",
           (unsigned long long)done, (unsigned long long)start, (unsigned long long)rs.steps,
           (unsigned long long)rs.msgs, (unsigned long long)rs.delivered,
           (unsigned long long)rs.dups, (unsigned long long)rs.drops,
           (unsigned long long)rs.takeovers, (unsigned long long)rs.reconnects,
           (unsigned long long)rs.tight, (unsigned long long)rs.dropped,
           (unsigned long long)rs.paused, (unsigned long long)rs.expiry_seeds,
           (unsigned long long)rs.expired, (unsigned long long)rs.durable,
           (unsigned long long)rs.commits, (unsigned long long)rs.failed,
           (unsigned long long)rs.crashes, (unsigned long long)rs.downtimes,
           (unsigned long long)rs.expired_down, (unsigned long long)rs.hold_seeds,
           (unsigned long long)rs.held, (unsigned long long)rs.hold_timeouts,
           (unsigned long long)rs.kept, (unsigned long long)rs.graceful,
           (unsigned long long)rs.aborts, (unsigned long long)rs.lingers,
           (unsigned long long)rs.input_seeds, (unsigned long long)rs.input_waits,
           (unsigned long long)rs.input_closes, (unsigned long long)rs.ident_seeds,
           (unsigned long long)rs.sessions_refused, (unsigned long long)rs.ident_lost,
           (double)(clock() - t0) / CLOCKS_PER_SEC);
    printf("sim: MQTT 5.0: %llu clients, %llu messages with an expiry, %llu copies expired "
           "unsent, %llu aliased PUBLISHes to the broker and %llu from it, %llu copies beyond "
           "a Maximum Packet Size excused, %llu sessions ended by DISCONNECT, a Receive "
           "Maximum reached %llu times\n",
           (unsigned long long)rs.v5, (unsigned long long)rs.msg_expiry,
           (unsigned long long)rs.expired_msgs, (unsigned long long)rs.alias_up,
           (unsigned long long)rs.alias_down, (unsigned long long)rs.too_large,
           (unsigned long long)rs.disc_end, (unsigned long long)rs.at_recv_max);
    printf("sim: shared subscriptions: %llu seeds, %llu routings to a group, %llu members "
           "received one first, %llu of them after a member that had it left, %llu members "
           "left, %llu unfinished messages excused (group emptied, QoS 0 member, QoS 2 with a "
           "leaver, crash, expiry, limits)\n",
           (unsigned long long)rs.sh_seeds, (unsigned long long)rs.sh_routed,
           (unsigned long long)rs.sh_rcv, (unsigned long long)rs.sh_again,
           (unsigned long long)rs.sh_left, (unsigned long long)rs.sh_excused);
    if (nfailed)
        printf("sim: %llu seeds failed\n", (unsigned long long)nfailed);
    return nfailed ? 1 : 0;
}
