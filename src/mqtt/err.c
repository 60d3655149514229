/*
 * err.c - a short constant text per codec error, for logs and the console.
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
