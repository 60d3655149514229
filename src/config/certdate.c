/*
 * certdate.c - notAfter of the first PEM certificate (see certdate.h):
 * RFC 7468 text framing, RFC 4648 base64, and the X.509 path
 * Certificate -> tbsCertificate -> [version] serial signature issuer
 * validity -> notAfter (RFC 5280 4.1), each DER element bounds-checked.
 */
#include "config/certdate.h"

#include <string.h>

#include "text/base64.h"

static const char begin[] = "-----BEGIN CERTIFICATE-----";
static const char end[] = "-----END CERTIFICATE-----";

static const uint8_t *find(const uint8_t *p, size_t n, const char *s)
{
    size_t k = strlen(s);
    for (size_t i = 0; n >= k && i <= n - k; i++)
        if (!memcmp(p + i, s, k))
            return p + i;
    return NULL;
}

/* Base64 between the markers into der (cap bytes); its length, or -1. */
static long decode(const uint8_t *pem, size_t len, uint8_t *der, size_t cap)
{
    const uint8_t *b = find(pem, len, begin);
    if (!b)
        return -1;
    b += sizeof begin - 1;
    const uint8_t *e = find(b, len - (size_t)(b - pem), end);
    if (!e)
        return -1;
    uint32_t acc = 0;
    unsigned bits = 0, pad = 0;
    long n = 0;
    for (const uint8_t *p = b; p < e; p++) {
        if (*p == '\r' || *p == '\n' || *p == ' ' || *p == '\t')
            continue;
        if (*p == '=') {
            pad++;
            continue;
        }
        int v = base64_value(*p);
        if (v < 0 || pad)
            return -1;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if ((size_t)n == cap)
                return -1;
            der[n++] = (uint8_t)(acc >> bits);
        }
    }
    return pad > 2 ? -1 : n;
}

struct der {
    const uint8_t *p;
    size_t n;
};

/* The next element of d: its tag and content; 0, or -1 when malformed. */
static int next(struct der *d, uint8_t *tag, struct der *content)
{
    if (d->n < 2)
        return -1;
    *tag = d->p[0];
    size_t len = d->p[1], hdr = 2;
    if (len & 0x80) {
        unsigned k = len & 0x7f;
        if (k == 0 || k > 3 || d->n < 2 + k)
            return -1;
        len = 0;
        for (unsigned i = 0; i < k; i++)
            len = len << 8 | d->p[2 + i];
        hdr += k;
    }
    if (len > d->n - hdr)
        return -1;
    content->p = d->p + hdr;
    content->n = len;
    d->p += hdr + len;
    d->n -= hdr + len;
    return 0;
}

static int digits(const uint8_t *p, unsigned n, int *out)
{
    int v = 0;
    for (unsigned i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return 0;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const int64_t yoe = y - era * 400;
    const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* UTCTime YYMMDDHHMMSSZ or GeneralizedTime YYYYMMDDHHMMSSZ. */
static int parse_time(uint8_t tag, struct der t, int64_t *out)
{
    unsigned yl = tag == 0x17 ? 2 : tag == 0x18 ? 4 : 0;
    if (!yl || t.n != yl + 11 || t.p[t.n - 1] != 'Z')
        return -1;
    int y, mo, d, h, mi, s;
    if (digits(t.p, yl, &y) || digits(t.p + yl, 2, &mo) || digits(t.p + yl + 2, 2, &d) ||
        digits(t.p + yl + 4, 2, &h) || digits(t.p + yl + 6, 2, &mi) || digits(t.p + yl + 8, 2, &s))
        return -1;
    if (yl == 2)
        y += y < 50 ? 2000 : 1900; /* RFC 5280 4.1.2.5.1 */
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60)
        return -1;
    *out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
    return 0;
}

int certdate_not_after(const uint8_t *pem, size_t len, uint8_t *der_buf, size_t cap, int64_t *out)
{
    long n = decode(pem, len, der_buf, cap);
    if (n <= 0)
        return -1;
    struct der all = {der_buf, (size_t)n}, cert, tbs, x;
    uint8_t tag;
    if (next(&all, &tag, &cert) || tag != 0x30 || next(&cert, &tag, &tbs) || tag != 0x30)
        return -1;
    /* [0] version (optional), serial, signature, issuer, validity */
    if (next(&tbs, &tag, &x))
        return -1;
    if (tag == 0xa0 && next(&tbs, &tag, &x))
        return -1;
    if (tag != 0x02)
        return -1;
    if (next(&tbs, &tag, &x) || tag != 0x30 || next(&tbs, &tag, &x) || tag != 0x30 ||
        next(&tbs, &tag, &x) || tag != 0x30)
        return -1;
    struct der validity = x, t;
    if (next(&validity, &tag, &t) || next(&validity, &tag, &t))
        return -1;
    return parse_time(tag, t, out);
}
