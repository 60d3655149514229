/*
 * test_mqtt5_subscribe.c - MQTT 5.0 SUBSCRIBE and UNSUBSCRIBE in the
 * decoder: every value of the options byte, shared subscription syntax
 * ($share/NAME/FILTER) in both packets and in mqtt_share_split(), and
 * that level 3/4 keeps its own rules for both.
 */
#include "test.h"

#include "mqtt5_build.h"

/* A SUBSCRIBE (opt >= 0) or UNSUBSCRIBE (opt < 0) with one filter. */
static mqtt_err one_filter(const char *filter, int opt, uint8_t level)
{
    bbuf body = { .n = 0 }, pkt;
    mqtt_packet p;
    bb_u16(&body, 1);
    if (level == MQTT_LEVEL_5)
        bb_u8(&body, 0);
    bb_str(&body, filter);
    if (opt >= 0)
        bb_u8(&body, (uint8_t)opt);
    bb_frame(&pkt, opt >= 0 ? 0x82 : 0xa2, &body);
    return bb_decode(&pkt, MQTT_FROM_CLIENT, level, &p);
}

TEST(mqtt5_every_subscription_options_byte_gets_its_verdict)
{
    for (unsigned o = 0; o < 256; o++) {
        mqtt_err want = MQTT_OK;
        if (o & 0xc0)
            want = MQTT_ERR_BAD_FLAGS; /* reserved bits 6-7 */
        else if ((o & 3) == 3)
            want = MQTT_ERR_BAD_QOS;
        else if (((o >> 4) & 3) == 3)
            want = MQTT_ERR_BAD_SUB_OPTIONS; /* Retain Handling 3 */
        CHECK_EQ(one_filter("a/b", (int)o, MQTT_LEVEL_5), want);
        /* on a shared filter No Local is a Protocol Error too */
        if (want == MQTT_OK && (o & MQTT_SUBOPT_NO_LOCAL))
            want = MQTT_ERR_BAD_SUB_OPTIONS;
        CHECK_EQ(one_filter("$share/g/a/b", (int)o, MQTT_LEVEL_5), want);
        /* level 4: only QoS 0..2 */
        CHECK_EQ(one_filter("a/b", (int)o, MQTT_LEVEL_311),
                 o <= 2 ? MQTT_OK : o == 3 ? MQTT_ERR_BAD_QOS : MQTT_ERR_BAD_FLAGS);
    }
    CHECK_EQ(mqtt_err_reason(MQTT_ERR_BAD_SUB_OPTIONS), MQTT_RC_PROTOCOL_ERROR);
    CHECK_EQ(mqtt_err_reason(MQTT_ERR_BAD_FLAGS), MQTT_RC_MALFORMED_PACKET);
}

static const char *const bad_shared[] = {
    "$share/",        /* no name */
    "$share//a",      /* empty name */
    "$share/g",       /* no filter */
    "$share/g/",      /* empty filter */
    "$share/+/a",     /* wildcard in the name */
    "$share/#",       /* '#' as the name */
    "$share/a+b/c",   /* '+' inside the name */
};
static const char *const good_shared[] = {
    "$share/g/a", "$share/g/+", "$share/g/#", "$share/group-1/a/+/c", "$share/g//",
    "$share/g/$SYS/x",
};
/* filters that merely look alike and are ordinary filters */
static const char *const not_shared[] = { "$share", "$sharex/g/a", "share/g/a", "$SHARE/g/a" };

TEST(mqtt5_shared_filter_syntax_is_checked_in_subscribe_and_unsubscribe)
{
    for (size_t i = 0; i < sizeof bad_shared / sizeof bad_shared[0]; i++) {
        if (!mqtt_topic_filter_valid((const uint8_t *)bad_shared[i], strlen(bad_shared[i])))
            continue; /* "$share/#" is already no valid filter: refused as such */
        CHECK_EQ(one_filter(bad_shared[i], 1, MQTT_LEVEL_5), MQTT_ERR_BAD_TOPIC_FILTER);
        CHECK_EQ(one_filter(bad_shared[i], -1, MQTT_LEVEL_5), MQTT_ERR_BAD_TOPIC_FILTER);
        /* level 4: an ordinary filter to the codec, the broker decides */
        CHECK_EQ(one_filter(bad_shared[i], 1, MQTT_LEVEL_311), MQTT_OK);
    }
    /* "$share/#" is a valid filter whose share name would be "#" */
    CHECK_EQ(one_filter("$share/#", 1, MQTT_LEVEL_5), MQTT_ERR_BAD_TOPIC_FILTER);
    CHECK_EQ(one_filter("$share/#", 1, MQTT_LEVEL_311), MQTT_OK);
    CHECK_EQ(mqtt_err_reason(MQTT_ERR_BAD_TOPIC_FILTER), MQTT_RC_PROTOCOL_ERROR);
}

TEST(mqtt5_share_split_tells_ordinary_valid_and_malformed_shared_filters_apart)
{
    mqtt_bytes g, f;
    for (size_t i = 0; i < sizeof bad_shared / sizeof bad_shared[0]; i++)
        CHECK_EQ(mqtt_share_split((const uint8_t *)bad_shared[i], strlen(bad_shared[i]), &g, &f), -1);
    for (size_t i = 0; i < sizeof not_shared / sizeof not_shared[0]; i++)
        CHECK_EQ(mqtt_share_split((const uint8_t *)not_shared[i], strlen(not_shared[i]), &g, &f), 0);
    for (size_t i = 0; i < sizeof good_shared / sizeof good_shared[0]; i++) {
        const char *s = good_shared[i];
        CHECK_EQ(mqtt_share_split((const uint8_t *)s, strlen(s), &g, &f), 1);
        CHECK(g.len >= 1 && f.len >= 1);
        CHECK(g.p == (const uint8_t *)s + 7 && f.p == g.p + g.len + 1);
        CHECK_EQ(f.p + f.len, (const uint8_t *)s + strlen(s));
        CHECK_EQ(one_filter(s, 1, MQTT_LEVEL_5), MQTT_OK);
    }
    CHECK_EQ(mqtt_share_split((const uint8_t *)"$share/grp/a/b", 14, &g, &f), 1);
    CHECK(g.len == 3 && memcmp(g.p, "grp", 3) == 0 && f.len == 3 && memcmp(f.p, "a/b", 3) == 0);
}

TEST(mqtt5_subscribe_and_unsubscribe_need_a_property_block_and_a_filter)
{
    mqtt_packet p;
    size_t used;
    /* packet id, empty block, no filter */
    static const uint8_t none[] = { 0x82, 0x03, 0, 1, 0 };
    CHECK_EQ(mqtt_decode(none, sizeof none, MQTT_FROM_CLIENT, 5, 0, &p, &used), MQTT_ERR_NO_TOPICS);
    static const uint8_t unone[] = { 0xa2, 0x03, 0, 1, 0 };
    CHECK_EQ(mqtt_decode(unone, sizeof unone, MQTT_FROM_CLIENT, 5, 0, &p, &used), MQTT_ERR_NO_TOPICS);
    /* a 3.1.1-shaped SUBSCRIBE at level 5: the filter length's high byte is
     * read as Property Length 0, the rest misparses and is refused */
    static const uint8_t v4[] = { 0x82, 0x06, 0, 1, 0, 1, 't', 1 };
    CHECK(mqtt_decode(v4, sizeof v4, MQTT_FROM_CLIENT, 5, 0, &p, &used) != MQTT_OK);
    /* a subscription id of 0 in SUBSCRIBE */
    static const uint8_t sid0b[] = { 0x82, 0x09, 0, 1, 2, 0x0b, 0x00, 0, 1, 't', 0 };
    CHECK_EQ(mqtt_decode(sid0b, sizeof sid0b, MQTT_FROM_CLIENT, 5, 0, &p, &used),
             MQTT_ERR_BAD_PROPERTY_VALUE);
}
