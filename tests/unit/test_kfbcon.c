/*
 * test_kfbcon.c - the framebuffer console on the host: the font's shape
 * (every glyph distinct, spacing column and descender row kept clear), the
 * loader framebuffer checks (dev/fb.c), and the text console (dev/fbcon.c)
 * drawing into a plain buffer with guard pixels around its lines - read
 * back by recognising glyphs, the way the kernel test reads a screenshot.
 */
#include "test.h"

#include "platform/kernel/dev/fb.c"
#include "platform/kernel/dev/fbcon.c"
#include "platform/kernel/dev/font8x8.c"

#include <stdlib.h>

TEST(kfont_glyphs_are_distinct_and_spaced)
{
    uint8_t g[FONT_GLYPHS][FONT_H];
    for (unsigned i = 0; i < FONT_GLYPHS; i++)
        for (unsigned r = 0; r < FONT_H; r++)
            g[i][r] = font8x8_row((unsigned char)(FONT_FIRST + i), r);
    for (unsigned r = 0; r < FONT_H; r++)
        CHECK_EQ(g[0][r], 0); /* space */
    for (unsigned i = 1; i < FONT_GLYPHS; i++) {
        unsigned ink = 0;
        for (unsigned r = 0; r < FONT_H; r++)
            ink |= g[i][r];
        CHECK(ink != 0);
        for (unsigned j = 0; j < i; j++)
            CHECK(memcmp(g[i], g[j], FONT_H) != 0);
        unsigned char ch = (unsigned char)(FONT_FIRST + i);
        /* Column 7 separates glyphs; only '_' runs through it. */
        for (unsigned r = 0; r < FONT_H; r++)
            if (ch != '_')
                CHECK_EQ(g[i][r] & 1, 0);
        /* Row 7 separates lines; only descenders reach it. */
        if (!strchr(",_gjpqy", ch) || ch == 0x7F)
            CHECK_EQ(g[i][7], 0);
    }
    /* Everything unprintable is the box (the 0x7F slot). */
    static const unsigned char odd[] = {0x00, 0x09, 0x1F, 0x7F, 0x80, 0xFF};
    for (size_t k = 0; k < sizeof odd; k++)
        for (unsigned r = 0; r < FONT_H; r++)
            CHECK_EQ(font8x8_row(odd[k], r), g[FONT_GLYPHS - 1][r]);
    CHECK_EQ(font8x8_row('A', 8), 0);
    CHECK_EQ(font8x8_row('A', 0), 0x18); /* ...##... */
}

static struct fb_info qemu_fb(void)
{
    return (struct fb_info){
        .present = 1, .addr = 0xfd000000, .pitch = 4096, .width = 1024, .height = 768,
        .bpp = 32, .type = FB_TYPE_RGB, .red_pos = 16, .red_size = 8, .green_pos = 8,
        .green_size = 8, .blue_pos = 0, .blue_size = 8,
    };
}

TEST(kfb_check_accepts_32bpp_rgb_only)
{
    const char *why = NULL;
    struct fb_info f = qemu_fb();
    CHECK_EQ(fb_check(&f, &why), 0);
    CHECK_EQ(fb_colour(&f, 0x11, 0x22, 0x33), 0x112233);
    f.red_pos = 0;
    f.blue_pos = 16;
    CHECK_EQ(fb_check(&f, &why), 0);
    CHECK_EQ(fb_colour(&f, 0x11, 0x22, 0x33), 0x332211);

#define BAD(stmt, msg)                                                                      \
    do {                                                                                    \
        struct fb_info b = qemu_fb();                                                       \
        stmt;                                                                               \
        why = NULL;                                                                         \
        CHECK_EQ(fb_check(&b, &why), -1);                                                   \
        if (strcmp(why, msg) != 0)                                                          \
            fprintf(stderr, "  %s: got '%s'\n", #stmt, why);                                \
        CHECK(!strcmp(why, msg));                                                           \
    } while (0)
    BAD(b.present = 0, "the loader gave no framebuffer");
    BAD(b.type = FB_TYPE_EGA_TEXT, "EGA text mode, not a graphics framebuffer");
    BAD(b.type = FB_TYPE_INDEXED, "indexed colour (palette) modes are not supported");
    BAD(b.type = 7, "unknown framebuffer type");
    BAD(b.bpp = 24, "only 32 bits per pixel are supported");
    BAD(b.bpp = 16, "only 32 bits per pixel are supported");
    BAD(b.red_size = 5, "colour channels are not 8-bit bytes");
    BAD(b.green_pos = 4, "colour channels are not 8-bit bytes");
    BAD(b.blue_pos = 32, "colour channels are not 8-bit bytes");
    BAD(b.blue_pos = 8, "colour channels are not 8-bit bytes");
    BAD(b.width = 0, "size out of range");
    BAD(b.height = 7, "size out of range");
    BAD(b.width = FB_MAX_SIDE + 1, "size out of range");
    BAD(b.pitch = 4092, "pitch does not hold a line of whole pixels");
    BAD(b.pitch = 4098, "pitch does not hold a line of whole pixels");
    BAD(b.addr = 0, "address or size out of range");
    BAD(b.addr = (1ull << 52) - 4096, "address or size out of range");
    BAD((b.pitch = 65536, b.width = 16384, b.height = 16384), "address or size out of range");
#undef BAD
}

/* A console on a w x h buffer whose lines are `pad` pixels longer than
 * the console may use; the padding and a guard line below must stay
 * untouched. */
struct screen {
    struct fbcon con;
    uint32_t *px;
    unsigned w, h, stride;
};

enum { FG = 0x00C0C0C0, BG = 0x00101010, GUARD = 0xDEADBEEF };

static struct screen *screen_open(unsigned w, unsigned h, unsigned pad)
{
    struct screen *s = calloc(1, sizeof *s);
    s->w = w;
    s->h = h;
    s->stride = w + pad;
    s->px = malloc(sizeof(uint32_t) * s->stride * (h + 1));
    for (size_t i = 0; i < (size_t)s->stride * (h + 1); i++)
        s->px[i] = GUARD;
    fbcon_init(&s->con, s->px, s->stride, w, h, FG, BG);
    return s;
}

static int guards_intact(const struct screen *s)
{
    for (unsigned y = 0; y <= s->h; y++)
        for (unsigned x = y < s->h ? s->w : 0; x < s->stride; x++)
            if (s->px[(size_t)y * s->stride + x] != GUARD)
                return 0;
    return 1;
}

/* The character drawn in cell (col, row), recognised from its pixels;
 * '\x7f' for the box, '\0' for pixels that are no glyph of the font. */
static char read_cell(const struct screen *s, unsigned col, unsigned row)
{
    unsigned sc = s->con.scale;
    uint8_t rows[FONT_H];
    for (unsigned r = 0; r < FONT_H; r++) {
        rows[r] = 0;
        for (unsigned x = 0; x < FONT_W; x++) {
            uint32_t p = s->px[(size_t)((row * FONT_H + r) * sc) * s->stride +
                               (col * FONT_W + x) * sc];
            if (p != FG && p != BG)
                return '\0';
            rows[r] = (uint8_t)(rows[r] << 1 | (p == FG));
        }
    }
    for (unsigned ch = FONT_FIRST; ch < FONT_FIRST + FONT_GLYPHS; ch++) {
        unsigned r = 0;
        while (r < FONT_H && font8x8_row((unsigned char)ch, r) == rows[r])
            r++;
        if (r == FONT_H)
            return (char)ch;
    }
    return '\0';
}

/* Row `row` of the screen as text, trailing spaces dropped. */
static void read_row(const struct screen *s, unsigned row, char *out)
{
    unsigned n = 0;
    for (unsigned c = 0; c < s->con.cols; c++)
        out[n++] = read_cell(s, c, row);
    while (n && out[n - 1] == ' ')
        n--;
    out[n] = '\0';
}

static void screen_close(struct screen *s)
{
    free(s->px);
    free(s);
}

#define WRITE(s, text) fbcon_write(&(s)->con, text, sizeof text - 1)

TEST(kfbcon_draws_text_that_reads_back)
{
    struct screen *s = screen_open(64, 32, 5); /* 8 x 4 cells */
    char row[FBCON_MAX_COLS + 1];
    CHECK_EQ(s->con.cols, 8);
    CHECK_EQ(s->con.rows, 4);
    read_row(s, 0, row);
    CHECK(!strcmp(row, ""));
    WRITE(s, "tern: ok\n~{|}`\r_\x01");
    read_row(s, 0, row);
    CHECK(!strcmp(row, "tern: ok"));
    read_row(s, 1, row);
    CHECK(!strcmp(row, "_\x7f|}`")); /* CR: '_' and the box over the start */
    CHECK(guards_intact(s));
    screen_close(s);
}

TEST(kfbcon_wraps_tabs_and_jump_scrolls)
{
    struct screen *s = screen_open(64, 32, 3); /* 8 x 4 cells */
    char row[FBCON_MAX_COLS + 1];
    WRITE(s, "0123456789\n");                 /* wraps after 8 */
    read_row(s, 0, row);
    CHECK(!strcmp(row, "01234567"));
    read_row(s, 1, row);
    CHECK(!strcmp(row, "89"));
    WRITE(s, "a\tb");                         /* tab to column 8: wraps */
    read_row(s, 2, row);
    CHECK(!strcmp(row, "a"));
    read_row(s, 3, row);
    CHECK(!strcmp(row, "b"));
    WRITE(s, "\nafter");                      /* bottom: up by half (2 rows) */
    read_row(s, 0, row);
    CHECK(!strcmp(row, "a"));
    read_row(s, 1, row);
    CHECK(!strcmp(row, "b"));
    read_row(s, 2, row);
    CHECK(!strcmp(row, "after"));
    read_row(s, 3, row);
    CHECK(!strcmp(row, ""));
    for (int i = 0; i < 50; i++)
        WRITE(s, "line\n");
    WRITE(s, "last");
    unsigned found = 0;
    for (unsigned r = 0; r < 4; r++) {
        read_row(s, r, row);
        found += !strcmp(row, "last");
        CHECK(!strcmp(row, "line") || !strcmp(row, "last") || !strcmp(row, ""));
    }
    CHECK_EQ(found, 1);
    CHECK(guards_intact(s));
    screen_close(s);
}

TEST(kfbcon_odd_sizes_and_scale)
{
    char row[FBCON_MAX_COLS + 1];
    /* Partial cells at the right and bottom stay background. */
    struct screen *s = screen_open(21, 13, 0); /* 2 x 1 cells */
    CHECK_EQ(s->con.cols, 2);
    CHECK_EQ(s->con.rows, 1);
    WRITE(s, "abc\ndef\n");
    read_row(s, 0, row);
    CHECK(!strcmp(row, ""));                  /* one row: every newline clears it */
    WRITE(s, "xy");
    read_row(s, 0, row);
    CHECK(!strcmp(row, "xy"));
    for (unsigned y = 0; y < 13; y++)
        for (unsigned x = 16; x < 21; x++)
            CHECK_EQ(s->px[y * 21 + x], BG);
    CHECK(guards_intact(s));
    screen_close(s);

    /* Too small for one cell: nothing drawn, nothing broken. */
    s = screen_open(7, 7, 1);
    WRITE(s, "hello\n");
    CHECK(guards_intact(s));
    screen_close(s);

    /* Wide screens draw every pixel of the font twice in both directions. */
    s = screen_open(FBCON_SCALE2_WIDTH, 16, 8);
    CHECK_EQ(s->con.scale, 2);
    CHECK_EQ(s->con.cols, FBCON_SCALE2_WIDTH / 16);
    WRITE(s, "A");
    for (unsigned y = 0; y < 16; y++)
        for (unsigned x = 0; x < 16; x++) {
            int ink = (font8x8_row('A', y / 2) >> (7 - x / 2)) & 1;
            CHECK_EQ(s->px[(size_t)y * s->stride + x], ink ? FG : BG);
        }
    read_row(s, 0, row);
    CHECK(!strcmp(row, "A"));
    CHECK(guards_intact(s));
    screen_close(s);

    /* Very large screens use at most FBCON_MAX_COLS x FBCON_MAX_ROWS cells. */
    s = screen_open(5000, 16, 0);
    CHECK_EQ(s->con.cols, FBCON_MAX_COLS);
    CHECK_EQ(s->con.rows, 1);
    for (int i = 0; i < 300; i++)
        WRITE(s, "z");
    CHECK(guards_intact(s));
    screen_close(s);
}
