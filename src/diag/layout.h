/*
 * layout.h - the diagnostics dashboard's one layout (SPEC E4, F5): the
 * report's JSON text (docs/DIAGNOSTICS.md) turned into a screen of
 * character cells, each a character and a foreground and background colour
 * from a small fixed palette, and those cells drawn into 32-bit pixels with
 * a given 8x8 font. The kernel draws it on the framebuffer (diag/dash.c),
 * tools/diag/tern-diag-png into a PNG; both run this code with the kernel's
 * font (dev/font8x8.c), so the two pictures are the same pixels.
 *
 * Portable and I/O-free (no floating point: the kernel compiles it). The
 * report is untrusted input to the host tool: anything that is not a JSON
 * object is refused with a reason; members of unexpected types are shown
 * as their JSON text; nothing reads outside the text or writes outside the
 * grid.
 */
#ifndef TERN_DIAG_LAYOUT_H
#define TERN_DIAG_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

/* One screen: 1024x768 pixels of 8x8 cells. */
enum {
    DIAG_CELL_PX = 8,
    DIAG_COLS = 128,
    DIAG_ROWS = 96,
    DIAG_WIDTH_PX = DIAG_COLS * DIAG_CELL_PX,
    DIAG_HEIGHT_PX = DIAG_ROWS * DIAG_CELL_PX,
};

/* The palette's entries, by role. */
enum diag_colour {
    DC_BG,        /* the screen */
    DC_HEAD_BG,   /* the top line */
    DC_HEAD,      /* its text */
    DC_TITLE_BG,  /* a panel's title bar */
    DC_TITLE,     /* its text */
    DC_LABEL,     /* a member's name */
    DC_VALUE,     /* a measured value */
    DC_WHY,       /* a value that is null: the reason */
    DC_COUNT
};

struct diag_rgb {
    uint8_t r, g, b;
};
/* The colours of the roles above; the one source for both pictures. */
extern const struct diag_rgb diag_palette[DC_COUNT];

struct diag_cell {
    char ch;          /* printable ASCII; anything else was replaced by '?' */
    uint8_t fg, bg;   /* enum diag_colour */
};

struct diag_grid {
    struct diag_cell cell[DIAG_ROWS][DIAG_COLS];
};

/* Lay out the report json[0..n) on g (every cell written). 0, or -1 with a
 * short reason in err when the text is not a JSON object; g then shows
 * that reason instead of panels. */
int diag_layout(const char *json, size_t n, struct diag_grid *g, char *err, size_t errlen);

/* Row `row` of the glyph for ch, bit 7 leftmost (dev/font8x8.h's
 * font8x8_row). */
typedef uint8_t (*diag_glyph_row_fn)(unsigned char ch, unsigned row);

/* Draw g into pixels (lines stride pixels apart) clipped to width x height,
 * from the top left, one pixel per font pixel; pal[i] is the pixel value
 * of diag_palette[i] in the target's encoding. */
void diag_draw(const struct diag_grid *g, diag_glyph_row_fn glyph_row, const uint32_t pal[DC_COUNT],
               uint32_t *pixels, size_t stride, unsigned width, unsigned height);

#endif
