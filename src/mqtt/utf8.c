/*
 * utf8.c - MQTT's UTF-8 rule for strings: well-formed per RFC 3629 and no
 * U+0000 (3.1.1 section 1.5.3). Control characters U+0001..U+001F and
 * U+007F..U+009F are accepted: the spec only says SHOULD NOT / MAY close.
 */
#include "mqtt/mqtt.h"
#include "mqtt/utf8.h"

bool mqtt_utf8_valid(const uint8_t *s, size_t len)
{
    size_t i = 0;

    while (i < len) {
        /* '+' and '#' are legal here; they only send a word to the byte loop. */
        if (len - i >= 8 && word_is_plain(load_word(s + i))) {
            i += 8;
            continue;
        }
        if (tail_is_plain(s, len, i))
            break;
        uint8_t c = s[i];
        if (c < 0x80) {
            if (c == 0)
                return false;
            i++;
            continue;
        }
        size_t n = utf8_seq(s + i, len - i);
        if (n == 0)
            return false;
        i += n;
    }
    return true;
}
