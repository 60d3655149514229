/*
 * topic.c - validity of topic names (what a PUBLISH carries) and topic
 * filters (what a SUBSCRIBE carries), 3.1.1 section 4.7. Both are UTF-8
 * strings of 1..65535 bytes; the upper bound is the caller's two-byte length
 * prefix, so it is not re-checked here. Each check is a single pass that
 * validates UTF-8 and wildcards together. Also the MQTT 5.0 shared
 * subscription form "$share/NAME/FILTER" (section 4.8.2), one source for
 * the decoder and the broker.
 */
#include "mqtt/mqtt.h"
#include "mqtt/utf8.h"

bool mqtt_topic_name_valid(const uint8_t *s, size_t len)
{
    size_t i = 0;

    if (len == 0)
        return false;
    while (i < len) {
        if (len - i >= 8 && word_is_plain(load_word(s + i))) {
            i += 8;
            continue;
        }
        if (tail_is_plain(s, len, i))
            break;
        uint8_t c = s[i];
        if (c < 0x80) {
            if (c == 0 || c == '+' || c == '#')
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

/* '+' must fill a whole level; '#' must fill the last level. A level starts
 * at the beginning or right after a '/'. */
bool mqtt_topic_filter_valid(const uint8_t *s, size_t len)
{
    size_t i = 0;

    if (len == 0)
        return false;
    while (i < len) {
        if (len - i >= 8 && word_is_plain(load_word(s + i))) {
            i += 8;
            continue;
        }
        if (tail_is_plain(s, len, i))
            break;
        uint8_t c = s[i];
        if (c >= 0x80) {
            size_t n = utf8_seq(s + i, len - i);
            if (n == 0)
                return false;
            i += n;
            continue;
        }
        if (c == 0)
            return false;
        if (c == '+' || c == '#') {
            bool level_start = i == 0 || s[i - 1] == '/';
            bool level_end = i + 1 == len || s[i + 1] == '/';
            if (!level_start || !level_end)
                return false;
            if (c == '#' && i + 1 != len)
                return false;
        }
        i++;
    }
    return true;
}

int mqtt_share_split(const uint8_t *f, size_t len, mqtt_bytes *group, mqtt_bytes *filter)
{
    static const char prefix[] = "$share/";
    const size_t plen = sizeof prefix - 1;

    if (len < plen || memcmp(f, prefix, plen) != 0)
        return 0;
    size_t i = plen;
    while (i < len && f[i] != '/') {
        if (f[i] == '+' || f[i] == '#')
            return -1; /* [MQTT-4.8.2-2] */
        i++;
    }
    /* NAME at least one character, then '/', then a non-empty FILTER
     * ([MQTT-4.8.2-1], [MQTT-4.8.2-2]) */
    if (i == plen || i == len || i + 1 == len)
        return -1;
    *group = (mqtt_bytes){ f + plen, i - plen };
    *filter = (mqtt_bytes){ f + i + 1, len - i - 1 };
    return 1;
}
