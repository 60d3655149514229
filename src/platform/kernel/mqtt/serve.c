/*
 * serve.c - the kernel's broker: creates the core (src/broker) from the
 * parsed configuration, listens on the plaintext port with lwIP, and runs
 * one turn per main-loop iteration, as the Linux daemon's epoll loop does:
 *
 *   1. connections on the work list (input arrived, the peer closed, the
 *      pcb died, send room appeared, a close to retry) are served once
 *      each, in arrival order; a connection whose work budget ran out goes
 *      to the back and waits for the next turn;
 *   2. broker_tick when the core's nearest deadline has passed;
 *   3. every connection the core marked dirty gets its output written,
 *      one tcp_write run per connection per turn, and is closed when the
 *      core wants it closed and its output is out.
 *
 * The core allocates from the kernel heap through broker_config.allocator,
 * so $SYS/broker/memory/used counts exactly what it holds. Also provides
 * tern_panic, the one function the core needs from its platform.
 *
 * There is one broker per kernel, like the one network interface: its
 * state is a boot-time structure here, reached by callbacks through their
 * argument pointers so that sharding across cores later changes little.
 */
#include "mqtt/serve.h"

#include "config/config.h"
#include "console.h"
#include "mm/kmalloc.h"
#include "mqtt/conn.h"
#include "panic.h"

#include "lwip/tcp.h"

#include <stdio.h>
#include <string.h>

/* Published in $SYS/broker/version. Kept in step with the daemon's
 * TERN_VERSION (src/platform/posix/version.h) until a shared header exists. */
#define MQTT_KERNEL_VERSION "0.1.0-dev (unikernel)"

static struct mqtt_server server;

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

/* Core log lines may exceed kprintf's line limit: formatted here. */
static void core_log(void *ctx, broker_log_level level, const char *msg)
{
    static const char *const names[] = { "error", "warn", "info", "debug" };
    const struct mqtt_server *s = ctx;
    if (level > s->log_level)
        return;
    char line[320];
    int n = snprintf(line, sizeof line, "tern: mqtt: %s: %s\n",
                     (unsigned)level < 4 ? names[level] : "log", msg);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof line) {
        n = (int)sizeof line - 1;
        line[n - 1] = '\n';
    }
    console_write(line, (size_t)n);
}

_Noreturn void tern_panic(const char *file, int line, const char *what)
{
    char msg[200];
    snprintf(msg, sizeof msg, "broker invariant '%s' failed at %s:%d", what, file, line);
    panic(msg);
}

int mqtt_serve_start(const struct tern_config *cfg, uint64_t now_ms)
{
    struct mqtt_server *s = &server;
    if (s->b)
        return 0;
    broker_config bc;
    memset(&bc, 0, sizeof bc);
    tern_config_to_broker(cfg, &bc);
    bc.allocator = (broker_allocator){ NULL, core_alloc, core_realloc, core_free };
    bc.log = core_log;
    bc.log_ctx = s;
    bc.version = MQTT_KERNEL_VERSION;
    s->log_level = bc.log_level;

    s->b = broker_create(&bc, now_ms);
    if (!s->b) {
        kprintf("tern: mqtt: cannot create the broker core (out of memory?)\n");
        return -1;
    }
    const tern_listen_addr *la = &cfg->listener_plain;
    ip_addr_t addr;
    IP_ADDR4(&addr, la->addr[0], la->addr[1], la->addr[2], la->addr[3]);
    struct tcp_pcb *pcb = tcp_new();
    if (!pcb || tcp_bind(pcb, &addr, la->port) != ERR_OK) {
        kprintf("tern: mqtt: cannot bind %u.%u.%u.%u:%u\n", la->addr[0], la->addr[1],
                la->addr[2], la->addr[3], la->port);
        if (pcb)
            tcp_close(pcb);
        broker_destroy(s->b);
        s->b = NULL;
        return -1;
    }
    s->listener = tcp_listen(pcb);
    if (!s->listener) {
        kprintf("tern: mqtt: cannot listen (no listener control block)\n");
        tcp_close(pcb);
        broker_destroy(s->b);
        s->b = NULL;
        return -1;
    }
    s->port = s->listener->local_port; /* port 0 in the config: lwIP chose */
    tcp_arg(s->listener, s);
    tcp_accept(s->listener, kconn_accept);
    return 0;
}

int mqtt_serve_poll(uint64_t now_ms)
{
    struct mqtt_server *s = &server;
    if (!s->b)
        return 0;
    int work = 0;
    /* Only the connections queued before this turn: one that goes to the
     * back (budget spent) waits for the next turn. */
    for (uint32_t n = s->work_len; n > 0; n--) {
        struct kconn *kc = kconn_work_pop(s);
        if (!kc)
            break;
        kconn_service(s, kc, now_ms);
        work = 1;
    }
    if (now_ms >= broker_next_deadline(s->b)) {
        broker_tick(s->b, now_ms);
        work = 1;
    }
    broker_conn *c;
    while ((c = broker_next_dirty(s->b)) != NULL) {
        kconn_flush(s, broker_conn_ctx(c), now_ms);
        work = 1;
    }
    return work || s->work_len > 0;
}

void mqtt_serve_describe(char *buf, size_t n)
{
    const struct mqtt_server *s = &server;
    if (!s->b) {
        snprintf(buf, n, "not serving");
        return;
    }
    broker_stats st;
    broker_get_stats(s->b, &st);
    snprintf(buf, n,
             "plaintext port %u, %u connections (%llu accepted, %llu refused, %llu aborted), "
             "core memory %llu bytes",
             s->port, s->nconns, (unsigned long long)s->accepted,
             (unsigned long long)s->refused, (unsigned long long)s->aborted,
             (unsigned long long)st.memory_used);
}
