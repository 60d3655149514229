/*
 * loop.c - the epoll event loop of the Linux daemon: the turn, signals,
 * set-up and tear-down. Connections are the connection layer's (src/conn)
 * over the socket transport (sock.c); listeners are in accept.c.
 *
 * One turn: wait for events (no longer than the nearest deadline: the
 * connection layer's, which includes the core's, or the end of an accept
 * pause), let the layer serve leftover input, hand it every socket event,
 * accept new connections, then let it finish the turn (the core's timers,
 * every connection's output, expired deadlines), and hand the core's
 * store batches to the store thread.
 */
#define _GNU_SOURCE

#include "platform/posix/loop.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "conn/ws.h"
#include "platform/posix/bridges.h"
#include "platform/posix/console_ops.h"
#include "platform/posix/loop_internal.h"
#include "platform/posix/pool.h"
#include "platform/posix/signals.h"
#include "platform/posix/worker.h"
#include "version.h"

uint64_t tern_loop_now_ms(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        tern_panic(__FILE__, __LINE__, "CLOCK_MONOTONIC unavailable");
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The connection layer's clock for its handshake time budget. */

/* A TLS server's connections keep their long-lived blocks in the pool
 * (pool.h), like the core's; set before the server sees a connection.
 * With I/O threads (which run the sessions, ADR-065) they stay malloc's:
 * the pool belongs to the core thread. */
static void tls_adopt(tern_loop *l, tern_tls_server *tls)
{
    tern_tls_allocator a = {l->pool, tern_pool_alloc_cb, tern_pool_free_cb};

    if (tls != NULL && l->nworkers == 0)
        tern_tls_server_set_allocator(tls, &a);
    if (tls != NULL && l->nworkers > 0)
        tern_loop_workers_set_tls(l, tls);
}
static uint64_t clock_us(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        tern_panic(__FILE__, __LINE__, "CLOCK_MONOTONIC unavailable");
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ---- signals ------------------------------------------------------------ */

/* SIGHUP: read the ACL file, the password file and the TLS files again. A file that fails to
 * load leaves what is running in place; connections keep the certificates
 * they were accepted with, new ones get the new context. */
static void reload(tern_loop *l)
{
    char err[TERN_LOAD_ERR_SIZE];
    broker_acl *acl = NULL;
    broker_passwd *pw = NULL;
    tern_tls_server *tls = NULL;

    if (l->cfg.acl_file[0] != '\0') {
        if (tern_load_acl(&l->cfg, l->config_path, &acl, err, sizeof err)) {
            broker_set_acl(l->b, acl); /* the core owns it now */
            tern_logf(l->log, BROKER_LOG_INFO, "SIGHUP: ACL reloaded from %s", l->cfg.acl_file);
        } else {
            tern_logf(l->log, BROKER_LOG_ERROR, "SIGHUP: keeping the previous ACL: %s", err);
        }
    }
    if (l->cfg.password_file[0] != '\0') {
        if (tern_load_passwd(&l->cfg, l->config_path, &pw, err, sizeof err)) {
            tern_logf(l->log, BROKER_LOG_INFO, "SIGHUP: password file reloaded from %s (%zu users)",
                      l->cfg.password_file, broker_passwd_count(pw));
            broker_set_passwd(l->b, pw); /* the core owns it now */
        } else {
            tern_logf(l->log, BROKER_LOG_ERROR, "SIGHUP: keeping the previous password file: %s",
                      err);
        }
    }
    if (l->tls) {
        if (tern_load_tls(&l->cfg, l->config_path, &tls, err, sizeof err)) {
            tls_adopt(l, tls);
            conn_server_set_tls(l->cs, tls); /* the layer holds the reference now */
            tern_logf(l->log, BROKER_LOG_INFO, "SIGHUP: TLS certificates reloaded");
        } else {
            tern_logf(l->log, BROKER_LOG_ERROR, "SIGHUP: keeping the previous TLS certificates: %s",
                      err);
        }
    }
    if (l->cfg.acl_file[0] == '\0' && l->cfg.password_file[0] == '\0' && !l->tls)
        tern_logf(l->log, BROKER_LOG_INFO,
                  "SIGHUP: nothing to reload (no acl.file, no auth.password_file, no TLS)");
}

static void signal_event(tern_loop *l)
{
    int sig;

    while ((sig = tern_signals_read(l->sig.fd)) > 0) {
        if (sig == SIGHUP)
            reload(l);
        else
            l->stop_signal = sig;
    }
    if (sig < 0) {
        tern_logf(l->log, BROKER_LOG_ERROR, "reading signals: %s", strerror(errno));
        l->stop_signal = SIGTERM;
    }
}

/* ---- the turn ------------------------------------------------------------ */

static void dispatch(tern_loop *l, const struct epoll_event *ev, uint64_t now)
{
    uint8_t kind;

    if (ev->data.ptr == NULL)
        return; /* its connection was closed earlier in this turn */
    kind = *(const uint8_t *)ev->data.ptr;

    switch (kind) {
    case TERN_HANDLE_CONN:
        tern_loop_sock_event(l, ev->data.ptr, ev->events, now);
        break;
    case TERN_HANDLE_LISTENER:
        tern_loop_accept(l, ev->data.ptr, now);
        break;
    case TERN_HANDLE_SIGNAL:
        signal_event(l);
        break;
    case TERN_HANDLE_STORE:
        tern_loop_store_event(l);
        break;
    case TERN_HANDLE_WORKER:
        tern_loop_worker_event(l, ev->data.ptr, now);
        break;
    case TERN_HANDLE_BRIDGE:
        tern_bridges_event(l, ev->data.ptr, ev->events, now);
        break;
    default:
        tern_panic(__FILE__, __LINE__, "epoll event with an unknown handle");
    }
}

/* How long epoll may sleep: until the earliest deadline; not at all while
 * input is waiting to be served. */
static int wait_timeout(const tern_loop *l, uint64_t now)
{
    uint64_t deadline = conn_next_deadline(l->cs);

    if (tern_loop_wsock_pending(l))
        return 0; /* connections of I/O threads with an event to serve */
    if (l->workers_waiting && now + TERN_WORKER_RETRY_MS < deadline)
        deadline = now + TERN_WORKER_RETRY_MS;

    if (l->accept_paused && l->accept_resume_ms < deadline)
        deadline = l->accept_resume_ms;
    if (tern_heaptrim_deadline(&l->trim) < deadline)
        deadline = tern_heaptrim_deadline(&l->trim);
    if (tern_bridges_deadline(l) < deadline)
        deadline = tern_bridges_deadline(l);
    if (deadline == UINT64_MAX)
        return -1;
    if (deadline <= now)
        return 0;
    return deadline - now > INT_MAX ? INT_MAX : (int)(deadline - now);
}

/* End of a turn: give the heap's free pages back to the system once a
 * burst of handshakes or closes is over (heaptrim.h says why). The counter
 * moves with every handshake that ends (its tens of kilobytes freed) and
 * every connection closed; the trim runs only on a turn that had no events,
 * so never during a flood, and takes a few milliseconds at most (logged at
 * debug level). */
static void trim_heap(tern_loop *l, bool idle_turn, uint64_t now)
{
    conn_stats st;
    uint64_t t0;

    conn_server_get_stats(l->cs, &st);
    tern_heaptrim_note(&l->trim,
                       st.handshakes_ok + st.handshakes_failed + st.handshake_timeouts +
                           st.handshakes_abandoned + l->closes,
                       now);
    if (!tern_heaptrim_due(&l->trim, idle_turn, now))
        return;
    t0 = clock_us();
    (void)malloc_trim(0);
    size_t slabs = tern_pool_trim(l->pool);
    tern_logf(l->log, BROKER_LOG_DEBUG, "heap trimmed in %llu us (%zu connections, %zu slabs unmapped)",
              (unsigned long long)(clock_us() - t0), l->nconns, slabs);
}

static const char *signal_name(int sig)
{
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "signal";
}

/* Tell the core the wall-clock time (CLOCK_REALTIME) beside its own
 * (monotonic) time: MQTT 5.0 expiries are stored as wall-clock times so
 * they run on while the daemon is down (broker_set_wall_clock). Before the
 * store is restored, then about once a minute, which also follows
 * corrections of the system clock. */
#define WALL_CLOCK_EVERY_MS 60000u
static void set_wall_clock(tern_loop *l, uint64_t now)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_REALTIME, &ts) != 0 || ts.tv_sec <= 0)
        return; /* no wall clock: expiries restart at the next restore */
    broker_set_wall_clock(l->b, (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u,
                          now);
    l->wall_clock_ms = now;
}

/* Stop accepting and hand the sockets what they take without waiting.
 * MQTT 5.0 clients are told the server is shutting down (DISCONNECT 0x8B,
 * broker_shutdown) after the last held acknowledgements went out, and what
 * their sessions' going offline recorded is committed before the sockets
 * get their last output. */
static void wind_down(tern_loop *l)
{
    uint64_t now = tern_loop_now_ms();

    tern_logf(l->log, BROKER_LOG_INFO, "shutting down (%s, %zu connections)",
              signal_name(l->stop_signal), l->nconns);
    tern_loop_accept_close(l);
    tern_loop_store_drain(l); /* releases the last held acknowledgements */
    broker_shutdown(l->b, now);
    tern_loop_store_drain(l); /* the sessions' offline records */
    conn_turn_end(l->cs, now);
    for (size_t fd = 0; fd < l->by_fd_len; fd++) {
        tern_sock *k = l->by_fd[fd];

        if (k != NULL && conn_out_pending(l->cs, &k->c) > 0)
            (void)conn_flush(l->cs, &k->c, now);
    }
    l->workers_waiting = tern_loop_workers_flush(l);
}

int tern_loop_run(tern_loop *l)
{
    struct epoll_event events[MAX_EVENTS];
    int rc = 0;

    while (l->stop_signal == 0) {
        uint64_t now = tern_loop_now_ms();
        int timeout = wait_timeout(l, now), n;

        if (timeout != 0 && l->nworkers > 0 && !tern_loop_workers_may_sleep(l))
            timeout = 0; /* an I/O thread's message is waiting */
        n = epoll_wait(l->ep, events, MAX_EVENTS, timeout);
        if (l->nworkers > 0)
            tern_loop_workers_awake(l);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            tern_logf(l->log, BROKER_LOG_ERROR, "epoll_wait: %s", strerror(errno));
            l->stop_signal = SIGTERM;
            rc = 1;
            break;
        }
        now = tern_loop_now_ms();
        l->events = events;
        l->nevents = n;
        l->next_event = 0;
        conn_turn_begin(l->cs, now);
        tern_loop_wsock_turn(l, now); /* I/O threads' connections still ready */
        while (l->next_event < n)
            dispatch(l, &events[l->next_event++], now);
        if (l->nworkers > 0) /* sent without a wake-up while this thread was awake */
            tern_loop_workers_poll(l, now);
        l->nevents = 0; /* the batch is done: closes below have nothing to clear */
        if (l->accept_paused && now >= l->accept_resume_ms)
            tern_loop_set_accepting(l, true);
        if (now - l->wall_clock_ms >= WALL_CLOCK_EVERY_MS)
            set_wall_clock(l, now);
        tern_bridges_turn(l, now);
        conn_turn_end(l->cs, now);
        tern_loop_accept_refresh(l, now); /* slots the turn freed */
        tern_loop_store_submit(l); /* last: closes above may add records */
        l->workers_waiting = tern_loop_workers_flush(l); /* the turn's output and closes */
        trim_heap(l, n == 0, now);
    }
    wind_down(l);
    return rc;
}

/* ---- set-up and tear-down ---------------------------------------------- */

/* Each connection is a descriptor; the usual soft limit (1024) would cap
 * the broker far below max_connections, so take the hard limit. */
static size_t raise_fd_limit(tern_log *log)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        tern_logf(log, BROKER_LOG_WARN, "getrlimit: %s", strerror(errno));
        return 1024;
    }
    if (rl.rlim_cur < rl.rlim_max) {
        rlim_t old = rl.rlim_cur;

        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            tern_logf(log, BROKER_LOG_WARN, "raising the open-file limit: %s", strerror(errno));
            rl.rlim_cur = old;
        }
    }
    return rl.rlim_cur > (rlim_t)INT_MAX ? (size_t)INT_MAX : (size_t)rl.rlim_cur;
}

static bool add_signals(tern_loop *l)
{
    struct epoll_event ev;

    l->sig.fd = tern_signals_open();
    if (l->sig.fd < 0) {
        tern_logf(l->log, BROKER_LOG_ERROR, "signalfd: %s", strerror(errno));
        return false;
    }
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN;
    ev.data.ptr = &l->sig;
    if (epoll_ctl(l->ep, EPOLL_CTL_ADD, l->sig.fd, &ev) != 0) {
        tern_logf(l->log, BROKER_LOG_ERROR, "epoll_ctl: %s", strerror(errno));
        return false;
    }
    return true;
}

static bool create_core(tern_loop *l, tern_assets *assets)
{
    broker_config bcfg;

    memset(&bcfg, 0, sizeof bcfg);
    tern_config_to_broker(&l->cfg, &bcfg);
    bcfg.log = tern_log_broker;
    bcfg.log_ctx = l->log;
    bcfg.version = TERN_VERSION;
    bcfg.durable = l->cfg.store_path[0] != '\0';
    bcfg.pbkdf2 = tern_tls_pbkdf2_sha512;
    /* Small blocks from slabs (pool.h): an idle connection's blocks side
     * by side, not in the holes the handshakes leave in malloc's heap. */
    bcfg.allocator.ctx = l->pool;
    bcfg.allocator.alloc = tern_pool_alloc_cb;
    bcfg.allocator.realloc = tern_pool_realloc_cb;
    bcfg.allocator.free = tern_pool_free_cb;
    /* A random key for the core's hash tables (hash flooding). */
    if (getrandom(bcfg.hash_key, sizeof bcfg.hash_key, 0) != (ssize_t)sizeof bcfg.hash_key) {
        tern_logf(l->log, BROKER_LOG_ERROR, "getrandom: %s", strerror(errno));
        return false;
    }
    l->b = broker_create(&bcfg, tern_loop_now_ms());
    if (l->b == NULL) {
        tern_logf(l->log, BROKER_LOG_ERROR, "cannot create the broker core (out of memory?)");
        return false;
    }
    set_wall_clock(l, tern_loop_now_ms()); /* before the store restores */
    broker_console_ops ops = tern_console_ops(l);
    broker_set_console_ops(l->b, &ops);
    if (assets->acl != NULL) {
        broker_set_acl(l->b, assets->acl); /* the core owns it now */
        assets->acl = NULL;
        tern_logf(l->log, BROKER_LOG_INFO, "ACL loaded from %s", l->cfg.acl_file);
    }
    if (assets->passwd != NULL) {
        tern_logf(l->log, BROKER_LOG_INFO, "password file loaded from %s (%zu users)",
                  l->cfg.password_file, broker_passwd_count(assets->passwd));
        broker_set_passwd(l->b, assets->passwd); /* the core owns it now */
        assets->passwd = NULL;
    }
    return true;
}

static bool create_conn_server(tern_loop *l, tern_assets *assets)
{
    conn_server_config cc;

    memset(&cc, 0, sizeof cc);
    cc.b = l->b;
    cc.io = l->nworkers > 0 ? &tern_wsock_transport : &tern_sock_transport;
    cc.io_ctx = l;
    cc.tls_ops = &conn_tls;
    tls_adopt(l, assets->tls);
    cc.tls = assets->tls; /* the layer holds the reference now */
    assets->tls = NULL;
    cc.handshake_timeout_ms = l->cfg.tls.handshake_timeout_s * 1000u;
    cc.clock_us = clock_us;
    cc.max_handshakes = l->cfg.limits.max_handshakes;
    cc.max_handshakes_per_address = l->cfg.limits.max_handshakes_per_address;
    cc.max_input_bytes = l->cfg.limits.max_input_bytes;
    cc.ws_sha1 = conn_ws_sha1;
    cc.ws_max_message = l->cfg.limits.max_packet_size;
    /* A random key for the per-address table (as for the core's). */
    if (getrandom(cc.hash_key, sizeof cc.hash_key, 0) != (ssize_t)sizeof cc.hash_key) {
        tern_logf(l->log, BROKER_LOG_ERROR, "getrandom: %s", strerror(errno));
        return false;
    }
    cc.log = tern_log_broker;
    cc.log_ctx = l->log;
    cc.log_level = l->log->level;
    l->cs = conn_server_create(&cc);
    if (l->cs == NULL) {
        tern_logf(l->log, BROKER_LOG_ERROR, "cannot create the connection layer (out of memory)");
        return false;
    }
    return true;
}

tern_loop *tern_loop_create(const tern_config *cfg, const char *config_path, tern_assets *assets,
                            tern_log *log)
{
    tern_loop *l = calloc(1, sizeof *l);
    size_t fd_limit;

    if (l == NULL) {
        tern_logf(log, BROKER_LOG_ERROR, "out of memory");
        tern_assets_free(assets);
        return NULL;
    }
    l->log = log;
    l->cfg = *cfg;
    l->tls = assets->tls != NULL;
    l->ep = -1;
    l->sig.kind = TERN_HANDLE_SIGNAL;
    l->sig.fd = -1;
    tern_heaptrim_init(&l->trim, tern_loop_now_ms());

    fd_limit = raise_fd_limit(log);
    /* Connections still in their TLS handshake have descriptors of their
     * own (limits.max_handshakes), so they cannot take the ones
     * authenticated clients need. */
    l->by_fd_len = (size_t)cfg->limits.max_connections +
                   (assets->tls != NULL ? (size_t)cfg->limits.max_handshakes : 0) + FD_SLACK;
    if (l->by_fd_len > fd_limit) {
        tern_logf(log, BROKER_LOG_WARN,
                  "the open-file limit (%zu) allows fewer connections than "
                  "limits.max_connections (%u) plus limits.max_handshakes (%u)",
                  fd_limit, cfg->limits.max_connections, cfg->limits.max_handshakes);
        l->by_fd_len = fd_limit;
    }
    /* Pages of the table that no descriptor reaches are never touched. */
    l->by_fd = calloc(l->by_fd_len, sizeof l->by_fd[0]);
    l->config_path = strdup(config_path);
    l->pool = tern_pool_create();
    if (l->by_fd == NULL || l->config_path == NULL || l->pool == NULL) {
        tern_logf(log, BROKER_LOG_ERROR, "out of memory");
        goto fail;
    }
    l->ep = epoll_create1(EPOLL_CLOEXEC);
    if (l->ep < 0) {
        tern_logf(log, BROKER_LOG_ERROR, "epoll_create1: %s", strerror(errno));
        goto fail;
    }
    if (!add_signals(l))
        goto fail;
    /* workers = 1: this thread does everything (no I/O threads); N >= 2:
     * N I/O threads around it (ADR-061). Started after add_signals, so
     * they inherit its blocked signals and SIGTERM reaches the signalfd. */
    if (cfg->workers >= 2) {
        if (!tern_loop_workers_start(l, cfg->workers))
            goto fail;
        tern_logf(log, BROKER_LOG_INFO, "%u I/O threads beside the core thread", cfg->workers);
    }
    if (!create_core(l, assets) || !create_conn_server(l, assets) || !tern_loop_store_open(l))
        goto fail;
    if (cfg->listener_plain.family != TERN_ADDR_NONE &&
        !tern_loop_add_listener(l, &cfg->listener_plain, false, false))
        goto fail;
    if (cfg->listener_tls.family != TERN_ADDR_NONE &&
        !tern_loop_add_listener(l, &cfg->listener_tls, true, false))
        goto fail;
    if (cfg->listener_ws.family != TERN_ADDR_NONE &&
        !tern_loop_add_listener(l, &cfg->listener_ws, false, true))
        goto fail;
    if (cfg->listener_wss.family != TERN_ADDR_NONE &&
        !tern_loop_add_listener(l, &cfg->listener_wss, true, true))
        goto fail;
    if (tern_bridges_create(l) == NULL)
        goto fail;
    tern_assets_free(assets); /* whatever was not taken */
    return l;

fail:
    tern_assets_free(assets);
    tern_loop_destroy(l);
    return NULL;
}

void tern_loop_destroy(tern_loop *l)
{
    if (l == NULL)
        return;
    /* Connections are dropped without broker_closed: the core is going away
     * and must not publish wills for a shutdown. */
    for (size_t fd = 0; l->by_fd != NULL && fd < l->by_fd_len; fd++) {
        tern_sock *k = l->by_fd[fd];

        if (k != NULL && l->wby_fd != NULL && l->wby_fd[fd] != NULL) {
            conn_drop(l->cs, &k->c);
            tern_loop_wsock_release(l, k, true); /* its thread sends what it holds, once */
        } else if (k != NULL) {
            (void)close(k->fd); /* output already flushed as far as it goes */
            conn_drop(l->cs, &k->c);
            tern_pool_free(l->pool, k);
        }
    }
    tern_loop_workers_stop(l); /* frees the records the threads give back */
    for (size_t i = 0; i < l->nlisteners; i++)
        (void)close(l->listeners[i].fd);
    tern_bridges_destroy(l->bridges);
    tern_loop_store_close(l); /* before the core: it owns the batches */
    conn_server_destroy(l->cs); /* releases the TLS context */
    if (l->b != NULL)
        broker_destroy(l->b);
    if (l->sig.fd >= 0)
        (void)close(l->sig.fd);
    if (l->ep >= 0)
        (void)close(l->ep);
    free(l->config_path);
    free(l->by_fd);
    tern_pool_destroy(l->pool); /* after the core and the sockets */
    free(l);
}
