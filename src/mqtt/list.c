/*
 * list.c - iterators over the entry lists of a decoded SUBSCRIBE,
 * UNSUBSCRIBE, SUBACK or (level 5) UNSUBACK. mqtt_decode() has validated every entry, so these
 * only walk; the bounds checks that remain keep a hand-built or corrupted
 * list from reading past raw (they end the walk instead).
 */
#include "mqtt/mqtt.h"
#include "mqtt/wire.h"

/* One two-byte-length-prefixed filter at *pos. */
static bool next_filter(const mqtt_list *l, size_t *pos, mqtt_bytes *filter)
{
    mqtt_reader r = { l->raw.p, l->raw.len, *pos };

    if (*pos >= l->raw.len || rd_prefixed(&r, filter) != MQTT_OK)
        return false;
    *pos = r.pos;
    return true;
}

bool mqtt_subscribe_next(const mqtt_list *l, size_t *pos, mqtt_bytes *filter, uint8_t *options)
{
    size_t p = *pos;
    mqtt_bytes f;

    if (!next_filter(l, &p, &f) || p >= l->raw.len)
        return false;
    *filter = f;
    *options = l->raw.p[p]; /* levels 3/4: the decoder allowed only the QoS bits */
    *pos = p + 1;
    return true;
}

bool mqtt_unsubscribe_next(const mqtt_list *l, size_t *pos, mqtt_bytes *filter)
{
    return next_filter(l, pos, filter);
}

bool mqtt_suback_next(const mqtt_list *l, size_t *pos, uint8_t *code)
{
    if (*pos >= l->raw.len)
        return false;
    *code = l->raw.p[(*pos)++];
    return true;
}
