/*
 * confcheck.c - settings the parser accepts but the unikernel cannot honour
 * (yet): refused by name rather than ignored, so a broker never runs with a
 * setting it silently dropped.
 */
#include "confcheck.h"

#include <stdio.h>

static const char *const file_keys[CONF_FILE_COUNT] = {
    "tls.cert", "tls.key", "tls.client_ca", "tls.operator_ca", "acl.file",
    "auth.password_file",
};

const char *conf_file_key(unsigned i)
{
    return i < CONF_FILE_COUNT ? file_keys[i] : "";
}

const char *conf_file_value(const tern_config *cfg, unsigned i)
{
    switch (i) {
    case CONF_FILE_TLS_CERT:
        return cfg->tls.cert;
    case CONF_FILE_TLS_KEY:
        return cfg->tls.key;
    case CONF_FILE_TLS_CLIENT_CA:
        return cfg->tls.client_ca;
    case CONF_FILE_TLS_OPERATOR_CA:
        return cfg->tls.operator_ca;
    case CONF_FILE_ACL:
        return cfg->acl_file;
    case CONF_FILE_PASSWD:
        return cfg->password_file;
    default:
        return "";
    }
}

int conf_check_kernel(const tern_config *cfg, const char *name, char *err, size_t err_size)
{
    const char *what = NULL;
    if (cfg->store_path[0]) {
        snprintf(err, err_size,
                 "%s:%zu: store.path: the unikernel keeps its store on a disk partition, not "
                 "in a file: remove store.path and choose the disk with store.disk",
                 name, tern_config_line(cfg, "store.path"));
        return -1;
    }
    if (tern_config_line(cfg, "workers") != 0) {
        snprintf(err, err_size,
                 "%s:%zu: workers: a key of the Linux daemon's threads; the unikernel gives its "
                 "CPUs their roles at boot (ADR-057): remove workers",
                 name, tern_config_line(cfg, "workers"));
        return -1;
    }
    if (cfg->nbridges > 0) {
        /* Bridges need an outbound connection in the kernel's network
         * glue, which does not exist yet (ADR-060). */
        const tern_config_bridge *cb = &cfg->bridges[0];
        size_t line = tern_config_bridge_line(cb, "address");

        if (line == 0)
            line = tern_config_bridge_line(cb, "topics");
        snprintf(err, err_size,
                 "%s:%zu: bridge.%s.address: the unikernel does not run bridges yet (the Linux "
                 "daemon ternd does): remove the bridge.%s.* keys",
                 name, line, cb->name, cb->name);
        return -1;
    }
    /* Every listener kind is served (WebSocket too, through the same
     * layer: serve.c); lwIP is built for IPv4 only. */
    const struct {
        const tern_listen_addr *la;
        const char *ipv6;
    } listeners[] = {
        { &cfg->listener_plain, "listener.plain: the unikernel has IPv4 only" },
        { &cfg->listener_tls, "listener.tls: the unikernel has IPv4 only" },
        { &cfg->listener_ws, "listener.ws: the unikernel has IPv4 only" },
        { &cfg->listener_wss, "listener.wss: the unikernel has IPv4 only" },
    };
    bool any = false;
    for (size_t i = 0; i < sizeof listeners / sizeof listeners[0] && !what; i++) {
        any |= listeners[i].la->family != TERN_ADDR_NONE;
        if (listeners[i].la->family == TERN_ADDR_IPV6)
            what = listeners[i].ipv6;
    }
    if (!what && !any)
        what = "no listener: nothing to serve";
    if (what) {
        snprintf(err, err_size, "%s: %s", name, what);
        return -1;
    }
    return 0;
}
