/*
 * layout.c - the dashboard's layout (layout.h): a header line, then two
 * columns of panels, one per group of the report's sections. A panel shows
 * its sections' members as "name: value" lines, nested objects indented,
 * arrays of objects as bulleted entries; a null value shows the reason its
 * "_why" sibling gives (and that sibling is not shown again). The panels
 * of a column share its rows: each gets what it needs up to a common cap
 * chosen so the column fits, and a cut panel ends with a line saying how
 * many lines it lost. Generic over the members, so sections may grow
 * (schema 1 allows additions) without a change here.
 */
#include "diag/layout.h"

#include "json/json.h"

#include <string.h>

const struct diag_rgb diag_palette[DC_COUNT] = {
    [DC_BG] = {0x10, 0x14, 0x20},       [DC_HEAD_BG] = {0x28, 0x5a, 0x3c},
    [DC_HEAD] = {0xf0, 0xf0, 0xf0},     [DC_TITLE_BG] = {0x2c, 0x44, 0x78},
    [DC_TITLE] = {0xff, 0xff, 0xff},    [DC_LABEL] = {0x90, 0xa8, 0xc8},
    [DC_VALUE] = {0xe6, 0xe6, 0xe6},    [DC_WHY] = {0xe0, 0xa8, 0x3c},
};

enum {
    COL_W = 62,          /* a panel's width in cells */
    LEFT_X = 1,
    RIGHT_X = 65,
    TOP_ROW = 2,         /* the header is row 0, row 1 is empty */
    BOTTOM_ROW = DIAG_ROWS - 2, /* last row panels may use; the footer is below */
    KEY_MAX = 64,        /* longest member name shown whole */
    TEXT_MAX = 160,      /* longest value text looked at (wider than a panel) */
    INDENT = 2,
    MAX_PANELS = 8,
};

struct panel {
    const char *title;
    const char *keys[4]; /* the report's top-level members it shows */
};

/* Left: the machine; right: storage, crypto. Groups follow docs/DIAGNOSTICS.md. */
static const struct panel left_panels[] = {
    {"CPU, HYPERVISOR, CORES, MEMORY", {"cpu", "hypervisor", "cores", "memory"}},
    {"MEMORY BANDWIDTH", {"memory_bandwidth"}},
    {"FIRMWARE", {"firmware"}},
    {"RNG", {"rng"}},
    {"NICS", {"nics"}},
    {"PCI", {"pci"}},
};
static const struct panel right_panels[] = {
    {"DISKS", {"disks"}},
    {"DISK READ", {"disk_read"}},
    {"DISK WRITE", {"disk_write"}},
    {"CRYPTO", {"crypto"}},
    {"HANDSHAKE", {"handshake"}},
};

/* Where lines go: counted only (g NULL), or drawn on rows [row, end). */
struct sink {
    struct diag_grid *g;
    unsigned x, row, end;
    unsigned lines;      /* lines emitted so far (drawn or not) */
    unsigned max;        /* lines to draw at most */
};

/* A line being built: cells of one panel row. */
struct line {
    struct diag_cell c[COL_W];
    unsigned len;
};

static char printable(char ch)
{
    return ch >= 0x20 && ch <= 0x7e ? ch : '?';
}

static void fill(struct diag_grid *g, unsigned row, unsigned x, unsigned w, uint8_t bg)
{
    for (unsigned i = x; i < x + w && i < DIAG_COLS; i++)
        g->cell[row][i] = (struct diag_cell){' ', DC_VALUE, bg};
}

/* Text into a grid row at x, at most w cells; the last cell of a cut text
 * becomes '~'. Returns the cells used. */
static unsigned put(struct diag_grid *g, unsigned row, unsigned x, unsigned w, const char *s,
                    size_t n, uint8_t fg, uint8_t bg)
{
    unsigned i = 0;
    for (; i < n && i < w && x + i < DIAG_COLS; i++)
        g->cell[row][x + i] = (struct diag_cell){printable(s[i]), fg, bg};
    if (n > w && w > 0)
        g->cell[row][x + w - 1].ch = '~';
    return i;
}

static void l_add(struct line *l, const char *s, size_t n, uint8_t fg)
{
    for (size_t i = 0; i < n; i++) {
        if (l->len == COL_W) {
            l->c[COL_W - 1].ch = '~';
            return;
        }
        l->c[l->len++] = (struct diag_cell){printable(s[i]), fg, DC_BG};
    }
}

static void l_str(struct line *l, const char *s, uint8_t fg)
{
    l_add(l, s, strlen(s), fg);
}

static void emit(struct sink *s, const struct line *l)
{
    if (s->g && s->lines < s->max && s->row + s->lines < s->end) {
        unsigned row = s->row + s->lines;
        fill(s->g, row, s->x, COL_W, DC_BG);
        for (unsigned i = 0; i < l->len; i++)
            s->g->cell[row][s->x + i] = l->c[i];
    }
    s->lines++;
}

/* A value's text as shown: strings unescaped (their JSON text when that
 * fails: too long or holding a NUL), anything else as written. */
static void l_value(struct line *l, const jr_val *v, uint8_t fg)
{
    char buf[TEXT_MAX];
    if (v->type == JR_STRING) {
        long n = jr_string(v, buf, sizeof buf);
        if (n >= 0) {
            l_add(l, buf, (size_t)n, fg);
            return;
        }
    }
    l_add(l, v->p, v->n, fg);
}

/* The name of an object member into out (its JSON text, cut, when it will
 * not unescape). */
static void key_text(const jr_val *k, char *out, size_t cap)
{
    if (jr_string(k, out, cap) >= 0)
        return;
    size_t n = k->n < cap ? k->n : cap - 1;
    memcpy(out, k->p, n);
    out[n] = 0;
}

/* "name_why" for name, or "" when it does not fit. */
static void why_key(const char *name, char *out, size_t cap)
{
    size_t n = strlen(name);
    if (n + 5 > cap) {
        out[0] = 0;
        return;
    }
    memcpy(out, name, n);
    memcpy(out + n, "_why", 5);
}

static int is_scalar(const jr_val *v)
{
    return v->type != JR_OBJECT && v->type != JR_ARRAY;
}

static void emit_value(struct sink *s, unsigned indent, const char *bullet, const char *label,
                       const jr_val *v, const jr_val *parent);

/* A null value: the reason its sibling "label_why" gives. */
static void l_null(struct line *l, const char *label, const jr_val *parent)
{
    char wk[KEY_MAX + 8];
    jr_val why;
    why_key(label, wk, sizeof wk);
    l_str(l, "n/a", DC_WHY);
    if (parent && wk[0] && jr_get(parent, wk, &why) == 0) {
        l_str(l, " (", DC_WHY);
        l_value(l, &why, DC_WHY);
        l_str(l, ")", DC_WHY);
    }
}

/* An object's members one level in; "X_why" is left out when X is there
 * (it was shown next to X). */
static void emit_members(struct sink *s, unsigned indent, const char *bullet, const jr_val *obj)
{
    size_t it = 0;
    jr_val k, v;
    int first = 1;
    while (jr_next(obj, &it, &k, &v)) {
        char name[KEY_MAX];
        key_text(&k, name, sizeof name);
        size_t n = strlen(name);
        jr_val base;
        if (n > 4 && !strcmp(name + n - 4, "_why")) {
            char b[KEY_MAX];
            memcpy(b, name, n - 4);
            b[n - 4] = 0;
            if (jr_get(obj, b, &base) == 0)
                continue;
        }
        /* A bulleted entry's later members line up under its first. */
        unsigned at = first || !bullet ? indent : indent + INDENT;
        emit_value(s, at, first ? bullet : NULL, name, &v, obj);
        first = 0;
    }
    if (first) { /* an empty object still takes its bullet's line */
        struct line l = {.len = 0};
        for (unsigned i = 0; i < indent; i++)
            l_add(&l, " ", 1, DC_VALUE);
        if (bullet)
            l_str(&l, bullet, DC_LABEL);
        l_str(&l, "(empty)", DC_WHY);
        emit(s, &l);
    }
}

/* One member: "label: value" on one line when it is a scalar or an array
 * of scalars; otherwise "label:" and its contents indented below. */
static void emit_value(struct sink *s, unsigned indent, const char *bullet, const char *label,
                       const jr_val *v, const jr_val *parent)
{
    struct line l = {.len = 0};
    for (unsigned i = 0; i < indent; i++)
        l_add(&l, " ", 1, DC_VALUE);
    unsigned inner = indent;
    if (bullet) {
        l_str(&l, bullet, DC_LABEL);
        inner += INDENT;
    }
    if (label) {
        l_str(&l, label, DC_LABEL);
        l_str(&l, ": ", DC_LABEL);
    }
    if (v->type == JR_NULL) {
        l_null(&l, label ? label : "", parent);
        emit(s, &l);
        return;
    }
    if (is_scalar(v)) {
        l_value(&l, v, DC_VALUE);
        emit(s, &l);
        return;
    }
    size_t it = 0;
    jr_val e;
    int scalars = 1, count = 0;
    if (v->type == JR_ARRAY) {
        while (jr_next(v, &it, NULL, &e)) {
            scalars &= is_scalar(&e);
            count++;
        }
        if (count == 0) {
            l_str(&l, "none", DC_WHY);
            emit(s, &l);
            return;
        }
        if (scalars) {
            it = 0;
            for (int i = 0; jr_next(v, &it, NULL, &e); i++) {
                if (i)
                    l_str(&l, ", ", DC_LABEL);
                l_value(&l, &e, DC_VALUE);
            }
            emit(s, &l);
            return;
        }
    }
    /* Nested: the label on its own line (when there is one), then the
     * contents one step in. An object in a bulleted entry with no label
     * continues on the bullet's line. */
    unsigned at = inner;
    const char *b = NULL;
    if (label) {
        emit(s, &l);
        at = inner + INDENT;
    } else if (bullet) {
        at = indent;
        b = bullet;
    }
    if (v->type == JR_OBJECT) {
        emit_members(s, at, b, v);
        return;
    }
    it = 0;
    while (jr_next(v, &it, NULL, &e)) {
        if (e.type == JR_OBJECT)
            emit_members(s, at, "- ", &e);
        else
            emit_value(s, at, "- ", NULL, &e, NULL);
    }
}

/* A panel's lines: each of its sections; a section made of members is
 * shown by its members directly when the panel has only it. */
static void panel_lines(struct sink *s, const struct panel *p, const jr_val *doc)
{
    int several = p->keys[1] != NULL;
    for (unsigned i = 0; i < 4 && p->keys[i]; i++) {
        jr_val v;
        if (jr_get(doc, p->keys[i], &v) != 0) {
            struct line l = {.len = 0};
            if (several) {
                l_str(&l, p->keys[i], DC_LABEL);
                l_str(&l, ": ", DC_LABEL);
            }
            l_str(&l, "not in this report", DC_WHY);
            emit(s, &l);
            continue;
        }
        if (!several && v.type == JR_OBJECT)
            emit_members(s, 0, NULL, &v);
        else /* a null section is named, with its reason */
            emit_value(s, 0, NULL, several || v.type == JR_NULL ? p->keys[i] : NULL, &v, doc);
    }
}

/* Lines a panel needs. */
static unsigned panel_need(const struct panel *p, const jr_val *doc)
{
    struct sink s = {.g = NULL};
    panel_lines(&s, p, doc);
    return s.lines ? s.lines : 1;
}

/* One column: rows for each panel's content so that all fit, then drawn. */
static void column(struct diag_grid *g, unsigned x, const struct panel *ps, unsigned n,
                   const jr_val *doc)
{
    unsigned need[MAX_PANELS], give[MAX_PANELS];
    unsigned avail = BOTTOM_ROW - TOP_ROW + 1 - 2 * n; /* a title and a gap each */
    unsigned total = 0;
    for (unsigned i = 0; i < n; i++) {
        need[i] = panel_need(&ps[i], doc);
        total += need[i];
    }
    /* The largest common cap whose capped sum fits, then the rows left
     * over to the cut panels in order. */
    unsigned cap = 1;
    for (;;) {
        unsigned sum = 0;
        for (unsigned i = 0; i < n; i++)
            sum += need[i] < cap + 1 ? need[i] : cap + 1;
        if (sum > avail || cap >= total)
            break;
        cap++;
    }
    unsigned used = 0;
    for (unsigned i = 0; i < n; i++) {
        give[i] = need[i] < cap ? need[i] : cap;
        used += give[i];
    }
    for (unsigned i = 0; i < n && used < avail; i++)
        if (give[i] < need[i]) {
            give[i]++;
            used++;
        }
    unsigned row = TOP_ROW;
    for (unsigned i = 0; i < n; i++) {
        fill(g, row, x, COL_W, DC_TITLE_BG);
        put(g, row, x + 1, COL_W - 1, ps[i].title, strlen(ps[i].title), DC_TITLE, DC_TITLE_BG);
        row++;
        int cut = give[i] < need[i];
        struct sink s = {.g = g, .x = x, .row = row, .end = row + give[i],
                         .max = cut ? give[i] - 1 : give[i]};
        panel_lines(&s, &ps[i], doc);
        if (cut) {
            struct line l = {.len = 0};
            char msg[48];
            unsigned lost = need[i] - (give[i] - 1), k = sizeof msg;
            msg[--k] = 0;
            const char *tail = " more lines: see the JSON)";
            do
                msg[--k] = (char)('0' + lost % 10);
            while ((lost /= 10) && k > 0);
            l_str(&l, "(", DC_WHY);
            l_str(&l, msg + k, DC_WHY);
            l_str(&l, tail, DC_WHY);
            s.lines = give[i] - 1; /* its own row: the panel's last */
            s.max = give[i];
            emit(&s, &l);
        }
        row += give[i] + 1;
    }
}

static void header(struct diag_grid *g, const jr_val *doc)
{
    static const char *const keys[] = {"tern", "mode", "time", "schema"};
    fill(g, 0, 0, DIAG_COLS, DC_HEAD_BG);
    unsigned x = put(g, 0, 1, DIAG_COLS - 2, "tern diagnostics", 16, DC_HEAD, DC_HEAD_BG) + 1;
    for (unsigned i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        jr_val v;
        if (jr_get(doc, keys[i], &v) != 0)
            continue;
        struct line t = {.len = 0};
        l_str(&t, "   ", DC_HEAD);
        l_str(&t, keys[i], DC_HEAD);
        l_str(&t, " ", DC_HEAD);
        if (v.type == JR_NULL)
            l_null(&t, keys[i], doc);
        else
            l_value(&t, &v, DC_HEAD);
        for (unsigned c = 0; c < t.len && x < DIAG_COLS - 1; c++, x++)
            g->cell[0][x] = (struct diag_cell){t.c[c].ch, DC_HEAD, DC_HEAD_BG};
    }
}

static void clear(struct diag_grid *g)
{
    for (unsigned r = 0; r < DIAG_ROWS; r++)
        fill(g, r, 0, DIAG_COLS, DC_BG);
}

int diag_layout(const char *json, size_t n, struct diag_grid *g, char *err, size_t errlen)
{
    static const char foot[] = "The report as JSON: serial, between \"tern: diag: report begin\" "
                               "and \"... end\" (docs/DIAGNOSTICS.md)";
    char why[96] = "";
    jr_val doc;
    clear(g);
    if (jr_parse(json, n, &doc, why, sizeof why) != 0 || doc.type != JR_OBJECT) {
        if (!why[0])
            memcpy(why, "not a JSON object", sizeof "not a JSON object");
        static const char lead[] = "tern diagnostics: the report cannot be read: ";
        fill(g, 0, 0, DIAG_COLS, DC_HEAD_BG);
        unsigned x = put(g, 0, 1, DIAG_COLS - 2, lead, sizeof lead - 1, DC_HEAD, DC_HEAD_BG);
        put(g, 0, 1 + x, DIAG_COLS - 2 - x, why, strlen(why), DC_WHY, DC_HEAD_BG);
        if (err && errlen) {
            size_t k = strlen(why) < errlen ? strlen(why) : errlen - 1;
            memcpy(err, why, k);
            err[k] = 0;
        }
        return -1;
    }
    header(g, &doc);
    column(g, LEFT_X, left_panels, sizeof left_panels / sizeof left_panels[0], &doc);
    column(g, RIGHT_X, right_panels, sizeof right_panels / sizeof right_panels[0], &doc);
    put(g, DIAG_ROWS - 1, 1, DIAG_COLS - 2, foot, sizeof foot - 1, DC_LABEL, DC_BG);
    return 0;
}
