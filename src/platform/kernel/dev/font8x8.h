/*
 * font8x8.h - the 8x8 bitmap font of the framebuffer console: printable
 * ASCII (0x20-0x7E) and a replacement glyph for every other byte.
 */
#ifndef TERN_DEV_FONT8X8_H
#define TERN_DEV_FONT8X8_H

#include <stdint.h>

enum { FONT_W = 8, FONT_H = 8, FONT_FIRST = 0x20, FONT_GLYPHS = 96 };

/* Row `row` (0 = top) of the glyph for ch, bit 7 = leftmost pixel. Bytes
 * outside 0x20-0x7E get the replacement glyph; rows beyond 7 are empty. */
uint8_t font8x8_row(unsigned char ch, unsigned row);

#endif
