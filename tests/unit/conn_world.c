/*
 * conn_world.c - see conn_world.h.
 */
#include "conn_world.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void quiet(void *ctx, broker_log_level level, const char *msg)
{
    (void)ctx;
    if (getenv("TERN_TEST_LOG"))
        fprintf(stderr, "  [conn %d] %s\n", (int)level, msg);
}

static void counting(void *ctx, broker_log_level level, const char *msg)
{
    (*(int *)ctx)++;
    quiet(NULL, level, msg);
}

static bool init(cworld *w, const broker_limits *lim, const conn_server_config *extra)
{
    broker_config cfg;
    conn_server_config cc;

    memset(w, 0, sizeof *w);
    w->now = 1000000;
    memset(&cfg, 0, sizeof cfg);
    if (lim)
        cfg.limits = *lim;
    if (cfg.limits.sys_interval_s == 0)
        cfg.limits.sys_interval_s = UINT32_MAX; /* $SYS only when a test asks */
    cfg.allow_anonymous = true;
    cfg.log = quiet;
    cfg.log_level = BROKER_LOG_DEBUG;
    cfg.version = "test";
    w->b = broker_create(&cfg, w->now);
    memset(&cc, 0, sizeof cc);
    cc.b = w->b;
    cc.io = extra->io ? extra->io : &fake_transport;
    cc.tls_ops = extra->tls_ops;
    cc.tls = extra->tls;
    cc.handshake_timeout_ms = 3000;
    cc.max_handshakes = extra->max_handshakes;
    cc.max_handshakes_per_address = extra->max_handshakes_per_address;
    cc.max_input_bytes = extra->max_input_bytes;
    cc.clock_us = extra->clock_us;
    cc.log = extra->log ? extra->log : quiet;
    cc.log_ctx = extra->log_ctx;
    cc.log_level = BROKER_LOG_DEBUG;
    w->cs = w->b ? conn_server_create(&cc) : NULL;
    return w->cs != NULL;
}

bool cw_init(cworld *w, const broker_limits *lim, const conn_tls_ops *tls_ops,
             tern_tls_server *tls)
{
    conn_server_config extra = {.tls_ops = tls_ops, .tls = tls};
    return init(w, lim, &extra);
}

bool cw_init_limited(cworld *w, const conn_tls_ops *tls_ops, tern_tls_server *tls,
                     uint32_t max_handshakes, uint32_t per_address, int *log_lines)
{
    conn_server_config extra = {.tls_ops = tls_ops, .tls = tls, .max_handshakes = max_handshakes,
                                .max_handshakes_per_address = per_address,
                                .log = log_lines ? counting : NULL, .log_ctx = log_lines};
    return init(w, NULL, &extra);
}

bool cw_init_config(cworld *w, const broker_limits *lim, const conn_server_config *extra)
{
    return init(w, lim, extra);
}

bool cw_init_io(cworld *w, const conn_transport *io)
{
    conn_server_config extra = {.io = io};
    return init(w, NULL, &extra);
}

bool cw_init_input_budget(cworld *w, uint64_t max_input_bytes)
{
    conn_server_config extra = {.max_input_bytes = max_input_bytes};
    return init(w, NULL, &extra);
}

void cw_free(cworld *w, fake_link **links, int n)
{
    for (int i = 0; i < n; i++) {
        if (!links[i]->closed)
            conn_drop(w->cs, &links[i]->c);
        fake_link_free(links[i]);
    }
    conn_server_destroy(w->cs);
    broker_destroy(w->b);
}

void cw_turn(cworld *w, fake_link **links, int n)
{
    conn_turn_begin(w->cs, w->now);
    for (int i = 0; i < n; i++) {
        fake_link *l = links[i];
        if (!l->closed && l->want_read && (l->up.len > 0 || l->eof))
            (void)conn_readable(w->cs, &l->c, w->now);
    }
    conn_turn_end(w->cs, w->now);
}

size_t cw_put_connect(fake_link *l, const char *id, const char *will)
{
    uint8_t buf[256];
    mqtt_connect cp;
    memset(&cp, 0, sizeof cp);
    cp.level = 4;
    cp.clean_session = true;
    cp.client_id = (mqtt_bytes){(const uint8_t *)id, strlen(id)};
    if (will) {
        cp.will_flag = true;
        cp.will_topic = (mqtt_bytes){(const uint8_t *)will, strlen(will)};
        cp.will_payload = (mqtt_bytes){(const uint8_t *)"gone", 4};
    }
    size_t n = mqtt_encode_connect(buf, sizeof buf, &cp);
    fake_bytes_put(&l->up, buf, n);
    return n;
}

void cw_put_subscribe(fake_link *l, const char *filter)
{
    uint8_t buf[256], qos = 0;
    mqtt_bytes f = {(const uint8_t *)filter, strlen(filter)};
    fake_bytes_put(&l->up, buf, mqtt_encode_subscribe(buf, sizeof buf, 4, 1, &f, &qos, 1));
}

void cw_put_publish_qos(fake_link *l, const char *topic, size_t len, uint8_t fillc, uint8_t qos,
                        uint16_t id)
{
    static uint8_t payload[200000];
    static uint8_t buf[sizeof payload + 64];
    memset(payload, fillc, len);
    mqtt_publish p = {.qos = qos, .packet_id = id, .topic = {(const uint8_t *)topic, strlen(topic)},
                      .payload = {payload, len}};
    fake_bytes_put(&l->up, buf, mqtt_encode_publish(buf, sizeof buf, 4, &p));
}

void cw_put_publish(fake_link *l, const char *topic, size_t len, uint8_t fillc)
{
    cw_put_publish_qos(l, topic, len, fillc, 0, 0);
}

void cw_put_partial_publish(fake_link *l, uint32_t declared, size_t sent)
{
    uint8_t hdr[8];
    size_t n = 0;
    hdr[n++] = 0x30;
    for (uint32_t v = declared;; v >>= 7) {
        hdr[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        if (v <= 0x7f)
            break;
    }
    fake_bytes_put(&l->up, hdr, n);
    static const uint8_t topic[] = {0, 3, 'b', 'i', 'g'};
    fake_bytes_put(&l->up, topic, sizeof topic);
    static uint8_t zeros[65536];
    for (size_t left = sent - sizeof topic; left > 0;) {
        size_t k = left < sizeof zeros ? left : sizeof zeros;
        fake_bytes_put(&l->up, zeros, k);
        left -= k;
    }
}

int cw_count(const uint8_t *p, size_t len, mqtt_type type, size_t *payload_bytes)
{
    int n = 0;
    size_t pos = 0, used;
    mqtt_packet pk;
    while (pos < len && mqtt_decode(p + pos, len - pos, MQTT_FROM_SERVER, 4, 0, &pk, &used) ==
                            MQTT_OK) {
        if (pk.type == type) {
            n++;
            if (payload_bytes && type == MQTT_PUBLISH)
                *payload_bytes += pk.u.publish.payload.len;
        }
        pos += used;
    }
    return n;
}

fake_link *cw_link(void)
{
    fake_link *l = malloc(sizeof *l);
    if (l)
        fake_link_init(l);
    return l;
}

