/*
 * passwd.c - the Mosquitto-format password file (passwd.h): the parser,
 * pure over the file's bytes, and the verifier. Each line is checked
 * whole; any fault refuses the whole file naming the line, so a typo never
 * leaves a user silently locked out (or in).
 */
#include "broker/passwd.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/base64.h"

typedef struct pw_entry {
    uint8_t *user; /* owned, user_len bytes */
    size_t user_len;
    uint32_t iterations;
    uint8_t salt_len;
    uint8_t salt[BROKER_PASSWD_MAX_SALT];
    uint8_t key[BROKER_PASSWD_KEY_LEN];
    size_t line; /* where it was set, for the duplicate message */
} pw_entry;

struct broker_passwd {
    broker_allocator alloc;
    pw_entry *e;
    size_t n, cap;
    uint32_t max_iterations; /* the dummy entry's cost (unknown users) */
};

static void *pw_alloc(const broker_allocator *a, size_t n)
{
    return a->alloc ? a->alloc(a->ctx, n) : malloc(n);
}

static void *pw_realloc(const broker_allocator *a, void *p, size_t n)
{
    return a->realloc ? a->realloc(a->ctx, p, n) : realloc(p, n);
}

static void pw_free(const broker_allocator *a, void *p)
{
    if (!p)
        return;
    if (a->free)
        a->free(a->ctx, p);
    else
        free(p);
}

void broker_passwd_free(broker_passwd *p)
{
    if (!p)
        return;
    broker_allocator a = p->alloc;
    for (size_t i = 0; i < p->n; i++)
        pw_free(&a, p->e[i].user);
    pw_free(&a, p->e);
    pw_free(&a, p);
}

size_t broker_passwd_count(const broker_passwd *p)
{
    return p ? p->n : 0;
}

/* RFC 4648 base64 (with padding, as mosquitto_passwd writes it) into out
 * (cap bytes). Returns the decoded length, or -1: a character outside the
 * alphabet, bad padding, or more than cap bytes. */
static long b64_decode(const char *s, size_t len, uint8_t *out, size_t cap)
{
    if (len == 0 || len % 4 != 0)
        return -1;
    size_t pad = 0;
    if (s[len - 1] == '=')
        pad = s[len - 2] == '=' ? 2 : 1;
    size_t n = len / 4 * 3 - pad;
    if (n > cap)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < len; i += 4) {
        uint32_t v = 0;
        for (size_t k = 0; k < 4; k++) {
            char c = s[i + k];
            int d;
            if (c == '=' && i + 4 == len && k >= 4 - pad)
                d = 0;
            else if ((d = base64_value(c)) < 0)
                return -1;
            v = v << 6 | (uint32_t)d;
        }
        uint8_t b3[3] = {(uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
        for (size_t k = 0; k < 3 && o < n; k++)
            out[o++] = b3[k];
    }
    return (long)n;
}

typedef struct parser {
    const char *file;
    size_t line;
    char *err;
    size_t err_size;
} parser;

__attribute__((format(printf, 2, 3))) static bool perr(const parser *p, const char *fmt, ...)
{
    if (p->err && p->err_size) {
        char msg[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        snprintf(p->err, p->err_size, "%s:%zu: %s", p->file ? p->file : "password file", p->line,
                 msg);
    }
    return false;
}

/* The next '$'-separated field of [*s, end): its bounds, *s moved past it. */
static void field(const char **s, const char *end, const char **f, size_t *flen)
{
    const char *d = memchr(*s, '$', (size_t)(end - *s));
    *f = *s;
    *flen = (size_t)((d ? d : end) - *s);
    *s = d ? d + 1 : end;
}

static bool parse_hash(const parser *p, const char *s, const char *end, pw_entry *e)
{
    const char *f;
    size_t flen;
    if (end - s >= 3 && memcmp(s, "$6$", 3) == 0)
        return perr(p, "$6$ hash (one SHA-512, Mosquitto 1.x) refused: it is too cheap to "
                       "guess against; set this password again with mosquitto_passwd, which "
                       "writes PBKDF2 ($7$) hashes");
    if (end - s < 3 || memcmp(s, "$7$", 3) != 0)
        return perr(p, "not a $7$ (PBKDF2-SHA512) hash: a plain-text password? hash the "
                       "file with mosquitto_passwd -U");
    s += 3;
    field(&s, end, &f, &flen);
    uint64_t it = 0;
    if (flen == 0 || flen > 7)
        return perr(p, "bad iteration count (expected 1..100000)");
    for (size_t i = 0; i < flen; i++) {
        if (f[i] < '0' || f[i] > '9')
            return perr(p, "bad iteration count (expected 1..100000)");
        it = it * 10 + (uint64_t)(f[i] - '0');
    }
    if (it == 0 || it > BROKER_PASSWD_MAX_ITERATIONS)
        return perr(p, "iteration count out of range (expected 1..100000: every check runs "
                       "them on the event loop)");
    e->iterations = (uint32_t)it;
    if (s == end)
        return perr(p, "truncated hash: no salt");
    field(&s, end, &f, &flen);
    long sl = b64_decode(f, flen, e->salt, sizeof e->salt);
    if (sl <= 0)
        return perr(p, "bad salt (expected base64 of 1 to 64 bytes)");
    e->salt_len = (uint8_t)sl;
    if (s == end && f + flen == end)
        return perr(p, "truncated hash: no derived key after the salt");
    field(&s, end, &f, &flen);
    if (s != end || f + flen != end)
        return perr(p, "unexpected '$' after the derived key");
    uint8_t key[BROKER_PASSWD_KEY_LEN + 3];
    if (b64_decode(f, flen, key, sizeof key) != (long)BROKER_PASSWD_KEY_LEN)
        return perr(p, "bad derived key (expected base64 of 64 bytes)");
    memcpy(e->key, key, sizeof e->key);
    return true;
}

static bool add_entry(broker_passwd *pw, const parser *p, const char *user, size_t ulen,
                      pw_entry *e)
{
    for (size_t i = 0; i < pw->n; i++) {
        if (pw->e[i].user_len == ulen && memcmp(pw->e[i].user, user, ulen) == 0) {
            return perr(p, "user already defined on line %zu", pw->e[i].line);
        }
    }
    if (pw->n == pw->cap) {
        size_t cap = pw->cap ? pw->cap * 2 : 16;
        pw_entry *ne = pw_realloc(&pw->alloc, pw->e, cap * sizeof *ne);
        if (!ne)
            return perr(p, "out of memory");
        pw->e = ne;
        pw->cap = cap;
    }
    e->user = pw_alloc(&pw->alloc, ulen);
    if (!e->user)
        return perr(p, "out of memory");
    memcpy(e->user, user, ulen);
    e->user_len = ulen;
    e->line = p->line;
    pw->e[pw->n++] = *e;
    if (e->iterations > pw->max_iterations)
        pw->max_iterations = e->iterations;
    return true;
}

static bool parse_line(broker_passwd *pw, const parser *p, const char *s, const char *end)
{
    /* A CRLF file, or blanks an editor left at the end (Mosquitto trims
     * them too). */
    while (end > s && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
        end--;
    if (s == end || s[0] == '#')
        return true;
    if (memchr(s, '\0', (size_t)(end - s)))
        return perr(p, "NUL byte in line");
    const char *colon = memchr(s, ':', (size_t)(end - s));
    if (!colon)
        return perr(p, "expected USER:HASH");
    size_t ulen = (size_t)(colon - s);
    if (ulen == 0)
        return perr(p, "empty user name");
    if (ulen > BROKER_PASSWD_MAX_USER)
        return perr(p, "user name longer than 256 bytes");
    pw_entry e;
    memset(&e, 0, sizeof e);
    if (!parse_hash(p, colon + 1, end, &e))
        return false;
    return add_entry(pw, p, s, ulen, &e);
}

broker_passwd *broker_passwd_parse(const broker_allocator *alloc, const char *file,
                                   const char *text, size_t len, char *err, size_t err_size)
{
    broker_allocator a = {0};
    if (alloc)
        a = *alloc;
    if (err && err_size)
        err[0] = '\0';
    broker_passwd *pw = pw_alloc(&a, sizeof *pw);
    parser p = {.file = file, .line = 0, .err = err, .err_size = err_size};
    if (!pw) {
        perr(&p, "out of memory");
        return NULL;
    }
    memset(pw, 0, sizeof *pw);
    pw->alloc = a;
    const char *s = text, *end = text + len;
    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *le = nl ? nl : end;
        p.line++;
        if (!parse_line(pw, &p, s, le)) {
            broker_passwd_free(pw);
            return NULL;
        }
        s = nl ? nl + 1 : end;
    }
    return pw;
}

bool broker_passwd_check(const broker_passwd *p, broker_pbkdf2_fn kdf, const uint8_t *user,
                         size_t user_len, const uint8_t *pw, size_t pw_len)
{
    /* The dummy an unknown user is checked against: a fixed salt, the
     * table's largest round count, a key nothing derives to (found stays
     * false whatever the comparison says). */
    static const uint8_t dummy_salt[12];
    const pw_entry *hit = NULL;
    if (!p || !kdf)
        return false;
    /* Every name is compared, none skipped at the first match. */
    for (size_t i = 0; i < p->n; i++) {
        const pw_entry *e = &p->e[i];
        bool same = e->user_len == user_len && broker_ct_equal(e->user, user, user_len);
        hit = same ? e : hit;
    }
    uint8_t key[BROKER_PASSWD_KEY_LEN];
    const uint8_t *salt = hit ? hit->salt : dummy_salt;
    size_t salt_len = hit ? hit->salt_len : sizeof dummy_salt;
    uint32_t iterations = hit ? hit->iterations : (p->max_iterations ? p->max_iterations : 101u);
    static const uint8_t dummy_key[BROKER_PASSWD_KEY_LEN];
    if (!kdf(pw, pw_len, salt, salt_len, iterations, key, sizeof key))
        return false;
    bool match = broker_ct_equal(key, hit ? hit->key : dummy_key, sizeof key);
    memset(key, 0, sizeof key);
    return match && hit != NULL;
}
