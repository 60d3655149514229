/*
 * config.c - the line parser, the table of keys and the translation into the
 * broker core's settings. See config.h for the contract and docs/CONFIG.md
 * for the format.
 *
 * The text is parsed in place (pointer + length views into the caller's
 * buffer), so lines of any length need no line buffer and nothing is
 * allocated. Error messages are assembled by hand instead of with snprintf so
 * the unikernel's libc needs no formatted output for this module
 * (config_text.c). One value is parsed and stored by config_value.c, the
 * rules across keys are config_check.c's.
 */
#include "config/config.h"

#include <stddef.h>
#include <string.h>

#include "broker/limits_default.h"
#include "conn/tunables.h"
#include "config/addr.h"
#include "config/config_internal.h"

/* Keys longer than this get no "did you mean". */
enum { SUGGEST_KEY_MAX = 48 };

#define LIMIT(key, field, lo, hi)                                                   \
    { "limits." key, KIND_UINT, lo, hi, offsetof(tern_config, limits.field) }
#define TLS_TEXT(key, kind, field)                                                  \
    { "tls." key, kind, 0, sizeof(((tern_config *)0)->tls.field), offsetof(tern_config, tls.field) }

/* Every key this release knows; config_version must stay first. */
const key_def tern_config_keys[] = {
    {"config_version", KIND_VERSION, 0, 0, offsetof(tern_config, version)},
    {"listener.plain", KIND_LISTEN, 0, 0, offsetof(tern_config, listener_plain)},
    {"log.level", KIND_LOG_LEVEL, 0, 0, offsetof(tern_config, log_level)},
    LIMIT("max_connections", max_connections, 1, UINT32_MAX),
    LIMIT("max_packet_size", max_packet_size, 16, MQTT_MAX_REMAINING + MQTT_MAX_FIXED_HEADER),
    LIMIT("max_inflight", max_inflight, 1, 65535),
    LIMIT("max_queued", max_queued, 1, UINT32_MAX),
    LIMIT("max_queued_bytes", max_queued_bytes, 1, UINT32_MAX),
    LIMIT("max_out_bytes", max_out_bytes, 1024, UINT32_MAX),
    LIMIT("max_inbound_qos2", max_inbound_qos2, 1, 65535),
    LIMIT("connect_timeout", connect_timeout_s, 1, 86400),
    LIMIT("max_retained", max_retained, 1, UINT32_MAX),
    LIMIT("max_retained_bytes", max_retained_bytes, 1024, UINT32_MAX),
    LIMIT("work_budget", work_budget, 1, UINT32_MAX),
    LIMIT("publisher_hold", publisher_hold_s, 0, 3600),
    LIMIT("max_handshakes", max_handshakes, 1, 1000000),
    LIMIT("max_handshakes_per_address", max_handshakes_per_address, 1, 1000000),
    LIMIT("max_input_bytes", max_input_bytes, 65536, UINT32_MAX),
    LIMIT("max_subscriptions", max_subscriptions, 1, UINT32_MAX),
    /* A 65535-byte topic (MQTT's longest) has at most 32768 levels. */
    LIMIT("max_topic_levels", max_topic_levels, 1, 32768),
    LIMIT("max_topic_length", max_topic_length, 1, 65535),
    LIMIT("max_sessions_per_identity", max_sessions_per_identity, 1, UINT32_MAX),
    LIMIT("max_queued_bytes_per_identity", max_queued_bytes_per_identity, 1, UINT32_MAX),
    /* MQTT 5.0: Server Keep Alive, Topic Alias Maximum (0 = none) and
     * Receive Maximum are 16-bit properties. */
    LIMIT("max_keepalive", max_keepalive, 1, 65535),
    LIMIT("max_topic_alias", max_topic_alias, 0, 65535),
    LIMIT("receive_maximum", receive_maximum, 1, 65535),
    {"mqtt.retain_available", KIND_BOOL, 0, 0, offsetof(tern_config, retain_available)},
    {"mqtt.shared_subscriptions", KIND_BOOL, 0, 0, offsetof(tern_config, shared_subscriptions)},
    {"session.expiry", KIND_UINT, 0, UINT32_MAX, offsetof(tern_config, session_expiry_s)},
    {"sys.interval", KIND_UINT, 0, 86400, offsetof(tern_config, sys_interval_s)},
    {"workers", KIND_UINT, 1, TERN_WORKERS_MAX, offsetof(tern_config, workers)},
    {"auth.allow_anonymous", KIND_BOOL, 0, 0, offsetof(tern_config, allow_anonymous)},
    {"auth.password_file", KIND_PATH, 0, TERN_CONFIG_PATH_MAX, offsetof(tern_config, password_file)},
    {"auth.allow_plaintext_passwords", KIND_BOOL, 0, 0,
     offsetof(tern_config, allow_plaintext_passwords)},
    {"sys.public", KIND_BOOL, 0, 0, offsetof(tern_config, sys_public)},
    {"listener.tls", KIND_LISTEN, 0, 0, offsetof(tern_config, listener_tls)},
    {"listener.ws", KIND_LISTEN, 0, 0, offsetof(tern_config, listener_ws)},
    {"listener.wss", KIND_LISTEN, 0, 0, offsetof(tern_config, listener_wss)},
    TLS_TEXT("cert", KIND_PATH, cert),
    TLS_TEXT("key", KIND_PATH, key),
    TLS_TEXT("client_ca", KIND_PATH, client_ca),
    TLS_TEXT("operator_ca", KIND_PATH, operator_ca),
    TLS_TEXT("operators", KIND_LIST, operators),
    {"tls.identity", KIND_IDENTITY, 0, 0, offsetof(tern_config, tls.identity)},
    {"tls.min_version", KIND_TLS_VERSION, 0, 0, offsetof(tern_config, tls.min_version)},
    {"tls.require_client_cert", KIND_BOOL, 0, 0, offsetof(tern_config, tls.require_client_cert)},
    {"tls.handshake_timeout", KIND_UINT, 1, 3600, offsetof(tern_config, tls.handshake_timeout_s)},
    {"acl.file", KIND_PATH, 0, TERN_CONFIG_PATH_MAX, offsetof(tern_config, acl_file)},
    {"store.path", KIND_PATH, 0, TERN_CONFIG_PATH_MAX, offsetof(tern_config, store_path)},
    {"store.sync", KIND_STORE_SYNC, 0, 0, offsetof(tern_config, store_sync)},
    {"store.backup_interval", KIND_UINT, 0, 604800, offsetof(tern_config, store_backup_interval_s)},
    {"store.cache_size", KIND_UINT, TERN_STORE_CACHE_KIB_MIN, TERN_STORE_CACHE_KIB_MAX,
     offsetof(tern_config, store_cache_kib)},
    {"store.disk", KIND_DISK, 0, 0, offsetof(tern_config, store_disk)},
    {"telemetry.interval", KIND_UINT, 0, 86400, offsetof(tern_config, telemetry_interval_s)},
    {"store.scrub_rate", KIND_UINT, 0, TERN_SCRUB_RATE_KIB_MAX, offsetof(tern_config, store_scrub_rate_kib)},
    {"store.scrub_interval", KIND_UINT, 1, TERN_SCRUB_INTERVAL_S_MAX,
     offsetof(tern_config, store_scrub_interval_s)},
    {"net.ipv4", KIND_IPV4_PREFIX, 0, 0, offsetof(tern_config, net.ipv4)},
    {"net.gateway", KIND_IPV4_HOST, 0, 0, offsetof(tern_config, net.gateway)},
    {"time.sntp_servers", KIND_LIST, 0, TERN_TIME_SERVERS_TEXT,
     offsetof(tern_config, time.sntp_servers)},
    {"time.max_step", KIND_UINT, 1, TERN_TIME_MAX_STEP_S_MAX,
     offsetof(tern_config, time.max_step_s)},
    {"time.resync_interval", KIND_UINT, TERN_TIME_RESYNC_S_MIN, TERN_TIME_RESYNC_S_MAX,
     offsetof(tern_config, time.resync_interval_s)},
};

#define KEY_COUNT (sizeof tern_config_keys / sizeof tern_config_keys[0])

const size_t tern_config_key_count = KEY_COUNT;

_Static_assert(KEY_COUNT <= 64 && KEY_COUNT <= TERN_CONFIG_KEYS_MAX,
               "duplicate detection uses a 64-bit mask; tern_config.key_line has room");

static const key_def *find_key(span key)
{
    for (size_t i = 0; i < KEY_COUNT; i++)
        if (span_is(key, tern_config_keys[i].name))
            return &tern_config_keys[i];
    return NULL;
}

/* Levenshtein distance, for "did you mean" on typos; both strings are at
 * most SUGGEST_KEY_MAX bytes. */
static size_t edit_distance(span a, const char *b)
{
    size_t bn = strlen(b), row[SUGGEST_KEY_MAX + 1];

    for (size_t j = 0; j <= bn; j++)
        row[j] = j;
    for (size_t i = 1; i <= a.n; i++) {
        size_t diag = row[0];

        row[0] = i;
        for (size_t j = 1; j <= bn; j++) {
            size_t up = row[j];
            size_t best = diag + (a.p[i - 1] != b[j - 1]);

            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[bn];
}

static const key_def *closest_key(span key)
{
    const key_def *best = NULL;
    size_t best_d = 3; /* suggest only within two edits */

    if (key.n > SUGGEST_KEY_MAX)
        return NULL;
    for (size_t i = 0; i < KEY_COUNT; i++) {
        size_t d;

        if (strlen(tern_config_keys[i].name) > SUGGEST_KEY_MAX)
            continue;
        d = edit_distance(key, tern_config_keys[i].name);
        if (d < best_d) {
            best_d = d;
            best = &tern_config_keys[i];
        }
    }
    return best;
}


/* The first byte that is neither printable nor a tab, or -1. Bytes >= 0x80
 * pass so comments may hold UTF-8. */
static int find_control(span line)
{
    for (size_t i = 0; i < line.n; i++) {
        unsigned char ch = (unsigned char)line.p[i];

        if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
            return ch;
    }
    return -1;
}

/* A '#' at the start or after a blank begins a comment; elsewhere it is part
 * of the value. */
static span strip_comment(span line)
{
    for (size_t i = 0; i < line.n; i++) {
        if (line.p[i] == '#' && (i == 0 || is_blank(line.p[i - 1]))) {
            line.n = i;
            break;
        }
    }
    return line;
}

static void msg_unknown_key(msgbuf *m, span key)
{
    const key_def *near = closest_key(key);

    msg_str(m, "unknown key ");
    msg_quoted(m, key);
    if (near != NULL) {
        msg_str(m, " (did you mean '");
        msg_str(m, near->name);
        msg_str(m, "'?)");
    } else {
        msg_str(m, " (a newer release of tern may be needed)");
    }
}

/* One non-blank, comment-stripped line: "key = value". Records the line of
 * each key in key_lines, for checks that span keys. */
static bool parse_setting(tern_config *cfg, span line, uint64_t *seen, msgbuf *m,
                          size_t line_no, size_t *key_lines)
{
    const char *eq = memchr(line.p, '=', line.n);
    const key_def *def;
    span key, value;
    uint64_t bit;

    if (eq == NULL) {
        msg_str(m, "expected 'key = value', got ");
        msg_quoted(m, line);
        return false;
    }
    key = trim((span){line.p, (size_t)(eq - line.p)});
    value = trim((span){eq + 1, line.n - (size_t)(eq - line.p) - 1});
    if (key.n == 0) {
        msg_str(m, "missing key before '='");
        return false;
    }
    if (key.n > 7 && memcmp(key.p, "bridge.", 7) == 0) {
        char why[TERN_CONFIG_ERR_SIZE];

        if (*seen == 0) {
            msg_str(m, "the first setting must be 'config_version = 1', got ");
            msg_quoted(m, key);
            return false;
        }
        if (!tern_config_bridge_key(cfg, key.p, key.n, value.p, value.n, line_no, why,
                                    sizeof why)) {
            msg_str(m, why);
            return false;
        }
        return true;
    }
    def = find_key(key);
    if (def == NULL) {
        msg_unknown_key(m, key);
        return false;
    }
    if (*seen == 0 && def->kind != KIND_VERSION) {
        msg_str(m, "the first setting must be 'config_version = 1', got ");
        msg_quoted(m, key);
        return false;
    }
    bit = (uint64_t)1 << (size_t)(def - tern_config_keys);
    if (*seen & bit) {
        msg_str(m, "duplicate key '");
        msg_str(m, def->name);
        msg_str(m, "'");
        return false;
    }
    if (value.n == 0) {
        msg_str(m, def->name);
        msg_str(m, ": missing value (expected ");
        msg_expected(m, def);
        msg_str(m, ")");
        return false;
    }
    if (!set_value(cfg, def, value, m))
        return false;
    *seen |= bit;
    key_lines[def - tern_config_keys] = line_no;
    return true;
}


void tern_config_defaults(tern_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->version = TERN_CONFIG_VERSION;
    cfg->listener_plain.family = TERN_ADDR_NONE;
    cfg->log_level = BROKER_LOG_INFO;
    /* The core's defaults (limits_default.h): a key left out means what a
     * limit left at 0 means to the core. */
    cfg->limits.max_connections = TERN_DEFAULT_MAX_CONNECTIONS;
    cfg->limits.max_packet_size = TERN_DEFAULT_MAX_PACKET_SIZE;
    cfg->limits.max_inflight = TERN_DEFAULT_MAX_INFLIGHT;
    cfg->limits.max_queued = TERN_DEFAULT_MAX_QUEUED;
    cfg->limits.max_queued_bytes = TERN_DEFAULT_MAX_QUEUED_BYTES;
    cfg->limits.max_out_bytes = TERN_DEFAULT_MAX_OUT_BYTES;
    cfg->limits.max_inbound_qos2 = TERN_DEFAULT_MAX_INBOUND_QOS2;
    cfg->limits.connect_timeout_s = TERN_DEFAULT_CONNECT_TIMEOUT_S;
    cfg->limits.max_retained = TERN_DEFAULT_MAX_RETAINED;
    cfg->limits.max_retained_bytes = TERN_DEFAULT_MAX_RETAINED_BYTES;
    cfg->limits.work_budget = TERN_DEFAULT_WORK_BUDGET;
    cfg->limits.publisher_hold_s = TERN_DEFAULT_PUBLISHER_HOLD_S;
    cfg->limits.max_handshakes = CONN_DEFAULT_MAX_HANDSHAKES;
    cfg->limits.max_handshakes_per_address = CONN_DEFAULT_MAX_HANDSHAKES_PER_ADDRESS;
    cfg->limits.max_input_bytes = CONN_DEFAULT_MAX_INPUT_BYTES;
    cfg->limits.max_subscriptions = TERN_DEFAULT_MAX_SUBSCRIPTIONS;
    cfg->limits.max_topic_levels = TERN_DEFAULT_MAX_TOPIC_LEVELS;
    cfg->limits.max_topic_length = TERN_DEFAULT_MAX_TOPIC_LENGTH;
    cfg->limits.max_sessions_per_identity = TERN_DEFAULT_MAX_SESSIONS_PER_IDENTITY;
    cfg->limits.max_queued_bytes_per_identity = TERN_DEFAULT_MAX_QUEUED_BYTES_PER_IDENTITY;
    cfg->limits.max_keepalive = TERN_DEFAULT_MAX_KEEPALIVE;
    cfg->limits.max_topic_alias = TERN_DEFAULT_MAX_TOPIC_ALIAS;
    cfg->limits.receive_maximum = TERN_DEFAULT_RECEIVE_MAXIMUM;
    cfg->retain_available = true;
    cfg->shared_subscriptions = true;
    cfg->session_expiry_s = 0; /* forever, as in the core */
    cfg->sys_interval_s = TERN_DEFAULT_SYS_INTERVAL_S;
    cfg->workers = TERN_WORKERS_DEFAULT;
    cfg->allow_anonymous = false;
    cfg->sys_public = false;
    cfg->store_path[0] = '\0'; /* no persistence */
    cfg->store_sync = TERN_STORE_SYNC_FULL;
    cfg->store_backup_interval_s = 3600;
    cfg->telemetry_interval_s = 60;
    cfg->store_cache_kib = TERN_STORE_CACHE_KIB_DEFAULT;
    cfg->store_disk.kind = TERN_DISK_AUTO;
    cfg->store_scrub_rate_kib = TERN_SCRUB_RATE_KIB_DEFAULT;
    cfg->store_scrub_interval_s = TERN_SCRUB_INTERVAL_S_DEFAULT;
    cfg->time.max_step_s = TERN_TIME_MAX_STEP_S_DEFAULT;
    cfg->time.resync_interval_s = TERN_TIME_RESYNC_S_DEFAULT;
    cfg->listener_tls.family = TERN_ADDR_NONE;
    cfg->listener_ws.family = TERN_ADDR_NONE;
    cfg->listener_wss.family = TERN_ADDR_NONE;
    cfg->tls.identity = TERN_IDENTITY_CN;
    cfg->tls.min_version = TERN_CONFIG_TLS_1_3;
    cfg->tls.require_client_cert = true;
    cfg->tls.handshake_timeout_s = 10;
    /* Paths and lists: "" (not set), from the memset. */
}

bool tern_config_parse(tern_config *cfg, const char *file, const char *text, size_t len,
                       char *err, size_t err_size)
{
    msgbuf m = {err, err_size, 0};
    tern_config parsed;
    uint64_t seen = 0;
    size_t pos = 0, line_no = 0, key_lines[KEY_COUNT] = {0};
    bool ok = false;

    tern_config_defaults(&parsed);
    /* Editors on some systems start UTF-8 files with a byte-order mark. */
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        pos = 3;
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        span line = {text + pos, end - pos};
        int bad;

        line_no++;
        pos = nl ? end + 1 : len;
        if (line.n > 0 && line.p[line.n - 1] == '\r')
            line.n--; /* CRLF files */
        bad = find_control(line);
        if (bad >= 0) {
            msg_begin(&m, file, line_no);
            msg_str(&m, "control character (byte ");
            msg_uint(&m, (uint64_t)bad);
            msg_str(&m, ") in line");
            goto done;
        }
        line = trim(strip_comment(line));
        if (line.n == 0)
            continue;
        msg_begin(&m, file, line_no);
        if (!parse_setting(&parsed, line, &seen, &m, line_no, key_lines))
            goto done;
    }
    if (seen == 0) {
        msg_begin(&m, file, 1);
        msg_str(&m, "missing 'config_version = 1' (it must be the first setting)");
        goto done;
    }
    if (!check_tls(&parsed, key_lines, file, &m) || !check_net(&parsed, key_lines, file, &m) ||
        !check_time(&parsed, key_lines, file, &m) ||
        !check_limits(&parsed, key_lines, file, &m) ||
        !check_input_budget(&parsed, key_lines, file, &m))
        goto done;
    {
        char why[TERN_CONFIG_ERR_SIZE];
        size_t bline = 1;

        if (!tern_config_bridges_check(&parsed, why, sizeof why, &bline)) {
            msg_begin(&m, file, bline);
            msg_str(&m, why);
            goto done;
        }
    }
    /* A bridge's local link is a socket of the core thread's own, which
     * the I/O threads' transport (ADR-061) does not serve. */
    if (parsed.nbridges > 0 && parsed.workers >= 2) {
        msg_begin(&m, file, line_of(key_lines, "workers"));
        msg_str(&m, "workers: bridges run with workers = 1 only (bridge.");
        msg_str(&m, parsed.bridges[0].name);
        msg_str(&m, " is configured)");
        goto done;
    }
    for (size_t i = 0; i < KEY_COUNT; i++)
        parsed.key_line[i] = key_lines[i] > UINT32_MAX ? UINT32_MAX : (uint32_t)key_lines[i];
    *cfg = parsed;
    ok = true;
done:
    if (ok && err_size > 0)
        err[0] = '\0';
    return ok;
}

size_t tern_config_line(const tern_config *cfg, const char *key)
{
    for (size_t i = 0; i < KEY_COUNT; i++)
        if (strcmp(tern_config_keys[i].name, key) == 0)
            return cfg->key_line[i];
    return 0;
}

void tern_config_to_broker(const tern_config *cfg, broker_config *out)
{
    broker_limits *l = &out->limits;

    memset(l, 0, sizeof *l);
    l->max_connections = cfg->limits.max_connections;
    l->max_packet_size = cfg->limits.max_packet_size;
    l->max_inflight = cfg->limits.max_inflight;
    l->max_queued = cfg->limits.max_queued;
    l->max_queued_bytes = cfg->limits.max_queued_bytes;
    l->max_out_bytes = cfg->limits.max_out_bytes;
    l->max_inbound_qos2 = cfg->limits.max_inbound_qos2;
    /* The file's range (at most a day) keeps this product inside 32 bits. */
    l->connect_timeout_ms = cfg->limits.connect_timeout_s * 1000u;
    l->max_retained = cfg->limits.max_retained;
    l->max_retained_bytes = cfg->limits.max_retained_bytes;
    l->work_budget = cfg->limits.work_budget;
    l->max_subscriptions = cfg->limits.max_subscriptions;
    l->max_topic_levels = cfg->limits.max_topic_levels;
    l->max_topic_length = cfg->limits.max_topic_length;
    l->max_sessions_per_identity = cfg->limits.max_sessions_per_identity;
    l->max_queued_bytes_per_identity = cfg->limits.max_queued_bytes_per_identity;
    l->max_keepalive = cfg->limits.max_keepalive;
    l->receive_maximum = cfg->limits.receive_maximum;
    /* The core reads 0 as "default"; its "none" is UINT32_MAX. */
    l->max_topic_alias = cfg->limits.max_topic_alias == 0 ? UINT32_MAX : cfg->limits.max_topic_alias;
    /* The core reads 0 as "default"; its "never hold" is UINT32_MAX. */
    l->publisher_hold_ms =
        cfg->limits.publisher_hold_s == 0 ? UINT32_MAX : cfg->limits.publisher_hold_s * 1000u;
    /* Both sides use 0 for "forever". */
    l->session_expiry_s = cfg->session_expiry_s;
    /* The core reads 0 as "default"; its "off" is UINT32_MAX. */
    l->sys_interval_s = cfg->sys_interval_s == 0 ? UINT32_MAX : cfg->sys_interval_s;
    out->log_level = cfg->log_level;
    out->allow_anonymous = cfg->allow_anonymous;
    out->allow_plaintext_passwords = cfg->allow_plaintext_passwords;
    out->sys_public = cfg->sys_public;
    out->retain_disabled = !cfg->retain_available;
    out->shared_subs_disabled = !cfg->shared_subscriptions;
}
