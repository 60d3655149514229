/*
 * test_kconin.c - the PS/2 keyboard's scan code decoder (dev/ps2kbd.c):
 * WIPE typed with Shift or with Caps Lock, Enter and Backspace, releases
 * and the extended prefix ignored, keys without a character still reported
 * (they abort the installer's countdown), controller replies ignored.
 */
#include "test.h"

#include "platform/kernel/dev/ps2kbd.c"

static void feed_all(struct ps2kbd *k, const uint8_t *codes, size_t n, char *out)
{
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        int c = ps2kbd_feed(k, codes[i]);
        if (c)
            out[len++] = (char)c;
    }
    out[len] = '\0';
}

TEST(kconin_wipe_with_shift_and_with_caps_lock)
{
    /* Shift down, W I P E (make + break each), Shift up, Enter. */
    const uint8_t shifted[] = {0x2A, 0x11, 0x91, 0x17, 0x97, 0x19, 0x99, 0x12, 0x92, 0xAA,
                               0x1C, 0x9C};
    struct ps2kbd k = {0};
    char out[32];
    feed_all(&k, shifted, sizeof shifted, out);
    CHECK(!strcmp(out, "WIPE\n"));
    const uint8_t caps[] = {0x3A, 0xBA, 0x11, 0x17, 0x19, 0x12, 0x3A, 0xBA, 0x11, 0x1C};
    struct ps2kbd k2 = {0};
    feed_all(&k2, caps, sizeof caps, out);
    CHECK(!strcmp(out, "WIPEw\n"));
}

TEST(kconin_backspace_other_keys_and_noise)
{
    struct ps2kbd k = {0};
    char out[32];
    /* x, Backspace, an arrow key (E0 48), F1 (0x3B), an ACK (FA), 1. */
    const uint8_t codes[] = {0x2D, 0xAD, 0x0E, 0xE0, 0x48, 0xE0, 0xC8, 0x3B, 0xFA, 0x02};
    feed_all(&k, codes, sizeof codes, out);
    CHECK(!strcmp(out, "x\b\x7f\x7f" "1"));
    /* A right-Shift release after the E0 prefix (a fake shift) does not
     * change the state. */
    const uint8_t fake[] = {0xE0, 0x2A, 0x11};
    struct ps2kbd k2 = {0};
    feed_all(&k2, fake, sizeof fake, out);
    CHECK(!strcmp(out, "\x7fw"));
}
