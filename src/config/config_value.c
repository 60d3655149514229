/*
 * config_value.c - one key's value: parsed by the key's kind (numbers in
 * their range, words, paths, lists, addresses, the disk) and stored in the
 * tern_config, or a message saying what was expected.
 */
#include <string.h>

#include "config/addr.h"
#include "config/config_internal.h"

/* Decimal, no sign, no spaces; false on anything else or above UINT32_MAX. */
static bool parse_u32(span s, uint32_t *out)
{
    uint64_t v = 0;

    if (s.n == 0)
        return false;
    for (size_t i = 0; i < s.n; i++) {
        if (s.p[i] < '0' || s.p[i] > '9')
            return false;
        v = v * 10u + (uint64_t)(s.p[i] - '0');
        if (v > UINT32_MAX)
            return false;
    }
    *out = (uint32_t)v;
    return true;
}

void msg_expected(msgbuf *m, const key_def *def)
{
    switch (def->kind) {
    case KIND_VERSION:
        msg_uint(m, TERN_CONFIG_VERSION);
        break;
    case KIND_UINT:
        msg_str(m, "an integer ");
        msg_uint(m, def->min);
        msg_str(m, "..");
        msg_uint(m, def->max);
        break;
    case KIND_BOOL:
        msg_str(m, "true or false");
        break;
    case KIND_LOG_LEVEL:
        msg_str(m, "one of error, warn, info, debug");
        break;
    case KIND_LISTEN:
        msg_str(m, "IPV4:PORT or [IPV6]:PORT, e.g. 127.0.0.1:1883 or [::1]:1883");
        break;
    case KIND_PATH:
        msg_str(m, "a path of at most ");
        msg_uint(m, def->max - 1);
        msg_str(m, " bytes");
        break;
    case KIND_LIST:
        msg_str(m, "comma-separated names, none empty, at most ");
        msg_uint(m, def->max - 1);
        msg_str(m, " bytes in all");
        break;
    case KIND_IDENTITY:
        msg_str(m, "one of cn, san-dns, san-email, san-uri");
        break;
    case KIND_TLS_VERSION:
        msg_str(m, "1.3 or 1.2");
        break;
    case KIND_STORE_SYNC:
        msg_str(m, "full or normal");
        break;
    case KIND_IPV4_PREFIX:
        msg_str(m, "an IPv4 address and prefix length, e.g. 192.0.2.10/24");
        break;
    case KIND_IPV4_HOST:
        msg_str(m, "an IPv4 address, e.g. 192.0.2.1");
        break;
    case KIND_DISK:
        msg_str(m, "auto, none, virtio-blk, virtio-scsi or a PCI address BB:DD.F, e.g. 00:04.0");
        break;
    }
}

/* Every comma-separated item has something besides blanks. */
static bool list_items_ok(span value)
{
    size_t item_chars = 0;

    for (size_t i = 0; i <= value.n; i++) {
        if (i == value.n || value.p[i] == ',') {
            if (item_chars == 0)
                return false;
            item_chars = 0;
        } else if (!is_blank(value.p[i])) {
            item_chars++;
        }
    }
    return true;
}

/* Copy text that fits (with its NUL) into a field of def->max bytes. */
static bool set_text(const key_def *def, span value, char *field)
{
    if (value.n >= def->max)
        return false;
    if (def->kind == KIND_LIST && !list_items_ok(value))
        return false;
    memcpy(field, value.p, value.n);
    field[value.n] = '\0';
    return true;
}

/* One of `names` (NULL-terminated), storing the matching value. */
static bool set_word(span value, const char *const *names, const int *values, int *field)
{
    for (size_t i = 0; names[i] != NULL; i++) {
        if (span_is(value, names[i])) {
            *field = values[i];
            return true;
        }
    }
    return false;
}

/* Hex digits, exactly s.n of them; false on anything else. */
static bool parse_hex(span s, unsigned *out)
{
    unsigned v = 0;

    if (s.n == 0)
        return false;
    for (size_t i = 0; i < s.n; i++) {
        char c = s.p[i];
        unsigned d;

        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            return false;
        v = v * 16u + d;
    }
    *out = v;
    return true;
}

/* store.disk: a word, or a PCI address "BB:DD.F" as the kernel's console
 * prints them (two hex digits of bus and device, one digit of function). */
static bool parse_disk(span value, tern_config_disk *out)
{
    static const char *const names[] = {"auto", "none", "virtio-blk", "virtio-scsi", NULL};
    static const int kinds[] = {TERN_DISK_AUTO, TERN_DISK_NONE, TERN_DISK_VIRTIO_BLK,
                                TERN_DISK_VIRTIO_SCSI};
    unsigned bus, dev, fn;
    int kind = 0;

    if (set_word(value, names, kinds, &kind)) {
        *out = (tern_config_disk){(tern_config_disk_kind)kind, 0, 0, 0};
        return true;
    }
    if (value.n != 7 || value.p[2] != ':' || value.p[5] != '.' ||
        !parse_hex((span){value.p, 2}, &bus) || !parse_hex((span){value.p + 3, 2}, &dev) ||
        !parse_hex((span){value.p + 6, 1}, &fn) || dev > 0x1f || fn > 7)
        return false;
    *out = (tern_config_disk){TERN_DISK_PCI, (uint8_t)bus, (uint8_t)dev, (uint8_t)fn};
    return true;
}

/* Store a value that parsed, or say why it did not. */
bool set_value(tern_config *cfg, const key_def *def, span value, msgbuf *m)
{
    void *field = (char *)cfg + def->offset;
    uint32_t u = 0;
    bool ok = false;

    switch (def->kind) {
    case KIND_VERSION:
        ok = parse_u32(value, &u) && u == TERN_CONFIG_VERSION;
        if (!ok && parse_u32(value, &u) && u > TERN_CONFIG_VERSION) {
            msg_str(m, "config_version ");
            msg_uint(m, u);
            msg_str(m, " is newer than this release reads (");
            msg_uint(m, TERN_CONFIG_VERSION);
            msg_str(m, "): a newer release of tern is needed");
            return false;
        }
        if (ok)
            *(uint32_t *)field = u;
        break;
    case KIND_UINT:
        ok = parse_u32(value, &u) && u >= def->min && u <= def->max;
        if (ok)
            *(uint32_t *)field = u;
        break;
    case KIND_BOOL:
        ok = span_is(value, "true") || span_is(value, "false");
        if (ok)
            *(bool *)field = span_is(value, "true");
        break;
    case KIND_LOG_LEVEL: {
        static const char *const names[] = {"error", "warn", "info", "debug"};
        static const broker_log_level levels[] = {BROKER_LOG_ERROR, BROKER_LOG_WARN,
                                                  BROKER_LOG_INFO, BROKER_LOG_DEBUG};

        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            if (span_is(value, names[i])) {
                *(broker_log_level *)field = levels[i];
                ok = true;
            }
        }
        break;
    }
    case KIND_LISTEN:
        ok = tern_addr_parse(value.p, value.n, (tern_listen_addr *)field);
        break;
    case KIND_PATH:
    case KIND_LIST:
        ok = set_text(def, value, (char *)field);
        break;
    case KIND_IDENTITY: {
        static const char *const names[] = {"cn", "san-dns", "san-email", "san-uri", NULL};
        static const int values[] = {TERN_IDENTITY_CN, TERN_IDENTITY_SAN_DNS,
                                     TERN_IDENTITY_SAN_EMAIL, TERN_IDENTITY_SAN_URI};
        int v = 0;

        ok = set_word(value, names, values, &v);
        if (ok)
            *(tern_config_identity *)field = (tern_config_identity)v;
        break;
    }
    case KIND_TLS_VERSION: {
        static const char *const names[] = {"1.3", "1.2", NULL};
        static const int values[] = {TERN_CONFIG_TLS_1_3, TERN_CONFIG_TLS_1_2};
        int v = 0;

        ok = set_word(value, names, values, &v);
        if (ok)
            *(tern_config_tls_version *)field = (tern_config_tls_version)v;
        break;
    }
    case KIND_IPV4_PREFIX:
    case KIND_IPV4_HOST: {
        tern_config_ipv4 a;
        const char *problem;

        ok = tern_ipv4_parse(value.p, value.n, def->kind == KIND_IPV4_PREFIX, &a);
        /* Well formed but not usable: say why rather than what is expected. */
        problem = ok ? tern_ipv4_host_problem(a.addr, a.prefix) : NULL;
        if (problem != NULL) {
            msg_str(m, def->name);
            msg_str(m, ": ");
            msg_quoted(m, value);
            msg_putc(m, ' ');
            msg_str(m, problem);
            return false;
        }
        if (ok)
            *(tern_config_ipv4 *)field = a;
        break;
    }
    case KIND_DISK:
        ok = parse_disk(value, (tern_config_disk *)field);
        break;
    case KIND_STORE_SYNC: {
        static const char *const names[] = {"full", "normal", NULL};
        static const int values[] = {TERN_STORE_SYNC_FULL, TERN_STORE_SYNC_NORMAL};
        int v = 0;

        ok = set_word(value, names, values, &v);
        if (ok)
            *(tern_config_store_sync *)field = (tern_config_store_sync)v;
        break;
    }
    }
    if (!ok) {
        msg_str(m, def->name);
        msg_str(m, ": expected ");
        msg_expected(m, def);
        msg_str(m, ", got ");
        msg_quoted(m, value);
    }
    return ok;
}
