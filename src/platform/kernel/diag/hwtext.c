/*
 * hwtext.c - printable copies of untrusted text (hwtext.h).
 */
#include "hwtext.h"

void hw_printable(char *dst, size_t cap, const char *src)
{
    if (!cap)
        return;
    size_t i = 0;
    for (; src && src[i] && i + 1 < cap; i++) {
        unsigned char ch = (unsigned char)src[i];
        dst[i] = ch >= 0x20 && ch <= 0x7E ? (char)ch : '?';
    }
    dst[i] = 0;
}
