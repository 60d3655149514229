/*
 * frame.c - packet framing from the fixed header alone, for callers that
 * reassemble packets split across reads.
 */
#include "mqtt/mqtt.h"

mqtt_err mqtt_frame_size(const uint8_t *buf, size_t len, uint32_t max_size, uint32_t *size)
{
    uint32_t rl = 0;
    size_t hdr = 1;
    if (len == 0)
        return MQTT_NEED_MORE;
    for (unsigned shift = 0;; shift += 7) {
        if (hdr == len)
            return MQTT_NEED_MORE;
        uint8_t b = buf[hdr++];
        rl |= (uint32_t)(b & 0x7fu) << shift;
        if (!(b & 0x80))
            break;
        if (hdr == MQTT_MAX_FIXED_HEADER)
            return MQTT_ERR_LENGTH_ENCODING;
    }
    uint32_t total = (uint32_t)hdr + rl;
    if (max_size && total > max_size)
        return MQTT_ERR_TOO_LARGE;
    *size = total;
    return MQTT_OK;
}
