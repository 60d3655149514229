/*
 * test_mqtt_frame.c - mqtt_frame_size() reads the same fixed header as
 * mqtt_decode(): the same size for valid packets, NEED_MORE until the header
 * is whole, and the same header errors.
 */
#include "test.h"

#include "mqtt/mqtt.h"

TEST(mqtt_frame_size_agrees_with_decode_on_valid_packets)
{
    static uint8_t payload[20000];
    static uint8_t buf[21000];
    const size_t plens[] = { 0, 1, 120, 121, 122, 16376, 16377, 19999 };
    for (size_t i = 0; i < sizeof plens / sizeof plens[0]; i++) {
        mqtt_publish p = { .qos = 1, .packet_id = 1, .topic = { (const uint8_t *)"ab", 2 },
                           .payload = { payload, plens[i] } };
        size_t n = mqtt_encode_publish(buf, sizeof buf, 4, &p);
        CHECK(n > 0);
        mqtt_packet pkt;
        size_t used = 0;
        uint32_t size = 0;
        CHECK_EQ(mqtt_decode(buf, n, MQTT_FROM_CLIENT, 4, 0, &pkt, &used), MQTT_OK);
        CHECK_EQ(mqtt_frame_size(buf, n, 0, &size), MQTT_OK);
        CHECK_EQ(size, used);
        /* The header alone is enough. */
        size_t hdr = n - 2 - 2 - 2 - plens[i];
        CHECK_EQ(mqtt_frame_size(buf, hdr, 0, &size), MQTT_OK);
        CHECK_EQ(size, n);
        for (size_t k = 0; k < hdr; k++)
            CHECK_EQ(mqtt_frame_size(buf, k, 0, &size), MQTT_NEED_MORE);
    }
}

TEST(mqtt_frame_size_rejects_what_decode_rejects_in_the_header)
{
    static const uint8_t five[] = { 0x30, 0xff, 0xff, 0xff, 0xff, 0x7f };
    static const uint8_t big[] = { 0x30, 0xc8, 0x01 }; /* 203 bytes in all */
    uint32_t size = 0;
    mqtt_packet pkt;
    size_t used = 0;
    CHECK_EQ(mqtt_frame_size(five, sizeof five, 0, &size), MQTT_ERR_LENGTH_ENCODING);
    CHECK_EQ(mqtt_decode(five, sizeof five, MQTT_FROM_CLIENT, 4, 0, &pkt, &used),
             MQTT_ERR_LENGTH_ENCODING);
    CHECK_EQ(mqtt_frame_size(big, sizeof big, 202, &size), MQTT_ERR_TOO_LARGE);
    CHECK_EQ(mqtt_decode(big, sizeof big, MQTT_FROM_CLIENT, 4, 202, &pkt, &used), MQTT_ERR_TOO_LARGE);
    CHECK_EQ(mqtt_frame_size(big, sizeof big, 203, &size), MQTT_OK);
    CHECK_EQ(size, 203);
}
