/*
 * fbcon.c - the framebuffer text console (see fbcon.h). The screen is
 * redrawn from the cell array only when it scrolls, so a framebuffer
 * mapped uncached or write-combining is never read back.
 */
#include "fbcon.h"

#include "font8x8.h"

#include <string.h>

static void draw(struct fbcon *c, unsigned col, unsigned row, unsigned char ch)
{
    unsigned px = FONT_W * c->scale, py = FONT_H * c->scale;
    uint32_t *line = c->pixels + (size_t)row * py * c->stride + (size_t)col * px;
    for (unsigned y = 0; y < py; y++, line += c->stride) {
        uint8_t bits = font8x8_row(ch, y / c->scale);
        for (unsigned x = 0; x < px; x++)
            line[x] = bits & (0x80u >> (x / c->scale)) ? c->fg : c->bg;
    }
}

void fbcon_init(struct fbcon *c, uint32_t *pixels, size_t stride, unsigned width,
                unsigned height, uint32_t fg, uint32_t bg)
{
    c->pixels = pixels;
    c->stride = stride;
    c->scale = width >= FBCON_SCALE2_WIDTH ? 2 : 1;
    c->cols = width / (FONT_W * c->scale);
    c->rows = height / (FONT_H * c->scale);
    if (c->cols > FBCON_MAX_COLS)
        c->cols = FBCON_MAX_COLS;
    if (c->rows > FBCON_MAX_ROWS)
        c->rows = FBCON_MAX_ROWS;
    c->col = c->row = 0;
    c->fg = fg;
    c->bg = bg;
    memset(c->cells, ' ', sizeof c->cells);
    for (unsigned y = 0; y < height; y++)
        for (unsigned x = 0; x < width; x++)
            pixels[(size_t)y * stride + x] = bg;
}

static void newline(struct fbcon *c)
{
    c->col = 0;
    if (++c->row < c->rows)
        return;
    unsigned shift = c->rows > 1 ? c->rows / 2 : 1;
    memmove(c->cells[0], c->cells[shift], (size_t)(c->rows - shift) * FBCON_MAX_COLS);
    memset(c->cells[c->rows - shift], ' ', (size_t)shift * FBCON_MAX_COLS);
    c->row = c->rows - shift;
    for (unsigned r = 0; r < c->rows; r++)
        for (unsigned col = 0; col < c->cols; col++)
            draw(c, col, r, (unsigned char)c->cells[r][col]);
}

static void put(struct fbcon *c, unsigned char ch)
{
    if (c->col == c->cols)
        newline(c);
    c->cells[c->row][c->col] = (char)ch;
    draw(c, c->col++, c->row, ch);
}

void fbcon_write(struct fbcon *c, const char *s, size_t n)
{
    if (!c->rows || !c->cols)
        return;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '\n') {
            newline(c);
        } else if (ch == '\r') {
            c->col = 0;
        } else if (ch == '\t') {
            do
                put(c, ' ');
            while (c->col % 8 && c->col < c->cols);
        } else {
            put(c, ch);
        }
    }
}
