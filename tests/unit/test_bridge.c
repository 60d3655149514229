/*
 * test_bridge.c - the portable bridge (src/broker/bridge.c) driven with
 * encoded packets: the order of a connection, the bridge bit on the
 * remote CONNECT, No Local on the local subscriptions, held remote
 * publishes, relaying with the packet identifiers unchanged, topic
 * prefixes, the back-off and the keep alive.
 */
#include "test.h"

#include "broker/bridge.h"
#include "mqtt/mqtt.h"

static bridge_settings settings(void)
{
    bridge_settings s;

    memset(&s, 0, sizeof s);
    strcpy(s.client_id, "tb");
    s.keepalive_s = 10;
    s.try_private = true;
    s.backoff_min_ms = 1000;
    s.backoff_max_ms = 8000;
    strcpy(s.maps[0].pattern, "out/#");
    s.maps[0].dir = BRIDGE_OUT;
    s.maps[0].qos = 1;
    strcpy(s.maps[0].local_prefix, "site/");
    strcpy(s.maps[0].remote_prefix, "hq/");
    strcpy(s.maps[1].pattern, "in/#");
    s.maps[1].dir = BRIDGE_IN;
    s.maps[1].qos = 2;
    s.nmaps = 2;
    return s;
}

/* The next packet of a side's output (consumed), decoded as a server
 * reads it; false when there is none. */
static bool next_out(bridge *b, bridge_side side, mqtt_packet *pk, uint8_t *copy)
{
    size_t n, used = 0;
    const uint8_t *p = broker_bridge_output(b, side, &n);

    if (p == NULL)
        return false;
    memcpy(copy, p, n < 4096 ? n : 4096);
    if (mqtt_decode(copy, n, MQTT_FROM_CLIENT, side == BRIDGE_LOCAL ? MQTT_LEVEL_5 : 0, 0, pk,
                    &used) != MQTT_OK)
        return false;
    broker_bridge_output_taken(b, side, used);
    return true;
}

/* The first attempt primes the local session (bridge.h): CONNECT,
 * SUBSCRIBE, then on to the remote. */
static bool prime(bridge *b, uint64_t now)
{
    uint8_t buf[64], copy[4096], code = 1;
    mqtt_packet pk;
    size_t n;

    if (!broker_bridge_tick(b, 0, now) || broker_bridge_get_state(b) != BRIDGE_DIAL_LOCAL)
        return false;
    broker_bridge_opened(b, BRIDGE_LOCAL, now);
    if (!next_out(b, BRIDGE_LOCAL, &pk, copy) || pk.type != MQTT_CONNECT)
        return false;
    n = mqtt_encode_connack5(buf, sizeof buf, false, 0, NULL, 0);
    if (!broker_bridge_input(b, BRIDGE_LOCAL, buf, n, now) ||
        !next_out(b, BRIDGE_LOCAL, &pk, copy) || pk.type != MQTT_SUBSCRIBE)
        return false;
    n = mqtt_encode_suback5(buf, sizeof buf, MQTT_SUBACK, 1, &code, 1, NULL, 0);
    return broker_bridge_input(b, BRIDGE_LOCAL, buf, n, now) &&
           broker_bridge_get_state(b) == BRIDGE_DIAL_REMOTE &&
           broker_bridge_get_stats(b)->connects == 0;
}

static bool feed_publish(bridge *b, bridge_side side, const char *topic, uint8_t qos,
                         uint16_t id, uint64_t now)
{
    uint8_t buf[256];
    mqtt_publish p = {.qos = qos, .packet_id = id,
                      .topic = {(const uint8_t *)topic, strlen(topic)},
                      .payload = {(const uint8_t *)"hi", 2}};
    uint8_t level = side == BRIDGE_LOCAL ? MQTT_LEVEL_5 : MQTT_LEVEL_311;
    size_t n = mqtt_encode_publish(buf, sizeof buf, level, &p);

    return broker_bridge_input(b, side, buf, n, now);
}

TEST(bridge_connects_remote_then_local_and_relays_both_ways_with_ids_unchanged)
{
    bridge_settings s = settings();
    bridge *b = broker_bridge_create(&s);
    uint8_t buf[256], copy[4096];
    mqtt_packet pk;
    uint8_t code = 1;
    size_t n;

    CHECK(b != NULL);
    CHECK_EQ(broker_bridge_get_state(b), BRIDGE_WAIT);
    CHECK(prime(b, 100));
    CHECK_EQ(broker_bridge_get_state(b), BRIDGE_DIAL_REMOTE);
    broker_bridge_opened(b, BRIDGE_REMOTE, 100);
    CHECK(next_out(b, BRIDGE_REMOTE, &pk, copy));
    CHECK_EQ(pk.type, MQTT_CONNECT);
    CHECK(pk.u.connect.bridge);            /* level 0x84: Mosquitto's try_private */
    CHECK_EQ(pk.u.connect.level, MQTT_LEVEL_311);
    CHECK(!pk.u.connect.clean_session);
    CHECK_EQ(pk.u.connect.keepalive, 10);

    n = mqtt_encode_connack(buf, sizeof buf, MQTT_LEVEL_311, false, 0);
    CHECK(broker_bridge_input(b, BRIDGE_REMOTE, buf, n, 110));
    CHECK(next_out(b, BRIDGE_REMOTE, &pk, copy));
    CHECK_EQ(pk.type, MQTT_SUBSCRIBE);
    CHECK_EQ(pk.u.subscribe.count, 1);     /* the 'in' mapping only */
    {
        size_t pos = 0;
        mqtt_bytes f;
        uint8_t opt;
        CHECK(mqtt_subscribe_next(&pk.u.subscribe, &pos, &f, &opt));
        CHECK(f.len == 4 && memcmp(f.p, "in/#", 4) == 0);
        CHECK_EQ(opt, 2);
    }
    /* A remote publish before the local link is up is held, not acked. */
    CHECK(feed_publish(b, BRIDGE_REMOTE, "in/x", 1, 9, 111));
    CHECK(broker_bridge_output(b, BRIDGE_REMOTE, &n) == NULL);
    n = mqtt_encode_suback(buf, sizeof buf, MQTT_LEVEL_311, 1, &code, 1);
    CHECK(broker_bridge_input(b, BRIDGE_REMOTE, buf, n, 112));
    CHECK_EQ(broker_bridge_get_state(b), BRIDGE_DIAL_LOCAL);

    broker_bridge_opened(b, BRIDGE_LOCAL, 113);
    CHECK(next_out(b, BRIDGE_LOCAL, &pk, copy));
    CHECK_EQ(pk.type, MQTT_CONNECT);
    CHECK_EQ(pk.u.connect.level, MQTT_LEVEL_5);
    CHECK(!pk.u.connect.clean_session);
    CHECK_EQ(pk.u.connect.props.session_expiry, UINT32_MAX);
    n = mqtt_encode_connack5(buf, sizeof buf, false, 0, NULL, 0);
    CHECK(broker_bridge_input(b, BRIDGE_LOCAL, buf, n, 114));
    CHECK(next_out(b, BRIDGE_LOCAL, &pk, copy));
    CHECK_EQ(pk.type, MQTT_SUBSCRIBE);
    {
        size_t pos = 0;
        mqtt_bytes f;
        uint8_t opt;
        CHECK(mqtt_subscribe_next(&pk.u.subscribe, &pos, &f, &opt));
        CHECK(f.len == 10 && memcmp(f.p, "site/out/#", 10) == 0);
        CHECK_EQ(opt, 1 | MQTT_SUBOPT_NO_LOCAL | MQTT_SUBOPT_RETAIN_AS_PUBLISHED);
    }
    CHECK(broker_bridge_output(b, BRIDGE_LOCAL, &n) == NULL); /* still held */
    code = 1;
    n = mqtt_encode_suback5(buf, sizeof buf, MQTT_SUBACK, 1, &code, 1, NULL, 0);
    CHECK(broker_bridge_input(b, BRIDGE_LOCAL, buf, n, 115));
    CHECK_EQ(broker_bridge_get_state(b), BRIDGE_UP);

    /* The held publish goes to the local broker, same id, same topic
     * (no prefixes on the 'in' mapping). */
    CHECK(next_out(b, BRIDGE_LOCAL, &pk, copy));
    CHECK_EQ(pk.type, MQTT_PUBLISH);
    CHECK_EQ(pk.u.publish.packet_id, 9);
    CHECK_EQ(pk.u.publish.qos, 1);
    CHECK(pk.u.publish.topic.len == 4 && memcmp(pk.u.publish.topic.p, "in/x", 4) == 0);
    /* Its PUBACK from the local broker goes back to the remote. */
    n = mqtt_encode_ack(buf, sizeof buf, MQTT_LEVEL_5, MQTT_PUBACK, 9);
    CHECK(broker_bridge_input(b, BRIDGE_LOCAL, buf, n, 116));
    CHECK(next_out(b, BRIDGE_REMOTE, &pk, copy));
    CHECK_EQ(pk.type, MQTT_PUBACK);
    CHECK_EQ(pk.u.ack.packet_id, 9);

    /* Local -> remote: prefix swapped, id kept; the remote's PUBACK comes
     * back to the local broker. */
    CHECK(feed_publish(b, BRIDGE_LOCAL, "site/out/t", 1, 300, 117));
    CHECK(next_out(b, BRIDGE_REMOTE, &pk, copy));
    CHECK_EQ(pk.type, MQTT_PUBLISH);
    CHECK_EQ(pk.u.publish.packet_id, 300);
    CHECK(pk.u.publish.topic.len == 8 && memcmp(pk.u.publish.topic.p, "hq/out/t", 8) == 0);
    n = mqtt_encode_ack(buf, sizeof buf, MQTT_LEVEL_311, MQTT_PUBACK, 300);
    CHECK(broker_bridge_input(b, BRIDGE_REMOTE, buf, n, 118));
    CHECK(next_out(b, BRIDGE_LOCAL, &pk, copy));
    CHECK_EQ(pk.type, MQTT_PUBACK);
    CHECK_EQ(pk.u.ack.packet_id, 300);
    CHECK_EQ(broker_bridge_get_stats(b)->sent, 1);
    CHECK_EQ(broker_bridge_get_stats(b)->received, 1);
    CHECK_EQ(broker_bridge_get_stats(b)->connects, 1);
    broker_bridge_destroy(b);
}

TEST(bridge_relays_the_puback_of_a_relayed_publish_to_the_remote)
{
    bridge_settings s = settings();
    bridge *b = broker_bridge_create(&s);
    uint8_t buf[64], copy[4096], code = 2;
    mqtt_packet pk;
    size_t n;

    CHECK(prime(b, 0));
    broker_bridge_opened(b, BRIDGE_REMOTE, 0);
    n = mqtt_encode_connack(buf, sizeof buf, MQTT_LEVEL_311, false, 0);
    CHECK(broker_bridge_input(b, BRIDGE_REMOTE, buf, n, 0));
    n = mqtt_encode_suback(buf, sizeof buf, MQTT_LEVEL_311, 1, &code, 1);
    CHECK(broker_bridge_input(b, BRIDGE_REMOTE, buf, n, 0));
    broker_bridge_opened(b, BRIDGE_LOCAL, 0);
    n = mqtt_encode_connack5(buf, sizeof buf, false, 0, NULL, 0);
    CHECK(broker_bridge_input(b, BRIDGE_LOCAL, buf, n, 0));
    n = mqtt_encode_suback5(buf, sizeof buf, MQTT_SUBACK, 1, &code, 1, NULL, 0);
    CHECK(broker_bridge_input(b, BRIDGE_LOCAL, buf, n, 0));
    CHECK_EQ(broker_bridge_get_state(b), BRIDGE_UP);
    while (next_out(b, BRIDGE_REMOTE, &pk, copy) || next_out(b, BRIDGE_LOCAL, &pk, copy))
        ;
    /* QoS 2 from the remote: PUBLISH, PUBREC back, PUBREL on, PUBCOMP back. */
    CHECK(feed_publish(b, BRIDGE_REMOTE, "in/q2", 2, 41, 1));
    CHECK(next_out(b, BRIDGE_LOCAL, &pk, copy));
    CHECK_EQ(pk.u.publish.qos, 2);
    CHECK_EQ(pk.u.publish.packet_id, 41);
    n = mqtt_encode_ack(buf, sizeof buf, MQTT_LEVEL_5, MQTT_PUBREC, 41);
    CHECK(broker_bridge_input(b, BRIDGE_LOCAL, buf, n, 2));
    CHECK(next_out(b, BRIDGE_REMOTE, &pk, copy));
    CHECK_EQ(pk.type, MQTT_PUBREC);
    CHECK_EQ(pk.u.ack.packet_id, 41);
    n = mqtt_encode_ack(buf, sizeof buf, MQTT_LEVEL_311, MQTT_PUBREL, 41);
    CHECK(broker_bridge_input(b, BRIDGE_REMOTE, buf, n, 3));
    CHECK(next_out(b, BRIDGE_LOCAL, &pk, copy));
    CHECK_EQ(pk.type, MQTT_PUBREL);
    n = mqtt_encode_ack(buf, sizeof buf, MQTT_LEVEL_5, MQTT_PUBCOMP, 41);
    CHECK(broker_bridge_input(b, BRIDGE_LOCAL, buf, n, 4));
    CHECK(next_out(b, BRIDGE_REMOTE, &pk, copy));
    CHECK_EQ(pk.type, MQTT_PUBCOMP);
    CHECK_EQ(pk.u.ack.packet_id, 41);
    broker_bridge_destroy(b);
}

TEST(bridge_refused_connack_fails_and_backs_off)
{
    bridge_settings s = settings();
    bridge *b = broker_bridge_create(&s);
    uint8_t buf[8];
    size_t n;

    CHECK(prime(b, 1000));
    broker_bridge_opened(b, BRIDGE_REMOTE, 1000);
    n = mqtt_encode_connack(buf, sizeof buf, MQTT_LEVEL_311, false, MQTT_CONNACK_NOT_AUTHORIZED);
    CHECK(!broker_bridge_input(b, BRIDGE_REMOTE, buf, n, 1000));
    CHECK_EQ(broker_bridge_get_state(b), BRIDGE_WAIT);
    CHECK(strstr(broker_bridge_last_error(b), "CONNACK code 5") != NULL);
    CHECK(broker_bridge_deadline(b) >= 1500 && broker_bridge_deadline(b) <= 2000);
    CHECK(broker_bridge_output(b, BRIDGE_REMOTE, &n) == NULL);
    CHECK(broker_bridge_tick(b, 0, 1400));
    CHECK_EQ(broker_bridge_get_state(b), BRIDGE_WAIT);
    CHECK_EQ(broker_bridge_get_stats(b)->failures, 1);
    broker_bridge_destroy(b);
}

TEST(bridge_backoff_doubles_to_the_cap_with_jitter_in_the_upper_half)
{
    CHECK_EQ(broker_bridge_backoff_ms(1000, 60000, 1, 0), 500);
    CHECK_EQ(broker_bridge_backoff_ms(1000, 60000, 1, 500), 1000);
    CHECK_EQ(broker_bridge_backoff_ms(1000, 60000, 3, 0), 2000);
    CHECK_EQ(broker_bridge_backoff_ms(1000, 60000, 30, 0), 30000);
    CHECK(broker_bridge_backoff_ms(1000, 60000, 30, UINT32_MAX) <= 60000);
    for (uint32_t r = 0; r < 1000; r += 37) {
        uint64_t d = broker_bridge_backoff_ms(1000, 60000, 4, r * 2654435761u);
        CHECK(d >= 4000 && d <= 8000);
    }
}

TEST(bridge_remote_silence_past_the_keepalive_fails_and_pings_before)
{
    bridge_settings s = settings();
    bridge *b = broker_bridge_create(&s);
    uint8_t buf[8], copy[4096];
    mqtt_packet pk;
    size_t n;

    CHECK(prime(b, 0));
    broker_bridge_opened(b, BRIDGE_REMOTE, 0);
    (void)next_out(b, BRIDGE_REMOTE, &pk, copy);
    n = mqtt_encode_connack(buf, sizeof buf, MQTT_LEVEL_311, false, 0);
    CHECK(broker_bridge_input(b, BRIDGE_REMOTE, buf, n, 0));
    (void)next_out(b, BRIDGE_REMOTE, &pk, copy);
    CHECK(broker_bridge_tick(b, 0, 9000)); /* before the keep alive: nothing */
    CHECK(broker_bridge_output(b, BRIDGE_REMOTE, &n) == NULL);
    /* (the connect timeout is separate: the test stays under it) */
    CHECK(broker_bridge_deadline(b) <= 10000);
    broker_bridge_destroy(b);

    b = broker_bridge_create(&s);
    CHECK(prime(b, 0));
    broker_bridge_opened(b, BRIDGE_REMOTE, 0);
    CHECK(!broker_bridge_tick(b, 0, BRIDGE_CONNECT_TIMEOUT_MS));
    CHECK(strstr(broker_bridge_last_error(b), "timed out") != NULL);
    broker_bridge_destroy(b);
}

TEST(bridge_map_topic_swaps_prefixes_by_direction)
{
    bridge_settings s = settings();
    char out[64];

    CHECK_EQ(broker_bridge_map_topic(&s, BRIDGE_OUT, (const uint8_t *)"site/out/a/b", 12, out,
                              sizeof out), 10);
    CHECK(strcmp(out, "hq/out/a/b") == 0);
    CHECK_EQ(broker_bridge_map_topic(&s, BRIDGE_IN, (const uint8_t *)"site/out/a", 10, out,
                                     sizeof out),
             0);
    CHECK_EQ(broker_bridge_map_topic(&s, BRIDGE_IN, (const uint8_t *)"in/z", 4, out, sizeof out),
             4);
    CHECK(strcmp(out, "in/z") == 0);
    CHECK_EQ(broker_bridge_map_topic(&s, BRIDGE_OUT, (const uint8_t *)"site/out/a", 10, out, 5), 0);
}

TEST(mqtt_decode_reads_the_bridge_bit_of_a_311_connect_and_encodes_it)
{
    uint8_t buf[64];
    mqtt_connect c;
    mqtt_packet pk;
    size_t n, used;

    memset(&c, 0, sizeof c);
    c.level = MQTT_LEVEL_311;
    c.bridge = true;
    c.client_id.p = (const uint8_t *)"x";
    c.client_id.len = 1;
    n = mqtt_encode_connect(buf, sizeof buf, &c);
    CHECK(n > 0);
    CHECK_EQ(buf[8], 0x84);
    CHECK_EQ(mqtt_decode(buf, n, MQTT_FROM_CLIENT, 0, 0, &pk, &used), MQTT_OK);
    CHECK(pk.u.connect.bridge);
    CHECK_EQ(pk.u.connect.level, MQTT_LEVEL_311);
    /* 0x85 (5.0 with the bit) is still an unknown level. */
    buf[8] = 0x85;
    CHECK_EQ(mqtt_decode(buf, n, MQTT_FROM_CLIENT, 0, 0, &pk, &used),
             MQTT_ERR_BAD_PROTOCOL_LEVEL);
}

TEST(bridge_packet_over_max_packet_fails_before_it_is_buffered)
{
    bridge_settings s = settings();
    bridge *b;
    uint8_t buf[8];
    /* A PUBLISH announcing 2 MiB: only its fixed header arrives. */
    const uint8_t big[] = {0x30, 0x80, 0x80, 0x80, 0x01};
    size_t n;

    s.max_packet = 1024;
    b = broker_bridge_create(&s);
    CHECK(prime(b, 0));
    broker_bridge_opened(b, BRIDGE_REMOTE, 0);
    n = mqtt_encode_connack(buf, sizeof buf, MQTT_LEVEL_311, false, 0);
    CHECK(broker_bridge_input(b, BRIDGE_REMOTE, buf, n, 0));
    CHECK(!broker_bridge_input(b, BRIDGE_REMOTE, big, sizeof big, 1));
    CHECK(strstr(broker_bridge_last_error(b), "over limits.max_packet_size") != NULL);
    CHECK_EQ(broker_bridge_get_state(b), BRIDGE_WAIT);
    broker_bridge_destroy(b);
}

TEST(bridge_primes_the_local_session_first_and_leaves_its_deliveries_unacked)
{
    bridge_settings s = settings();
    bridge *b = broker_bridge_create(&s);
    uint8_t buf[64], copy[4096];
    mqtt_packet pk;
    size_t n;

    CHECK(broker_bridge_tick(b, 0, 0));
    CHECK_EQ(broker_bridge_get_state(b), BRIDGE_DIAL_LOCAL);
    broker_bridge_opened(b, BRIDGE_LOCAL, 0);
    CHECK(next_out(b, BRIDGE_LOCAL, &pk, copy));
    n = mqtt_encode_connack5(buf, sizeof buf, true, 0, NULL, 0);
    CHECK(broker_bridge_input(b, BRIDGE_LOCAL, buf, n, 0));
    /* A delivery of the old session while priming: not acknowledged, not
     * relayed anywhere. */
    CHECK(feed_publish(b, BRIDGE_LOCAL, "site/out/a", 1, 5, 0));
    CHECK(next_out(b, BRIDGE_LOCAL, &pk, copy));
    CHECK_EQ(pk.type, MQTT_SUBSCRIBE);
    CHECK(!next_out(b, BRIDGE_LOCAL, &pk, copy));
    uint8_t code = 1;
    n = mqtt_encode_suback5(buf, sizeof buf, MQTT_SUBACK, 1, &code, 1, NULL, 0);
    CHECK(broker_bridge_input(b, BRIDGE_LOCAL, buf, n, 0));
    CHECK_EQ(broker_bridge_get_state(b), BRIDGE_DIAL_REMOTE); /* the platform closes the link */
    CHECK(broker_bridge_output(b, BRIDGE_REMOTE, &n) == NULL);
    CHECK(broker_bridge_output(b, BRIDGE_LOCAL, &n) == NULL);
    CHECK(broker_bridge_input(b, BRIDGE_LOCAL, buf, 4, 0)); /* late bytes: dropped */
    broker_bridge_destroy(b);
}

TEST(bridge_prime_is_not_timed_by_the_remote_keepalive)
{
    bridge_settings s = settings();
    bridge *b = broker_bridge_create(&s);

    CHECK(broker_bridge_tick(b, 0, 100000)); /* last_rx is 0: a remote test would fail here */
    broker_bridge_opened(b, BRIDGE_LOCAL, 100000);
    CHECK(broker_bridge_tick(b, 0, 100001));
    CHECK_EQ(broker_bridge_get_state(b), BRIDGE_LOCAL_CONNACK);
    broker_bridge_destroy(b);
}
