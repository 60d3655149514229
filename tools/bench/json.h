/*
 * json.h - a tiny writer for one JSON object per line (the tool's output).
 *
 * Everything goes into a fixed buffer so a result line is written with one
 * call and never interleaves with anything else; an overflow is remembered
 * and reported by json_finish instead of producing half an object.
 */
#ifndef TERN_BENCH_JSON_H
#define TERN_BENCH_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 8

typedef struct json {
    char buf[8192];
    size_t len;
    bool overflow;
    int depth;
    bool first[JSON_MAX_DEPTH];
} json;

void json_begin(json *j);
void json_obj(json *j, const char *key);   /* open a nested object */
void json_end(json *j);                    /* close the innermost object */
void json_str(json *j, const char *key, const char *v); /* NULL -> null */
void json_u64(json *j, const char *key, uint64_t v);
void json_f64(json *j, const char *key, double v);      /* non-finite -> null */
void json_bool(json *j, const char *key, bool v);
/* Close every open object, write the line to f; 0 or -1 (overflow, I/O). */
int json_finish(json *j, FILE *f);

#endif
