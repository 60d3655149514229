/*
 * dash.c - the dashboard (dash.h): takes the framebuffer from the console,
 * lays the report out (src/diag/layout.c) and draws it from the top left
 * at one screen pixel per font pixel, as tern-diag-png does, so a
 * screenshot's 1024x768 top-left corner equals the PNG. The rest of a
 * larger screen is cleared to the dashboard's background.
 */
#include "diag/dash.h"

#include "console.h"
#include "dev/fb.h"
#include "dev/font8x8.h"
#include "diag/layout.h"
#include "mm/kmalloc.h"

void diag_dash_show(const char *report, size_t len)
{
    const struct fb_info *f;
    size_t stride;
    uint32_t *px = console_fb_claim(&f, &stride);
    if (!px) {
        kprintf("tern: diag: no framebuffer: the dashboard is not drawn\n");
        return;
    }
    struct diag_grid *g = kmalloc(sizeof *g); /* 36 KiB: too large for the stack */
    if (!g) {
        kprintf("tern: diag: out of memory for the dashboard\n");
        return;
    }
    char err[96];
    if (diag_layout(report, len, g, err, sizeof err) != 0)
        kprintf("tern: diag: the dashboard shows an unreadable report: %s\n", err);
    uint32_t pal[DC_COUNT];
    for (unsigned i = 0; i < DC_COUNT; i++)
        pal[i] = fb_colour(f, diag_palette[i].r, diag_palette[i].g, diag_palette[i].b);
    for (unsigned y = 0; y < f->height; y++)
        for (unsigned x = y < DIAG_HEIGHT_PX ? DIAG_WIDTH_PX : 0; x < f->width; x++)
            px[(size_t)y * stride + x] = pal[DC_BG];
    diag_draw(g, font8x8_row, pal, px, stride, f->width, f->height);
    kfree(g);
    kprintf("tern: diag: dashboard drawn (%ux%u)\n", DIAG_WIDTH_PX, DIAG_HEIGHT_PX);
}
