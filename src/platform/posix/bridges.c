/*
 * bridges.c - the Linux daemon's bridge transports (bridges.h): sockets,
 * the TLS client adapter and epoll around the portable bridge
 * (broker/bridge.h). Each bridge has two epoll handles, the remote socket
 * and the bridge's end of the local socketpair; a failure of either closes
 * both (the broker sees its end of the pair close like any client leaving,
 * and the bridge's session stays, holding what the remote has not taken).
 */
#define _GNU_SOURCE

#include "platform/posix/bridges.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker/bridge.h"
#include "platform/posix/file.h"
#include "platform/posix/loop_internal.h"
#include "platform/posix/net.h"
#include "platform/posix/pool.h"

enum {
    /* A side is not read while the other side's output holds this much:
     * the socket (TCP's window, the socketpair's buffer) then pushes back
     * on the sender, and on the local side the broker's own back-pressure
     * (limits.max_out_bytes, the session's window) takes over. */
    BRIDGE_OUT_HIGH = 1024 * 1024,
    BRIDGE_READ_CHUNK = 16384,
    BRIDGE_READS_PER_EVENT = 16, /* then other work gets its turn (level-triggered) */
    BRIDGE_PEM_MAX = 1024 * 1024,
};

typedef struct bhandle {
    uint8_t kind; /* TERN_HANDLE_BRIDGE; first, like every epoll handle */
    uint8_t side; /* bridge_side */
    struct tb *owner;
} bhandle;

typedef struct tb {
    const tern_config_bridge *cfg; /* in the loop's copy of the configuration */
    bridge *b;
    char identity[TERN_BRIDGE_TEXT_MAX];
    char client_id[BRIDGE_ID_MAX]; /* its local session's, for .../queued */
    tern_tls_client *tls_ctx; /* NULL: plaintext to the remote */
    tern_tls_conn *tls;       /* the remote link's session while it is open */
    bool connecting;          /* the remote socket's connect is in progress */
    bool opened;              /* broker_bridge_opened(REMOTE) was called */
    int fd[2];                /* BRIDGE_REMOTE, BRIDGE_LOCAL (our end); -1 = closed */
    int broker_fd;            /* the broker's end of the local pair, while open */
    uint32_t events[2];       /* registered interest */
    bhandle h[2];
    bridge_state logged;      /* last state reported in the log */
    uint64_t sys_at;          /* last $SYS refresh */
    bool sys_up;              /* what it said about the state */
    bool sys_done;            /* refreshed at least once */
} tb;

struct tern_bridges {
    size_t n;
    tb b[TERN_BRIDGES_MAX];
};

static uint32_t random32(void)
{
    uint32_t r = 0;

    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
        r = (uint32_t)tern_loop_now_ms() * 2654435761u; /* jitter only: any bits do */
    return r;
}

/* ---- set-up --------------------------------------------------------------- */

static bool read_pem(const tern_config_bridge *cb, const char *config_path, const char *field,
                     const char *path, char **data, size_t *len, char *err, size_t err_size)
{
    char full[TERN_CONFIG_PATH_MAX * 2], why[TERN_CONFIG_ERR_SIZE];

    if (!tern_path_resolve(config_path, path, full, sizeof full)) {
        snprintf(err, err_size, "%s:%zu: bridge.%s.%s: path too long", config_path,
                 tern_config_bridge_line(cb, field), cb->name, field);
        return false;
    }
    if (!tern_read_file(full, BRIDGE_PEM_MAX, data, len, why, sizeof why)) {
        snprintf(err, err_size, "%s:%zu: bridge.%s.%s: %s", config_path,
                 tern_config_bridge_line(cb, field), cb->name, field, why);
        return false;
    }
    return true;
}

bool tern_bridge_tls_load(const tern_config *cfg, const tern_config_bridge *cb,
                          const char *config_path, tern_tls_client **out, char *err,
                          size_t err_size)
{
    char *ca = NULL, *cert = NULL, *key = NULL, why[TERN_CONFIG_ERR_SIZE];
    size_t nca = 0, ncert = 0, nkey = 0;

    *out = NULL;
    if (cb->tls_ca[0] == '\0')
        return true;
    if (!read_pem(cb, config_path, "tls_ca", cb->tls_ca, &ca, &nca, err, err_size) ||
        (cb->tls_cert[0] &&
         !read_pem(cb, config_path, "tls_cert", cb->tls_cert, &cert, &ncert, err, err_size)) ||
        (cb->tls_key[0] &&
         !read_pem(cb, config_path, "tls_key", cb->tls_key, &key, &nkey, err, err_size)))
        goto out;
    tern_tls_client_config cc = {
        .ca = {(const uint8_t *)ca, nca},
        .cert_chain = {(const uint8_t *)cert, ncert},
        .key = {(const uint8_t *)key, nkey},
        .min_version = cfg->tls.min_version == TERN_CONFIG_TLS_1_2 ? TERN_TLS_1_2 : TERN_TLS_1_3,
        .max_version = TERN_TLS_1_3,
    };
    *out = tern_tls_client_create(&cc, why, sizeof why);
    if (*out == NULL)
        snprintf(err, err_size, "%s:%zu: bridge.%s.%s: %s", config_path,
                 tern_config_bridge_line(cb, cert ? "tls_cert" : "tls_ca"), cb->name,
                 cert ? "tls_cert" : "tls_ca", why);
out:
    free(ca);
    free(cert);
    if (key != NULL)
        tern_free_secret(key, nkey);
    return cb->tls_ca[0] == '\0' || *out != NULL;
}

bool tern_bridges_check(const tern_config *cfg, const char *config_path, char *err,
                        size_t err_size)
{
    for (uint32_t i = 0; i < cfg->nbridges; i++) {
        tern_tls_client *cl;

        if (!tern_bridge_tls_load(cfg, &cfg->bridges[i], config_path, &cl, err, err_size))
            return false;
        tern_tls_client_release(cl);
    }
    return true;
}

tern_bridges *tern_bridges_create(tern_loop *l)
{
    tern_bridges *bs = calloc(1, sizeof *bs);

    if (bs == NULL) {
        tern_logf(l->log, BROKER_LOG_ERROR, "out of memory for bridges");
        return NULL;
    }
    l->bridges = bs;
    for (uint32_t i = 0; i < l->cfg.nbridges; i++) {
        tb *t = &bs->b[bs->n];
        bridge_settings s;
        char err[TERN_CONFIG_ERR_SIZE + TERN_CONFIG_PATH_MAX];

        t->cfg = &l->cfg.bridges[i];
        t->fd[0] = t->fd[1] = t->broker_fd = -1;
        for (int side = 0; side < 2; side++) {
            t->h[side].kind = TERN_HANDLE_BRIDGE;
            t->h[side].side = (uint8_t)side;
            t->h[side].owner = t;
        }
        (void)tern_config_bridge_identity(t->cfg, t->identity, sizeof t->identity);
        tern_config_bridge_settings(t->cfg, &s);
        s.max_packet = l->cfg.limits.max_packet_size;
        s.receive_max = (uint16_t)(l->cfg.limits.receive_maximum < UINT16_MAX
                                       ? l->cfg.limits.receive_maximum
                                       : UINT16_MAX);
        memcpy(t->client_id, s.client_id, sizeof t->client_id);
        t->b = broker_bridge_create(&s);
        bs->n++;
        if (t->b == NULL) {
            tern_logf(l->log, BROKER_LOG_ERROR, "out of memory for bridge %s", t->cfg->name);
            return NULL;
        }
        if (!tern_bridge_tls_load(&l->cfg, t->cfg, l->config_path, &t->tls_ctx, err,
                                  sizeof err)) {
            tern_logf(l->log, BROKER_LOG_ERROR, "%s", err);
            return NULL;
        }
        tern_logf(l->log, BROKER_LOG_INFO, "bridge %s: MQTT %s to %s as %s, identity %s here",
                  t->cfg->name, s.protocol == 5 ? "5.0" : "3.1.1",
                  t->tls_ctx ? "TLS" : "plaintext", s.client_id, t->identity);
        if (t->tls_ctx != NULL && t->cfg->tls_name[0] == '\0')
            tern_logf(l->log, BROKER_LOG_WARN,
                      "bridge %s: the remote's certificate is checked against bridge.%s.tls_ca "
                      "but not for a name: any certificate that CA issued is accepted (set "
                      "bridge.%s.tls_name)",
                      t->cfg->name, t->cfg->name, t->cfg->name);
    }
    return bs;
}

static void close_side(tern_loop *l, tb *t, int side)
{
    if (t->fd[side] < 0)
        return;
    /* Events of this turn's batch not handled yet must not reach it. */
    for (int i = l->next_event; i < l->nevents; i++)
        if (l->events[i].data.ptr == &t->h[side])
            l->events[i].data.ptr = NULL;
    (void)close(t->fd[side]);
    t->fd[side] = -1;
    t->events[side] = 0;
    if (side == BRIDGE_LOCAL)
        t->broker_fd = -1; /* the broker closes its end when it reads ours closed */
    else {
        t->connecting = false;
        t->opened = false;
        tern_tls_conn_free(t->tls);
        t->tls = NULL;
    }
}

void tern_bridges_destroy(tern_bridges *bs)
{
    if (bs == NULL)
        return;
    for (size_t i = 0; i < bs->n; i++) {
        tb *t = &bs->b[i];

        for (int side = 0; side < 2; side++)
            if (t->fd[side] >= 0)
                (void)close(t->fd[side]);
        tern_tls_conn_free(t->tls);
        tern_tls_client_release(t->tls_ctx);
        broker_bridge_destroy(t->b);
    }
    free(bs);
}

const char *tern_bridges_identity(const tern_loop *l, int fd)
{
    const tern_bridges *bs = l->bridges;

    for (size_t i = 0; bs != NULL && i < bs->n; i++)
        if (bs->b[i].broker_fd == fd && fd >= 0)
            return bs->b[i].identity;
    return NULL;
}

/* ---- the links ------------------------------------------------------------ */

static bool interest(tern_loop *l, tb *t, int side, uint32_t want)
{
    struct epoll_event ev;

    if (t->fd[side] < 0 || want == t->events[side])
        return true;
    memset(&ev, 0, sizeof ev);
    ev.events = want;
    ev.data.ptr = &t->h[side];
    if (epoll_ctl(l->ep, EPOLL_CTL_MOD, t->fd[side], &ev) != 0)
        return false;
    t->events[side] = want;
    return true;
}

static bool watch(tern_loop *l, tb *t, int side, uint32_t want)
{
    struct epoll_event ev;

    memset(&ev, 0, sizeof ev);
    ev.events = want;
    ev.data.ptr = &t->h[side];
    if (epoll_ctl(l->ep, EPOLL_CTL_ADD, t->fd[side], &ev) != 0)
        return false;
    t->events[side] = want;
    return true;
}

static void down(tern_loop *l, tb *t, const char *why, uint64_t now)
{
    if (why != NULL)
        broker_bridge_fail(t->b, why, random32(), now);
    close_side(l, t, BRIDGE_REMOTE);
    close_side(l, t, BRIDGE_LOCAL);
    tern_logf(l->log, BROKER_LOG_WARN, "bridge %s: down: %s (next attempt in %llu ms)",
              t->cfg->name, broker_bridge_last_error(t->b),
              (unsigned long long)(broker_bridge_deadline(t->b) > now
                                       ? broker_bridge_deadline(t->b) - now
                                       : 0));
    t->logged = BRIDGE_WAIT;
}

static void dial_remote(tern_loop *l, tb *t, uint64_t now)
{
    struct sockaddr_storage ss;
    socklen_t len = tern_net_sockaddr(&t->cfg->address, &ss); /* required: never 0 */
    int one = 1, fd;

    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        down(l, t, "cannot create a socket", now);
        return;
    }
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    t->fd[BRIDGE_REMOTE] = fd;
    if (connect(fd, (struct sockaddr *)&ss, len) != 0 && errno != EINPROGRESS) {
        down(l, t, "cannot connect to the remote", now);
        return;
    }
    t->connecting = true;
    if (!watch(l, t, BRIDGE_REMOTE, EPOLLOUT))
        down(l, t, "epoll_ctl on the remote socket failed", now);
}

/* The broker's end of a new local pair becomes one of the loop's
 * connections (as accept.c makes them), introduced with our identity. */
static void dial_local(tern_loop *l, tb *t, uint64_t now)
{
    int sv[2];
    struct epoll_event ev;
    tern_sock *k;

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) {
        down(l, t, "socketpair failed", now);
        return;
    }
    if ((size_t)sv[1] >= l->by_fd_len || (k = tern_pool_calloc(l->pool, sizeof *k)) == NULL) {
        (void)close(sv[0]);
        (void)close(sv[1]);
        down(l, t, "no room for the local link", now);
        return;
    }
    t->fd[BRIDGE_LOCAL] = sv[0];
    k->kind = TERN_HANDLE_CONN;
    k->bridge = 1;
    k->fd = sv[1];
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN;
    ev.data.ptr = k;
    if (epoll_ctl(l->ep, EPOLL_CTL_ADD, sv[1], &ev) != 0) {
        tern_pool_free(l->pool, k);
        (void)close(sv[1]);
        down(l, t, "epoll_ctl on the local link failed", now);
        return;
    }
    k->events = EPOLLIN;
    t->broker_fd = sv[1]; /* for the identity asked during conn_open */
    if (!conn_open(l->cs, &k->c, false, now)) {
        tern_pool_free(l->pool, k);
        (void)close(sv[1]);
        t->broker_fd = -1;
        down(l, t, "the local broker refused the bridge's connection", now);
        return;
    }
    l->by_fd[sv[1]] = k;
    l->nconns++;
    if (!watch(l, t, BRIDGE_LOCAL, EPOLLIN)) {
        down(l, t, "epoll_ctl on the local link failed", now);
        return;
    }
    broker_bridge_opened(t->b, BRIDGE_LOCAL, now);
}

/* Output of a side not yet taken by its socket. */
static size_t pending(const tb *t, int side)
{
    size_t n;

    (void)broker_bridge_output(t->b, (bridge_side)side, &n);
    if (side == BRIDGE_REMOTE && t->tls != NULL)
        n += tern_tls_out_pending(t->tls);
    return n;
}

/* Hand the bridge's output to its sockets; write interest while some is
 * left, read interest while the other side's output is below
 * BRIDGE_OUT_HIGH. False when the bridge went down. */
static bool flush(tern_loop *l, tb *t, uint64_t now)
{
    bool more[2] = {false, false};

    for (int side = 0; side < 2; side++) {
        const uint8_t *p;
        size_t n;

        if (t->fd[side] < 0 || (side == BRIDGE_REMOTE && (t->connecting || !t->opened)))
            continue;
        p = broker_bridge_output(t->b, (bridge_side)side, &n);
        if (side == BRIDGE_REMOTE && t->tls != NULL) {
            if (n > 0) {
                if (!tern_tls_write(t->tls, p, n)) {
                    down(l, t, "TLS to the remote failed", now);
                    return false;
                }
                broker_bridge_output_taken(t->b, BRIDGE_REMOTE, n);
            }
            p = tern_tls_out_peek(t->tls, &n);
        }
        while (n > 0) {
            ssize_t w = send(t->fd[side], p, n, MSG_NOSIGNAL | MSG_DONTWAIT);

            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                more[side] = true;
                break;
            }
            if (w < 0) {
                down(l, t, side == BRIDGE_REMOTE ? "writing to the remote failed"
                                                 : "writing to the local link failed", now);
                return false;
            }
            if (side == BRIDGE_REMOTE && t->tls != NULL) {
                tern_tls_out_consume(t->tls, (size_t)w);
                p = tern_tls_out_peek(t->tls, &n);
            } else {
                broker_bridge_output_taken(t->b, (bridge_side)side, (size_t)w);
                p = broker_bridge_output(t->b, (bridge_side)side, &n);
            }
        }
    }
    for (int side = 0; side < 2; side++) {
        bool read = pending(t, !side) < BRIDGE_OUT_HIGH;

        if (t->fd[side] < 0 || (side == BRIDGE_REMOTE && t->connecting))
            continue;
        if (!interest(l, t, side, (read ? EPOLLIN : 0u) | (more[side] ? EPOLLOUT : 0u))) {
            down(l, t, "epoll_ctl failed", now);
            return false;
        }
    }
    return true;
}

/* The remote's transport is ready for MQTT (TCP connected, TLS done). */
static void remote_ready(tern_loop *l, tb *t, uint64_t now)
{
    t->opened = true;
    broker_bridge_opened(t->b, BRIDGE_REMOTE, now);
    tern_logf(l->log, BROKER_LOG_DEBUG, "bridge %s: connected to the remote%s", t->cfg->name,
              t->tls ? " (TLS)" : "");
}

static void connected(tern_loop *l, tb *t, uint64_t now)
{
    int err = 0;
    socklen_t len = sizeof err;

    if (getsockopt(t->fd[BRIDGE_REMOTE], SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
        char why[128];
        snprintf(why, sizeof why, "cannot connect to the remote: %s", strerror(err ? err : errno));
        down(l, t, why, now);
        return;
    }
    t->connecting = false;
    if (t->tls_ctx != NULL) {
        uint8_t none[1];
        size_t got = 0;

        t->tls = tern_tls_client_conn(t->tls_ctx);
        if (t->tls == NULL ||
            (t->cfg->tls_name[0] != '\0' && !tern_tls_client_check_name(t->tls, t->cfg->tls_name)) ||
            tern_tls_read(t->tls, NULL, 0, none, 0, &got) == TERN_TLS_FAILED) {
            down(l, t, "TLS client session failed to start", now);
            return;
        }
        if (!interest(l, t, BRIDGE_REMOTE, EPOLLIN))
            down(l, t, "epoll_ctl failed", now);
        /* The ClientHello goes out with the next flush (opened is false
         * until the handshake is done, so send it here). */
        size_t n;
        const uint8_t *p = tern_tls_out_peek(t->tls, &n);
        ssize_t w = n ? send(t->fd[BRIDGE_REMOTE], p, n, MSG_NOSIGNAL | MSG_DONTWAIT) : 0;
        if (w > 0)
            tern_tls_out_consume(t->tls, (size_t)w);
        return;
    }
    if (!interest(l, t, BRIDGE_REMOTE, EPOLLIN)) {
        down(l, t, "epoll_ctl failed", now);
        return;
    }
    remote_ready(l, t, now);
}

/* Ciphertext from the remote: the handshake, then plaintext for the
 * bridge. False when the bridge went down. */
static bool tls_input(tern_loop *l, tb *t, const uint8_t *data, size_t n, uint64_t now)
{
    uint8_t plain[BRIDGE_READ_CHUNK];
    const uint8_t *in = data;

    do {
        size_t got = 0;
        tern_tls_state st = tern_tls_read(t->tls, in, n, plain, sizeof plain, &got);

        in = NULL;
        n = 0;
        if (st == TERN_TLS_FAILED) {
            char why[160];

            snprintf(why, sizeof why, "TLS with the remote failed: %s",
                     tern_tls_failure_text(tern_tls_failure_of(t->tls)));
            down(l, t, why, now);
            return false;
        }
        if (st == TERN_TLS_PEER_CLOSED) {
            down(l, t, "the remote closed the TLS session", now);
            return false;
        }
        if (st == TERN_TLS_ESTABLISHED && !t->opened)
            remote_ready(l, t, now);
        if (st == TERN_TLS_HANDSHAKING) {
            /* Handshake flights go out at once (flush skips them while
             * not opened). */
            size_t m;
            const uint8_t *p = tern_tls_out_peek(t->tls, &m);
            ssize_t w = m ? send(t->fd[BRIDGE_REMOTE], p, m, MSG_NOSIGNAL | MSG_DONTWAIT) : 0;
            if (w > 0)
                tern_tls_out_consume(t->tls, (size_t)w);
        }
        if (got > 0 && !broker_bridge_input(t->b, BRIDGE_REMOTE, plain, got, now)) {
            down(l, t, NULL, now);
            return false;
        }
    } while (tern_tls_has_input(t->tls));
    return true;
}

static void readable(tern_loop *l, tb *t, int side, uint64_t now)
{
    uint8_t buf[BRIDGE_READ_CHUNK];

    for (int i = 0; i < BRIDGE_READS_PER_EVENT && t->fd[side] >= 0 &&
                    pending(t, !side) < BRIDGE_OUT_HIGH; i++) {
        ssize_t n = recv(t->fd[side], buf, sizeof buf, 0);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0) {
            down(l, t, side == BRIDGE_REMOTE ? "the remote closed the connection"
                                             : "the local broker closed the bridge's link", now);
            return;
        }
        if (side == BRIDGE_REMOTE && t->tls != NULL) {
            if (!tls_input(l, t, buf, (size_t)n, now))
                return;
        } else if (!broker_bridge_input(t->b, (bridge_side)side, buf, (size_t)n, now)) {
            down(l, t, NULL, now);
            return;
        }
        if ((size_t)n < sizeof buf)
            break;
    }
    (void)flush(l, t, now);
}

void tern_bridges_event(tern_loop *l, void *handle, uint32_t events, uint64_t now)
{
    bhandle *h = handle;
    tb *t = h->owner;
    int side = h->side;

    if (t->fd[side] < 0)
        return;
    if (side == BRIDGE_REMOTE && t->connecting) {
        if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
            connected(l, t, now);
        if (t->fd[side] < 0)
            return;
        (void)flush(l, t, now);
        return;
    }
    if ((events & (EPOLLHUP | EPOLLERR)) && pending(t, !side) >= BRIDGE_OUT_HIGH) {
        /* Not read (back-pressure), but gone: level-triggered, the hang-up
         * would be reported every turn. */
        down(l, t, side == BRIDGE_REMOTE ? "the remote connection failed"
                                         : "the local broker closed the bridge's link", now);
        return;
    }
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
        readable(l, t, side, now);
    else if (events & EPOLLOUT)
        (void)flush(l, t, now);
}

static const char *state_name(bridge_state s)
{
    static const char *const names[] = {"waiting", "dialling the remote", "connecting",
                                        "subscribing on the remote", "opening the local link",
                                        "connecting locally", "subscribing locally", "up"};
    return (size_t)s < sizeof names / sizeof names[0] ? names[s] : "?";
}

/* $SYS/broker/bridges/NAME/...: on every change of state and at most
 * every sys.interval while counters move (none with sys.interval 0).
 * queued: the messages for the remote waiting in the bridge's local
 * session, in flight included (its queue while the remote is away). */
static void put_sys(tern_loop *l, tb *t, uint64_t now)
{
    const bridge_stats *st = broker_bridge_get_stats(t->b);
    bool up = broker_bridge_get_state(t->b) == BRIDGE_UP;
    uint64_t every = (uint64_t)l->cfg.sys_interval_s * 1000u;
    char topic[96], v[32];
    static const char *const names[] = {"connects", "reconnects", "sent",    "received",
                                        "refused",  "rejected",   "dropped", "queued"};
    uint64_t queued;

    if (every == 0 || (t->sys_done && up == t->sys_up && now - t->sys_at < every))
        return;
    t->sys_done = true;
    t->sys_up = up;
    t->sys_at = now;
    (void)broker_session_waiting(l->b, t->client_id, &queued);
    const uint64_t vals[] = {st->connects, st->failures, st->sent,    st->received,
                             st->refused,  st->rejected, st->dropped, queued};
    snprintf(topic, sizeof topic, "$SYS/broker/bridges/%s/connected", t->cfg->name);
    (void)broker_sys_put(l->b, topic, up ? "1" : "0");
    snprintf(topic, sizeof topic, "$SYS/broker/bridges/%s/state", t->cfg->name);
    (void)broker_sys_put(l->b, topic, state_name(broker_bridge_get_state(t->b)));
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        snprintf(topic, sizeof topic, "$SYS/broker/bridges/%s/%s", t->cfg->name, names[i]);
        snprintf(v, sizeof v, "%llu", (unsigned long long)vals[i]);
        (void)broker_sys_put(l->b, topic, v);
    }
}

void tern_bridges_turn(tern_loop *l, uint64_t now)
{
    tern_bridges *bs = l->bridges;

    for (size_t i = 0; bs != NULL && i < bs->n; i++) {
        tb *t = &bs->b[i];
        bridge_state st;

        put_sys(l, t, now);
        if (!broker_bridge_tick(t->b, random32(), now)) {
            down(l, t, NULL, now);
            continue;
        }
        st = broker_bridge_get_state(t->b);
        if (st == BRIDGE_DIAL_REMOTE && t->fd[BRIDGE_LOCAL] >= 0)
            close_side(l, t, BRIDGE_LOCAL); /* the prime is done (bridge.h) */
        if (st == BRIDGE_DIAL_REMOTE && t->fd[BRIDGE_REMOTE] < 0)
            dial_remote(l, t, now);
        else if (st == BRIDGE_DIAL_LOCAL && t->fd[BRIDGE_LOCAL] < 0)
            dial_local(l, t, now);
        if (broker_bridge_get_state(t->b) == BRIDGE_WAIT)
            continue;
        if (!flush(l, t, now))
            continue;
        st = broker_bridge_get_state(t->b);
        if (st == BRIDGE_UP && t->logged != BRIDGE_UP)
            tern_logf(l->log, BROKER_LOG_INFO, "bridge %s: up", t->cfg->name);
        else if (st != t->logged)
            tern_logf(l->log, BROKER_LOG_DEBUG, "bridge %s: %s", t->cfg->name, state_name(st));
        t->logged = st;
    }
}

uint64_t tern_bridges_deadline(const tern_loop *l)
{
    const tern_bridges *bs = l->bridges;
    uint64_t d = UINT64_MAX;

    for (size_t i = 0; bs != NULL && i < bs->n; i++) {
        const tb *t = &bs->b[i];
        bridge_state st = broker_bridge_get_state(t->b);
        uint64_t x = broker_bridge_deadline(t->b);

        /* A state the platform acts on at the next turn. */
        if ((st == BRIDGE_DIAL_REMOTE && t->fd[BRIDGE_REMOTE] < 0) ||
            (st == BRIDGE_DIAL_LOCAL && t->fd[BRIDGE_LOCAL] < 0))
            x = 0;
        if (x < d)
            d = x;
    }
    return d;
}
