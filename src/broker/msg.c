/*
 * msg.c - application messages: topic and payload in one allocation, shared
 * by reference between the retained store, session queues and wills.
 */
#include "broker/base.h"
#include "broker/mem.h"
#include "broker/msg.h"

#include <string.h>

msg *bk_msg_new(broker *b, const uint8_t *topic, size_t topic_len, const uint8_t *payload,
                size_t payload_len, uint8_t qos, bool retain)
{
    ALWAYS(topic_len <= UINT16_MAX && payload_len <= UINT32_MAX && qos <= 2);
    msg *m = bk_mem_alloc(b, sizeof *m + topic_len + payload_len);
    if (!m)
        return NULL;
    m->refs = 1;
    m->store_refs = 0;
    m->store_id = 0;
    m->topic_len = (uint16_t)topic_len;
    m->payload_len = (uint32_t)payload_len;
    m->qos = qos;
    m->retain = retain;
    if (topic_len)
        memcpy(m->data, topic, topic_len);
    if (payload_len)
        memcpy(m->data + topic_len, payload, payload_len);
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
