/*
 * fb.h - a linear framebuffer handed over by the boot loader (multiboot2
 * framebuffer tag): what it must look like for tern to draw on it, and
 * how a colour is encoded in it. Pure functions (host-tested in
 * tests/unit/test_kfbcon.c); mapping it is the console's job.
 */
#ifndef TERN_DEV_FB_H
#define TERN_DEV_FB_H

#include <stdint.h>

enum {
    FB_TYPE_INDEXED = 0, FB_TYPE_RGB = 1, FB_TYPE_EGA_TEXT = 2,
    FB_MAX_SIDE = 16384,                 /* pixels */
};
#define FB_MAX_BYTES (512ull << 20)

/* As the loader describes it; nothing here is trusted yet. */
struct fb_info {
    int present;
    uint64_t addr;
    uint32_t pitch, width, height;       /* bytes per line; pixels */
    uint8_t bpp, type;
    uint8_t red_pos, red_size, green_pos, green_size, blue_pos, blue_size;
};

/* 0 if f is a 32-bit-per-pixel direct-colour (RGB) framebuffer tern can
 * draw on: 8-bit channels on byte boundaries, none overlapping; sides of
 * 8..FB_MAX_SIDE pixels; a pitch holding a line, in whole pixels; at most
 * FB_MAX_BYTES, below 2^52. Otherwise -1 with *why (indexed colour, EGA
 * text and other depths are named as such). */
int fb_check(const struct fb_info *f, const char **why);
/* The pixel value of a colour in a checked framebuffer. */
uint32_t fb_colour(const struct fb_info *f, uint8_t r, uint8_t g, uint8_t b);

#endif
