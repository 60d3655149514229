/*
 * sys.c - the $SYS topics (SPEC C5): broker statistics published as retained
 * messages every sys_interval_s. Names follow Mosquitto's where it has one,
 * so existing dashboards work; $SYS/broker/memory/used is tern's own.
 */
#include "broker/broker-t.h"
#include "broker/console_core.h"
#include "broker/deliver.h"
#include "broker/journal.h"
#include "broker/sys.h"

#include <stdio.h>
#include <string.h>

static void put(broker *b, const char *topic, const char *value)
{
    bk_route_publish(b, (const uint8_t *)topic, strlen(topic), (const uint8_t *)value,
                     strlen(value), 0, true, NULL);
}

static void put_u64(broker *b, const char *topic, uint64_t v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    put(b, topic, buf);
}

/* A rate kept x1000, published with two decimals. */
static void put_load(broker *b, const char *topic, uint64_t x1000)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%llu.%02llu", (unsigned long long)(x1000 / 1000u),
             (unsigned long long)(x1000 % 1000u / 10u));
    put(b, topic, buf);
}

/* One step of a one-minute exponential moving average of a per-minute rate,
 * in integers (x1000) so no floating point or libm is needed. */
static uint64_t ema_step(uint64_t avg, uint64_t delta, uint64_t dt_ms)
{
    if (dt_ms == 0)
        return avg;
    uint64_t rate = delta * 60000u * 1000u / dt_ms;
    /* weight of the new sample: dt / (60 s + dt) */
    if (rate >= avg)
        return avg + (rate - avg) * dt_ms / (60000u + dt_ms);
    return avg - (avg - rate) * dt_ms / (60000u + dt_ms);
}

/* "full" (no room) says more than "failing", which it usually is too. */
static const char *store_state(const broker_store_status *st)
{
    return st->full ? "full" : st->failing ? "failing" : "ok";
}

static void put_store_state(broker *b)
{
    put(b, "$SYS/broker/store/state", store_state(&b->store_status));
}

static void sys_publish_store(broker *b)
{
    const broker_store_status *st = &b->store_status;
    put_store_state(b);
    put(b, "$SYS/broker/store/restored_from_backup", st->restored_at_open ? "yes" : "no");
    put_u64(b, "$SYS/broker/store/commits", st->commits);
    put_u64(b, "$SYS/broker/store/failed_commits", st->failed_commits);
    put_u64(b, "$SYS/broker/store/records", st->records);
    put_u64(b, "$SYS/broker/store/commit_latency/p50_us", st->commit_p50_us);
    put_u64(b, "$SYS/broker/store/commit_latency/p99_us", st->commit_p99_us);
    put_u64(b, "$SYS/broker/store/backups/done", st->backups_done);
    put_u64(b, "$SYS/broker/store/backups/failed", st->backups_failed);
    if (st->scrub_on) {
        put_u64(b, "$SYS/broker/store/scrub/progress", st->scrub_progress_pct);
        put_u64(b, "$SYS/broker/store/scrub/passes", st->scrub_passes);
        put_u64(b, "$SYS/broker/store/scrub/corrupt", st->scrub_corrupt);
        put(b, "$SYS/broker/store/scrub/last_corrupt", st->scrub_last_corrupt);
        put_u64(b, "$SYS/broker/store/scrub/last_pass_ms", st->scrub_last_pass_ms);
    }
    if (st->disk.disk_bytes) {
        put_u64(b, "$SYS/broker/store/disk/bytes", st->disk.disk_bytes);
        put_u64(b, "$SYS/broker/store/disk/partition_bytes", st->disk.partition_bytes);
        put_u64(b, "$SYS/broker/store/disk/database_bytes", st->disk.database_bytes);
        put_u64(b, "$SYS/broker/store/disk/growths", st->disk.growths);
        put(b, "$SYS/broker/store/disk/last_growth",
            st->disk.last_growth[0] ? st->disk.last_growth : "none");
    }
}

void broker_set_store_status(broker *b, const broker_store_status *st)
{
    /* The store logs its own state changes; the core publishes them. */
    bool changed = !b->has_store_status ||
                   strcmp(store_state(st), store_state(&b->store_status)) != 0;
    b->store_status = *st;
    b->has_store_status = true;
    if (changed)
        put_store_state(b);
}

int broker_sys_put(broker *b, const char *topic, const char *value)
{
    if (strncmp(topic, "$SYS/", 5) != 0)
        return -1;
    put(b, topic, value);
    return 0;
}

void broker_set_layer_stats(broker *b, const broker_layer_stats *st)
{
    b->layer_stats = *st;
    b->has_layer_stats = true;
}

/* The connection layer's counters: what happened to connections before
 * they reached the core (TLS handshakes, the input budget). */
static void sys_publish_layer(broker *b)
{
    const broker_layer_stats ls = b->layer_stats;
    put_u64(b, "$SYS/broker/connections/handshakes_failed", ls.handshakes_failed);
    put_u64(b, "$SYS/broker/connections/handshake_timeouts", ls.handshake_timeouts);
    put_u64(b, "$SYS/broker/connections/handshakes_refused", ls.handshakes_refused);
    put_u64(b, "$SYS/broker/connections/handshakes_refused_per_address",
            ls.handshakes_refused_address);
    put_u64(b, "$SYS/broker/connections/handshakes_abandoned", ls.handshakes_abandoned);
    put_u64(b, "$SYS/broker/connections/accept_holds", ls.accept_holds);
    put_u64(b, "$SYS/broker/connections/syns_dropped", ls.syns_dropped);
    put_u64(b, "$SYS/broker/connections/input_waits", ls.input_waits);
    put_u64(b, "$SYS/broker/connections/input_closes", ls.input_closes);
    put_u64(b, "$SYS/broker/connections/input_bytes", ls.input_bytes);
    put_u64(b, "$SYS/broker/connections/websocket_refused", ls.ws_refused);
    put_u64(b, "$SYS/broker/connections/websocket_errors", ls.ws_errors);
}

void bk_sys_publish(broker *b, uint64_t now_ms)
{
    sys_state *st = &b->sys;
    broker_stats s;
    char buf[48];

    broker_get_stats(b, &s);
    uint64_t dt = now_ms - st->last_ms;
    st->load_received = ema_step(st->load_received, s.msgs_received - st->last_received, dt);
    st->load_sent = ema_step(st->load_sent, s.msgs_sent - st->last_sent, dt);
    st->last_ms = now_ms;
    st->last_received = s.msgs_received;
    st->last_sent = s.msgs_sent;

    put(b, "$SYS/broker/version", b->version);
    snprintf(buf, sizeof buf, "%llu seconds",
             (unsigned long long)((now_ms - b->start_ms) / 1000u));
    put(b, "$SYS/broker/uptime", buf);
    put_u64(b, "$SYS/broker/clients/connected", s.clients_connected);
    put_u64(b, "$SYS/broker/clients/disconnected", b->sessions.offline_count);
    put_u64(b, "$SYS/broker/clients/total", s.clients_total);
    put_u64(b, "$SYS/broker/clients/maximum", s.clients_maximum);
    put_u64(b, "$SYS/broker/publish/messages/received", s.msgs_received);
    put_u64(b, "$SYS/broker/publish/messages/sent", s.msgs_sent);
    put_u64(b, "$SYS/broker/publish/messages/dropped", s.publish_dropped);
    /* MQTT 5.0: copies dropped unsent because their Message Expiry Interval
     * passed, or because they exceed what their client accepts (its
     * Maximum Packet Size). Neither counts in "dropped" above. */
    put_u64(b, "$SYS/broker/publish/messages/expired", s.msgs_expired);
    put_u64(b, "$SYS/broker/publish/messages/over_client_maximum", s.msgs_over_client_max);
    /* Back-pressure (ADR-028): how often slow subscribers held publishers,
     * and how often one gave up holding (its excess then counts as dropped). */
    put_u64(b, "$SYS/broker/publish/publishers_held", s.publishers_held);
    put_u64(b, "$SYS/broker/publish/hold_timeouts", s.hold_timeouts);
    put_u64(b, "$SYS/broker/bytes/received", s.bytes_received);
    put_u64(b, "$SYS/broker/bytes/sent", s.bytes_sent);
    put_u64(b, "$SYS/broker/subscriptions/count", s.subscriptions_count);
    /* Refused for a limit: filters answered 0x80 (limits.max_subscriptions,
     * max_topic_levels, max_topic_length), and PUBLISH or will topics beyond
     * the last two (their connection was closed). */
    put_u64(b, "$SYS/broker/subscriptions/refused", s.subscriptions_refused);
    put_u64(b, "$SYS/broker/publish/topics_refused", s.topics_refused);
    /* CONNECTs refused at limits.max_sessions_per_identity. */
    put_u64(b, "$SYS/broker/clients/sessions_refused", s.sessions_refused);
    /* CONNECTs refused for their user name or password (login.h). */
    put_u64(b, "$SYS/broker/clients/auth_failed", s.auth_failed);
    put_u64(b, "$SYS/broker/connections/protocol_errors", s.protocol_errors);
    put_u64(b, "$SYS/broker/connections/packets_too_large", s.packets_too_large);
    put_load(b, "$SYS/broker/load/publish/received/1min", st->load_received);
    put_load(b, "$SYS/broker/load/publish/sent/1min", st->load_sent);
    if (b->has_layer_stats)
        sys_publish_layer(b);
    if (b->has_store_status)
        sys_publish_store(b);
    bk_console_sys_publish(b);
    /* Last, so the count and the memory figure include the $SYS values. */
    put_u64(b, "$SYS/broker/retained messages/count", b->stats.retained_count);
    put_u64(b, "$SYS/broker/retained messages/bytes", b->stats.retained_bytes);
    uint64_t used = b->memory_used ? b->memory_used(b->memory_ctx) : b->stats.memory_used;
    put_u64(b, "$SYS/broker/memory/used", used);
    put_u64(b, "$SYS/broker/memory/core", b->stats.memory_used);
    put_u64(b, "$SYS/broker/heap/current", used);
}
