/*
 * test_mqtt_topic.c - topic matching (wildcards, empty levels, the '$' rule)
 * and the validity of topic names and filters.
 */
#include "test.h"

#include "mqtt/mqtt.h"

#include <stdlib.h>

typedef struct match_case {
    const char *filter, *topic;
    int want;
} match_case;

static const match_case match_cases[] = {
    /* Literal filters. */
    { "a", "a", 1 },
    { "a", "b", 0 },
    { "a/b", "a/b", 1 },
    { "a/b", "a/b/c", 0 },
    { "a/b/c", "a/b", 0 },
    { "a", "a/", 0 },
    { "a/", "a", 0 },
    { "a/", "a/", 1 },
    { "/", "/", 1 },
    { "sport", "sports", 0 },
    { "sports", "sport", 0 },
    { "A", "a", 0 }, /* case-sensitive */
    /* Single-level wildcard. */
    { "+", "a", 1 },
    { "+", "a/b", 0 },
    { "+", "/", 0 },
    { "a/+", "a/b", 1 },
    { "a/+", "a/", 1 }, /* + matches an empty level */
    { "a/+", "a", 0 },
    { "a/+", "a/b/c", 0 },
    { "+/+", "/", 1 },
    { "+/+", "a/b", 1 },
    { "+/+", "a/b/c", 0 },
    { "/+", "/", 1 },
    { "/+", "/x", 1 },
    { "+/b", "a/b", 1 },
    { "+/b", "a/c", 0 },
    { "a/+/c", "a//c", 1 },
    { "a/+/c", "a/b/c", 1 },
    { "a/+/c", "a/b/d", 0 },
    { "sport/tennis/+", "sport/tennis/player1", 1 },
    { "sport/tennis/+", "sport/tennis/player1/ranking", 0 },
    { "sport/+", "sport", 0 },
    { "sport/+", "sport/", 1 },
    { "sport/+", "sport/tennis", 1 },  /* filter shorter than a word, topic not */
    { "a/b/c/d", "a/b/c/d/e", 0 },
    { "a/b/c/d/e", "a/b/c/d", 0 },
    { "sensors/building-1/+/temp", "sensors/building-1/floor-3/temp", 1 },
    { "sensors/building-1/+/temp", "sensors/building-2/floor-3/temp", 0 },
    /* Multi-level wildcard. */
    { "#", "a", 1 },
    { "#", "a/b/c", 1 },
    { "#", "/", 1 },
    { "a/#", "a", 1 }, /* # includes the parent level */
    { "a/#", "a/", 1 },
    { "a/#", "a/b/c", 1 },
    { "a/#", "ab", 0 },
    { "a/#", "b/a", 0 },
    { "sport/#", "sport", 1 },
    { "sport/tennis/player1/#", "sport/tennis/player1/ranking/wimbledon", 1 },
    { "sport/tennis/#", "sport/tennis", 1 },
    { "sport/tennis/#", "sport/tenni", 0 },
    { "+/#", "a", 1 },
    { "+/#", "a/b/c", 1 },
    { "/#", "/a", 1 },
    { "/#", "a", 0 },
    { "+/+/#", "a", 0 },
    { "+/+/#", "a/b", 1 },
    /* Topics starting with '$'. */
    { "#", "$SYS/x", 0 },
    { "+/x", "$SYS/x", 0 },
    { "+", "$SYS", 0 },
    { "+/#", "$SYS/broker/load", 0 },
    { "$SYS/#", "$SYS/x", 1 },
    { "$SYS/#", "$SYS", 1 },
    { "$SYS/+", "$SYS/x", 1 },
    { "$SYS/x", "$SYS/x", 1 },
    { "a/#", "a/$SYS", 1 },  /* the rule is about the first level only */
    { "a/+", "a/$x", 1 },
    { "#", "x/$SYS", 1 },
    { "/#", "/$SYS", 1 },
    /* UTF-8 compares bytewise. */
    { "caf\xc3\xa9/+", "caf\xc3\xa9/x", 1 },
    { "caf\xc3\xa9", "cafe", 0 },
};

/* Heap copy of exactly len bytes, no NUL after it: under the sanitizer
 * build, reading one byte past the end is a failure, not a silent 0. */
static uint8_t *exact_copy(const char *s, size_t len)
{
    uint8_t *p = malloc(len ? len : 1);
    if (!p)
        abort();
    memcpy(p, s, len);
    return p;
}

static bool matches(const char *filter, const char *topic)
{
    size_t fl = strlen(filter), tl = strlen(topic);
    uint8_t *f = exact_copy(filter, fl), *t = exact_copy(topic, tl);
    bool got = mqtt_topic_matches(f, fl, t, tl);
    free(f);
    free(t);
    return got;
}

TEST(mqtt_topic_matches_table)
{
    size_t n = sizeof match_cases / sizeof match_cases[0];
    int failed = 0;
    CHECK(n >= 40);
    for (size_t i = 0; i < n; i++) {
        const match_case *m = &match_cases[i];
        CHECK(mqtt_topic_filter_valid((const uint8_t *)m->filter, strlen(m->filter)));
        CHECK(mqtt_topic_name_valid((const uint8_t *)m->topic, strlen(m->topic)));
        bool got = matches(m->filter, m->topic);
        if (got != (m->want != 0)) {
            char msg[256];
            snprintf(msg, sizeof msg, "filter \"%s\" topic \"%s\": got %d", m->filter, m->topic, got);
            test_fail(__FILE__, __LINE__, msg);
            failed = 1;
        }
    }
    CHECK(!failed);
}

/* The filter equal to the topic always matches (non-$ or not): a property
 * the table spot-checks, here over every table topic. */
TEST(mqtt_topic_matches_itself_as_a_literal_filter)
{
    for (size_t i = 0; i < sizeof match_cases / sizeof match_cases[0]; i++) {
        const uint8_t *t = (const uint8_t *)match_cases[i].topic;
        size_t n = strlen(match_cases[i].topic);
        CHECK(mqtt_topic_matches(t, n, t, n));
    }
}

typedef struct valid_case {
    const char *s;
    size_t len; /* 0: strlen */
    int name_ok, filter_ok;
} valid_case;

static const valid_case valid_cases[] = {
    { "a", 0, 1, 1 },
    { "/", 0, 1, 1 },
    { "//", 0, 1, 1 },
    { "a/b/c", 0, 1, 1 },
    { "$SYS/x", 0, 1, 1 },
    { " ", 0, 1, 1 },
    { "caf\xc3\xa9", 0, 1, 1 },
    { "", 0, 0, 0 },
    { "+", 0, 0, 1 },
    { "#", 0, 0, 1 },
    { "+/+", 0, 0, 1 },
    { "+/#", 0, 0, 1 },
    { "/#", 0, 0, 1 },
    { "a/+/b", 0, 0, 1 },
    { "a/#", 0, 0, 1 },
    { "a+", 0, 0, 0 },
    { "+a", 0, 0, 0 },
    { "a/b+/c", 0, 0, 0 },
    { "a/+b/c", 0, 0, 0 },
    { "++", 0, 0, 0 },
    { "#a", 0, 0, 0 },
    { "a#", 0, 0, 0 },
    { "a/#/b", 0, 0, 0 },
    { "#/", 0, 0, 0 },
    { "##", 0, 0, 0 },
    { "a/b#", 0, 0, 0 },
    { "\xc3\xa9+", 0, 0, 0 }, /* '+' right after a multi-byte character */
    { "a\0b", 3, 0, 0 },
    { "a/\xed\xa0\x80", 0, 0, 0 },
    { "a/\xc0\xaf", 0, 0, 0 },
    { "0123456789abcdef+", 0, 0, 0 }, /* past the first eight-byte word */
    { "0123456789abcdef/+", 0, 0, 1 },
    { "0123456789abcdef/#", 0, 0, 1 },
    { "0123456789abcde#", 0, 0, 0 },
};

TEST(mqtt_topic_name_and_filter_validity_table)
{
    for (size_t i = 0; i < sizeof valid_cases / sizeof valid_cases[0]; i++) {
        const valid_case *v = &valid_cases[i];
        size_t len = v->len ? v->len : strlen(v->s);
        uint8_t *s = exact_copy(v->s, len);
        bool name_ok = mqtt_topic_name_valid(s, len);
        bool filter_ok = mqtt_topic_filter_valid(s, len);
        free(s);
        if (name_ok != (v->name_ok != 0) || filter_ok != (v->filter_ok != 0)) {
            char msg[128];
            snprintf(msg, sizeof msg, "validity of \"%s\"", v->s);
            test_fail(__FILE__, __LINE__, msg);
        }
    }
}

/* A wildcard or NUL at every offset of a long name: the word-at-a-time fast
 * path must not skip it wherever it falls. */
TEST(mqtt_topic_name_rejects_forbidden_byte_at_every_offset)
{
    const char bad[] = { '+', '#', '\0' };
    uint8_t s[40];
    for (size_t b = 0; b < sizeof bad; b++) {
        for (size_t at = 0; at < sizeof s; at++) {
            memset(s, 'x', sizeof s);
            s[at] = (uint8_t)bad[b];
            CHECK(!mqtt_topic_name_valid(s, sizeof s));
            CHECK(!mqtt_topic_filter_valid(s, sizeof s)); /* never a level of its own */
        }
    }
    memset(s, 'x', sizeof s);
    CHECK(mqtt_topic_name_valid(s, sizeof s));
    CHECK(mqtt_topic_filter_valid(s, sizeof s));
}

TEST(mqtt_topic_filter_accepts_wildcard_levels_at_every_offset)
{
    uint8_t s[40];
    for (size_t at = 1; at + 1 < sizeof s; at++) {
        memset(s, 'x', sizeof s);
        s[at - 1] = '/';
        s[at] = '+';
        s[at + 1] = '/';
        CHECK(mqtt_topic_filter_valid(s, sizeof s));
        s[at] = '#';
        CHECK(!mqtt_topic_filter_valid(s, sizeof s)); /* # not last */
        CHECK(mqtt_topic_filter_valid(s, at + 1));     /* # last */
    }
}
