/*
 * bridge.c - the bridge.NAME.* configuration keys (docs/CONFIG.md,
 * ADR-060): a bridge per NAME, its keys in a small table of their own
 * (the main table's keys have fixed names), the topic list's grammar, and
 * the rules across a bridge's keys. Messages are assembled by hand, like
 * config.c's, and always name the whole key.
 *
 * topics: comma-separated items "PATTERN DIR QOS [LOCAL_PREFIX
 * [REMOTE_PREFIX]]", DIR one of in, out, both; QOS 0..2; a prefix written
 * "" is empty.
 */
#include <stddef.h>
#include <string.h>

#include "config/addr.h"
#include "config/config.h"
#include "config/keys.h"
#include "mqtt/mqtt.h"

typedef enum bkind { B_ADDR, B_TEXT, B_PATH, B_UINT, B_BOOL, B_TOPICS, B_PROTOCOL } bkind;

typedef struct bkey {
    const char *name;
    bkind kind;
    uint32_t min, max; /* B_UINT range; B_TEXT/B_PATH/B_TOPICS: field size */
    size_t offset;     /* in tern_config_bridge */
} bkey;

#define BK(n, k, lo, hi, f) {n, k, lo, hi, offsetof(tern_config_bridge, f)}
#define BSIZE(f) sizeof(((tern_config_bridge *)0)->f)
static const bkey bkeys[] = {
    BK("address", B_ADDR, 0, 0, address),
    BK("topics", B_TOPICS, 0, BSIZE(topics), topics),
    BK("client_id", B_TEXT, 0, BSIZE(client_id), client_id),
    BK("identity", B_TEXT, 0, BSIZE(identity), identity),
    BK("keepalive", B_UINT, 5, 65535, keepalive_s),
    BK("reconnect_min", B_UINT, 1, 3600, reconnect_min_s),
    BK("reconnect_max", B_UINT, 1, 86400, reconnect_max_s),
    BK("try_private", B_BOOL, 0, 0, try_private),
    BK("protocol", B_PROTOCOL, 0, 0, protocol),
    BK("tls_ca", B_PATH, 0, BSIZE(tls_ca), tls_ca),
    BK("tls_cert", B_PATH, 0, BSIZE(tls_cert), tls_cert),
    BK("tls_key", B_PATH, 0, BSIZE(tls_key), tls_key),
    BK("tls_name", B_TEXT, 0, BSIZE(tls_name), tls_name),
};
#define NBKEYS (sizeof bkeys / sizeof bkeys[0])
_Static_assert(NBKEYS == TERN_BRIDGE_KEYS, "TERN_BRIDGE_KEYS counts the bridge keys");

/* ---- messages ------------------------------------------------------------- */

typedef struct out {
    char *p;
    size_t cap, n;
} out;

static void put(out *o, const char *s, size_t n)
{
    for (size_t i = 0; i < n && o->n + 1 < o->cap; i++)
        o->p[o->n++] = s[i];
    if (o->cap > 0)
        o->p[o->n] = '\0';
}

static void puts_(out *o, const char *s)
{
    put(o, s, strlen(s));
}

static void put_uint(out *o, uint64_t v)
{
    char d[24];
    size_t n = 0;

    do {
        d[sizeof d - 1 - n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    put(o, d + sizeof d - n, n);
}

static void put_key(out *o, const char *name, const char *field)
{
    puts_(o, "bridge.");
    puts_(o, name);
    puts_(o, ".");
    puts_(o, field);
}

/* ---- values --------------------------------------------------------------- */

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static bool name_ok(const char *s, size_t n)
{
    if (n == 0 || n >= TERN_BRIDGE_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return false;
    }
    return true;
}

static bool parse_u32(const char *s, size_t n, uint32_t *v)
{
    uint64_t x = 0;

    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        x = x * 10 + (uint64_t)(s[i] - '0');
        if (x > UINT32_MAX)
            return false;
    }
    *v = (uint32_t)x;
    return true;
}

/* The next blank-separated word of s[*pos..n). */
static bool word(const char *s, size_t n, size_t *pos, const char **w, size_t *wn)
{
    while (*pos < n && is_blank(s[*pos]))
        (*pos)++;
    if (*pos >= n)
        return false;
    *w = s + *pos;
    while (*pos < n && !is_blank(s[*pos]))
        (*pos)++;
    *wn = (size_t)(s + *pos - *w);
    return true;
}

/* A prefix word into out (""" = empty); false when it is not a valid
 * topic name prefix (no wildcards) or too long. */
static bool prefix(const char *w, size_t n, char *dst)
{
    if (n == 2 && w[0] == '"' && w[1] == '"')
        n = 0;
    if (n >= BRIDGE_TOPIC_MAX || memchr(w, '+', n) || memchr(w, '#', n) ||
        (n > 0 && !mqtt_utf8_valid((const uint8_t *)w, n)))
        return false;
    memcpy(dst, w, n);
    dst[n] = '\0';
    return true;
}

/* One topics item into m; false with the reason in o. */
static bool parse_item(const char *s, size_t n, bridge_map *m, out *o)
{
    const char *w;
    size_t wn, pos = 0;
    char full[2 * BRIDGE_TOPIC_MAX];
    size_t flen;

    memset(m, 0, sizeof *m);
    if (!word(s, n, &pos, &w, &wn) || wn >= BRIDGE_TOPIC_MAX) {
        puts_(o, "a topic pattern of 1..127 bytes");
        return false;
    }
    memcpy(m->pattern, w, wn);
    if (!word(s, n, &pos, &w, &wn) ||
        !((wn == 2 && memcmp(w, "in", 2) == 0) || (wn == 3 && memcmp(w, "out", 3) == 0) ||
          (wn == 4 && memcmp(w, "both", 4) == 0))) {
        puts_(o, "a direction after the pattern: in, out or both");
        return false;
    }
    m->dir = (uint8_t)(wn == 2 ? BRIDGE_IN : wn == 3 ? BRIDGE_OUT : BRIDGE_BOTH);
    if (!word(s, n, &pos, &w, &wn) || wn != 1 || w[0] < '0' || w[0] > '2') {
        puts_(o, "a QoS 0, 1 or 2 after the direction");
        return false;
    }
    m->qos = (uint8_t)(w[0] - '0');
    if (word(s, n, &pos, &w, &wn) && !prefix(w, wn, m->local_prefix)) {
        puts_(o, "a local prefix without + or # of at most 127 bytes");
        return false;
    }
    if (word(s, n, &pos, &w, &wn) && !prefix(w, wn, m->remote_prefix)) {
        puts_(o, "a remote prefix without + or # of at most 127 bytes");
        return false;
    }
    if (word(s, n, &pos, &w, &wn)) {
        puts_(o, "at most 5 words: PATTERN DIR QOS [LOCAL_PREFIX [REMOTE_PREFIX]]");
        return false;
    }
    for (int side = 0; side < 2; side++) {
        const char *p = side ? m->remote_prefix : m->local_prefix;
        size_t pn = strlen(p), an = strlen(m->pattern);

        memcpy(full, p, pn);
        memcpy(full + pn, m->pattern, an);
        flen = pn + an;
        if (!mqtt_topic_filter_valid((const uint8_t *)full, flen)) {
            puts_(o, "prefix + pattern to be a valid topic filter");
            return false;
        }
    }
    return true;
}

/* Every item of a topics value; count in *nmaps. */
static bool parse_topics(const char *s, size_t n, bridge_map *maps, size_t *nmaps, out *o)
{
    size_t pos = 0;

    *nmaps = 0;
    while (pos <= n) {
        const char *comma = memchr(s + pos, ',', n - pos);
        size_t end = comma ? (size_t)(comma - s) : n;
        bridge_map scratch;

        if (*nmaps == BRIDGE_MAPS_MAX) {
            puts_(o, "at most 16 mappings");
            return false;
        }
        if (!parse_item(s + pos, end - pos, maps ? &maps[*nmaps] : &scratch, o)) {
            puts_(o, " (item ");
            put_uint(o, *nmaps + 1);
            puts_(o, ")");
            return false;
        }
        (*nmaps)++;
        pos = end + 1;
        if (comma == NULL)
            break;
    }
    return true;
}

/* ---- keys ----------------------------------------------------------------- */

static tern_config_bridge *find_or_add(tern_config *cfg, const char *name, size_t n)
{
    tern_config_bridge *cb;

    for (uint32_t i = 0; i < cfg->nbridges; i++)
        if (strlen(cfg->bridges[i].name) == n && memcmp(cfg->bridges[i].name, name, n) == 0)
            return &cfg->bridges[i];
    if (cfg->nbridges == TERN_BRIDGES_MAX)
        return NULL;
    cb = &cfg->bridges[cfg->nbridges++];
    memset(cb, 0, sizeof *cb);
    memcpy(cb->name, name, n);
    cb->keepalive_s = TERN_BRIDGE_KEEPALIVE_DEFAULT;
    cb->reconnect_min_s = TERN_BRIDGE_RECONNECT_MIN_DEFAULT;
    cb->reconnect_max_s = TERN_BRIDGE_RECONNECT_MAX_DEFAULT;
    cb->try_private = true;
    cb->protocol = MQTT_LEVEL_311;
    return cb;
}

static void expected(out *o, const bkey *k)
{
    switch (k->kind) {
    case B_ADDR:
        puts_(o, "IPV4:PORT or [IPV6]:PORT with a port above 0, e.g. 192.0.2.7:1883");
        break;
    case B_TEXT:
    case B_PATH:
        puts_(o, "text of at most ");
        put_uint(o, k->max - 1);
        puts_(o, " bytes");
        break;
    case B_UINT:
        puts_(o, "an integer ");
        put_uint(o, k->min);
        puts_(o, "..");
        put_uint(o, k->max);
        break;
    case B_BOOL:
        puts_(o, "true or false");
        break;
    case B_TOPICS:
        puts_(o, "'PATTERN DIR QOS [LOCAL_PREFIX [REMOTE_PREFIX]]', ...");
        break;
    case B_PROTOCOL:
        puts_(o, "3.1.1 or 5");
        break;
    }
}

static bool set(tern_config_bridge *cb, const bkey *k, const char *v, size_t n, out *o)
{
    char *field = (char *)cb + k->offset;
    size_t nmaps;

    switch (k->kind) {
    case B_ADDR: {
        tern_listen_addr a;
        if (!tern_addr_parse(v, n, &a) || a.port == 0)
            return false;
        memcpy(field, &a, sizeof a);
        return true;
    }
    case B_TEXT:
    case B_PATH:
        if (n >= k->max || memchr(v, '\0', n))
            return false;
        memcpy(field, v, n);
        field[n] = '\0';
        return true;
    case B_UINT: {
        uint32_t x;
        if (!parse_u32(v, n, &x) || x < k->min || x > k->max)
            return false;
        memcpy(field, &x, sizeof x);
        return true;
    }
    case B_BOOL:
        if (n == 4 && memcmp(v, "true", 4) == 0)
            *(bool *)(void *)field = true;
        else if (n == 5 && memcmp(v, "false", 5) == 0)
            *(bool *)(void *)field = false;
        else
            return false;
        return true;
    case B_PROTOCOL:
        if (n == 5 && memcmp(v, "3.1.1", 5) == 0)
            *(uint8_t *)field = MQTT_LEVEL_311;
        else if (n == 1 && v[0] == '5')
            *(uint8_t *)field = MQTT_LEVEL_5;
        else
            return false;
        return true;
    case B_TOPICS:
        if (n >= k->max)
            return false;
        if (!parse_topics(v, n, NULL, &nmaps, o))
            return false;
        memcpy(field, v, n);
        field[n] = '\0';
        return true;
    }
    return false;
}

bool tern_config_bridge_key(tern_config *cfg, const char *key, size_t klen, const char *val,
                            size_t vlen, size_t line, char *msg, size_t cap)
{
    out o = {msg, cap, 0};
    const char *name = key + 7, *dot, *field; /* after "bridge." */
    size_t nn, fn;
    tern_config_bridge *cb;
    const bkey *k = NULL;

    dot = memchr(name, '.', klen - 7);
    if (dot == NULL || !name_ok(name, (size_t)(dot - name))) {
        puts_(&o, "bad bridge key '");
        put(&o, key, klen);
        puts_(&o, "': expected bridge.NAME.KEY, NAME of 1..31 letters, digits, '_' or '-'");
        return false;
    }
    nn = (size_t)(dot - name);
    field = dot + 1;
    fn = klen - 7 - nn - 1;
    for (size_t i = 0; i < NBKEYS; i++)
        if (strlen(bkeys[i].name) == fn && memcmp(bkeys[i].name, field, fn) == 0)
            k = &bkeys[i];
    if (k == NULL) {
        puts_(&o, "unknown key '");
        put(&o, key, klen);
        puts_(&o, "' (a bridge's keys: ");
        for (size_t i = 0; i < NBKEYS; i++) {
            puts_(&o, bkeys[i].name);
            puts_(&o, i + 1 < NBKEYS ? ", " : ")");
        }
        return false;
    }
    cb = find_or_add(cfg, name, nn);
    if (cb == NULL) {
        puts_(&o, "'");
        put(&o, key, klen);
        puts_(&o, "': at most 4 bridges");
        return false;
    }
    if (cb->key_line[k - bkeys] != 0) {
        puts_(&o, "duplicate key '");
        put(&o, key, klen);
        puts_(&o, "'");
        return false;
    }
    if (vlen == 0 || !set(cb, k, val, vlen, &o)) {
        size_t why = o.n;
        char reason[160];

        memcpy(reason, msg, why < sizeof reason ? why : sizeof reason - 1);
        reason[why < sizeof reason ? why : sizeof reason - 1] = '\0';
        o.n = 0;
        put(&o, key, klen);
        puts_(&o, vlen == 0 ? ": missing value (expected " : ": bad value (expected ");
        if (why > 0)
            puts_(&o, reason);
        else
            expected(&o, k);
        puts_(&o, ")");
        return false;
    }
    cb->key_line[k - bkeys] = line > UINT32_MAX ? UINT32_MAX : (uint32_t)line;
    return true;
}

size_t tern_config_bridge_line(const tern_config_bridge *cb, const char *field)
{
    for (size_t i = 0; i < NBKEYS; i++)
        if (strcmp(bkeys[i].name, field) == 0)
            return cb->key_line[i];
    return 0;
}

/* The first line any key of cb was set on. */
static size_t first_line(const tern_config_bridge *cb)
{
    size_t l = 0;

    for (size_t i = 0; i < NBKEYS; i++)
        if (cb->key_line[i] != 0 && (l == 0 || cb->key_line[i] < l))
            l = cb->key_line[i];
    return l;
}

bool tern_config_bridges_check(const tern_config *cfg, char *msg, size_t cap, size_t *line)
{
    out o = {msg, cap, 0};

    for (uint32_t i = 0; i < cfg->nbridges; i++) {
        const tern_config_bridge *cb = &cfg->bridges[i];
        const char *missing = NULL;

        if (cb->address.family == TERN_ADDR_NONE)
            missing = "address";
        else if (cb->topics[0] == '\0')
            missing = "topics";
        if (missing != NULL) {
            *line = first_line(cb);
            put_key(&o, cb->name, missing);
            puts_(&o, ": missing (a bridge needs an address and topics)");
            return false;
        }
        if ((cb->tls_cert[0] != '\0') != (cb->tls_key[0] != '\0')) {
            const char *set_one = cb->tls_cert[0] ? "tls_cert" : "tls_key";
            *line = tern_config_bridge_line(cb, set_one);
            put_key(&o, cb->name, cb->tls_cert[0] ? "tls_key" : "tls_cert");
            puts_(&o, ": missing (a client certificate needs its key and the other way round)");
            return false;
        }
        if (cb->tls_cert[0] != '\0' && cb->tls_ca[0] == '\0') {
            *line = tern_config_bridge_line(cb, "tls_cert");
            put_key(&o, cb->name, "tls_ca");
            puts_(&o, ": missing (TLS to the remote checks its certificate against this CA)");
            return false;
        }
        if (cb->tls_name[0] != '\0' && cb->tls_ca[0] == '\0') {
            *line = tern_config_bridge_line(cb, "tls_name");
            put_key(&o, cb->name, "tls_ca");
            puts_(&o, ": missing (the remote's name is checked in its certificate, over TLS)");
            return false;
        }
        if (cb->protocol == MQTT_LEVEL_5 && tern_config_bridge_line(cb, "try_private") != 0) {
            *line = tern_config_bridge_line(cb, "try_private");
            put_key(&o, cb->name, "try_private");
            puts_(&o, ": only for protocol 3.1.1 (at 5 the subscriptions' No Local is the "
                      "loop prevention)");
            return false;
        }
        if (cb->reconnect_max_s < cb->reconnect_min_s) {
            *line = tern_config_bridge_line(cb, "reconnect_max");
            put_key(&o, cb->name, "reconnect_max");
            puts_(&o, ": below reconnect_min");
            return false;
        }
    }
    return true;
}

/* ---- for the platform ----------------------------------------------------- */

void tern_config_bridge_settings(const tern_config_bridge *cb, bridge_settings *s)
{
    out o = {NULL, 0, 0};
    size_t n;

    memset(s, 0, sizeof *s);
    if (cb->client_id[0] != '\0') {
        memcpy(s->client_id, cb->client_id, strlen(cb->client_id) + 1);
    } else {
        n = strlen(cb->name);
        memcpy(s->client_id, "tern-bridge-", 12);
        memcpy(s->client_id + 12, cb->name, n + 1);
    }
    s->keepalive_s = (uint16_t)cb->keepalive_s;
    s->try_private = cb->try_private;
    s->protocol = cb->protocol;
    s->backoff_min_ms = cb->reconnect_min_s * 1000u;
    s->backoff_max_ms = cb->reconnect_max_s * 1000u;
    (void)parse_topics(cb->topics, strlen(cb->topics), s->maps, &s->nmaps, &o);
}

const char *tern_config_bridge_identity(const tern_config_bridge *cb, char *buf, size_t n)
{
    out o = {buf, n, 0};

    if (cb->identity[0] != '\0')
        return cb->identity;
    puts_(&o, "bridge:");
    puts_(&o, cb->name);
    return buf;
}
