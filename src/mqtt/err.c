/*
 * err.c - a short constant text per codec error, for logs and the console,
 * and the MQTT 5.0 reason code a server answers each decode error with.
 */
#include "mqtt/mqtt.h"

const char *mqtt_err_str(mqtt_err err)
{
    switch (err) {
    case MQTT_OK: return "ok";
    case MQTT_NEED_MORE: return "incomplete packet";
    case MQTT_ERR_LENGTH_ENCODING: return "bad remaining length encoding";
    case MQTT_ERR_TOO_LARGE: return "packet too large";
    case MQTT_ERR_BAD_TYPE: return "packet type not allowed";
    case MQTT_ERR_BAD_FLAGS: return "reserved flag bits set";
    case MQTT_ERR_TRUNCATED: return "field runs past end of packet";
    case MQTT_ERR_TRAILING_BYTES: return "trailing bytes after packet";
    case MQTT_ERR_BAD_UTF8: return "malformed UTF-8 string";
    case MQTT_ERR_BAD_PROTOCOL_NAME: return "unknown protocol name";
    case MQTT_ERR_BAD_PROTOCOL_LEVEL: return "unsupported protocol level";
    case MQTT_ERR_BAD_CONNECT_FLAGS: return "invalid connect flags";
    case MQTT_ERR_BAD_QOS: return "invalid QoS";
    case MQTT_ERR_BAD_TOPIC_NAME: return "invalid topic name";
    case MQTT_ERR_BAD_TOPIC_FILTER: return "invalid topic filter";
    case MQTT_ERR_ZERO_PACKET_ID: return "packet identifier is zero";
    case MQTT_ERR_NO_TOPICS: return "no topics in packet";
    case MQTT_ERR_BAD_SUBACK_CODE: return "invalid SUBACK return code";
    case MQTT_ERR_BAD_CONNACK: return "invalid CONNACK";
    case MQTT_ERR_BUFFER_FULL: return "output buffer too small";
    case MQTT_ERR_BAD_PROPERTY: return "invalid property";
    case MQTT_ERR_DUP_PROPERTY: return "property repeated";
    case MQTT_ERR_BAD_PROPERTY_VALUE: return "property value not allowed";
    case MQTT_ERR_BAD_TOPIC_ALIAS: return "invalid topic alias";
    case MQTT_ERR_BAD_REASON_CODE: return "reason code not allowed";
    case MQTT_ERR_BAD_SUB_OPTIONS: return "invalid subscription options";
    case MQTT_ERR__COUNT: break;
    }
    return "unknown error";
}

/*
 * Section 4.13: a Malformed Packet (0x81) is one that cannot be parsed by
 * the data rules (bad lengths, flags, types of values, UTF-8); a Protocol
 * Error (0x82) is a packet that parses but breaks a rule the specification
 * states ("It is a Protocol Error to ..."). Where the spec names the code
 * for a case it is cited.
 */
uint8_t mqtt_err_reason(mqtt_err err)
{
    switch (err) {
    case MQTT_ERR_TOO_LARGE:
        return MQTT_RC_PACKET_TOO_LARGE; /* 3.1.2.11.4, 4.13 */
    case MQTT_ERR_BAD_PROTOCOL_NAME:  /* 3.1.2.1: MAY answer 0x84 */
    case MQTT_ERR_BAD_PROTOCOL_LEVEL: /* [MQTT-3.1.2-2] */
        return MQTT_RC_UNSUPPORTED_PROTOCOL_VERSION;
    case MQTT_ERR_BAD_TOPIC_ALIAS:
        return MQTT_RC_TOPIC_ALIAS_INVALID; /* 3.3.2.3.4 */
    case MQTT_ERR_BAD_TYPE:           /* a packet this side may not send */
    case MQTT_ERR_BAD_TOPIC_NAME:     /* [MQTT-3.3.2-2]; empty without alias, 3.3.2.3.4 */
    case MQTT_ERR_BAD_TOPIC_FILTER:   /* [MQTT-4.7.1-1..3], [MQTT-4.8.2-1/2] */
    case MQTT_ERR_ZERO_PACKET_ID:     /* [MQTT-2.2.1-3] */
    case MQTT_ERR_NO_TOPICS:          /* [MQTT-3.8.3-2], [MQTT-3.10.3-2] */
    case MQTT_ERR_BAD_SUBACK_CODE:
    case MQTT_ERR_BAD_CONNACK:        /* [MQTT-3.2.2-6] */
    case MQTT_ERR_DUP_PROPERTY:       /* "a Protocol Error to include ... more than once" */
    case MQTT_ERR_BAD_PROPERTY_VALUE: /* "a Protocol Error ... value of 0" and the like */
    case MQTT_ERR_BAD_SUB_OPTIONS:    /* 3.8.3.1, [MQTT-3.8.3-4] */
        return MQTT_RC_PROTOCOL_ERROR;
    case MQTT_ERR_LENGTH_ENCODING:    /* [MQTT-1.5.5-1] */
    case MQTT_ERR_BAD_FLAGS:          /* [MQTT-2.1.3-1], [MQTT-3.8.3-5] */
    case MQTT_ERR_TRUNCATED:
    case MQTT_ERR_TRAILING_BYTES:
    case MQTT_ERR_BAD_UTF8:           /* [MQTT-1.5.4-1] */
    case MQTT_ERR_BAD_CONNECT_FLAGS:  /* [MQTT-3.1.2-3] */
    case MQTT_ERR_BAD_QOS:            /* [MQTT-3.3.1-4] */
    case MQTT_ERR_BAD_PROPERTY:       /* 2.2.2.2 */
    case MQTT_ERR_BAD_REASON_CODE:
        return MQTT_RC_MALFORMED_PACKET;
    case MQTT_OK:
    case MQTT_NEED_MORE:
    case MQTT_ERR_BUFFER_FULL:
    case MQTT_ERR__COUNT:
        break;
    }
    return MQTT_RC_UNSPECIFIED_ERROR;
}
