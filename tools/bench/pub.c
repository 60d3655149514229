/*
 * pub.c - the publisher side: one PUBLISH encoded once, copied and patched
 * (send time, packet identifier) for every message, so sending costs a
 * memcpy and no encoder call or allocation.
 *
 * Modes: with a rate, messages are spaced 1/rate apart from the start of
 * the run (a late timer sends the backlog, it does not skip); without one
 * (flood) QoS 0 fills up to a batch of bytes whenever the socket takes
 * more, and QoS 1 keeps a window of unacknowledged PUBLISHes.
 * The payload starts with the CLOCK_MONOTONIC send time in nanoseconds;
 * the subscriber (same process, same clock) subtracts it on arrival.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pub_prepare(bench_conn *c, uint64_t seed)
{
    const bench_run *r = c->w->run;
    const bench_opts *o = r->o;
    char topic[80];
    int tn = snprintf(topic, sizeof topic, "%s%u", r->topic_prefix, (unsigned)c->topic);
    if (tn < 0 || (size_t)tn >= sizeof topic)
        return -1;
    uint8_t *payload = malloc(o->size);
    if (!payload)
        return -1;
    /* Filler after the timestamp: pseudo-random so nothing on the path can
     * compress or special-case it. */
    uint64_t x = seed ^ ((uint64_t)c->idx * 0x9e3779b97f4a7c15ull) ^ 1;
    for (size_t i = 0; i < o->size; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        payload[i] = (uint8_t)x;
    }
    mqtt_publish p = {
        .qos = (uint8_t)o->qos,
        .packet_id = o->qos ? 1 : 0,
        .topic = { (const uint8_t *)topic, (size_t)tn },
        .payload = { payload, o->size },
    };
    size_t cap = mqtt_publish_size(o->level, (size_t)tn, o->size, p.qos);
    c->tmpl = malloc(cap);
    size_t n = c->tmpl ? mqtt_encode_publish(c->tmpl, cap, o->level, &p) : 0;
    free(payload);
    if (n == 0)
        return -1;
    c->tmpl_len = n;
    c->tmpl_payload = n - o->size;
    /* The packet identifier comes just before the payload, or at level 5
     * before the (empty) property block's one length byte. */
    c->tmpl_id = c->tmpl_payload - (o->level == MQTT_LEVEL_5 ? 3 : 2);
    return 0;
}

/* Copy one message into the output buffer; false when it is full. */
static bool queue_one(bench_conn *c, uint64_t now)
{
    uint8_t *p = conn_reserve(c, c->tmpl_len);
    if (!p)
        return false;
    memcpy(p, c->tmpl, c->tmpl_len);
    memcpy(p + c->tmpl_payload, &now, sizeof now);
    if (c->w->run->o->qos) {
        p[c->tmpl_id] = (uint8_t)(c->next_id >> 8);
        p[c->tmpl_id + 1] = (uint8_t)c->next_id;
        c->next_id = c->next_id == UINT16_MAX ? 1 : (uint16_t)(c->next_id + 1);
        c->inflight++;
    }
    c->out_len += c->tmpl_len;
    c->w->c.published++;
    return true;
}

int pub_fill(bench_conn *c, uint64_t now)
{
    const bench_run *r = c->w->run;
    const bench_opts *o = r->o;
    if (c->state != ST_READY || atomic_load_explicit(&r->phase, memory_order_acquire) != PHASE_RUN)
        return 0;
    /* With wolfSSL waiting to repeat a write, or bytes still queued in
     * flood mode, new messages would only wait behind them. */
    if (c->tls_wlen || (r->flood && c->out_len - c->out_off >= o->batch))
        return conn_flush(c) < 0 ? -1 : 0;
    unsigned window = o->qos ? o->window : UINT32_MAX;
    size_t queued = 0;
    if (!r->flood) {
        /* Bounded per call so one publisher far behind cannot hog the loop. */
        for (unsigned k = 0; k < 1000 && c->next_ns <= now; k++) {
            if (c->inflight >= window) {
                c->w->c.late++;
                break;
            }
            if (!queue_one(c, now))
                break;
            c->next_ns += (uint64_t)(1e9 / o->rate);
        }
    } else {
        while (queued < o->batch && c->inflight < window && queue_one(c, now))
            queued += c->tmpl_len;
    }
    int f = conn_flush(c);
    if (f < 0)
        return -1;
    /* A QoS 0 flood wants to hear as soon as the socket takes more. */
    if (f == 1 && r->flood && o->qos == 0)
        return conn_watch(c, true);
    return 0;
}
