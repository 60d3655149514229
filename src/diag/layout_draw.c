/*
 * layout_draw.c - the dashboard's cells (layout.h) into 32-bit pixels with
 * the given 8x8 font: the one drawing the kernel's framebuffer and
 * tern-diag-png's PNG share, so both show the same pixels.
 */
#include "diag/layout.h"

void diag_draw(const struct diag_grid *g, diag_glyph_row_fn glyph_row, const uint32_t pal[DC_COUNT],
               uint32_t *pixels, size_t stride, unsigned width, unsigned height)
{
    for (unsigned y = 0; y < height && y < DIAG_HEIGHT_PX; y++) {
        const struct diag_cell *row = g->cell[y / DIAG_CELL_PX];
        uint32_t *out = pixels + (size_t)y * stride;
        for (unsigned cx = 0; cx < DIAG_COLS && cx * DIAG_CELL_PX < width; cx++) {
            const struct diag_cell *c = &row[cx];
            uint8_t bits = glyph_row((unsigned char)c->ch, y % DIAG_CELL_PX);
            uint32_t fg = pal[c->fg < DC_COUNT ? c->fg : DC_VALUE];
            uint32_t bg = pal[c->bg < DC_COUNT ? c->bg : DC_BG];
            for (unsigned px = 0; px < DIAG_CELL_PX && cx * DIAG_CELL_PX + px < width; px++)
                out[cx * DIAG_CELL_PX + px] = (bits & (0x80u >> px)) ? fg : bg;
        }
    }
}
