/*
 * addr.c - parses listening addresses ("127.0.0.1:1883", "[::1]:1883") and
 * interface addresses ("10.0.2.15/24") into binary form, so the config is
 * fully checked before any socket exists and the unikernel needs no
 * inet_pton. Host names are not accepted: a broker
 * binds to an address, and resolving names at start-up would make the
 * result depend on the machine's resolver.
 */
#include "config/addr.h"

#include <string.h>

static bool is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

static int hex_value(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Decimal 0..65535 without sign; leading zeros are refused so "01883" is
 * not silently read as 1883. */
static bool parse_port(const char *s, size_t n, uint16_t *out)
{
    uint32_t v = 0;

    if (n == 0 || n > 5 || (n > 1 && s[0] == '0'))
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!is_digit(s[i]))
            return false;
        v = v * 10u + (uint32_t)(s[i] - '0');
    }
    if (v > 65535u)
        return false;
    *out = (uint16_t)v;
    return true;
}

/* Dotted quad, four parts 0..255; a part with a leading zero is refused
 * because some tools read it as octal. */
static bool parse_ipv4(const char *s, size_t n, uint8_t out[4])
{
    size_t part = 0, i = 0;

    while (part < 4) {
        size_t start = i;
        uint32_t v = 0;

        while (i < n && is_digit(s[i]) && i - start < 3) {
            v = v * 10u + (uint32_t)(s[i] - '0');
            i++;
        }
        if (i == start || v > 255u || (i - start > 1 && s[start] == '0'))
            return false;
        out[part++] = (uint8_t)v;
        if (part < 4) {
            if (i >= n || s[i] != '.')
                return false;
            i++;
        }
    }
    return i == n;
}

/* Where a group lands: before the "::" gap (head) or after it (tail). */
typedef struct v6_groups {
    uint16_t head[8], tail[8];
    size_t nhead, ntail;
    bool gap;
} v6_groups;

static bool push_group(v6_groups *g, uint16_t v)
{
    if (g->nhead + g->ntail >= 8)
        return false;
    if (g->gap)
        g->tail[g->ntail++] = v;
    else
        g->head[g->nhead++] = v;
    return true;
}

/* One segment between colons: 1-4 hex digits, or the dotted-quad tail. */
static bool parse_v6_segment(v6_groups *g, const char *s, size_t n, bool last)
{
    uint32_t v = 0;

    if (memchr(s, '.', n) != NULL) {
        uint8_t q[4];

        if (!last || !parse_ipv4(s, n, q))
            return false;
        return push_group(g, (uint16_t)(q[0] << 8 | q[1])) &&
               push_group(g, (uint16_t)(q[2] << 8 | q[3]));
    }
    if (n == 0 || n > 4)
        return false;
    for (size_t i = 0; i < n; i++) {
        int h = hex_value(s[i]);

        if (h < 0)
            return false;
        v = v << 4 | (uint32_t)h;
    }
    return push_group(g, (uint16_t)v);
}

/* RFC 4291 text form without a zone index. */
static bool parse_ipv6(const char *s, size_t n, uint8_t out[16])
{
    v6_groups g = {.nhead = 0};
    size_t i = 0;

    if (n >= 2 && s[0] == ':' && s[1] == ':') {
        g.gap = true;
        i = 2;
    }
    while (i < n) {
        const char *colon = memchr(s + i, ':', n - i);
        size_t end = colon ? (size_t)(colon - s) : n;

        if (!parse_v6_segment(&g, s + i, end - i, end == n))
            return false;
        if (end == n)
            break;
        if (end + 1 < n && s[end + 1] == ':') {
            if (g.gap)
                return false;
            g.gap = true;
            i = end + 2;
        } else {
            i = end + 1;
            if (i == n)
                return false; /* a single trailing colon */
        }
    }
    if (g.gap ? g.nhead + g.ntail > 7 : g.nhead != 8)
        return false;

    memset(out, 0, 16);
    for (size_t k = 0; k < g.nhead; k++) {
        out[2 * k] = (uint8_t)(g.head[k] >> 8);
        out[2 * k + 1] = (uint8_t)g.head[k];
    }
    for (size_t k = 0; k < g.ntail; k++) {
        size_t at = 8 - g.ntail + k;

        out[2 * at] = (uint8_t)(g.tail[k] >> 8);
        out[2 * at + 1] = (uint8_t)g.tail[k];
    }
    return true;
}

bool tern_addr_parse(const char *s, size_t n, tern_listen_addr *out)
{
    tern_listen_addr a;
    const char *colon;
    bool ok = false;

    memset(&a, 0, sizeof a);
    if (n > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', n);
        size_t host_len;

        if (close == NULL)
            goto done;
        host_len = (size_t)(close - s) - 1;
        colon = close + 1;
        if (colon >= s + n || *colon != ':' || !parse_ipv6(s + 1, host_len, a.addr))
            goto done;
        a.family = TERN_ADDR_IPV6;
    } else {
        colon = memchr(s, ':', n);
        if (colon == NULL || !parse_ipv4(s, (size_t)(colon - s), a.addr))
            goto done;
        a.family = TERN_ADDR_IPV4;
    }
    if (!parse_port(colon + 1, n - (size_t)(colon + 1 - s), &a.port))
        goto done;
    *out = a;
    ok = true;
done:
    return ok;
}

bool tern_ipv4_parse(const char *s, size_t n, bool with_prefix, tern_config_ipv4 *out)
{
    const char *slash = memchr(s, '/', n);
    tern_config_ipv4 a = {.set = true, .prefix = 32};
    size_t addr_len = slash ? (size_t)(slash - s) : n;
    uint32_t prefix = 0;

    if ((slash != NULL) != with_prefix || !parse_ipv4(s, addr_len, a.addr))
        return false;
    if (with_prefix) {
        const char *p = slash + 1;
        size_t pn = n - addr_len - 1;

        /* 1..32, decimal, no leading zero, no sign. */
        if (pn == 0 || pn > 2 || (pn > 1 && p[0] == '0'))
            return false;
        for (size_t i = 0; i < pn; i++) {
            if (!is_digit(p[i]))
                return false;
            prefix = prefix * 10u + (uint32_t)(p[i] - '0');
        }
        if (prefix < 1 || prefix > 32)
            return false;
        a.prefix = (uint8_t)prefix;
    }
    *out = a;
    return true;
}

static uint32_t be32(const uint8_t a[4])
{
    return (uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 | (uint32_t)a[2] << 8 | a[3];
}

static uint32_t prefix_mask(unsigned prefix)
{
    return prefix == 0 ? 0 : prefix >= 32 ? UINT32_MAX : ~(UINT32_MAX >> prefix);
}

const char *tern_ipv4_host_problem(const uint8_t addr[4], unsigned prefix)
{
    uint32_t a = be32(addr), host = ~prefix_mask(prefix);

    if (addr[0] == 0)
        return "is in 0.0.0.0/8 (\"this network\"), not a host address";
    if (addr[0] == 127)
        return "is a loopback address";
    if (addr[0] >= 224 && addr[0] <= 239)
        return "is a multicast address";
    if (addr[0] >= 240)
        return "is reserved (240.0.0.0/4, or the limited broadcast address)";
    /* /31 (RFC 3021) and /32 have no network or broadcast address. */
    if (prefix <= 30 && (a & host) == 0)
        return "is the network's own address, not a host address";
    if (prefix <= 30 && (a & host) == host)
        return "is the network's broadcast address";
    return NULL;
}

bool tern_ipv4_same_net(const uint8_t a[4], const uint8_t b[4], unsigned prefix)
{
    return ((be32(a) ^ be32(b)) & prefix_mask(prefix)) == 0;
}

/* RFC 1918 only. 100.64/10 (carrier-grade NAT) is shared with other
 * customers of the same carrier, so it is not "ours"; QEMU's user network
 * (10.0.2.0/24) is inside 10/8. */
static bool ipv4_private(const uint8_t a[4])
{
    return a[0] == 10 || (a[0] == 172 && (a[1] & 0xf0u) == 16) ||
           (a[0] == 192 && a[1] == 168);
}

const char *tern_sntp_server_parse(const char *s, size_t n, tern_sntp_server *out)
{
    size_t colon = n;
    uint8_t a[4];
    uint16_t port = 123;

    for (size_t i = 0; i < n; i++) {
        if (s[i] == ':') {
            colon = i;
            break;
        }
    }
    if (!parse_ipv4(s, colon, a) ||
        (colon < n && (!parse_port(s + colon + 1, n - colon - 1, &port) || port == 0)))
        return "is not an IPv4 address with an optional :PORT, e.g. 10.0.0.1 or 10.0.0.1:123";
    if (!ipv4_private(a))
        return "is not a private address (10/8, 172.16/12 or 192.168/16): time is only "
               "taken from servers on the operator's own network";
    memcpy(out->addr, a, 4);
    out->port = port;
    return NULL;
}
