/*
 * acl.c - access control lists: the Mosquitto acl_file format, parsed into
 * rule lists, and the access checks the broker makes on SUBSCRIBE, PUBLISH
 * and delivery. The matching order is documented in acl.h.
 *
 * Rules are topic filters. A READ check may be asked about a subscription
 * filter rather than a topic, so the checks work on filter relations:
 * "a covers b" (every topic b matches, a matches too) grants or refuses a
 * whole subscription; "a intersects b" (some topic matches both) marks a
 * subscription whose deliveries need a per-message check.
 */
#include "broker/access.h"
#include "broker/acl.h"
#include "broker/console_core.h"
#include "mqtt/mqtt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUBST_MAX 1024u /* a pattern after %c/%u substitution */

typedef struct acl_rule {
    struct acl_rule *next;
    bool deny;
    uint8_t access;  /* BROKER_ACL_READ | BROKER_ACL_WRITE */
    bool subst;      /* a pattern with %c, %u or %% */
    bool uses_u;     /* contains %u: never applies to anonymous clients */
    uint16_t len;
    char topic[];
} acl_rule;

typedef struct acl_user {
    struct acl_user *next;
    acl_rule *rules;
    char name[];
} acl_user;

struct broker_acl {
    broker_allocator alloc;
    acl_rule *general;  /* "topic" lines before the first "user" line */
    acl_rule *patterns; /* "pattern" lines, anywhere */
    acl_user *users;
};

static void *acl_malloc(const broker_allocator *a, size_t n)
{
    return a->alloc ? a->alloc(a->ctx, n) : malloc(n);
}

static void acl_mfree(const broker_allocator *a, void *p)
{
    if (a->free)
        a->free(a->ctx, p);
    else
        free(p);
}

static void free_rules(const broker_allocator *a, acl_rule *r)
{
    while (r) {
        acl_rule *next = r->next;
        acl_mfree(a, r);
        r = next;
    }
}

void broker_acl_free(broker_acl *acl)
{
    if (!acl)
        return;
    broker_allocator a = acl->alloc;
    free_rules(&a, acl->general);
    free_rules(&a, acl->patterns);
    while (acl->users) {
        acl_user *u = acl->users;
        acl->users = u->next;
        free_rules(&a, u->rules);
        acl_mfree(&a, u);
    }
    acl_mfree(&a, acl);
}

/* ---- filter relations -------------------------------------------------- */

#define NO_LEVEL ((size_t)-1)

/* Next level of s at *pos; false when all levels are consumed. */
static bool next_level(const char *s, size_t len, size_t *pos, const char **lv, size_t *lvlen)
{
    if (*pos == NO_LEVEL)
        return false;
    size_t end = *pos;
    while (end < len && s[end] != '/')
        end++;
    *lv = s + *pos;
    *lvlen = end - *pos;
    *pos = end < len ? end + 1 : NO_LEVEL;
    return true;
}

static bool is_wild(const char *lv, size_t n, char w)
{
    return n == 1 && lv[0] == w;
}

static bool is_dollar_literal(const char *lv, size_t n)
{
    return n > 0 && lv[0] == '$';
}

/* Every topic matched by filter b is matched by filter a. */
static bool filter_covers(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t pa = 0, pb = 0;
    bool first = true;
    for (;;) {
        const char *la = NULL, *lb = NULL;
        size_t na = 0, nb = 0;
        bool ha = next_level(a, alen, &pa, &la, &na);
        bool hb = next_level(b, blen, &pb, &lb, &nb);
        if (!ha && !hb)
            return true;
        if (ha && is_wild(la, na, '#'))
            return !(first && hb && is_dollar_literal(lb, nb));
        if (!ha || !hb)
            return false;
        if (is_wild(la, na, '+')) {
            if (is_wild(lb, nb, '#') || (first && is_dollar_literal(lb, nb)))
                return false;
        } else if (is_wild(lb, nb, '+') || is_wild(lb, nb, '#') || na != nb ||
                   memcmp(la, lb, na) != 0) {
            return false;
        }
        first = false;
    }
}

/* Some topic is matched by both filters. */
static bool filter_intersects(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t pa = 0, pb = 0;
    bool first = true;
    for (;;) {
        const char *la = NULL, *lb = NULL;
        size_t na = 0, nb = 0;
        bool ha = next_level(a, alen, &pa, &la, &na);
        bool hb = next_level(b, blen, &pb, &lb, &nb);
        if (!ha && !hb)
            return true;
        if (ha && is_wild(la, na, '#'))
            return !(first && hb && is_dollar_literal(lb, nb));
        if (hb && is_wild(lb, nb, '#'))
            return !(first && ha && is_dollar_literal(la, na));
        if (!ha || !hb)
            return false;
        bool pa_ = is_wild(la, na, '+'), pb_ = is_wild(lb, nb, '+');
        if (pa_ && pb_) {
            /* any level */
        } else if (pa_ || pb_) {
            if (first && is_dollar_literal(pa_ ? lb : la, pa_ ? nb : na))
                return false;
        } else if (na != nb || memcmp(la, lb, na) != 0) {
            return false;
        }
        first = false;
    }
}

/* ---- checks ------------------------------------------------------------ */

typedef struct who {
    const char *identity;  /* NULL = anonymous */
    const char *client_id;
} who;

/* A substituted value must stay inside one level and add no wildcard. */
static bool subst_safe(const char *v)
{
    return v && !strpbrk(v, "/+#");
}

/* The rule's filter for this client, in buf. False when it cannot be formed
 * (anonymous with %u, unsafe value, too long). */
static bool rule_filter(const acl_rule *r, const who *w, char *buf, const char **out,
                        size_t *outlen)
{
    if (!r->subst) {
        *out = r->topic;
        *outlen = r->len;
        return true;
    }
    size_t n = 0;
    for (size_t i = 0; i < r->len; i++) {
        /* The parser let through %c, %u and %% only (add_rule). */
        if (r->topic[i] == '%' && r->topic[i + 1] == '%') {
            if (n == SUBST_MAX)
                return false;
            buf[n++] = '%';
            i++;
            continue;
        }
        if (r->topic[i] == '%') {
            const char *v = r->topic[i + 1] == 'c' ? w->client_id : w->identity;
            if (!subst_safe(v))
                return false; /* anonymous, no client id, or unsafe value */
            size_t vl = strlen(v);
            if (vl > SUBST_MAX - n)
                return false;
            memcpy(buf + n, v, vl);
            n += vl;
            i++;
            continue;
        }
        if (n == SUBST_MAX)
            return false;
        buf[n++] = r->topic[i];
    }
    *out = buf;
    *outlen = n;
    return true;
}

static const acl_user *find_user(const broker_acl *acl, const char *identity)
{
    if (!identity)
        return NULL;
    for (const acl_user *u = acl->users; u; u = u->next)
        if (strcmp(u->name, identity) == 0)
            return u;
    return NULL;
}

typedef enum verdict { V_NONE = 0, V_ALLOW, V_DENY, V_PARTLY_DENIED } verdict;

/* Fold one rule list into the verdict for filter f. For deny rules "covers"
 * refuses outright and "intersects" only marks the filter partly denied. */
static void apply_rules(const acl_rule *r, const who *w, const char *f, size_t flen,
                        broker_acl_access access, bool *allow, bool *deny, bool *partly)
{
    char buf[SUBST_MAX];
    for (; r; r = r->next) {
        const char *rf;
        size_t rlen;
        if (r->uses_u && !w->identity)
            continue;
        bool formed = rule_filter(r, w, buf, &rf, &rlen);
        if (r->deny) {
            if (!formed) {
                /* A deny rule we cannot evaluate for this client refuses:
                 * failing closed is the only safe reading. */
                *deny = true;
                continue;
            }
            if (filter_covers(rf, rlen, f, flen))
                *deny = true;
            else if (access == BROKER_ACL_READ && filter_intersects(rf, rlen, f, flen))
                *partly = true;
            continue;
        }
        if (formed && (r->access & access) && filter_covers(rf, rlen, f, flen))
            *allow = true;
    }
}

static verdict acl_verdict(const broker_acl *acl, const who *w, const char *f, size_t flen,
                           broker_acl_access access)
{
    bool allow = false, deny = false, partly = false;
    apply_rules(acl->general, w, f, flen, access, &allow, &deny, &partly);
    apply_rules(acl->patterns, w, f, flen, access, &allow, &deny, &partly);
    const acl_user *u = find_user(acl, w->identity);
    if (u)
        apply_rules(u->rules, w, f, flen, access, &allow, &deny, &partly);
    if (deny)
        return V_DENY;
    if (!allow)
        return V_NONE;
    return partly ? V_PARTLY_DENIED : V_ALLOW;
}

static bool is_sys(const char *t, size_t len)
{
    return len >= 4 && memcmp(t, "$SYS", 4) == 0 && (len == 4 || t[4] == '/');
}

bool broker_acl_check(const broker_acl *acl, const char *identity, const char *client_id,
                      bool is_operator, const char *topic, size_t topic_len,
                      broker_acl_access access)
{
    if (is_sys(topic, topic_len))
        return is_operator && (access == BROKER_ACL_READ ||
                               bk_console_is_request((const uint8_t *)topic, topic_len));
    if (!acl)
        return true;
    who w = {identity, client_id};
    verdict v = acl_verdict(acl, &w, topic, topic_len, access);
    return v == V_ALLOW || v == V_PARTLY_DENIED;
}

bool bk_acl_filter_partly_denied(const broker_acl *acl, const char *identity,
                                 const char *client_id, const char *filter, size_t len)
{
    if (!acl)
        return false;
    who w = {identity, client_id};
    return acl_verdict(acl, &w, filter, len, BROKER_ACL_READ) == V_PARTLY_DENIED;
}

/* ---- parser ------------------------------------------------------------ */

typedef struct parser {
    broker_acl *acl;
    const char *file;
    unsigned line;
    char *err;
    size_t err_size;
    acl_user *user;  /* current "user" section, NULL = general */
} parser;

static bool perr(parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool perr(parser *p, const char *fmt, ...)
{
    if (!p->err || !p->err_size)
        return false;
    int n = snprintf(p->err, p->err_size, "%s:%u: ", p->file ? p->file : "acl", p->line);
    if (n >= 0 && (size_t)n < p->err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err + n, p->err_size - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return false;
}

static bool word_is(const char *s, size_t n, const char *w)
{
    return n == strlen(w) && memcmp(s, w, n) == 0;
}

/* Split off the first blank-separated word of [*s, end). */
static void take_word(const char **s, const char *end, const char **w, size_t *wn)
{
    while (*s < end && (**s == ' ' || **s == '\t'))
        (*s)++;
    *w = *s;
    while (*s < end && **s != ' ' && **s != '\t')
        (*s)++;
    *wn = (size_t)(*s - *w);
    while (*s < end && (**s == ' ' || **s == '\t'))
        (*s)++;
}

static bool add_rule(parser *p, bool pattern, const char *rest, const char *end)
{
    const char *w;
    size_t wn;
    const char *save = rest;
    uint8_t access = BROKER_ACL_READ | BROKER_ACL_WRITE;
    bool deny = false;
    take_word(&rest, end, &w, &wn);
    if (word_is(w, wn, "read"))
        access = BROKER_ACL_READ;
    else if (word_is(w, wn, "write"))
        access = BROKER_ACL_WRITE;
    else if (word_is(w, wn, "readwrite"))
        access = BROKER_ACL_READ | BROKER_ACL_WRITE;
    else if (word_is(w, wn, "deny"))
        deny = true;
    else
        rest = save; /* no access word: the rest is the topic, readwrite */
    size_t n = (size_t)(end - rest);
    if (n == 0)
        return perr(p, "'%s' needs a topic", pattern ? "pattern" : "topic");
    if (n > UINT16_MAX || !mqtt_topic_filter_valid((const uint8_t *)rest, n))
        return perr(p, "invalid topic filter '%.*s'", (int)(n > 80 ? 80 : n), rest);
    acl_rule *r = acl_malloc(&p->acl->alloc, sizeof *r + n + 1);
    if (!r)
        return perr(p, "out of memory");
    memset(r, 0, sizeof *r);
    r->deny = deny;
    r->access = access;
    r->len = (uint16_t)n;
    memcpy(r->topic, rest, n);
    r->topic[n] = '\0';
    if (pattern) {
        /* %c is the client id, %u the identity, %% a '%'; any other '%'
         * is a mistake (a typo for one of them, most likely) that would
         * otherwise stay in the filter and match nothing, silently. */
        for (size_t i = 0; i < n; i++) {
            if (r->topic[i] != '%')
                continue;
            char x = i + 1 < n ? r->topic[i + 1] : '\0';
            if (x != 'c' && x != 'u' && x != '%') {
                acl_mfree(&p->acl->alloc, r);
                if (x == '\0')
                    return perr(p, "pattern '%.*s': '%%' at the end (use %%c for the client "
                                   "id, %%u for the identity, %%%% for a '%%')",
                                (int)(n > 80 ? 80 : n), rest);
                return perr(p, "pattern '%.*s': unknown substitution '%%%c' (use %%c for the "
                               "client id, %%u for the identity, %%%% for a '%%')",
                            (int)(n > 80 ? 80 : n), rest, x);
            }
            r->subst = true;
            r->uses_u = r->uses_u || x == 'u';
            i++;
        }
    }
    /* Order within a list does not matter (see acl.h), so prepend. */
    acl_rule **list = pattern ? &p->acl->patterns : p->user ? &p->user->rules : &p->acl->general;
    r->next = *list;
    *list = r;
    return true;
}

static bool parse_line(parser *p, const char *s, const char *end)
{
    const char *w;
    size_t wn;
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
        end--;
    take_word(&s, end, &w, &wn);
    if (wn == 0 || w[0] == '#')
        return true; /* blank or comment ('#' only at the start: topics use it) */
    if (word_is(w, wn, "topic"))
        return add_rule(p, false, s, end);
    if (word_is(w, wn, "pattern"))
        return add_rule(p, true, s, end);
    if (word_is(w, wn, "user")) {
        size_t n = (size_t)(end - s);
        if (n == 0)
            return perr(p, "'user' needs a name");
        for (acl_user *u = p->acl->users; u; u = u->next) {
            if (strlen(u->name) == n && memcmp(u->name, s, n) == 0) {
                p->user = u; /* a repeated section continues the first */
                return true;
            }
        }
        acl_user *u = acl_malloc(&p->acl->alloc, sizeof *u + n + 1);
        if (!u)
            return perr(p, "out of memory");
        u->rules = NULL;
        memcpy(u->name, s, n);
        u->name[n] = '\0';
        u->next = p->acl->users;
        p->acl->users = u;
        p->user = u;
        return true;
    }
    return perr(p, "unknown keyword '%.*s' (expected topic, user or pattern)",
                (int)(wn > 40 ? 40 : wn), w);
}

broker_acl *broker_acl_parse(const broker_allocator *alloc, const char *file, const char *text,
                             size_t len, char *err, size_t err_size)
{
    broker_allocator a = {0};
    if (alloc)
        a = *alloc;
    if (err && err_size)
        err[0] = '\0';
    broker_acl *acl = acl_malloc(&a, sizeof *acl);
    if (!acl) {
        if (err && err_size)
            snprintf(err, err_size, "%s: out of memory", file ? file : "acl");
        return NULL;
    }
    memset(acl, 0, sizeof *acl);
    acl->alloc = a;
    parser p = {.acl = acl, .file = file, .line = 0, .err = err, .err_size = err_size};
    const char *s = text, *end = text + len;
    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *le = nl ? nl : end;
        p.line++;
        if (memchr(s, '\0', (size_t)(le - s))) {
            perr(&p, "NUL byte in line");
            goto fail;
        }
        if (!parse_line(&p, s, le))
            goto fail;
        s = nl ? nl + 1 : end;
    }
    return acl;
fail:
    broker_acl_free(acl);
    return NULL;
}
