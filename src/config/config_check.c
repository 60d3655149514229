/*
 * config_check.c - the config's rules across keys, checked once the whole
 * file is read (TLS files for a TLS listener, the input budget against the
 * packet size, limits against each other, the network and the time
 * servers), and the time servers' list as the clock reads it.
 */
#include <string.h>

#include "config/addr.h"
#include "config/config_internal.h"

/* Line of a key in the file, 0 when it was not set. */
size_t line_of(const size_t *key_lines, const char *name)
{
    for (size_t i = 0; i < tern_config_key_count; i++)
        if (strcmp(tern_config_keys[i].name, name) == 0)
            return key_lines[i];
    return 0;
}

/*
 * Rules across keys, after the whole file: a TLS listener needs its
 * certificate, key and (with client certificates required) a CA to check
 * clients against; tls.* settings without a TLS listener would be ignored,
 * so they are refused like any other setting that would do nothing.
 */
bool check_tls(const tern_config *cfg, const size_t *key_lines, const char *file,
               msgbuf *m)
{
    static const char *const needed[] = {"tls.cert", "tls.key"};
    /* listener.wss runs the same TLS (same certificates, same identity
     * rules) as listener.tls. */
    bool tls = cfg->listener_tls.family != TERN_ADDR_NONE;
    const char *listener = tls ? "listener.tls" : "listener.wss";
    size_t listener_line = line_of(key_lines, listener);

    if (!tls && cfg->listener_wss.family == TERN_ADDR_NONE) {
        for (size_t i = 0; i < tern_config_key_count; i++) {
            if (key_lines[i] != 0 && strncmp(tern_config_keys[i].name, "tls.", 4) == 0) {
                msg_begin(m, file, key_lines[i]);
                msg_str(m, tern_config_keys[i].name);
                msg_str(m, " is set but there is no listener.tls or listener.wss to use it");
                return false;
            }
        }
        return true;
    }
    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++) {
        if (line_of(key_lines, needed[i]) == 0) {
            msg_begin(m, file, listener_line);
            msg_str(m, listener);
            msg_str(m, " needs ");
            msg_str(m, needed[i]);
            return false;
        }
    }
    if (cfg->tls.require_client_cert && cfg->tls.client_ca[0] == '\0' &&
        cfg->tls.operator_ca[0] == '\0') {
        msg_begin(m, file, listener_line);
        msg_str(m, listener);
        msg_str(m, " needs tls.client_ca (the CAs of accepted clients) while "
                   "tls.require_client_cert = true");
        return false;
    }
    return true;
}

/* The input budget must hold one packet of the largest allowed size, or
 * such a packet could never arrive: left at its default it grows to it,
 * set lower it is refused. */
bool check_input_budget(tern_config *cfg, const size_t *key_lines, const char *file,
                        msgbuf *m)
{
    size_t line = line_of(key_lines, "limits.max_input_bytes");

    if (cfg->limits.max_input_bytes >= cfg->limits.max_packet_size)
        return true;
    if (line == 0) {
        cfg->limits.max_input_bytes = cfg->limits.max_packet_size;
        return true;
    }
    msg_begin(m, file, line);
    msg_str(m, "limits.max_input_bytes (");
    msg_uint(m, cfg->limits.max_input_bytes);
    msg_str(m, ") is below limits.max_packet_size (");
    msg_uint(m, cfg->limits.max_packet_size);
    msg_str(m, "): a packet of the largest allowed size could never arrive");
    return false;
}

/* "KEY (VALUE, line N)" or "KEY (VALUE, the default)". */
static void msg_limit(msgbuf *m, const size_t *key_lines, const char *key, uint32_t value)
{
    size_t line = line_of(key_lines, key);

    msg_str(m, key);
    msg_str(m, " (");
    msg_uint(m, value);
    if (line != 0) {
        msg_str(m, ", line ");
        msg_uint(m, line);
    } else {
        msg_str(m, ", the default");
    }
    msg_putc(m, ')');
}

/*
 * Limits that must agree: every message the broker accepts must be one it
 * can deliver under its own bounds. A PUBLISH is at most max_packet_size
 * bytes and its payload must fit a session's queue (max_queued_bytes), or
 * it would be acknowledged and never reach a QoS 1/2 subscriber. (The
 * output buffer bound, max_out_bytes, delays a large message but never
 * refuses it: it is checked before a message is added, not after.)
 */
bool check_limits(const tern_config *cfg, const size_t *key_lines, const char *file,
                  msgbuf *m)
{
    const tern_config_limits *l = &cfg->limits;
    size_t line = line_of(key_lines, "limits.max_packet_size");
    /* The same holds for the queue bytes of an identity's sessions. */
    const char *key = "limits.max_queued_bytes";
    uint32_t bound = l->max_queued_bytes;

    if (l->max_queued_bytes_per_identity < bound) {
        key = "limits.max_queued_bytes_per_identity";
        bound = l->max_queued_bytes_per_identity;
    }
    if (l->max_packet_size <= bound)
        return true;
    if (line == 0)
        line = line_of(key_lines, key);
    msg_begin(m, file, line);
    msg_limit(m, key_lines, "limits.max_packet_size", l->max_packet_size);
    msg_str(m, " is above ");
    msg_limit(m, key_lines, key, bound);
    msg_str(m, ": a message that large could never be queued for a QoS 1/2 subscriber; "
               "lower the first or raise the second");
    return false;
}

static void msg_ipv4(msgbuf *m, const uint8_t a[4])
{
    for (int i = 0; i < 4; i++) {
        if (i)
            msg_putc(m, '.');
        msg_uint(m, a[i]);
    }
}

/*
 * net.gateway needs net.ipv4 (with DHCP the server names the gateway), must
 * differ from it, and must lie in its network - except for a /32 address,
 * whose gateway is by necessity reached on the link (common on VPS hosts).
 */
bool check_net(const tern_config *cfg, const size_t *key_lines, const char *file,
               msgbuf *m)
{
    const tern_config_ipv4 *ip = &cfg->net.ipv4, *gw = &cfg->net.gateway;
    size_t gw_line = line_of(key_lines, "net.gateway");
    const char *problem;

    if (!gw->set)
        return true;
    msg_begin(m, file, gw_line);
    msg_str(m, "net.gateway: ");
    if (!ip->set) {
        msg_str(m, "set but there is no net.ipv4 (with DHCP the gateway comes from the "
                   "DHCP server)");
        return false;
    }
    msg_ipv4(m, gw->addr);
    if (memcmp(gw->addr, ip->addr, 4) == 0) {
        msg_str(m, " is net.ipv4's own address");
        return false;
    }
    if (ip->prefix < 32 && !tern_ipv4_same_net(gw->addr, ip->addr, ip->prefix)) {
        msg_str(m, " is outside net.ipv4's network ");
        msg_ipv4(m, ip->addr);
        msg_putc(m, '/');
        msg_uint(m, ip->prefix);
        msg_str(m, " (only a /32 address may have its gateway outside)");
        return false;
    }
    problem = ip->prefix < 32 ? tern_ipv4_host_problem(gw->addr, ip->prefix) : NULL;
    if (problem != NULL) {
        msg_putc(m, ' ');
        msg_str(m, problem);
        return false;
    }
    return true;
}

/* The item of a comma-separated list at *pos, blanks around it trimmed;
 * *pos moves past it and its comma. */
static span list_item(const char *s, size_t *pos)
{
    size_t i = *pos, end;

    while (s[i] == ' ' || s[i] == '\t')
        i++;
    end = i;
    while (s[end] != '\0' && s[end] != ',')
        end++;
    *pos = s[end] == ',' ? end + 1 : end;
    while (end > i && (s[end - 1] == ' ' || s[end - 1] == '\t'))
        end--;
    return (span){s + i, end - i};
}

/* time.sntp_servers: each item a private address, at most
 * TERN_TIME_SERVERS_MAX of them (an agreement over more says no more), none
 * twice (a server listed twice would vote twice). */
bool check_time(const tern_config *cfg, const size_t *key_lines, const char *file,
                msgbuf *m)
{
    const char *s = cfg->time.sntp_servers;
    size_t pos = 0, count = 0;
    tern_sntp_server seen[TERN_TIME_SERVERS_MAX];

    while (s[pos] != '\0') {
        span item = list_item(s, &pos);
        tern_sntp_server srv;
        const char *problem = tern_sntp_server_parse(item.p, item.n, &srv);

        for (size_t i = 0; problem == NULL && i < count && i < TERN_TIME_SERVERS_MAX; i++) {
            if (memcmp(seen[i].addr, srv.addr, 4) == 0 && seen[i].port == srv.port)
                problem = "is listed twice: each server votes once";
        }
        if (problem == NULL && count < TERN_TIME_SERVERS_MAX) {
            seen[count++] = srv;
            continue;
        }
        msg_begin(m, file, line_of(key_lines, "time.sntp_servers"));
        msg_str(m, "time.sntp_servers: ");
        if (problem == NULL) { /* a ninth server */
            msg_str(m, "more than ");
            msg_uint(m, TERN_TIME_SERVERS_MAX);
            msg_str(m, " servers");
            return false;
        }
        msg_quoted(m, item);
        msg_putc(m, ' ');
        msg_str(m, problem);
        return false;
    }
    return true;
}

size_t tern_config_sntp_servers(const tern_config *cfg, tern_sntp_server *out, size_t max)
{
    const char *s = cfg->time.sntp_servers;
    size_t pos = 0, count = 0;

    while (s[pos] != '\0' && count < max) {
        span item = list_item(s, &pos);
        if (tern_sntp_server_parse(item.p, item.n, &out[count]) == NULL)
            count++;
    }
    return count;
}
