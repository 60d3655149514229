/*
 * fbcon.h - a text console drawn with the 8x8 font on 32-bit pixels. Pure:
 * it writes only into the pixel array it is given (the kernel hands it the
 * mapped framebuffer, host tests a plain buffer), so it can be tested
 * under ASan. Large screens (1600 pixels wide or more) get glyphs scaled
 * 2x so the text stays readable; at most FBCON_MAX_COLS x FBCON_MAX_ROWS
 * characters are used, from the top left.
 */
#ifndef TERN_DEV_FBCON_H
#define TERN_DEV_FBCON_H

#include <stddef.h>
#include <stdint.h>

enum { FBCON_MAX_COLS = 256, FBCON_MAX_ROWS = 160, FBCON_SCALE2_WIDTH = 1600 };

struct fbcon {
    uint32_t *pixels;
    size_t stride;                        /* pixels from one line to the next */
    unsigned scale, cols, rows, col, row;
    uint32_t fg, bg;
    char cells[FBCON_MAX_ROWS][FBCON_MAX_COLS]; /* what is on screen, to redraw */
};

/* Take over width x height pixels (lines stride pixels apart, stride >=
 * width) and clear them to bg. */
void fbcon_init(struct fbcon *c, uint32_t *pixels, size_t stride, unsigned width,
                unsigned height, uint32_t fg, uint32_t bg);
/* Draw text: '\n' ends a line, '\r' returns to its start, '\t' moves to
 * the next multiple of 8 columns, long lines wrap, other bytes outside
 * printable ASCII show as a box. At the bottom the screen jumps up by
 * half its height (one redraw per half screen, not per line). */
void fbcon_write(struct fbcon *c, const char *s, size_t n);

#endif
