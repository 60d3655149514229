/*
 * ps2kbd.c - scan code set 1 to characters (ps2kbd.h).
 */
#include "ps2kbd.h"

#include <stddef.h>

enum {
    SC_RELEASE = 0x80, SC_EXTENDED = 0xE0, SC_LSHIFT = 0x2A, SC_RSHIFT = 0x36, SC_CAPS = 0x3A,
    SC_ENTER = 0x1C, SC_BACKSPACE = 0x0E,
};

/* Make codes 0x02..0x39 of a US layout, unshifted; 0 where not a character. */
static const char plain[0x3A] = {
    [0x02] = '1', '2', '3', '4', '5', '6', '7', '8', '9', '0', '-', '=',
    [0x10] = 'q', 'w', 'e', 'r', 't', 'y', 'u', 'i', 'o', 'p', '[', ']',
    [0x1E] = 'a', 's', 'd', 'f', 'g', 'h', 'j', 'k', 'l', ';', '\'', '`',
    [0x2B] = '\\', 'z', 'x', 'c', 'v', 'b', 'n', 'm', ',', '.', '/',
    [0x39] = ' ',
};

int ps2kbd_feed(struct ps2kbd *k, uint8_t code)
{
    if (code == SC_EXTENDED) {
        k->extended = 1;
        return 0;
    }
    int ext = k->extended;
    k->extended = 0;
    uint8_t key = code & (uint8_t)~SC_RELEASE;
    int release = code & SC_RELEASE;
    if (!ext && (key == SC_LSHIFT || key == SC_RSHIFT)) {
        uint8_t bit = key == SC_LSHIFT ? 1 : 2;
        k->shift = release ? (uint8_t)(k->shift & ~bit) : (uint8_t)(k->shift | bit);
        return 0;
    }
    if (release)
        return 0;
    if (code == 0xFA || code == 0xFE || code == 0x00 || code == 0xFF)
        return 0; /* controller replies and errors, not keys */
    if (!ext && key == SC_CAPS) {
        k->caps ^= 1;
        return 0;
    }
    if (key == SC_ENTER)
        return '\n';
    if (!ext && key == SC_BACKSPACE)
        return '\b';
    if (ext || key >= sizeof plain || !plain[key])
        return PS2KBD_OTHER;
    char c = plain[key];
    if (c >= 'a' && c <= 'z' && (!!k->shift ^ k->caps))
        c = (char)(c - 'a' + 'A');
    return c;
}
