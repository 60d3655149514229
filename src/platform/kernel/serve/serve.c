/*
 * serve.c - the kernel's broker: creates the core (src/broker) and the
 * connection layer (src/conn) from the parsed configuration, listens with
 * lwIP on each configured port (mutual TLS, plaintext, WebSocket,
 * WebSocket over TLS: the same layer, conn/ws.h), and runs one turn
 * per main-loop iteration, as the Linux daemon's epoll loop does:
 *
 *   1. the layer serves leftover input and delayed handshakes;
 *   2. connections on the work list (input arrived, the peer closed, the
 *      pcb died, send room appeared, a close to retry) are handed to the
 *      layer once each, in arrival order (tcp.c);
 *   3. the layer ends the turn: the core's timers, every connection's
 *      output (one tcp_write run each), closes, expired handshakes and
 *      lingers.
 *
 * The core allocates from the kernel heap through broker_config.allocator.
 * With a durable store (issue 13) the core is restored from it before the
 * listeners open, and every turn begins by reporting the store thread's
 * finished commits (store/kstore.h) and ends by handing it the turn's
 * records and its share of the CPU.
 *
 * $SYS/broker/memory/used reports everything the kernel heap holds (the
 * core, wolfSSL's sessions, the TLS adapter's and lwIP's buffers; not
 * lwIP's fixed pools) and SQLite's own heap, $SYS/broker/memory/core the core's share. Also
 * provides tern_panic, the one function the core needs from its platform.
 *
 * There is one broker per kernel, like the one network interface: its
 * state is a boot-time structure here, reached by callbacks through their
 * argument pointers so that sharding across cores later changes little.
 */
#include "serve/serve.h"

#include "bootconf.h"
#include "clock.h"
#include "broker/acl.h"
#include "config/config.h"
#include "conn/ws.h"
#include "console.h"
#include "mm/kmalloc.h"
#include "net/net.h"
#include "panic.h"
#include "rng/entropy.h"
#include "serve/kconsole.h"
#include "serve/tcp.h"
#include "store/kdisk_store.h"
#include "store/ksqlite.h"
#include "store/kstore.h"
#include "store/ktele.h"
#include "version.h"
#include "wallclock.h"

#include "lwip/tcp.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static struct kserver server;

static void *core_alloc(void *ctx, size_t n)
{
    (void)ctx;
    return kmalloc(n);
}

static void *core_realloc(void *ctx, void *p, size_t n)
{
    (void)ctx;
    return krealloc(p, n);
}

static void core_free(void *ctx, void *p)
{
    (void)ctx;
    kfree(p);
}

static uint64_t heap_used(void *ctx)
{
    (void)ctx;
    struct kmalloc_stats st;
    kmalloc_get_stats(&st);
    ksqlite_heap_add(&st); /* SQLite's own heap (store/ksqlite.h) */
    return st.bytes_in_use;
}

/* Log lines may exceed kprintf's line limit: formatted here. */
static void write_line(broker_log_level level, const char *msg)
{
    char line[320];
    int n = snprintf(line, sizeof line, "tern: mqtt: %s: %s\n", broker_log_level_name(level),
                     msg);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof line) {
        n = (int)sizeof line - 1;
        line[n - 1] = '\n';
    }
    console_write(line, (size_t)n);
}

static void core_log(void *ctx, broker_log_level level, const char *msg)
{
    const struct kserver *s = ctx;
    if (level <= s->log_level)
        write_line(level, msg);
}

_Noreturn void tern_panic(const char *file, int line, const char *what)
{
    char msg[200];
    snprintf(msg, sizeof msg, "broker invariant '%s' failed at %s:%d", what, file, line);
    panic(msg);
}

/* The connection layer's clock for its handshake time budget. */
static uint64_t clock_us(void)
{
    return clock_mono_ns() / 1000u;
}

/* Bind and listen on la; NULL after saying why. */
static struct tcp_pcb *listen_on(struct kserver *s, const tern_listen_addr *la,
                                 tcp_accept_fn accept)
{
    ip_addr_t addr;
    IP_ADDR4(&addr, la->addr[0], la->addr[1], la->addr[2], la->addr[3]);
    struct tcp_pcb *pcb = tcp_new();
    if (!pcb || tcp_bind(pcb, &addr, la->port) != ERR_OK) {
        kprintf("tern: mqtt: cannot bind %u.%u.%u.%u:%u\n", la->addr[0], la->addr[1],
                la->addr[2], la->addr[3], la->port);
        if (pcb)
            tcp_close(pcb);
        return NULL;
    }
    struct tcp_pcb *l = tcp_listen(pcb);
    if (!l) {
        kprintf("tern: mqtt: cannot listen (no listener control block)\n");
        tcp_close(pcb);
        return NULL;
    }
    tcp_arg(l, s);
    tcp_accept(l, accept);
    return l;
}

static void stop(struct kserver *s)
{
    net_set_rx_gate(NULL, NULL);
    struct tcp_pcb **ls[] = { &s->listener, &s->tls_listener, &s->ws_listener,
                              &s->wss_listener };
    for (size_t i = 0; i < sizeof ls / sizeof ls[0]; i++) {
        if (*ls[i])
            tcp_close(*ls[i]);
        *ls[i] = NULL;
    }
    conn_server_destroy(s->cs); /* releases the TLS context */
    s->cs = NULL;
    broker_destroy(s->b); /* frees the ACL it was given */
    s->b = NULL;
}

/* Rebuild the core from the store and start its thread; -1 after saying
 * why (the broker does not serve a store it cannot read). */
static int attach_store(struct kserver *s, const squeue_store *st, uint32_t backup_s)
{
    char err[STORE_ERR_SIZE];
    err[0] = '\0';
    if (st->load(st->ctx, s->b, err, sizeof err) != STORE_OK) {
        kprintf("tern: store: cannot restore the broker: %s; not serving\n", err);
        return -1;
    }
    s->store = kstore_start(st, backup_s);
    kstore_set_scrub(s->store, kdisk_store_scrubber());
    return 0;
}

int kserve_start(const struct tern_config *cfg, struct bootconf_assets *assets,
                 const squeue_store *durable, uint64_t now_ms)
{
    struct kserver *s = &server;
    if (s->b)
        return 0;
    broker_config bc;
    memset(&bc, 0, sizeof bc);
    tern_config_to_broker(cfg, &bc);
    bc.allocator = (broker_allocator){ NULL, core_alloc, core_realloc, core_free };
    bc.log = core_log;
    bc.log_ctx = s;
    bc.version = TERN_VERSION " (unikernel)";
    bc.memory_used = heap_used;
    bc.durable = durable != NULL; /* hold acknowledgements for their commits */
    bc.pbkdf2 = tern_tls_pbkdf2_sha512; /* auth.password_file's $7$ hashes */
    /* A random key for the core's hash tables (hash flooding); without a
     * seeded DRBG (plaintext test builds) the tables still work, unkeyed. */
    if (rng_bytes(bc.hash_key, sizeof bc.hash_key) != 0)
        kprintf("tern: mqtt: warning: RNG not seeded: hash tables use a fixed key\n");
    s->log_level = bc.log_level;

    s->b = broker_create(&bc, now_ms);
    if (!s->b) {
        kprintf("tern: mqtt: cannot create the broker core (out of memory?)\n");
        tern_tls_server_release(assets->tls);
        if (assets->acl)
            broker_acl_free(assets->acl);
        broker_passwd_free(assets->passwd);
        assets->tls = NULL;
        assets->acl = NULL;
        assets->passwd = NULL;
        return -1;
    }
    kconsole_install(s->b, cfg, s); /* the operator console's kernel ops */
    if (assets->acl) {
        broker_set_acl(s->b, assets->acl); /* the core owns it now */
        assets->acl = NULL;
    }
    if (assets->passwd) {
        broker_set_passwd(s->b, assets->passwd); /* the core owns it now */
        assets->passwd = NULL;
    }
    /* The date (wallclock.h: the RTC at boot, advanced by the monotonic
     * clock that also gives now_ms) before the store restores: MQTT 5.0
     * expiries are stored as wall-clock times and run on while the
     * unikernel is off. Told again when SNTP steps the clock
     * (kserve_wall_clock_changed). No trustworthy date: 0, and
     * the core restarts such expiries at restore. */
    broker_set_wall_clock(s->b, wallclock_valid() ? (uint64_t)wallclock_now() * 1000u : 0,
                          now_ms);
    if (durable && attach_store(s, durable, cfg->store_backup_interval_s) != 0) {
        tern_tls_server_release(assets->tls);
        assets->tls = NULL;
        stop(s);
        return -1;
    }
    /* The layer takes the TLS context's reference. */
    conn_server_config cc = {
        .b = s->b, .io = &kconn_transport, .io_ctx = s,
        .tls_ops = &conn_tls, .tls = assets->tls,
        .handshake_timeout_ms = cfg->tls.handshake_timeout_s * 1000u,
        .clock_us = clock_us,
        .max_handshakes = cfg->limits.max_handshakes,
        .max_handshakes_per_address = cfg->limits.max_handshakes_per_address,
        .max_input_bytes = cfg->limits.max_input_bytes,
        .hash_key = {0, 0},
        /* WebSocket (listener.ws, listener.wss): as the daemon gives them. */
        .ws_sha1 = conn_ws_sha1,
        .ws_max_message = cfg->limits.max_packet_size,
        .allocator = bc.allocator, .log = core_log, .log_ctx = s, .log_level = bc.log_level,
    };
    assets->tls = NULL;
    /* Its own random key for the per-address handshake table (unkeyed
     * only where the core's is too). */
    (void)rng_bytes(cc.hash_key, sizeof cc.hash_key);
    s->cs = conn_server_create(&cc);
    if (!s->cs) {
        kprintf("tern: mqtt: cannot create the connection layer (out of memory)\n");
        stop(s);
        return -1;
    }
    /* The SYN admission's table of refused flows, keyed like the layer's. */
    uint64_t flow_key[2] = {0, 0};
    (void)rng_bytes(flow_key, sizeof flow_key);
    syn_table_init(&s->refused_flows, flow_key);
    s->max_conns = cfg->limits.max_connections;
    /* One lwIP listener per configured port; each kind differs only in
     * its accept callback (TLS or not, WebSocket or not). */
    const struct {
        const tern_listen_addr *la;
        tcp_accept_fn accept;
        struct tcp_pcb **pcb;
        uint16_t *port;
    } kinds[] = {
        { &cfg->listener_tls, kconn_accept_tls, &s->tls_listener, &s->tls_port },
        { &cfg->listener_plain, kconn_accept, &s->listener, &s->port },
        { &cfg->listener_wss, kconn_accept_wss, &s->wss_listener, &s->wss_port },
        { &cfg->listener_ws, kconn_accept_ws, &s->ws_listener, &s->ws_port },
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        if (kinds[i].la->family == TERN_ADDR_NONE)
            continue;
        *kinds[i].pcb = listen_on(s, kinds[i].la, kinds[i].accept);
        if (!*kinds[i].pcb) {
            stop(s);
            return -1;
        }
        *kinds[i].port = (*kinds[i].pcb)->local_port; /* port 0 in the config: lwIP chose */
    }
    net_set_rx_gate(kconn_syn_gate, s); /* SYNs the listeners would not serve: dropped */
    return 0;
}

void kserve_wall_clock_changed(void)
{
    if (server.b && wallclock_valid())
        broker_set_wall_clock(server.b, (uint64_t)wallclock_now() * 1000u,
                              clock_mono_ns() / 1000000);
}

int kserve_sys_put(const char *topic, const char *value)
{
    return server.b ? broker_sys_put(server.b, topic, value) : -1;
}

int kserve_poll(uint64_t now_ms)
{
    struct kserver *s = &server;
    if (!s->b)
        return 0;
    int work = s->work.len > 0 || conn_next_deadline(s->cs) <= now_ms;
    /* Commits first: the acknowledgements they release go out this turn. */
    if (s->store)
        work |= kstore_complete(s->store, s->b);
    conn_turn_begin(s->cs, now_ms);
    /* Only the connections queued before this turn. */
    for (uint32_t n = s->work.len; n > 0; n--) {
        struct kconn *kc = kconn_work_pop(s);
        if (!kc)
            break;
        kconn_service(s, kc, now_ms);
    }
    conn_turn_end(s->cs, now_ms);
    if (s->store)
        work |= kstore_run(s->store, s->b);
    work |= ktele_poll(s->b, s->store, now_ms);
    return work || s->work.len > 0 || conn_next_deadline(s->cs) == 0;
}

int kserve_store_waiting(void)
{
    return server.store && kstore_results_waiting(server.store);
}

void kserve_describe(char *buf, size_t n)
{
    const struct kserver *s = &server;
    if (!s->b) {
        snprintf(buf, n, "not serving");
        return;
    }
    conn_stats cst;
    conn_server_get_stats(s->cs, &cst);
    /* "mutual TLS port 8883, plaintext port 1883, ws port 8080, wss port
     * 8081" (the listeners by their keys; the tests read these names). */
    char ports[160] = "";
    const struct {
        const struct tcp_pcb *pcb;
        const char *what;
        uint16_t port;
    } kinds[] = {
        { s->tls_listener, "mutual TLS", s->tls_port },
        { s->listener, "plaintext", s->port },
        { s->ws_listener, "ws", s->ws_port },
        { s->wss_listener, "wss", s->wss_port },
    };
    size_t used = 0;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0] && used < sizeof ports; i++) {
        if (!kinds[i].pcb)
            continue;
        int w = snprintf(ports + used, sizeof ports - used, "%s%s port %u", used ? ", " : "",
                         kinds[i].what, kinds[i].port);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    snprintf(buf, n,
             "%s, %u connections (%llu accepted, %llu refused, %llu aborted, %llu SYNs "
             "dropped; TLS %llu ok, %llu failed, %llu timed out), heap %llu bytes",
             ports, s->nconns,
             (unsigned long long)s->accepted, (unsigned long long)s->refused,
             (unsigned long long)s->aborted, (unsigned long long)s->syns_dropped,
             (unsigned long long)cst.handshakes_ok,
             (unsigned long long)cst.handshakes_failed,
             (unsigned long long)cst.handshake_timeouts,
             (unsigned long long)heap_used(NULL));
}

void kserve_describe_store(char *buf, size_t n)
{
    struct kserver *s = &server;
    if (!s->store) {
        snprintf(buf, n, "none: retained messages and sessions live in memory only");
        return;
    }
    kstore_describe(s->store, buf, n);
}
