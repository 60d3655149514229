/*
 * msg.h - building, viewing and releasing application messages (msg.c).
 */
#ifndef TERN_BROKER_MSG_H
#define TERN_BROKER_MSG_H

#include "broker/broker.h"
#include "broker/msg-t.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A message with one reference, or NULL on allocation failure. */
msg *bk_msg_new(broker *b, const uint8_t *topic, size_t topic_len, const uint8_t *payload,
                size_t payload_len, uint8_t qos, bool retain);
static inline const uint8_t *bk_msg_topic(const msg *m) { return m->data; }
static inline const uint8_t *bk_msg_payload(const msg *m) { return m->data + m->topic_len; }
/* MQTT 5.0: build a message with its forwarded properties (msg-t.h says
 * which) and its expiry (core time in ms, 0 = never). */
msg *bk_msg_new5(broker *b, const uint8_t *topic, size_t topic_len, const uint8_t *payload,
                 size_t payload_len, const uint8_t *props, size_t props_len, uint8_t qos,
                 bool retain, uint64_t expiry_ms);
static inline const uint8_t *bk_msg_props(const msg *m)
{
    return m->data + m->topic_len + m->payload_len;
}
/* Has m expired at core time now_ms? */
static inline bool bk_msg_expired(const msg *m, uint64_t now_ms)
{
    return m->expiry_ms != 0 && m->expiry_ms <= now_ms;
}
/* An application message as routing and the send paths see it: views of
 * a PUBLISH being routed (into its packet), or a msg's own (bk_msg_view).
 * props: the forwarded properties as msg-t.h says; expiry_ms as msg's. */
typedef struct bk_pubview {
    const uint8_t *topic;
    const uint8_t *payload;
    const uint8_t *props;
    size_t tlen, plen, props_len;
    uint64_t expiry_ms;
} bk_pubview;
static inline bk_pubview bk_msg_view(const msg *m)
{
    bk_pubview v = {bk_msg_topic(m), bk_msg_payload(m), bk_msg_props(m),
                    m->topic_len,    m->payload_len,    m->props_len,
                    m->expiry_ms};
    return v;
}
static inline msg *bk_msg_ref(msg *m) { m->refs++; return m; }
/* Drop a reference; the last one frees m. NULL is ignored. */
void bk_msg_unref(broker *b, msg *m);

#endif
