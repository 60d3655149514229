/*
 * fuzz_topic.c - libFuzzer target for topic validation and matching
 * (src/mqtt/topic.c, match.c).
 *
 * Input: a split byte, then two strings (a filter candidate and a topic
 * candidate). mqtt_topic_matches is compared with a small reference matcher
 * written here level by level, independently of the codec's, and the
 * validators with a reference reading of the 3.1.1 rules. Properties:
 *   - a valid topic name is a valid filter and matches itself;
 *   - "#" matches every valid name not starting with '$', "+" every such
 *     name without '/';
 *   - for any valid filter and name, the codec and the reference agree.
 */
#include "mqtt/mqtt.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c) ((c) ? (void)0 : abort())

/* Length of the level starting at s[pos..len). */
static size_t level_len(const uint8_t *s, size_t len, size_t pos)
{
    size_t n = 0;
    while (pos + n < len && s[pos + n] != '/')
        n++;
    return n;
}

static bool has_byte(const uint8_t *s, size_t len, uint8_t c)
{
    return len > 0 && memchr(s, c, len) != NULL;
}

/* The 3.1.1 rules read literally: non-empty, at most 65535 bytes, UTF-8. */
static bool ref_name_valid(const uint8_t *s, size_t len)
{
    return len >= 1 && len <= 65535 && mqtt_utf8_valid(s, len) && !has_byte(s, len, '+') &&
           !has_byte(s, len, '#');
}

/* '+' and '#' only as whole levels, '#' only last. */
static bool ref_filter_valid(const uint8_t *s, size_t len)
{
    if (len < 1 || len > 65535 || !mqtt_utf8_valid(s, len))
        return false;
    for (size_t pos = 0;;) {
        size_t n = level_len(s, len, pos);
        bool wild = has_byte(s + pos, n, '+') || has_byte(s + pos, n, '#');
        if (wild && n != 1)
            return false;
        if (n == 1 && s[pos] == '#' && pos + n != len)
            return false;
        if (pos + n == len)
            return true;
        pos += n + 1;
    }
}

static bool ref_matches(const uint8_t *f, size_t flen, const uint8_t *t, size_t tlen)
{
    if (tlen > 0 && t[0] == '$' && (f[0] == '+' || f[0] == '#'))
        return false;
    size_t fp = 0, tp = 0;
    bool t_done = false; /* the topic's last level has been consumed */
    for (;;) {
        size_t fn = level_len(f, flen, fp);
        if (fn == 1 && f[fp] == '#')
            return true; /* also matches the parent level: "a/#" ~ "a" */
        if (t_done)
            return false;
        size_t tn = level_len(t, tlen, tp);
        bool same = (fn == 1 && f[fp] == '+') || (fn == tn && memcmp(f + fp, t + tp, fn) == 0);
        if (!same)
            return false;
        bool f_last = fp + fn == flen, t_last = tp + tn == tlen;
        if (f_last)
            return t_last;
        fp += fn + 1;
        if (t_last)
            t_done = true;
        else
            tp += tn + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t split = data[0] % size;
    const uint8_t *f = data + 1, *t = data + 1 + split;
    size_t flen = split, tlen = size - 1 - split;

    bool fv = mqtt_topic_filter_valid(f, flen), tv = mqtt_topic_name_valid(t, tlen);
    FUZZ_ASSERT(fv == ref_filter_valid(f, flen));
    FUZZ_ASSERT(tv == ref_name_valid(t, tlen));
    FUZZ_ASSERT(mqtt_topic_name_valid(f, flen) == ref_name_valid(f, flen));

    if (tv) {
        FUZZ_ASSERT(mqtt_topic_filter_valid(t, tlen));
        FUZZ_ASSERT(mqtt_topic_matches(t, tlen, t, tlen));
        bool dollar = t[0] == '$';
        FUZZ_ASSERT(mqtt_topic_matches((const uint8_t *)"#", 1, t, tlen) == !dollar);
        FUZZ_ASSERT(mqtt_topic_matches((const uint8_t *)"+", 1, t, tlen) ==
                    (!dollar && !has_byte(t, tlen, '/')));
    }
    if (fv && tv)
        FUZZ_ASSERT(mqtt_topic_matches(f, flen, t, tlen) == ref_matches(f, flen, t, tlen));
    return 0;
}
