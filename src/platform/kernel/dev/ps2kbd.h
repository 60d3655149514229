/*
 * ps2kbd.h - PS/2 keyboard scan codes (set 1, as the i8042 translates them
 * for the firmware and for us) to characters: letters, digits, space,
 * Enter and Backspace, with Shift and Caps Lock. Enough for the installer's
 * prompts (SPEC A1: a key aborts the countdown, WIPE confirms). A pure
 * state machine, unit-tested in tests/unit/test_kconin.c.
 */
#ifndef TERN_DEV_PS2KBD_H
#define TERN_DEV_PS2KBD_H

#include <stdint.h>

struct ps2kbd {
    uint8_t shift;      /* left and right Shift held: bits 0, 1 */
    uint8_t caps;       /* Caps Lock on */
    uint8_t extended;   /* the last byte was the 0xE0 prefix */
};

/* Feed one byte from the controller. Returns the character of a key
 * pressed ('\n' for Enter, '\b' for Backspace), PS2KBD_OTHER for any other
 * key pressed (it still counts as "a key" for the countdown), or 0 for
 * releases, prefixes and modifier keys. */
enum { PS2KBD_OTHER = 0x7F };
int ps2kbd_feed(struct ps2kbd *k, uint8_t code);

#endif
