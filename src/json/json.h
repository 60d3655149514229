/*
 * json.h - a small JSON writer and reader for documents tern makes and
 * reads itself: the diagnostics report (docs/DIAGNOSTICS.md), the operator
 * console's requests and answers (docs/CONSOLE.md).
 *
 * Portable and I/O-free like the core, and built into the kernel, which has
 * no floating point: numbers are integers, or fixed-point decimals written
 * from an integer and a scale (jw_fixed). Neither half allocates.
 *
 * Writer: into a caller's buffer; running out of room, nesting deeper than
 * JSON_MAX_DEPTH or closing more than was opened is remembered and reported
 * by jw_finish, never a half document. Keys are given with each value and
 * must be NULL inside arrays and for the top-level value.
 *
 * Reader: strict RFC 8259 (no trailing commas, no comments, no leading
 * zeros, no control characters in strings, valid UTF-8, \u escapes with
 * their surrogate pairs), validated once with jr_parse; lookups then walk
 * the validated text. Input is untrusted (console requests come from the
 * network): every reader call is bounded by the text's length and
 * JSON_MAX_DEPTH, and a value is handed out as a view into that text.
 */
#ifndef TERN_JSON_H
#define TERN_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Nesting the writer and the reader accept (objects and arrays). */
#define JSON_MAX_DEPTH 16

/* ---- writer ---- */

typedef struct jw {
    char *buf;
    size_t cap;
    size_t len;
    bool failed;                    /* overflow or misuse: jw_finish says 0 */
    int depth;
    bool first[JSON_MAX_DEPTH + 1]; /* no member written yet at this depth */
    char closer[JSON_MAX_DEPTH + 1];/* '}' or ']' for each open level */
} jw;

/* Start a document in buf[0..cap). */
void jw_init(jw *w, char *buf, size_t cap);
/* Open an object / array as member `key` (NULL in arrays and at the top). */
void jw_obj(jw *w, const char *key);
void jw_arr(jw *w, const char *key);
/* Close the innermost object or array. */
void jw_end(jw *w);
/* Values. A NULL string writes null; strings are escaped as JSON needs
 * (control characters as \u00XX); bytes are copied as they are otherwise,
 * so callers pass UTF-8 (jw_strn with the raw bytes of a topic or client
 * id: those are UTF-8 by MQTT's rules). */
void jw_str(jw *w, const char *key, const char *v);
void jw_strn(jw *w, const char *key, const char *v, size_t n);
void jw_u64(jw *w, const char *key, uint64_t v);
void jw_i64(jw *w, const char *key, int64_t v);
/* v / 10^decimals as a decimal number: jw_fixed(w, "ms", 1234, 3) writes
 * 1.234, (-5, 2) writes -0.05. decimals at most 9. */
void jw_fixed(jw *w, const char *key, int64_t v, unsigned decimals);
void jw_bool(jw *w, const char *key, bool v);
void jw_null(jw *w, const char *key);
/* Insert text that is already JSON (a nested report) as member `key`;
 * the caller vouches for it. */
void jw_raw(jw *w, const char *key, const char *json, size_t n);
/* The document's length, NUL-terminated in buf; 0 when it failed or is not
 * closed (every jw_obj/jw_arr needs its jw_end). */
size_t jw_finish(jw *w);

/* ---- reader ---- */

typedef enum jr_type {
    JR_INVALID = 0,
    JR_NULL,
    JR_FALSE,
    JR_TRUE,
    JR_NUMBER,
    JR_STRING,
    JR_ARRAY,
    JR_OBJECT,
} jr_type;

/* A value: a view of its text (p[0..n), quotes included for strings). */
typedef struct jr_val {
    const char *p;
    size_t n;
    jr_type type;
} jr_val;

/* Validate text[0..n) as one JSON value (whitespace around it allowed) and
 * give it as *out. 0, or -1 with a short reason in err (may be NULL). */
int jr_parse(const char *text, size_t n, jr_val *out, char *err, size_t errlen);

/* Member `key` of an object (the first one when a key repeats); 0, or -1
 * when v is not an object or has no such member. */
int jr_get(const jr_val *obj, const char *key, jr_val *out);

/* Iterate over an array's elements or an object's members: *it starts at
 * 0; each call gives the next value (and its key, for objects, when key is
 * not NULL) and returns 1, then 0 at the end. */
int jr_next(const jr_val *container, size_t *it, jr_val *key, jr_val *out);

/* A string's value unescaped into out[0..cap) with a NUL; its length, or
 * -1 when v is not a string, holds a NUL (\u0000) or does not fit. */
long jr_string(const jr_val *v, char *out, size_t cap);
/* True when v is the string s exactly (after unescaping). */
bool jr_string_is(const jr_val *v, const char *s);
/* A non-negative integer without fraction or exponent; 0, or -1. */
int jr_u64(const jr_val *v, uint64_t *out);
/* An integer, possibly negative; 0, or -1. */
int jr_i64(const jr_val *v, int64_t *out);
/* A number as an integer scaled by 10^decimals (1.25 with 3 -> 1250),
 * digits beyond the scale truncated; exponents refused. 0, or -1. */
int jr_fixed(const jr_val *v, unsigned decimals, int64_t *out);
/* true/false; 0, or -1. */
int jr_bool(const jr_val *v, bool *out);

#endif
