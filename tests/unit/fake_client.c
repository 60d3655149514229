/*
 * fake_client.c - in-memory clients for driving the broker core in tests,
 * through the connection layer and the fake transport.
 */
#include "fake_client.h"

#include "broker/journal.h"
#include "model_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void quiet_log(void *ctx, broker_log_level level, const char *msg)
{
    const fworld *w = ctx;
    if (w && w->log_hook)
        w->log_hook(w->log_hook_ctx, level, msg);
    if (getenv("TERN_TEST_LOG"))
        fprintf(stderr, "  [broker %d] %s\n", (int)level, msg);
}

static void make_layer(fworld *w)
{
    conn_server_config cc;
    memset(&cc, 0, sizeof cc);
    cc.b = w->b;
    cc.io = &fake_transport;
    cc.log = quiet_log;
    cc.log_level = BROKER_LOG_DEBUG;
    w->cs = conn_server_create(&cc);
    if (!w->cs)
        abort();
    w->cs_b = w->b;
}

static void init_cfg(fworld *w, const broker_limits *lim, bool durable)
{
    broker_config cfg;
    memset(&cfg, 0, sizeof cfg);
    if (lim)
        cfg.limits = *lim;
    if (!cfg.limits.sys_interval_s)
        cfg.limits.sys_interval_s = UINT32_MAX;
    cfg.log = quiet_log;
    cfg.log_ctx = w; /* the core's lines reach w->log_hook */
    cfg.log_level = BROKER_LOG_DEBUG;
    cfg.version = "tern-test";
    cfg.allow_anonymous = true;
    cfg.durable = durable;
    w->b = broker_create(&cfg, w->now);
    if (!w->b)
        abort();
    w->lim_set = lim != NULL;
    if (lim)
        w->lim = *lim;
    make_layer(w);
}

/* The broker goes away: connections are dropped without telling it. */
static void drop_all(fworld *w)
{
    for (int i = 0; i < w->nclients; i++) {
        fclient *c = w->clients[i];
        if (c->conn) {
            conn_drop(w->cs, &c->link.c);
            c->conn = NULL;
            c->closed = true;
        }
    }
    conn_server_destroy(w->cs);
    w->cs = NULL;
}

void fw_init(fworld *w, const broker_limits *lim)
{
    memset(w, 0, sizeof *w);
    w->now = 1000000;
    init_cfg(w, lim, false);
}

void fw_init_logged(fworld *w, const broker_limits *lim,
                    void (*hook)(void *ctx, broker_log_level level, const char *msg), void *ctx)
{
    memset(w, 0, sizeof *w);
    w->now = 1000000;
    w->log_hook = hook;
    w->log_hook_ctx = ctx;
    init_cfg(w, lim, false);
}

void fw_init_durable(fworld *w, const broker_limits *lim)
{
    memset(w, 0, sizeof *w);
    w->now = 1000000;
    w->durable = true;
    init_cfg(w, lim, true);
}

static void commit_to_model(fworld *w)
{
    ms_commit_all(w->commit_ctx, w->b);
}

void fw_init_model_store(fworld *w, mstore *m)
{
    fw_init_durable(w, NULL);
    w->commit = commit_to_model;
    w->commit_ctx = m;
}

void fw_restart(fworld *w)
{
    /* A crash: the broker is gone with everything not committed, and every
     * client sees its connection drop. */
    drop_all(w);
    broker_destroy(w->b);
    w->now += 5000;
    init_cfg(w, w->lim_set ? &w->lim : NULL, true);
}

void fw_free(fworld *w)
{
    drop_all(w);
    broker_destroy(w->b);
    for (int i = 0; i < w->nclients; i++) {
        fake_bytes_free(&w->clients[i]->inbox);
        fake_link_free(&w->clients[i]->link);
        free(w->clients[i]);
    }
    w->nclients = 0;
}

fclient *fw_open(fworld *w)
{
    return fw_open_as(w, NULL, false);
}

static void link_closed(fake_link *l)
{
    fclient *c = l->owner;
    c->conn = NULL;
    c->closed = true;
}

fclient *fw_open_as(fworld *w, const char *identity, bool is_operator)
{
    fclient *c = calloc(1, sizeof *c);
    if (!c || w->nclients == 64)
        abort();
    c->reading = true;
    c->level = 4;
    fake_link_init(&c->link);
    c->link.owner = c;
    c->link.on_close = link_closed;
    c->link.identity = identity;
    c->link.is_operator = is_operator;
    c->link.peer = "test:1";
    if (w->cs_b != w->b) { /* the test replaced the broker */
        conn_server_destroy(w->cs);
        make_layer(w);
    }
    if (conn_open(w->cs, &c->link.c, false, w->now))
        c->conn = conn_core(&c->link.c);
    else
        c->closed = true; /* refused (maximum connections) */
    w->clients[w->nclients++] = c;
    return c;
}

/* What the broker wrote, into the client's inbox. */
static size_t collect(fclient *c)
{
    fake_bytes *q = &c->link.down;
    size_t len = q->len;
    fake_bytes_put(&c->inbox, fake_bytes_data(q), len);
    fake_bytes_take(q, len);
    return len;
}

/* One turn of the layer: every client with bytes waiting is readable. */
static bool turn(fworld *w)
{
    size_t moved = 0;
    int open = 0;
    for (int i = 0; i < w->nclients; i++) {
        fclient *c = w->clients[i];
        c->link.room = c->reading ? SIZE_MAX : 0;
        moved += c->link.up.len;
        open += c->conn != NULL;
    }
    conn_turn_begin(w->cs, w->now);
    for (int i = 0; i < w->nclients; i++) {
        fclient *c = w->clients[i];
        if (c->conn && c->link.up.len > 0)
            (void)conn_readable(w->cs, &c->link.c, w->now);
    }
    conn_turn_end(w->cs, w->now);
    for (int i = 0; i < w->nclients; i++) {
        fclient *c = w->clients[i];
        moved -= c->link.up.len;
        moved += collect(c);
        open -= c->conn != NULL;
        if (c->closed)
            fake_bytes_take(&c->link.up, c->link.up.len); /* died with the transport */
    }
    return moved > 0 || open > 0;
}

/* A client whose bytes the layer would read now (its input was resumed
 * after the last turn read nothing). */
static bool readable_waiting(const fworld *w)
{
    for (int i = 0; i < w->nclients; i++) {
        const fclient *c = w->clients[i];
        if (c->conn && c->link.want_read && c->link.up.len > 0)
            return true;
    }
    return false;
}

void fw_drain(fworld *w)
{
    while (turn(w) || conn_next_deadline(w->cs) == 0 || readable_waiting(w))
        ;
}

void fw_flush(fworld *w, fclient *c)
{
    c->link.room = c->reading ? SIZE_MAX : 0;
    if (c->conn)
        (void)conn_writable(w->cs, &c->link.c, w->now);
    (void)collect(c);
    fw_drain(w);
}

void fw_send(fworld *w, fclient *c, const uint8_t *p, size_t n)
{
    if (!c->conn)
        return;
    fake_bytes_put(&c->link.up, p, n);
    fw_drain(w);
}

void fw_drop(fworld *w, fclient *c)
{
    if (!c->conn)
        return;
    conn_failed(w->cs, &c->link.c, w->now);
    fw_drain(w);
}

void fw_advance(fworld *w, uint64_t ms)
{
    uint64_t end = w->now + ms;
    while (w->now < end) {
        uint64_t step = end - w->now < 100 ? end - w->now : 100;
        w->now += step;
        fw_drain(w);
    }
}

static void send_buf(fworld *w, fclient *c, const uint8_t *buf, size_t n)
{
    if (n == 0)
        abort(); /* an encoder failed: a bug in the test */
    fw_send(w, c, buf, n);
}

void fc_connect_will(fworld *w, fclient *c, const char *id, bool clean, uint16_t keepalive,
                     const char *will_topic, const char *will_msg, uint8_t will_qos,
                     bool will_retain)
{
    uint8_t buf[512];
    mqtt_connect cp;
    memset(&cp, 0, sizeof cp);
    cp.level = c->level;
    cp.clean_session = clean;
    cp.keepalive = keepalive;
    cp.client_id = (mqtt_bytes){(const uint8_t *)id, strlen(id)};
    if (will_topic) {
        cp.will_flag = true;
        cp.will_qos = will_qos;
        cp.will_retain = will_retain;
        cp.will_topic = (mqtt_bytes){(const uint8_t *)will_topic, strlen(will_topic)};
        cp.will_payload = (mqtt_bytes){(const uint8_t *)will_msg, strlen(will_msg)};
    }
    send_buf(w, c, buf, mqtt_encode_connect(buf, sizeof buf, &cp));
}

void fc_connect(fworld *w, fclient *c, const char *id, bool clean, uint16_t keepalive)
{
    fc_connect_will(w, c, id, clean, keepalive, NULL, NULL, 0, false);
}

void fc_subscribe(fworld *w, fclient *c, uint16_t id, const char *filter, uint8_t qos)
{
    /* Sized to the filter: tests subscribe to filters of any length. */
    mqtt_bytes f = {(const uint8_t *)filter, strlen(filter)};
    size_t cap = f.len + 16;
    uint8_t *buf = malloc(cap);
    if (!buf)
        abort();
    send_buf(w, c, buf, mqtt_encode_subscribe(buf, cap, c->level, id, &f, &qos, 1));
    free(buf);
}

void fc_unsubscribe(fworld *w, fclient *c, uint16_t id, const char *filter)
{
    uint8_t buf[512];
    mqtt_bytes f = {(const uint8_t *)filter, strlen(filter)};
    send_buf(w, c, buf, mqtt_encode_unsubscribe(buf, sizeof buf, c->level, id, &f, 1));
}

void fc_publish(fworld *w, fclient *c, const char *topic, const char *payload, uint8_t qos,
                bool retain, uint16_t id)
{
    mqtt_publish p = {
        .qos = qos,
        .retain = retain,
        .packet_id = id,
        .topic = {(const uint8_t *)topic, strlen(topic)},
        .payload = {(const uint8_t *)payload, strlen(payload)},
    };
    /* Sized to the message: tests publish payloads of any length. */
    size_t cap = p.topic.len + p.payload.len + 16;
    uint8_t *buf = malloc(cap);
    if (!buf)
        abort();
    send_buf(w, c, buf, mqtt_encode_publish(buf, cap, c->level, &p));
    free(buf);
}

void fc_ack(fworld *w, fclient *c, mqtt_type type, uint16_t id)
{
    uint8_t buf[4];
    send_buf(w, c, buf, mqtt_encode_ack(buf, sizeof buf, c->level, type, id));
}

void fc_disconnect(fworld *w, fclient *c)
{
    uint8_t buf[2];
    send_buf(w, c, buf, mqtt_encode_empty(buf, sizeof buf, MQTT_DISCONNECT));
}

bool fc_next(fclient *c, mqtt_packet *p)
{
    size_t n;
    if (c->rx_pos == c->inbox.len)
        return false;
    mqtt_err e = mqtt_decode(fake_bytes_data(&c->inbox) + c->rx_pos, c->inbox.len - c->rx_pos,
                             MQTT_FROM_SERVER, c->level, 0, p, &n);
    if (e != MQTT_OK) {
        fprintf(stderr, "  fake client: cannot decode broker output: %s\n", mqtt_err_str(e));
        abort();
    }
    c->rx_pos += n;
    return true;
}

void fc_clear(fclient *c)
{
    c->rx_pos = c->inbox.len;
}

int fc_count_publish(fclient *c)
{
    mqtt_packet p;
    int n = 0;
    while (fc_next(c, &p))
        n += p.type == MQTT_PUBLISH;
    return n;
}

fclient *fw_connect_as(fworld *w, const char *id, bool clean)
{
    fclient *c = fw_open(w);
    fc_connect(w, c, id, clean, 0);
    if (w->durable && c->rx_pos == c->inbox.len) {
        if (w->commit) {
            w->commit(w);
        } else {
            broker_store_batch batch;
            while (broker_store_take(w->b, &batch))
                broker_store_done(w->b, batch.seq, true);
        }
        fw_drain(w);
    }
    fc_clear(c);
    return c;
}

bool fc_next_is(fclient *c, mqtt_type t, mqtt_packet *p)
{
    return fc_next(c, p) && p->type == t;
}

bool fc_payload_is(const mqtt_packet *p, const char *s)
{
    return p->u.publish.payload.len == strlen(s) &&
           memcmp(p->u.publish.payload.p, s, strlen(s)) == 0;
}

/* MQTT 5.0 helpers. */

static void fp_took(fprops *fp, size_t n)
{
    if (n == 0)
        abort(); /* the block is full: a bug in the test */
    fp->len += n;
}

void fp_u8(fprops *fp, uint8_t id, uint8_t v)
{
    fp_took(fp, mqtt_prop_u8(fp->buf + fp->len, sizeof fp->buf - fp->len, id, v));
}

void fp_u16(fprops *fp, uint8_t id, uint16_t v)
{
    fp_took(fp, mqtt_prop_u16(fp->buf + fp->len, sizeof fp->buf - fp->len, id, v));
}

void fp_u32(fprops *fp, uint8_t id, uint32_t v)
{
    fp_took(fp, mqtt_prop_u32(fp->buf + fp->len, sizeof fp->buf - fp->len, id, v));
}

void fp_varint(fprops *fp, uint8_t id, uint32_t v)
{
    fp_took(fp, mqtt_prop_varint(fp->buf + fp->len, sizeof fp->buf - fp->len, id, v));
}

void fp_str(fprops *fp, uint8_t id, const char *s)
{
    fp_took(fp, mqtt_prop_bytes(fp->buf + fp->len, sizeof fp->buf - fp->len, id,
                                (const uint8_t *)s, strlen(s)));
}

void fp_user(fprops *fp, const char *key, const char *value)
{
    fp_took(fp, mqtt_prop_pair(fp->buf + fp->len, sizeof fp->buf - fp->len,
                               MQTT_PROP_USER_PROPERTY, (const uint8_t *)key, strlen(key),
                               (const uint8_t *)value, strlen(value)));
}

static mqtt_bytes fp_view(const fprops *fp)
{
    return fp ? (mqtt_bytes){ fp->buf, fp->len } : (mqtt_bytes){ NULL, 0 };
}

/* Buffers for the helpers below: a property block plus the fields. */
enum { FC5_BUF = sizeof(fprops) * 2 + 4096 };

void fc_send_connect(fworld *w, fclient *c, const mqtt_connect *cp)
{
    uint8_t *buf = malloc(FC5_BUF);
    if (!buf)
        abort();
    c->level = cp->level;
    send_buf(w, c, buf, mqtt_encode_connect(buf, FC5_BUF, cp));
    free(buf);
}

void fc_connect5_will(fworld *w, fclient *c, const char *id, bool clean, uint16_t keepalive,
                      const fprops *props, const char *will_topic, const char *will_msg,
                      uint8_t will_qos, bool will_retain, const fprops *will_props)
{
    mqtt_connect cp;
    memset(&cp, 0, sizeof cp);
    cp.level = MQTT_LEVEL_5;
    cp.clean_session = clean;
    cp.keepalive = keepalive;
    cp.client_id = (mqtt_bytes){ (const uint8_t *)id, strlen(id) };
    cp.props.raw = fp_view(props);
    if (will_topic) {
        cp.will_flag = true;
        cp.will_qos = will_qos;
        cp.will_retain = will_retain;
        cp.will_topic = (mqtt_bytes){ (const uint8_t *)will_topic, strlen(will_topic) };
        cp.will_payload = (mqtt_bytes){ (const uint8_t *)will_msg, strlen(will_msg) };
        cp.will_props.raw = fp_view(will_props);
    }
    fc_send_connect(w, c, &cp);
}

void fc_connect5(fworld *w, fclient *c, const char *id, bool clean, uint16_t keepalive,
                 const fprops *props)
{
    fc_connect5_will(w, c, id, clean, keepalive, props, NULL, NULL, 0, false, NULL);
}

void fc_publish5(fworld *w, fclient *c, const char *topic, const char *payload, uint8_t qos,
                 bool retain, uint16_t id, const fprops *props)
{
    mqtt_publish p = {
        .qos = qos,
        .retain = retain,
        .packet_id = id,
        .topic = { (const uint8_t *)topic, strlen(topic) },
        .payload = { (const uint8_t *)payload, strlen(payload) },
    };
    mqtt_bytes pr = fp_view(props);
    size_t cap = mqtt_publish5_size(p.topic.len, p.payload.len, qos, pr.len);
    uint8_t *buf = malloc(cap ? cap : 1);
    if (!buf)
        abort();
    send_buf(w, c, buf, mqtt_encode_publish5(buf, cap, &p, &pr, 1));
    free(buf);
}

void fc_subscribe5(fworld *w, fclient *c, uint16_t id, const char *filter, uint8_t options,
                   const fprops *props)
{
    mqtt_bytes f = { (const uint8_t *)filter, strlen(filter) };
    mqtt_bytes pr = fp_view(props);
    size_t cap = f.len + pr.len + 16;
    uint8_t *buf = malloc(cap);
    if (!buf)
        abort();
    send_buf(w, c, buf, mqtt_encode_subscribe5(buf, cap, id, &f, &options, 1, &pr));
    free(buf);
}

void fc_unsubscribe5(fworld *w, fclient *c, uint16_t id, const char *filter,
                     const fprops *props)
{
    mqtt_bytes f = { (const uint8_t *)filter, strlen(filter) };
    mqtt_bytes pr = fp_view(props);
    size_t cap = f.len + pr.len + 16;
    uint8_t *buf = malloc(cap);
    if (!buf)
        abort();
    send_buf(w, c, buf, mqtt_encode_unsubscribe5(buf, cap, id, &f, 1, &pr));
    free(buf);
}

void fc_ack5(fworld *w, fclient *c, mqtt_type type, uint16_t id, uint8_t reason,
             const fprops *props)
{
    uint8_t buf[sizeof(fprops) + 16];
    mqtt_bytes pr = fp_view(props);
    send_buf(w, c, buf, mqtt_encode_ack5(buf, sizeof buf, type, id, reason, &pr, 1));
}

void fc_reason5(fworld *w, fclient *c, mqtt_type type, uint8_t reason, const fprops *props)
{
    uint8_t buf[sizeof(fprops) + 16];
    mqtt_bytes pr = fp_view(props);
    send_buf(w, c, buf, mqtt_encode_reason5(buf, sizeof buf, type, reason, &pr, 1));
}

int fc_reason_of(const mqtt_packet *p)
{
    size_t pos = 0;
    uint8_t code;
    switch (p->type) {
    case MQTT_CONNACK:
        return p->u.connack.return_code;
    case MQTT_PUBACK:
    case MQTT_PUBREC:
    case MQTT_PUBREL:
    case MQTT_PUBCOMP:
        return p->u.ack.reason;
    case MQTT_DISCONNECT:
        return p->u.disconnect.reason;
    case MQTT_AUTH:
        return p->u.auth.reason;
    case MQTT_SUBACK:
    case MQTT_UNSUBACK:
        return mqtt_suback_next(&p->u.suback, &pos, &code) ? code : -1;
    default:
        return -1;
    }
}

const mqtt_props *fc_props_of(const mqtt_packet *p)
{
    static const mqtt_props none; /* read-only: all zero */
    switch (p->type) {
    case MQTT_CONNACK: return &p->u.connack.props;
    case MQTT_PUBLISH: return &p->u.publish.props;
    case MQTT_PUBACK:
    case MQTT_PUBREC:
    case MQTT_PUBREL:
    case MQTT_PUBCOMP: return &p->u.ack.props;
    case MQTT_SUBACK:
    case MQTT_UNSUBACK: return &p->u.suback.props;
    case MQTT_DISCONNECT: return &p->u.disconnect.props;
    case MQTT_AUTH: return &p->u.auth.props;
    case MQTT_CONNECT: return &p->u.connect.props;
    case MQTT_SUBSCRIBE: return &p->u.subscribe.props;
    case MQTT_UNSUBSCRIBE: return &p->u.unsubscribe.props;
    default: return &none;
    }
}

bool fc_prop_find(const mqtt_props *props, uint8_t id, unsigned n, mqtt_prop *out)
{
    size_t pos = 0;
    while (mqtt_prop_next(&props->raw, &pos, out)) {
        if (out->id == id && n-- == 0)
            return true;
    }
    return false;
}

bool fc_user_prop(const mqtt_props *props, const char *key, mqtt_bytes *value)
{
    mqtt_prop p;
    for (unsigned i = 0; fc_prop_find(props, MQTT_PROP_USER_PROPERTY, i, &p); i++) {
        if (fc_bytes_is(p.data, key)) {
            *value = p.data2;
            return true;
        }
    }
    return false;
}

bool fc_bytes_is(mqtt_bytes b, const char *s)
{
    return b.len == strlen(s) && (b.len == 0 || memcmp(b.p, s, b.len) == 0);
}
