/*
 * test_mqtt_utf8.c - MQTT's UTF-8 rule: RFC 3629 well-formedness, no
 * surrogates, nothing above U+10FFFF, no U+0000; control characters allowed.
 */
#include "test.h"

#include "mqtt/mqtt.h"

#include <stdlib.h>

typedef struct utf8_case {
    const char *name;
    const char *s;
    size_t len;
    int ok;
} utf8_case;

#define U(name, s, ok) { name, s, sizeof(s) - 1, ok }

static const utf8_case utf8_cases[] = {
    U("empty", "", 1),
    U("ascii", "hello/world", 1),
    U("ascii with + and #", "a+b#c", 1),
    U("U+0001 control", "\x01", 1),
    U("U+007F delete", "\x7f", 1),
    U("U+0080 first two-byte", "\xc2\x80", 1),
    U("U+009F C1 control", "\xc2\x9f", 1),
    U("U+00E9", "\xc3\xa9", 1),
    U("U+07FF last two-byte", "\xdf\xbf", 1),
    U("U+0800 first three-byte", "\xe0\xa0\x80", 1),
    U("U+20AC euro", "\xe2\x82\xac", 1),
    U("U+D7FF below surrogates", "\xed\x9f\xbf", 1),
    U("U+E000 above surrogates", "\xee\x80\x80", 1),
    U("U+FEFF BOM", "\xef\xbb\xbf", 1),
    U("U+FFFF", "\xef\xbf\xbf", 1),
    U("U+10000 first four-byte", "\xf0\x90\x80\x80", 1),
    U("U+1F600", "\xf0\x9f\x98\x80", 1),
    U("U+10FFFF last", "\xf4\x8f\xbf\xbf", 1),
    U("mixed long", "0123456789\xc3\xa9" "0123456789\xf0\x9f\x98\x80" "abcdefgh", 1),
    U("U+0000", "\x00", 0),
    U("U+0000 after ascii", "abc\x00", 0),
    U("overlong U+0000", "\xc0\x80", 0),
    U("overlong lead C1", "\xc1\xbf", 0),
    U("overlong three-byte", "\xe0\x9f\xbf", 0),
    U("overlong four-byte", "\xf0\x8f\xbf\xbf", 0),
    U("surrogate U+D800", "\xed\xa0\x80", 0),
    U("surrogate U+DFFF", "\xed\xbf\xbf", 0),
    U("above U+10FFFF", "\xf4\x90\x80\x80", 0),
    U("lead F5", "\xf5\x80\x80\x80", 0),
    U("byte FE", "\xfe", 0),
    U("byte FF", "\xff", 0),
    U("lone continuation 80", "\x80", 0),
    U("lone continuation BF", "a\xbf", 0),
    U("two-byte cut short", "\xc3", 0),
    U("three-byte cut short", "\xe2\x82", 0),
    U("four-byte cut short", "\xf0\x9f\x98", 0),
    U("two-byte then ascii", "\xc3" "A", 0),
    U("three-byte bad third", "\xe2\x82" "A", 0),
    U("four-byte bad fourth", "\xf0\x9f\x98\xc0", 0),
    U("too many continuations", "\xc3\xa9\xa9", 0),
};

TEST(mqtt_utf8_validity_table)
{
    for (size_t i = 0; i < sizeof utf8_cases / sizeof utf8_cases[0]; i++) {
        const utf8_case *u = &utf8_cases[i];
        /* An exact-size heap copy: an overread is a sanitizer failure. */
        uint8_t *s = malloc(u->len ? u->len : 1);
        CHECK(s != NULL);
        memcpy(s, u->s, u->len);
        bool ok = mqtt_utf8_valid(s, u->len);
        free(s);
        if (ok != (u->ok != 0)) {
            char msg[128];
            snprintf(msg, sizeof msg, "UTF-8 case \"%s\"", u->name);
            test_fail(__FILE__, __LINE__, msg);
        }
    }
}

/* A bad byte at every offset of a long ASCII string, so the eight-byte fast
 * path and the tail both see it. */
TEST(mqtt_utf8_rejects_bad_byte_at_every_offset)
{
    const uint8_t bad[] = { 0x00, 0x80, 0xc0, 0xff };
    uint8_t s[37];
    for (size_t b = 0; b < sizeof bad; b++) {
        for (size_t at = 0; at < sizeof s; at++) {
            memset(s, 'a', sizeof s);
            s[at] = bad[b];
            CHECK(!mqtt_utf8_valid(s, sizeof s));
        }
    }
    memset(s, 'a', sizeof s);
    CHECK(mqtt_utf8_valid(s, sizeof s));
}

/* A multi-byte character straddling an eight-byte boundary at every offset. */
TEST(mqtt_utf8_accepts_four_byte_character_at_every_offset)
{
    uint8_t s[40];
    for (size_t at = 0; at + 4 <= sizeof s; at++) {
        memset(s, 'a', sizeof s);
        memcpy(s + at, "\xf0\x9f\x98\x80", 4);
        CHECK(mqtt_utf8_valid(s, sizeof s));
        CHECK(!mqtt_utf8_valid(s, at + 3)); /* cut before its last byte */
    }
}

/* Checked through the code-point arithmetic rather than the tables above:
 * encode every scalar value with an independent encoder; the surrogates and
 * U+0000 must be the only rejections. */
static size_t encode_cp(uint32_t cp, uint8_t *o)
{
    if (cp < 0x80) {
        o[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (uint8_t)(0xc0 | cp >> 6);
        o[1] = (uint8_t)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (uint8_t)(0xe0 | cp >> 12);
        o[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
        o[2] = (uint8_t)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (uint8_t)(0xf0 | cp >> 18);
    o[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3f));
    o[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
    o[3] = (uint8_t)(0x80 | (cp & 0x3f));
    return 4;
}

TEST(mqtt_utf8_accepts_every_code_point_except_nul_and_surrogates)
{
    uint8_t b[4];
    for (uint32_t cp = 0; cp <= 0x10ffff; cp++) {
        size_t n = encode_cp(cp, b);
        bool want = cp != 0 && (cp < 0xd800 || cp > 0xdfff);
        if (mqtt_utf8_valid(b, n) != want) {
            char msg[64];
            snprintf(msg, sizeof msg, "code point U+%04X", (unsigned)cp);
            test_fail(__FILE__, __LINE__, msg);
            return;
        }
    }
}

/* Overlong forms of every code point that has a shorter encoding. */
TEST(mqtt_utf8_rejects_every_overlong_two_and_three_byte_form)
{
    for (uint32_t cp = 0; cp < 0x800; cp++) {
        uint8_t three[3] = { 0xe0, (uint8_t)(0x80 | cp >> 6), (uint8_t)(0x80 | (cp & 0x3f)) };
        CHECK(!mqtt_utf8_valid(three, 3));
        if (cp < 0x80) {
            uint8_t two[2] = { (uint8_t)(0xc0 | cp >> 6), (uint8_t)(0x80 | (cp & 0x3f)) };
            CHECK(!mqtt_utf8_valid(two, 2));
        }
    }
}
