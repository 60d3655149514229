/*
 * reason.c - the MQTT 5.0 reason codes each packet may carry. One list per
 * packet, copied from the specification's tables; DISCONNECT and AUTH also
 * say which side may send each code ("Sent by" columns of tables 3-10 and
 * 3-13), and a code from the wrong side is as invalid as an unknown one:
 * a client has no business saying "Session taken over".
 */
#include "mqtt/reason.h"

#include <string.h>

static const uint8_t connack_codes[] = {
    0x00, 0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89,
    0x8A, 0x8C, 0x90, 0x95, 0x97, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9F,
};
static const uint8_t puback_codes[] = { 0x00, 0x10, 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99 };
static const uint8_t pubrel_codes[] = { 0x00, 0x92 };
static const uint8_t suback_codes[] = {
    0x00, 0x01, 0x02, 0x80, 0x83, 0x87, 0x8F, 0x91, 0x97, 0x9E, 0xA1, 0xA2,
};
static const uint8_t unsuback_codes[] = { 0x00, 0x11, 0x80, 0x83, 0x87, 0x8F, 0x91 };
/* DISCONNECT codes either side may send ... */
static const uint8_t disconnect_both[] = {
    0x00, 0x80, 0x81, 0x82, 0x83, 0x90, 0x93, 0x94, 0x95, 0x96, 0x97, 0x99,
};
/* ... and those only a server sends; 0x04 (with will) only a client sends. */
static const uint8_t disconnect_server[] = {
    0x87, 0x89, 0x8B, 0x8D, 0x8E, 0x8F, 0x98, 0x9A, 0x9B, 0x9C, 0x9D, 0x9E, 0x9F, 0xA0, 0xA1, 0xA2,
};

static bool in(const uint8_t *set, size_t n, uint8_t rc)
{
    return memchr(set, rc, n) != NULL;
}
#define IN(set, rc) in(set, sizeof set, rc)

bool reason_allowed(mqtt_type type, mqtt_role sender, uint8_t rc)
{
    bool server = sender == MQTT_FROM_SERVER;

    switch (type) {
    case MQTT_CONNACK:
        return IN(connack_codes, rc);
    case MQTT_PUBACK:
    case MQTT_PUBREC:
        return IN(puback_codes, rc);
    case MQTT_PUBREL:
    case MQTT_PUBCOMP:
        return IN(pubrel_codes, rc);
    case MQTT_SUBACK:
        return IN(suback_codes, rc);
    case MQTT_UNSUBACK:
        return IN(unsuback_codes, rc);
    case MQTT_DISCONNECT:
        if (IN(disconnect_both, rc))
            return true;
        return server ? IN(disconnect_server, rc) : rc == MQTT_RC_DISCONNECT_WITH_WILL;
    case MQTT_AUTH:
        /* 0x00 Success: server; 0x18 Continue: both; 0x19 Re-authenticate: client */
        return rc == MQTT_RC_CONTINUE_AUTHENTICATION ||
               rc == (server ? MQTT_RC_SUCCESS : MQTT_RC_RE_AUTHENTICATE);
    default:
        return false;
    }
}
