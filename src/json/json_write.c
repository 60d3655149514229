/*
 * json_write.c - the JSON writer of json.h: appends to a caller's buffer,
 * remembers the first failure (no room, too deep, unbalanced) so a caller
 * checks once at jw_finish instead of after every value.
 */
#include "json.h"

#include <string.h>

void jw_init(jw *w, char *buf, size_t cap)
{
    memset(w, 0, sizeof *w);
    w->buf = buf;
    w->cap = cap;
    w->first[0] = true;
    if (cap == 0)
        w->failed = true;
}

static void put(jw *w, const char *s, size_t n)
{
    if (w->failed)
        return;
    /* One byte stays free for jw_finish's NUL. */
    if (n >= w->cap - w->len) {
        w->failed = true;
        return;
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}

static void putc1(jw *w, char c)
{
    put(w, &c, 1);
}

static void put_string(jw *w, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    putc1(w, '"');
    size_t run = 0; /* start of the bytes copied as they are, in one go */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        if (c == '"')
            esc = "\\\"";
        else if (c == '\\')
            esc = "\\\\";
        else if (c == '\n')
            esc = "\\n";
        else if (c == '\r')
            esc = "\\r";
        else if (c == '\t')
            esc = "\\t";
        else if (c >= 0x20)
            continue;
        put(w, s + run, i - run);
        run = i + 1;
        if (esc) {
            put(w, esc, strlen(esc));
        } else {
            char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            put(w, u, sizeof u);
        }
    }
    put(w, s + run, n - run);
    putc1(w, '"');
}

/* The separator and key before a value at the current depth. A second
 * top-level value, a key at the top or in an array, or none in an object
 * is misuse. */
static void begin_value(jw *w, const char *key)
{
    if (w->failed)
        return;
    bool in_object = w->depth > 0 && w->closer[w->depth] == '}';
    if ((w->depth == 0 && !w->first[0]) || (key != NULL) != in_object) {
        w->failed = true;
        return;
    }
    if (!w->first[w->depth])
        putc1(w, ',');
    w->first[w->depth] = false;
    if (key) {
        put_string(w, key, strlen(key));
        putc1(w, ':');
    }
}

static void open_level(jw *w, const char *key, char open, char close)
{
    begin_value(w, key);
    if (w->depth >= JSON_MAX_DEPTH)
        w->failed = true;
    putc1(w, open);
    if (w->failed)
        return;
    w->depth++;
    w->first[w->depth] = true;
    w->closer[w->depth] = close;
}

void jw_obj(jw *w, const char *key)
{
    open_level(w, key, '{', '}');
}

void jw_arr(jw *w, const char *key)
{
    open_level(w, key, '[', ']');
}

void jw_end(jw *w)
{
    if (w->failed)
        return;
    if (w->depth == 0) {
        w->failed = true;
        return;
    }
    putc1(w, w->closer[w->depth]);
    if (!w->failed)
        w->depth--;
}

void jw_strn(jw *w, const char *key, const char *v, size_t n)
{
    begin_value(w, key);
    if (v)
        put_string(w, v, n);
    else
        put(w, "null", 4);
}

void jw_str(jw *w, const char *key, const char *v)
{
    jw_strn(w, key, v, v ? strlen(v) : 0);
}

/* Decimal digits of v into the end of buf; returns where they start. */
static char *digits(char *end, uint64_t v)
{
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return end;
}

void jw_u64(jw *w, const char *key, uint64_t v)
{
    char buf[24];
    char *s = digits(buf + sizeof buf, v);
    begin_value(w, key);
    put(w, s, (size_t)(buf + sizeof buf - s));
}

static uint64_t magnitude(int64_t v)
{
    return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

void jw_i64(jw *w, const char *key, int64_t v)
{
    char buf[24];
    char *s = digits(buf + sizeof buf, magnitude(v));
    if (v < 0)
        *--s = '-';
    begin_value(w, key);
    put(w, s, (size_t)(buf + sizeof buf - s));
}

void jw_fixed(jw *w, const char *key, int64_t v, unsigned decimals)
{
    if (decimals > 9) {
        w->failed = true;
        return;
    }
    uint64_t scale = 1;
    for (unsigned i = 0; i < decimals; i++)
        scale *= 10;
    uint64_t m = magnitude(v);
    char buf[40];
    char *end = buf + sizeof buf, *s = end;
    if (decimals) {
        uint64_t frac = m % scale;
        for (unsigned i = 0; i < decimals; i++) {
            *--s = (char)('0' + frac % 10);
            frac /= 10;
        }
        *--s = '.';
    }
    s = digits(s, m / scale);
    if (v < 0)
        *--s = '-';
    begin_value(w, key);
    put(w, s, (size_t)(end - s));
}

void jw_bool(jw *w, const char *key, bool v)
{
    begin_value(w, key);
    if (v)
        put(w, "true", 4);
    else
        put(w, "false", 5);
}

void jw_null(jw *w, const char *key)
{
    begin_value(w, key);
    put(w, "null", 4);
}

void jw_raw(jw *w, const char *key, const char *json, size_t n)
{
    begin_value(w, key);
    if (n == 0)
        w->failed = true;
    put(w, json, n);
}

size_t jw_finish(jw *w)
{
    if (w->failed || w->depth != 0 || w->first[0])
        return 0;
    w->buf[w->len] = '\0';
    return w->len;
}
