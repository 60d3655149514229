/*
 * frame.c - packet framing from the fixed header alone, for callers that
 * reassemble packets split across reads.
 */
#include "mqtt/wire.h"

mqtt_err mqtt_frame_size(const uint8_t *buf, size_t len, uint32_t max_size, uint32_t *size)
{
    uint32_t rl;
    size_t hdr;
    if (len == 0)
        return MQTT_NEED_MORE;
    MQTT_TRY(rd_fixed_header(buf, len, &hdr, &rl));
    uint32_t total = (uint32_t)hdr + rl; /* <= 5 + MQTT_MAX_REMAINING: no wrap */
    if (max_size && total > max_size)
        return MQTT_ERR_TOO_LARGE;
    *size = total;
    return MQTT_OK;
}
