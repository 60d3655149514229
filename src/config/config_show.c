/*
 * config_show.c - the configuration as JSON for the operator console's
 * config-show: one member per key of the table in config.c, so a key added
 * there is shown without a change here. Like config.c it needs no
 * formatted output from the libc (the unikernel builds it too).
 */
#include "config/config_show.h"
#include "config/keys.h"

#include <stdbool.h>
#include <string.h>

/* Longest text one value becomes: "[" 8 groups of 4 hex digits and ":" "]:65535". */
#define VALUE_TEXT_MAX 64u

typedef struct text {
    char s[VALUE_TEXT_MAX];
    size_t n;
} text;

static void put_ch(text *t, char ch)
{
    if (t->n + 1 < sizeof t->s)
        t->s[t->n++] = ch;
    t->s[t->n] = '\0';
}

static void put_dec(text *t, uint32_t v)
{
    char d[10];
    int k = 0;
    do {
        d[k++] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v);
    while (k > 0)
        put_ch(t, d[--k]);
}

static void put_hex(text *t, uint32_t v, int digits)
{
    static const char hex[] = "0123456789abcdef";
    for (int i = digits - 1; i >= 0; i--)
        put_ch(t, hex[(v >> (4 * i)) & 15u]);
}

static void put_ipv4(text *t, const uint8_t *a)
{
    for (int i = 0; i < 4; i++) {
        if (i)
            put_ch(t, '.');
        put_dec(t, a[i]);
    }
}

/* "a.b.c.d:port" or "[x:x:x:x:x:x:x:x]:port" (each group in full). */
static void put_listen(text *t, const tern_listen_addr *a)
{
    if (a->family == TERN_ADDR_IPV4) {
        put_ipv4(t, a->addr);
    } else {
        put_ch(t, '[');
        for (int i = 0; i < 8; i++) {
            if (i)
                put_ch(t, ':');
            put_hex(t, (uint32_t)a->addr[2 * i] << 8 | a->addr[2 * i + 1], 4);
        }
        put_ch(t, ']');
    }
    put_ch(t, ':');
    put_dec(t, a->port);
}

static const char *word(uint32_t v, const char *const *names, size_t n)
{
    return v < n ? names[v] : NULL;
}

static void show_key(const tern_config *cfg, const key_def *k, jw *w)
{
    static const char *const levels[] = {"error", "warn", "info", "debug"};
    static const char *const idents[] = {"cn", "san-dns", "san-email", "san-uri"};
    static const char *const syncs[] = {"full", "normal"};
    static const char *const disks[] = {"auto", "none", "virtio-blk", "virtio-scsi"};
    const void *f = (const char *)cfg + k->offset;
    text t = {.n = 0};
    t.s[0] = '\0';
    switch (k->kind) {
    case KIND_VERSION:
    case KIND_UINT:
        jw_u64(w, k->name, *(const uint32_t *)f);
        return;
    case KIND_BOOL:
        jw_bool(w, k->name, *(const bool *)f);
        return;
    case KIND_LOG_LEVEL:
        jw_str(w, k->name, word((uint32_t) * (const broker_log_level *)f, levels, 4));
        return;
    case KIND_IDENTITY:
        jw_str(w, k->name, word((uint32_t) * (const tern_config_identity *)f, idents, 4));
        return;
    case KIND_STORE_SYNC:
        jw_str(w, k->name, word((uint32_t) * (const tern_config_store_sync *)f, syncs, 2));
        return;
    case KIND_TLS_VERSION:
        jw_str(w, k->name,
               *(const tern_config_tls_version *)f == TERN_CONFIG_TLS_1_2 ? "1.2" : "1.3");
        return;
    case KIND_PATH:
    case KIND_LIST:
        jw_str(w, k->name, (const char *)f); /* as written: a path, never its file */
        return;
    case KIND_LISTEN: {
        const tern_listen_addr *a = f;
        if (a->family == TERN_ADDR_NONE) {
            jw_null(w, k->name);
            return;
        }
        put_listen(&t, a);
        break;
    }
    case KIND_IPV4_PREFIX:
    case KIND_IPV4_HOST: {
        const tern_config_ipv4 *a = f;
        if (!a->set) {
            jw_null(w, k->name);
            return;
        }
        put_ipv4(&t, a->addr);
        if (k->kind == KIND_IPV4_PREFIX) {
            put_ch(&t, '/');
            put_dec(&t, a->prefix);
        }
        break;
    }
    case KIND_DISK: {
        const tern_config_disk *d = f;
        if (d->kind != TERN_DISK_PCI) {
            jw_str(w, k->name, word((uint32_t)d->kind, disks, 4));
            return;
        }
        put_hex(&t, d->bus, 2);
        put_ch(&t, ':');
        put_hex(&t, d->dev, 2);
        put_ch(&t, '.');
        put_hex(&t, d->fn, 1);
        break;
    }
    }
    jw_strn(w, k->name, t.s, t.n);
}

void tern_config_show(const tern_config *cfg, jw *w)
{
    for (size_t i = 0; i < tern_config_key_count; i++)
        show_key(cfg, &tern_config_keys[i], w);
}
