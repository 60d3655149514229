/*
 * utf8.h - internal to src/mqtt/: the pieces shared by the UTF-8 and topic
 * validators. A word-at-a-time test lets the common case (plain ASCII topic
 * text) advance eight bytes per step; anything else falls back to a byte
 * loop that decodes one multi-byte sequence with utf8_seq().
 */
#ifndef TERN_MQTT_UTF8_H
#define TERN_MQTT_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define UTF8_ONES 0x0101010101010101ull
#define UTF8_HIGH 0x8080808080808080ull

/* Non-zero iff some byte of w is zero (exact as a yes/no answer). */
static inline uint64_t word_has_zero(uint64_t w)
{
    return (w - UTF8_ONES) & ~w & UTF8_HIGH;
}

static inline uint64_t load_word(const uint8_t *s)
{
    uint64_t w;
    memcpy(&w, s, sizeof w); /* one unaligned load on the targets we build for */
    return w;
}

/* True when the eight bytes are ASCII without NUL, '+' or '#': nothing in
 * them can make a UTF-8 string, topic name or topic filter invalid, so all
 * three validators skip such words without looking at single bytes. */
static inline bool word_is_plain(uint64_t w)
{
    return ((w & UTF8_HIGH) | word_has_zero(w) | word_has_zero(w ^ (UTF8_ONES * '+')) |
            word_has_zero(w ^ (UTF8_ONES * '#'))) == 0;
}

/* The word-at-a-time loops below leave a tail of fewer than eight bytes.
 * When the string is at least eight long, the last eight bytes (overlapping
 * ones already checked) can be tested as one word instead. */
static inline bool tail_is_plain(const uint8_t *s, size_t len, size_t i)
{
    return len >= 8 && len - i < 8 && word_is_plain(load_word(s + len - 8));
}

/*
 * Length of the well-formed multi-byte sequence at s (s[0] >= 0x80), or 0
 * when it is ill-formed per RFC 3629: stray continuation byte, overlong form,
 * surrogate (U+D800..U+DFFF), above U+10FFFF, or cut short by the end.
 * The second byte's allowed range depends on the lead byte; the table of
 * RFC 3629 section 4 is spelled out in the switch.
 */
static inline size_t utf8_seq(const uint8_t *s, size_t left)
{
    uint8_t c = s[0];
    uint8_t lo = 0x80, hi = 0xbf;
    size_t n;

    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0; /* below is overlong */
        else if (c == 0xed)
            hi = 0x9f; /* above is a surrogate */
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90; /* below is overlong */
        else if (c == 0xf4)
            hi = 0x8f; /* above is past U+10FFFF */
    } else {
        return 0; /* 0x80..0xc1 (continuation or overlong lead), 0xf5..0xff */
    }
    if (left < n || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

#endif
