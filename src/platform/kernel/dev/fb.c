/*
 * fb.c - checks a loader's framebuffer description before anything is
 * mapped or written: the loader (or firmware behind it) could describe a
 * mode tern cannot draw, or sizes whose product overflows.
 */
#include "fb.h"

static int channel_ok(uint8_t pos, uint8_t size)
{
    return size == 8 && pos % 8 == 0 && pos <= 24;
}

int fb_check(const struct fb_info *f, const char **why)
{
    if (!f->present) {
        *why = "the loader gave no framebuffer";
        return -1;
    }
    if (f->type == FB_TYPE_EGA_TEXT) {
        *why = "EGA text mode, not a graphics framebuffer";
        return -1;
    }
    if (f->type == FB_TYPE_INDEXED) {
        *why = "indexed colour (palette) modes are not supported";
        return -1;
    }
    if (f->type != FB_TYPE_RGB) {
        *why = "unknown framebuffer type";
        return -1;
    }
    if (f->bpp != 32) {
        *why = "only 32 bits per pixel are supported";
        return -1;
    }
    if (!channel_ok(f->red_pos, f->red_size) || !channel_ok(f->green_pos, f->green_size) ||
        !channel_ok(f->blue_pos, f->blue_size) || f->red_pos == f->green_pos ||
        f->red_pos == f->blue_pos || f->green_pos == f->blue_pos) {
        *why = "colour channels are not 8-bit bytes";
        return -1;
    }
    if (f->width < 8 || f->height < 8 || f->width > FB_MAX_SIDE || f->height > FB_MAX_SIDE) {
        *why = "size out of range";
        return -1;
    }
    if (f->pitch % 4 || f->pitch / 4 < f->width) {
        *why = "pitch does not hold a line of whole pixels";
        return -1;
    }
    uint64_t bytes = (uint64_t)f->pitch * f->height;
    if (bytes > FB_MAX_BYTES || !f->addr || f->addr % 4 || f->addr >= (1ull << 52) ||
        f->addr + bytes > (1ull << 52)) {
        *why = "address or size out of range";
        return -1;
    }
    return 0;
}

uint32_t fb_colour(const struct fb_info *f, uint8_t r, uint8_t g, uint8_t b)
{
    return (uint32_t)r << f->red_pos | (uint32_t)g << f->green_pos | (uint32_t)b << f->blue_pos;
}
