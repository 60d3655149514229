/*
 * tern-diag-png.c - draws a diagnostics report (docs/DIAGNOSTICS.md) as the
 * PNG of the dashboard the kernel shows on its framebuffer (SPEC F5): the
 * same layout code (src/diag/layout.c), the same drawing and palette
 * (layout_draw.c), the kernel's own 8x8 font (dev/font8x8.c compiled in),
 * 1024x768 pixels, so the PNG matches a screenshot pixel for pixel.
 *
 *   tern-diag-png REPORT OUT.png
 *
 * REPORT is the JSON document, or a serial log holding it between the
 * kernel's "tern: diag: report begin" and "tern: diag: report end" lines
 * (the first such report); "-" reads standard input. Exit status 0, 1 when
 * the report cannot be read (the reason on stderr, no PNG written), 2 on
 * a usage or I/O error.
 */
#include "diag/layout.h"
#include "platform/kernel/dev/font8x8.h"

#include <errno.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { REPORT_MAX = 4 << 20 };

static const char BEGIN[] = "tern: diag: report begin";
static const char END[] = "tern: diag: report end";

/* All of f, at most REPORT_MAX bytes; NULL on error or when larger. */
static char *slurp(FILE *f, size_t *len)
{
    char *buf = malloc(REPORT_MAX + 1);
    if (!buf)
        return NULL;
    size_t n = fread(buf, 1, REPORT_MAX + 1, f);
    if (ferror(f) || n > REPORT_MAX) {
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

/* The JSON: between the marker lines when the text has them. */
static const char *report_text(const char *buf, size_t len, size_t *n)
{
    const char *b = strstr(buf, BEGIN);
    if (!b) {
        *n = len;
        return buf;
    }
    const char *start = strchr(b, '\n');
    start = start ? start + 1 : buf + len;
    const char *e = strstr(start, END);
    const char *stop = e ? e : buf + len;
    *n = (size_t)(stop - start);
    return start;
}

static int write_png(const char *path, const uint32_t *px)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "wb") : stdout;
    if (!f) {
        fprintf(stderr, "tern-diag-png: %s: %s\n", path, strerror(errno));
        return -1;
    }
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    static uint8_t row[DIAG_WIDTH_PX * 3];
    if (!info || setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        if (f != stdout)
            fclose(f);
        fprintf(stderr, "tern-diag-png: %s: writing the PNG failed\n", path);
        return -1;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, DIAG_WIDTH_PX, DIAG_HEIGHT_PX, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (unsigned y = 0; y < DIAG_HEIGHT_PX; y++) {
        for (unsigned x = 0; x < DIAG_WIDTH_PX; x++) {
            uint32_t p = px[(size_t)y * DIAG_WIDTH_PX + x];
            row[x * 3] = (uint8_t)(p >> 16);
            row[x * 3 + 1] = (uint8_t)(p >> 8);
            row[x * 3 + 2] = (uint8_t)p;
        }
        png_write_row(png, row);
    }
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    if ((f != stdout && fclose(f) != 0) || (f == stdout && fflush(f) != 0)) {
        fprintf(stderr, "tern-diag-png: %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: tern-diag-png REPORT.json|SERIAL.log|- OUT.png|-\n");
        return 2;
    }
    FILE *in = strcmp(argv[1], "-") ? fopen(argv[1], "rb") : stdin;
    if (!in) {
        fprintf(stderr, "tern-diag-png: %s: %s\n", argv[1], strerror(errno));
        return 2;
    }
    size_t len = 0;
    char *buf = slurp(in, &len);
    if (in != stdin)
        fclose(in);
    if (!buf) {
        fprintf(stderr, "tern-diag-png: %s: unreadable or larger than %d bytes\n", argv[1],
                REPORT_MAX);
        return 2;
    }
    size_t n;
    const char *json = report_text(buf, len, &n);
    static struct diag_grid grid;
    char err[96];
    if (diag_layout(json, n, &grid, err, sizeof err) != 0) {
        fprintf(stderr, "tern-diag-png: %s: not a report: %s\n", argv[1], err);
        free(buf);
        return 1;
    }
    free(buf);
    uint32_t pal[DC_COUNT];
    for (unsigned i = 0; i < DC_COUNT; i++)
        pal[i] = (uint32_t)diag_palette[i].r << 16 | (uint32_t)diag_palette[i].g << 8 |
                 diag_palette[i].b;
    static uint32_t px[DIAG_WIDTH_PX * DIAG_HEIGHT_PX];
    diag_draw(&grid, font8x8_row, pal, px, DIAG_WIDTH_PX, DIAG_WIDTH_PX, DIAG_HEIGHT_PX);
    return write_png(argv[2], px) == 0 ? 0 : 2;
}
