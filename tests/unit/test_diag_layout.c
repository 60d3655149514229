/*
 * test_diag_layout.c - the diagnostics dashboard's layout (src/diag/layout.c)
 * and drawing (layout_draw.c): panels and their values where the layout
 * puts them, nulls shown with their reasons, a column that overflows cut
 * with a count instead of spilling, every cell printable with a palette
 * colour for corrupt, truncated and oddly typed reports, and the drawing
 * clipped to the target.
 */
#include "test.h"

#include "diag/layout.h"

#include <stdlib.h>

static const char SAMPLE[] =
    "{\"schema\":1,\"tern\":\"0.1.0-dev\",\"mode\":\"diag\",\"time\":\"2026-12-02T03:00:00Z\","
    "\"cpu\":{\"vendor\":\"GenuineIntel\",\"hz\":null,\"hz_why\":\"no invariant TSC\","
    "\"features\":[\"sse2\",\"aes\"]},\"hypervisor\":{\"name\":\"TCG\"},"
    "\"cores\":null,\"cores_why\":\"no MADT\",\"memory\":{\"usable_bytes\":262144000},"
    "\"firmware\":{\"loader\":\"multiboot2\"},\"pci\":[],"
    "\"nics\":[{\"mac\":\"52:54:00:12:34:56\",\"link\":true}],"
    "\"disks\":[{\"name\":\"vda\",\"bytes\":67108864}],\"rng\":{\"rdrand\":true},"
    "\"memory_bandwidth\":{\"read_mib_s\":12000},\"disk_read\":[],"
    "\"disk_write\":{\"done\":false,\"why\":\"not confirmed\"},"
    "\"crypto\":null,\"crypto_why\":\"not in this build\",\"handshake\":{\"total_ns\":5000000}}";

static struct diag_grid grid;

/* Row r as text, trailing blanks cut. */
static const char *row_text(unsigned r)
{
    static char buf[DIAG_COLS + 1];
    for (unsigned c = 0; c < DIAG_COLS; c++)
        buf[c] = grid.cell[r][c].ch;
    unsigned n = DIAG_COLS;
    while (n && buf[n - 1] == ' ')
        n--;
    buf[n] = 0;
    return buf;
}

/* The row holding text, or -1. */
static int find_row(const char *text)
{
    for (unsigned r = 0; r < DIAG_ROWS; r++)
        if (strstr(row_text(r), text))
            return (int)r;
    return -1;
}

/* Every cell a printable character with palette colours. */
static int grid_sane(void)
{
    for (unsigned r = 0; r < DIAG_ROWS; r++)
        for (unsigned c = 0; c < DIAG_COLS; c++) {
            const struct diag_cell *x = &grid.cell[r][c];
            if (x->ch < 0x20 || x->ch > 0x7e || x->fg >= DC_COUNT || x->bg >= DC_COUNT)
                return 0;
        }
    return 1;
}

TEST(diag_layout_puts_header_panels_and_values_on_the_screen)
{
    CHECK(diag_layout(SAMPLE, sizeof SAMPLE - 1, &grid, NULL, 0) == 0);
    CHECK(grid_sane());
    CHECK(strstr(row_text(0), "tern diagnostics") != NULL);
    CHECK(strstr(row_text(0), "mode diag") != NULL);
    CHECK(strstr(row_text(0), "time 2026-12-02T03:00:00Z") != NULL);
    CHECK_EQ(grid.cell[0][0].bg, DC_HEAD_BG);
    /* The machine panel opens the left column, disks the right one. */
    int cpu = find_row("CPU, HYPERVISOR, CORES, MEMORY");
    CHECK_EQ(cpu, 2);
    CHECK(strstr(row_text(2), "DISKS") != NULL);
    CHECK_EQ(grid.cell[2][1].bg, DC_TITLE_BG);
    int vendor = find_row("vendor: GenuineIntel");
    CHECK(vendor > cpu);
    CHECK(find_row("features: sse2, aes") > cpu);
    CHECK(find_row("usable_bytes: 262144000") > cpu);
    CHECK(find_row("- mac: 52:54:00:12:34:56") > 0);
    CHECK(find_row("link: true") == find_row("- mac: 52:54:00:12:34:56") + 1);
    CHECK(find_row("why: not confirmed") > 0);
    CHECK(find_row("total_ns: 5000000") > 0);
    /* Every panel's title is on the screen. */
    static const char *const titles[] = {"MEMORY BANDWIDTH", "FIRMWARE", "RNG", "NICS", "PCI",
                                         "DISK READ", "DISK WRITE", "CRYPTO", "HANDSHAKE"};
    for (unsigned i = 0; i < sizeof titles / sizeof titles[0]; i++)
        CHECK(find_row(titles[i]) > cpu);
    CHECK(strstr(row_text(DIAG_ROWS - 1), "tern: diag: report begin") != NULL);
}

TEST(diag_layout_shows_a_null_with_its_reason_and_not_the_reason_again)
{
    CHECK(diag_layout(SAMPLE, sizeof SAMPLE - 1, &grid, NULL, 0) == 0);
    int hz = find_row("hz: n/a (no invariant TSC)");
    CHECK(hz > 0);
    char *at = strstr(row_text((unsigned)hz), "n/a");
    unsigned col = (unsigned)(at - row_text((unsigned)hz));
    CHECK_EQ(grid.cell[hz][col].fg, DC_WHY);
    CHECK(find_row("hz_why") < 0);
    CHECK(find_row("cores: n/a (no MADT)") > 0);
    CHECK(find_row("cores_why") < 0);
    /* A whole section null, alone in its panel. */
    CHECK(find_row("crypto: n/a (not in this build)") > 0);
    /* Empty arrays say so. */
    CHECK(find_row("none") > 0);
}

TEST(diag_layout_says_when_a_section_is_missing)
{
    static const char doc[] = "{\"schema\":1,\"mode\":\"diag\"}";
    CHECK(diag_layout(doc, sizeof doc - 1, &grid, NULL, 0) == 0);
    CHECK(find_row("cpu: not in this report") > 0);
    CHECK(find_row("not in this report") > 0);
    CHECK(grid_sane());
}

/* A report whose PCI list alone needs more rows than the screen has. */
static char *big_report(unsigned devices)
{
    size_t cap = 64 + devices * 64 + sizeof SAMPLE;
    char *s = malloc(cap);
    size_t n = (size_t)snprintf(s, cap, "{\"mode\":\"diag\",\"pci\":[");
    for (unsigned i = 0; i < devices; i++)
        n += (size_t)snprintf(s + n, cap - n, "%s{\"bdf\":\"00:%02x.0\",\"vendor\":%u}",
                              i ? "," : "", i, i);
    snprintf(s + n, cap - n, "],\"rng\":{\"rdrand\":true},\"nics\":[]}");
    return s;
}

TEST(diag_layout_cuts_an_overflowing_panel_with_a_count_and_keeps_the_rest)
{
    char *s = big_report(200); /* 400 lines */
    int rc = diag_layout(s, strlen(s), &grid, NULL, 0);
    free(s);
    CHECK(rc == 0);
    CHECK(grid_sane());
    int more = find_row("more lines: see the JSON)");
    CHECK(more > 0 && more < DIAG_ROWS - 1);
    /* The panels before and after it in the column are there. */
    CHECK(find_row("rdrand: true") > 0);
    CHECK(find_row("NICS") > 0);
    /* The count is what was not shown: 400 lines in all. */
    int shown = 0;
    for (unsigned r = 0; r < DIAG_ROWS; r++)
        shown += strstr(row_text(r), "- bdf: 00:") != NULL || strstr(row_text(r), " vendor: ") != NULL;
    const char *t = row_text((unsigned)more);
    const char *open = strchr(t, '(');
    CHECK(open != NULL);
    CHECK_EQ(atoi(open + 1) + shown, 400);
    /* Nothing drawn on the footer row or below the panels' last row. */
    CHECK(strstr(row_text(DIAG_ROWS - 1), "tern: diag: report begin") != NULL);
    CHECK(row_text(DIAG_ROWS - 2)[0] == 0 || find_row("more lines") <= DIAG_ROWS - 2);
}

TEST(diag_layout_refuses_corrupt_and_truncated_reports_with_a_reason_on_screen)
{
    char err[96];
    for (size_t n = 0; n < sizeof SAMPLE - 1; n += 7) {
        err[0] = 0;
        CHECK(diag_layout(SAMPLE, n, &grid, err, sizeof err) == -1);
        CHECK(err[0] != 0);
        CHECK(grid_sane());
        CHECK(strstr(row_text(0), "the report cannot be read") != NULL);
    }
    static const char *const bad[] = {"[1,2]", "\"text\"", "{\"a\":1,}", "{\"a\":\"\\u0000\"",
                                      "{\"a\":\"\xff\"}", "null"};
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(diag_layout(bad[i], strlen(bad[i]), &grid, err, sizeof err) == -1);
        CHECK(grid_sane());
    }
}

TEST(diag_layout_shows_oddly_typed_long_and_deep_values_within_the_grid)
{
    /* Sections of unexpected types, a long string with escapes and
     * non-ASCII, nesting to the reader's limit, a NUL escape. */
    char doc[2048];
    size_t n = (size_t)snprintf(doc, sizeof doc,
                                "{\"cpu\":7,\"firmware\":\"text\",\"disks\":{\"a\":[[1,[2]],{}]},"
                                "\"rng\":{\"s\":\"%s\\u00e9\\t\\u0000x\",\"k\\u0001\":true},"
                                "\"crypto\":",
                                "0123456789abcdefghij0123456789abcdefghij0123456789abcdefghij"
                                "0123456789abcdefghij0123456789abcdefghij");
    for (int i = 0; i < 14; i++)
        n += (size_t)snprintf(doc + n, sizeof doc - n, "{\"d\":");
    n += (size_t)snprintf(doc + n, sizeof doc - n, "1");
    for (int i = 0; i < 14; i++)
        n += (size_t)snprintf(doc + n, sizeof doc - n, "}");
    n += (size_t)snprintf(doc + n, sizeof doc - n, "}");
    CHECK(diag_layout(doc, n, &grid, NULL, 0) == 0);
    CHECK(grid_sane());
    int s = find_row("s: \"0123456789");
    CHECK(s > 0); /* not unescapable (NUL): its JSON text, cut */
    CHECK(grid.cell[s][1 + 61].ch == '~'); /* rng: the left column's last cell */
    CHECK(find_row("7") > 0);
}

static uint8_t glyph_a_only(unsigned char ch, unsigned row)
{
    (void)row;
    return ch == 'A' ? 0x81 : 0; /* leftmost and rightmost pixel */
}

TEST(diag_draw_paints_cells_with_palette_colours_and_stays_inside_the_target)
{
    for (unsigned r = 0; r < DIAG_ROWS; r++)
        for (unsigned c = 0; c < DIAG_COLS; c++)
            grid.cell[r][c] = (struct diag_cell){' ', DC_VALUE, DC_BG};
    grid.cell[0][0] = (struct diag_cell){'A', DC_WHY, DC_TITLE_BG};
    grid.cell[1][2] = (struct diag_cell){'A', DC_HEAD, DC_BG};
    const uint32_t pal[DC_COUNT] = {10, 11, 12, 13, 14, 15, 16, 17};
    /* A target smaller than the grid, wider lines than it shows: ASan
     * catches a write beyond width x height. */
    unsigned w = 21, h = 13;
    size_t stride = 24;
    uint32_t *px = malloc(stride * (h - 1) * sizeof *px + w * sizeof *px);
    for (size_t i = 0; i < stride * (h - 1) + w; i++)
        px[i] = 0xdead;
    diag_draw(&grid, glyph_a_only, pal, px, stride, w, h);
    CHECK_EQ(px[0], pal[DC_WHY]);                   /* 'A' ink */
    CHECK_EQ(px[1], pal[DC_TITLE_BG]);              /* 'A' paper */
    CHECK_EQ(px[7], pal[DC_WHY]);
    CHECK_EQ(px[8], pal[DC_BG]);                    /* next cell */
    CHECK_EQ(px[9 * stride + 16], pal[DC_HEAD]);    /* row 1, cell 2 */
    CHECK_EQ(px[9 * stride + 20], pal[DC_BG]);
    CHECK_EQ(px[5 * stride + 21], 0xdead);          /* beyond the width */
    free(px);
}
