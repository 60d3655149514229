/*
 * match.c - does a topic name match a topic filter (3.1.1 section 4.7)?
 * Called for every subscription candidate of every message, so it is one
 * pass over both strings with no allocation and no splitting into levels.
 *
 * Both inputs must be valid (mqtt_topic_*_valid): the loop relies on a topic
 * name never containing '+' or '#', so equal bytes are always literal and
 * runs of them can be compared eight at a time without looking for wildcards.
 */
#include "mqtt/mqtt.h"

#include <string.h>

static inline uint64_t load8(const uint8_t *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof w);
    return w;
}

bool mqtt_topic_matches(const uint8_t *f, size_t flen, const uint8_t *t, size_t tlen)
{
    size_t i = 0, j = 0;

    /* Wildcards at the first level never reach server-internal ($...) topics
     * [MQTT-4.7.2-1]; a filter naming the $ level literally does. */
    if (flen && tlen && t[0] == '$' && (f[0] == '+' || f[0] == '#'))
        return false;

    for (;;) {
        while (flen - i >= 8 && tlen - j >= 8 && load8(f + i) == load8(t + j)) {
            i += 8;
            j += 8;
        }
        while (i < flen && j < tlen && f[i] == t[j]) {
            i++;
            j++;
        }
        if (i == flen)
            return j == tlen;
        uint8_t c = f[i];
        if (c == '+') {
            /* One level, possibly empty: stop at the next '/' or the end. */
            while (j < tlen && t[j] != '/')
                j++;
            i++;
            continue;
        }
        if (c == '#')
            return true; /* valid filters have '#' last, at a level start */
        /* A literal mismatch, or the topic ended first. "a/#" also matches
         * "a": the topic ended exactly where the filter has its final "/#". */
        return j == tlen && flen - i == 2 && c == '/' && f[i + 1] == '#';
    }
}
