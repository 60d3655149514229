/*
 * json.c - the one-line JSON writer of json.h.
 */
#include "json.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

static void put(json *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(json *j, const char *fmt, ...)
{
    if (j->overflow)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(j->buf + j->len, sizeof j->buf - j->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof j->buf - j->len) {
        j->overflow = true;
        return;
    }
    j->len += (size_t)n;
}

/* Keys and strings are the tool's own text or file names: escape the JSON
 * specials and control characters, pass other bytes through. */
static void put_string(json *j, const char *s)
{
    put(j, "\"");
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            put(j, "\\%c", ch);
        else if (ch < 0x20)
            put(j, "\\u%04x", ch);
        else
            put(j, "%c", ch);
    }
    put(j, "\"");
}

static void key(json *j, const char *k)
{
    if (!j->first[j->depth])
        put(j, ",");
    j->first[j->depth] = false;
    put_string(j, k);
    put(j, ":");
}

void json_begin(json *j)
{
    j->len = 0;
    j->overflow = false;
    j->depth = 0;
    j->first[0] = true;
    put(j, "{");
}

void json_obj(json *j, const char *k)
{
    key(j, k);
    put(j, "{");
    if (j->depth + 1 >= JSON_MAX_DEPTH) {
        j->overflow = true;
        return;
    }
    j->first[++j->depth] = true;
}

void json_end(json *j)
{
    put(j, "}");
    if (j->depth > 0)
        j->depth--;
}

void json_str(json *j, const char *k, const char *v)
{
    key(j, k);
    if (v)
        put_string(j, v);
    else
        put(j, "null");
}

void json_u64(json *j, const char *k, uint64_t v)
{
    key(j, k);
    put(j, "%llu", (unsigned long long)v);
}

void json_f64(json *j, const char *k, double v)
{
    key(j, k);
    if (isfinite(v))
        put(j, "%.6g", v);
    else
        put(j, "null");
}

void json_bool(json *j, const char *k, bool v)
{
    key(j, k);
    put(j, "%s", v ? "true" : "false");
}

int json_finish(json *j, FILE *f)
{
    while (j->depth > 0)
        json_end(j);
    put(j, "}\n");
    if (j->overflow) {
        fprintf(stderr, "tern-bench: result line too long\n");
        return -1;
    }
    if (fwrite(j->buf, 1, j->len, f) != j->len || fflush(f) != 0)
        return -1;
    return 0;
}
