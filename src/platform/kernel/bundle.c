/*
 * bundle.c - parses the boot bundle (format in bundle.h). The module comes
 * from the image the operator built, but it is parsed like untrusted input
 * anyway: every length is checked against what is left, numbers cannot
 * overflow, names are bounded, printable and unique, and anything
 * unexpected (an unknown line, bytes after "end", a missing newline) refuses
 * the whole bundle rather than guessing.
 */
#include "bundle.h"

#include <stdio.h>
#include <string.h>

struct cursor {
    uint8_t *p;
    size_t left;
};

/* The next line without its newline (which becomes NUL); NULL if there is
 * none within max bytes, or if it holds a NUL of its own (which would cut
 * a name short unseen). */
static char *take_line(struct cursor *c, size_t max)
{
    size_t lim = c->left < max + 1 ? c->left : max + 1;
    uint8_t *nl = memchr(c->p, '\n', lim);
    if (!nl || memchr(c->p, '\0', (size_t)(nl - c->p)))
        return NULL;
    *nl = '\0';
    char *line = (char *)c->p;
    size_t used = (size_t)(nl - c->p) + 1;
    c->p += used;
    c->left -= used;
    return line;
}

/* Decimal without sign, leading zeros or overflow; end points after it. */
static int parse_size(const char *s, size_t *out, const char **end)
{
    size_t v = 0;
    const char *p = s;
    if (*p < '0' || *p > '9' || (p[0] == '0' && p[1] >= '0' && p[1] <= '9'))
        return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        size_t d = (size_t)(*p - '0');
        if (v > (SIZE_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    *end = p;
    return 0;
}

static int name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > BUNDLE_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            return 0;
    return 1;
}

int bundle_is(const uint8_t *buf, size_t len)
{
    size_t m = sizeof BUNDLE_MAGIC - 1;
    return len >= m && memcmp(buf, BUNDLE_MAGIC, m) == 0;
}

struct bundle_file *bundle_find(struct bundle *b, const char *name)
{
    for (unsigned i = 0; i < b->count; i++)
        if (strcmp(b->files[i].name, name) == 0)
            return &b->files[i];
    return NULL;
}

#define FAIL(...)                                                                  \
    do {                                                                           \
        snprintf(err, err_size, __VA_ARGS__);                                      \
        return -1;                                                                 \
    } while (0)

int bundle_parse(uint8_t *buf, size_t len, struct bundle *out, char *err, size_t err_size)
{
    struct cursor c = {buf, len};
    memset(out, 0, sizeof *out);
    if (!bundle_is(buf, len))
        FAIL("not a tern bundle (it must start with \"%s\")", BUNDLE_MAGIC);
    char *line = take_line(&c, 32);
    const char *end;
    size_t version;
    if (!line || parse_size(line + sizeof BUNDLE_MAGIC - 1, &version, &end) != 0 || *end)
        FAIL("bundle: bad first line (expected \"%s%u\")", BUNDLE_MAGIC, BUNDLE_VERSION);
    if (version != BUNDLE_VERSION)
        FAIL("bundle format version %zu: this kernel reads version %u; a newer release of "
             "tern is needed",
             version, BUNDLE_VERSION);
    for (;;) {
        unsigned n = out->count;
        line = take_line(&c, 5 + 21 + 1 + BUNDLE_NAME_MAX);
        if (!line)
            FAIL("bundle: truncated, overlong or binary line after file %u (no \"end\")", n);
        if (strcmp(line, "end") == 0)
            break;
        size_t size;
        if (strncmp(line, "file ", 5) != 0 || parse_size(line + 5, &size, &end) != 0 ||
            *end != ' ')
            FAIL("bundle: entry %u: expected \"file SIZE NAME\" or \"end\"", n + 1);
        const char *name = end + 1;
        if (!name_ok(name))
            FAIL("bundle: entry %u: the name is empty, too long or not printable", n + 1);
        if (n == BUNDLE_MAX_FILES)
            FAIL("bundle: more than %d files", BUNDLE_MAX_FILES);
        if (bundle_find(out, name))
            FAIL("bundle: %s: appears twice", name);
        if (size >= c.left || c.p[size] != '\n')
            FAIL("bundle: %s: %zu bytes announced, the bundle is cut short", name, size);
        out->files[n] = (struct bundle_file){name, c.p, size};
        out->count = n + 1;
        c.p += size + 1;
        c.left -= size + 1;
    }
    if (c.left != 0)
        FAIL("bundle: %zu bytes after \"end\"", c.left);
    if (out->count == 0)
        FAIL("bundle: no files (the first must be the configuration)");
    return 0;
}
