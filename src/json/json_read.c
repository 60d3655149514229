/*
 * json_read.c - the JSON reader of json.h. jr_parse validates the whole
 * text strictly once; every other call walks text it validated, so the
 * walkers need not re-check the grammar (they still never pass the view's
 * end). Recursion is bounded by JSON_MAX_DEPTH.
 */
#include "json.h"

#include <string.h>

typedef struct cur {
    const char *p, *end;
    const char *why; /* first error */
} cur;

static void skip_ws(cur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int fail(cur *c, const char *why)
{
    if (!c->why)
        c->why = why;
    return -1;
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Four hex digits at p (which has at least 4 bytes); -1 when not hex. */
static long hex4(const char *p)
{
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p[i]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

/* One UTF-8 sequence at c->p (RFC 3629: no overlongs, no surrogates, at
 * most U+10FFFF). */
static int check_utf8(cur *c)
{
    const unsigned char *s = (const unsigned char *)c->p;
    size_t left = (size_t)(c->end - c->p);
    unsigned char b = s[0];
    size_t n;
    uint32_t cp;
    if (b < 0x80)
        n = 1, cp = b;
    else if (b >= 0xC2 && b <= 0xDF)
        n = 2, cp = b & 0x1Fu;
    else if (b >= 0xE0 && b <= 0xEF)
        n = 3, cp = b & 0x0Fu;
    else if (b >= 0xF0 && b <= 0xF4)
        n = 4, cp = b & 0x07u;
    else
        return fail(c, "invalid UTF-8");
    if (left < n)
        return fail(c, "invalid UTF-8");
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return fail(c, "invalid UTF-8");
        cp = cp << 6 | (s[i] & 0x3Fu);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return fail(c, "invalid UTF-8");
    c->p += n;
    return 0;
}

static int parse_string(cur *c)
{
    c->p++; /* the opening quote */
    while (c->p < c->end) {
        unsigned char ch = (unsigned char)*c->p;
        if (ch == '"') {
            c->p++;
            return 0;
        }
        if (ch < 0x20)
            return fail(c, "control character in a string");
        if (ch != '\\') {
            if (check_utf8(c) < 0)
                return -1;
            continue;
        }
        if (c->end - c->p < 2)
            break;
        char e = c->p[1];
        if (e == 'u') {
            if (c->end - c->p < 6)
                break;
            long u = hex4(c->p + 2);
            if (u < 0)
                return fail(c, "bad \\u escape");
            c->p += 6;
            if (u >= 0xDC00 && u <= 0xDFFF)
                return fail(c, "lone low surrogate");
            if (u >= 0xD800 && u <= 0xDBFF) {
                if (c->end - c->p < 6 || c->p[0] != '\\' || c->p[1] != 'u')
                    return fail(c, "lone high surrogate");
                long lo = hex4(c->p + 2);
                if (lo < 0xDC00 || lo > 0xDFFF)
                    return fail(c, "lone high surrogate");
                c->p += 6;
            }
            continue;
        }
        if (!strchr("\"\\/bfnrt", e) || e == '\0')
            return fail(c, "bad escape");
        c->p += 2;
    }
    return fail(c, "unterminated string");
}

static int parse_number(cur *c)
{
    const char *p = c->p;
    if (p < c->end && *p == '-')
        p++;
    if (p >= c->end || *p < '0' || *p > '9')
        return fail(c, "bad number");
    if (*p == '0') {
        p++;
    } else {
        while (p < c->end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < c->end && *p == '.') {
        p++;
        if (p >= c->end || *p < '0' || *p > '9')
            return fail(c, "bad number");
        while (p < c->end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < c->end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < c->end && (*p == '+' || *p == '-'))
            p++;
        if (p >= c->end || *p < '0' || *p > '9')
            return fail(c, "bad number");
        while (p < c->end && *p >= '0' && *p <= '9')
            p++;
    }
    c->p = p;
    return 0;
}

static int parse_word(cur *c, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0)
        return fail(c, "unexpected text");
    c->p += n;
    return 0;
}

static int parse_value(cur *c, int depth, jr_type *type);

static int parse_container(cur *c, int depth, char close)
{
    if (depth >= JSON_MAX_DEPTH)
        return fail(c, "nested too deep");
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == close) {
        c->p++;
        return 0;
    }
    for (;;) {
        jr_type t;
        if (close == '}') {
            if (c->p >= c->end || *c->p != '"')
                return fail(c, "object key expected");
            if (parse_string(c) < 0)
                return -1;
            skip_ws(c);
            if (c->p >= c->end || *c->p != ':')
                return fail(c, "':' expected");
            c->p++;
            skip_ws(c);
        }
        if (parse_value(c, depth + 1, &t) < 0)
            return -1;
        skip_ws(c);
        if (c->p >= c->end)
            return fail(c, "unterminated object or array");
        if (*c->p == close) {
            c->p++;
            return 0;
        }
        if (*c->p != ',')
            return fail(c, "',' expected");
        c->p++;
        skip_ws(c);
    }
}

static int parse_value(cur *c, int depth, jr_type *type)
{
    if (c->p >= c->end)
        return fail(c, "value expected");
    switch (*c->p) {
    case '{':
        *type = JR_OBJECT;
        return parse_container(c, depth, '}');
    case '[':
        *type = JR_ARRAY;
        return parse_container(c, depth, ']');
    case '"':
        *type = JR_STRING;
        return parse_string(c);
    case 't':
        *type = JR_TRUE;
        return parse_word(c, "true");
    case 'f':
        *type = JR_FALSE;
        return parse_word(c, "false");
    case 'n':
        *type = JR_NULL;
        return parse_word(c, "null");
    default:
        *type = JR_NUMBER;
        return parse_number(c);
    }
}

static void set_err(char *err, size_t errlen, const char *why)
{
    if (!err || errlen == 0)
        return;
    size_t n = strlen(why);
    if (n >= errlen)
        n = errlen - 1;
    memcpy(err, why, n);
    err[n] = '\0';
}

int jr_parse(const char *text, size_t n, jr_val *out, char *err, size_t errlen)
{
    cur c = {text, text + n, NULL};
    jr_type t = JR_INVALID;
    memset(out, 0, sizeof *out);
    skip_ws(&c);
    const char *start = c.p;
    if (parse_value(&c, 0, &t) == 0) {
        const char *stop = c.p;
        skip_ws(&c);
        if (c.p == c.end) {
            out->p = start;
            out->n = (size_t)(stop - start);
            out->type = t;
            return 0;
        }
        fail(&c, "text after the value");
    }
    set_err(err, errlen, c.why ? c.why : "invalid");
    return -1;
}

int jr_next(const jr_val *v, size_t *it, jr_val *key, jr_val *out)
{
    if (v->type != JR_OBJECT && v->type != JR_ARRAY)
        return 0;
    cur c = {v->p + *it, v->p + v->n, NULL};
    if (*it == 0)
        c.p++; /* the opening bracket */
    skip_ws(&c);
    if (c.p < c.end && *c.p == ',') {
        c.p++;
        skip_ws(&c);
    }
    if (c.p >= c.end || *c.p == '}' || *c.p == ']')
        return 0;
    if (v->type == JR_OBJECT) {
        const char *k = c.p;
        (void)parse_string(&c);
        if (key) {
            key->p = k;
            key->n = (size_t)(c.p - k);
            key->type = JR_STRING;
        }
        skip_ws(&c);
        c.p++; /* ':' */
        skip_ws(&c);
    }
    const char *s = c.p;
    jr_type t = JR_INVALID;
    (void)parse_value(&c, 0, &t);
    out->p = s;
    out->n = (size_t)(c.p - s);
    out->type = t;
    *it = (size_t)(c.p - v->p);
    return 1;
}

int jr_get(const jr_val *obj, const char *key, jr_val *out)
{
    if (obj->type != JR_OBJECT)
        return -1;
    size_t it = 0;
    jr_val k, v;
    while (jr_next(obj, &it, &k, &v))
        if (jr_string_is(&k, key)) {
            *out = v;
            return 0;
        }
    return -1;
}

/* Decode the string at v into out (at most cap bytes, no NUL added);
 * its decoded length, or -1 on \u0000 or when it does not fit. */
static long unescape(const jr_val *v, char *out, size_t cap)
{
    if (v->type != JR_STRING || v->n < 2)
        return -1;
    const char *p = v->p + 1, *end = v->p + v->n - 1;
    size_t n = 0;
    while (p < end) {
        char tmp[4];
        size_t len = 0;
        if (*p != '\\') {
            tmp[0] = *p++;
            len = 1;
        } else if (p[1] != 'u') {
            char e = p[1];
            tmp[0] = e == 'b' ? '\b' : e == 'f' ? '\f' : e == 'n' ? '\n' : e == 'r' ? '\r'
                   : e == 't' ? '\t' : e;
            len = 1;
            p += 2;
        } else {
            uint32_t cp = (uint32_t)hex4(p + 2);
            p += 6;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                uint32_t lo = (uint32_t)hex4(p + 2);
                p += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (cp == 0)
                return -1;
            if (cp < 0x80) {
                tmp[0] = (char)cp, len = 1;
            } else if (cp < 0x800) {
                tmp[0] = (char)(0xC0 | cp >> 6), tmp[1] = (char)(0x80 | (cp & 0x3F)), len = 2;
            } else if (cp < 0x10000) {
                tmp[0] = (char)(0xE0 | cp >> 12), tmp[1] = (char)(0x80 | (cp >> 6 & 0x3F));
                tmp[2] = (char)(0x80 | (cp & 0x3F)), len = 3;
            } else {
                tmp[0] = (char)(0xF0 | cp >> 18), tmp[1] = (char)(0x80 | (cp >> 12 & 0x3F));
                tmp[2] = (char)(0x80 | (cp >> 6 & 0x3F)), tmp[3] = (char)(0x80 | (cp & 0x3F));
                len = 4;
            }
        }
        if (out) {
            if (len > cap - n)
                return -1;
            memcpy(out + n, tmp, len);
        }
        n += len;
    }
    return (long)n;
}

long jr_string(const jr_val *v, char *out, size_t cap)
{
    if (cap == 0)
        return -1;
    long n = unescape(v, out, cap - 1);
    if (n < 0)
        return -1;
    out[n] = '\0';
    return n;
}

bool jr_string_is(const jr_val *v, const char *s)
{
    size_t want = strlen(s);
    /* Fast path: no escapes, compare the raw text. */
    if (v->type != JR_STRING)
        return false;
    if (!memchr(v->p, '\\', v->n))
        return v->n - 2 == want && memcmp(v->p + 1, s, want) == 0;
    char buf[256];
    if (want >= sizeof buf)
        return false;
    long n = jr_string(v, buf, sizeof buf);
    return n >= 0 && (size_t)n == want && memcmp(buf, s, want) == 0;
}

int jr_fixed(const jr_val *v, unsigned decimals, int64_t *out)
{
    if (v->type != JR_NUMBER || decimals > 9)
        return -1;
    const char *p = v->p, *end = v->p + v->n;
    bool neg = false;
    if (*p == '-')
        neg = true, p++;
    uint64_t m = 0;
    const uint64_t limit = (uint64_t)INT64_MAX;
    for (; p < end && *p >= '0' && *p <= '9'; p++) {
        if (m > (limit - (uint64_t)(*p - '0')) / 10)
            return -1;
        m = m * 10 + (uint64_t)(*p - '0');
    }
    unsigned got = 0;
    if (p < end && *p == '.') {
        for (p++; p < end && *p >= '0' && *p <= '9'; p++)
            if (got < decimals) {
                if (m > (limit - (uint64_t)(*p - '0')) / 10)
                    return -1;
                m = m * 10 + (uint64_t)(*p - '0');
                got++;
            }
    }
    if (p != end)
        return -1; /* an exponent */
    for (; got < decimals; got++) {
        if (m > limit / 10)
            return -1;
        m *= 10;
    }
    *out = neg ? -(int64_t)m : (int64_t)m;
    return 0;
}

int jr_i64(const jr_val *v, int64_t *out)
{
    if (v->type != JR_NUMBER || memchr(v->p, '.', v->n) || memchr(v->p, 'e', v->n) ||
        memchr(v->p, 'E', v->n))
        return -1;
    return jr_fixed(v, 0, out);
}

int jr_u64(const jr_val *v, uint64_t *out)
{
    if (v->type != JR_NUMBER || v->p[0] == '-' || memchr(v->p, '.', v->n) ||
        memchr(v->p, 'e', v->n) || memchr(v->p, 'E', v->n))
        return -1;
    uint64_t m = 0;
    for (size_t i = 0; i < v->n; i++) {
        uint64_t d = (uint64_t)(v->p[i] - '0');
        if (m > (UINT64_MAX - d) / 10)
            return -1;
        m = m * 10 + d;
    }
    *out = m;
    return 0;
}

int jr_bool(const jr_val *v, bool *out)
{
    if (v->type == JR_TRUE)
        *out = true;
    else if (v->type == JR_FALSE)
        *out = false;
    else
        return -1;
    return 0;
}
