/*
 * msg.c - application messages: topic, payload and MQTT 5.0 properties in
 * one allocation, shared by reference between the retained store, session
 * queues and wills.
 */
#include "broker/base.h"
#include "broker/mem.h"
#include "broker/msg.h"

#include <string.h>

msg *bk_msg_new(broker *b, const uint8_t *topic, size_t topic_len, const uint8_t *payload,
                size_t payload_len, uint8_t qos, bool retain)
{
    return bk_msg_new5(b, topic, topic_len, payload, payload_len, NULL, 0, qos, retain, 0);
}

msg *bk_msg_new5(broker *b, const uint8_t *topic, size_t topic_len, const uint8_t *payload,
                 size_t payload_len, const uint8_t *props, size_t props_len, uint8_t qos,
                 bool retain, uint64_t expiry_ms)
{
    ALWAYS(topic_len <= UINT16_MAX && payload_len <= UINT32_MAX && props_len <= UINT32_MAX &&
           qos <= 2);
    msg *m = bk_mem_alloc(b, sizeof *m + topic_len + payload_len + props_len);
    if (!m)
        return NULL;
    m->refs = 1;
    m->store_refs = 0;
    m->store_id = 0;
    m->expiry_ms = expiry_ms;
    m->topic_len = (uint16_t)topic_len;
    m->payload_len = (uint32_t)payload_len;
    m->props_len = (uint32_t)props_len;
    m->qos = qos;
    m->retain = retain;
    if (topic_len)
        memcpy(m->data, topic, topic_len);
    if (payload_len)
        memcpy(m->data + topic_len, payload, payload_len);
    if (props_len)
        memcpy(m->data + topic_len + payload_len, props, props_len);
    return m;
}

void bk_msg_unref(broker *b, msg *m)
{
    if (!m)
        return;
    ALWAYS(m->refs > 0);
    if (--m->refs == 0)
        bk_mem_free(b, m);
}
