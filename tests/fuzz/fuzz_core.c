/*
 * fuzz_core.c - libFuzzer target for the whole broker core (src/broker/ with
 * the codec) and the connection layer above it (src/conn), driven the way
 * a platform drives them, over up to four connections on the fake
 * transport (tests/unit/fake_transport.c).
 *
 * The input is a small script. Byte 0 picks the configuration (bit 0 tiny
 * limits, work budget, subscriptions and topic limits, per-identity
 * sessions and queues and the layer's input budget included, 1 $SYS, 2 session expiry, 3 no anonymous access) and, with bit 4,
 * makes allocation number (bits 5-7) + 1 inside broker_create fail. Then each step is an op
 * byte: bits 0-1 the connection, bits 2-4 the kind, bits 5-7 an argument:
 *   0 open     1 drop (abrupt close)     2 bytes: next byte is a length
 *   3 bytes: next two bytes are a length  4 time passes: next byte * (100 << arg) ms
 *   5 toggle whether the client reads its output (slow reader, back-pressure)
 *   6 fail the next arg+1 allocations     7 read only next-byte bytes of output
 * After every step the layer runs turns until nothing moves, as a
 * platform's loop would: input is read, output written to the clients that
 * read, connections closed (a slow reader's close lingers until time
 * passes).
 *
 * Checked after every step, beyond sanitizers and the core's own ALWAYS():
 *   - every byte the broker sends decodes as a server packet at the
 *     connection's level: its CONNACK's form says which (a level-5 one
 *     has a property block, so a Remaining Length above 2), and it must be
 *     the level of the CONNECT the client sent when that decodes (an MQTT
 *     5.0 CONNECT gets a 5.0 CONNACK [MQTT-3.1.2-2's refusal aside, which
 *     is 5.0 too], a 3.1.1 one a 3.1.1 CONNACK);
 *   - the core's memory_used equals what its allocator actually holds;
 * and at the end, after broker_destroy, nothing is left allocated. Reads
 * leave the rest of the layer's read buffer poisoned, so ASan catches the
 * core reading past what it was handed.
 */
#include "broker/broker.h"
#include "conn/conn.h"
#include "mqtt/mqtt.h"
#include "sim/alloc_track.h"
#include "unit/fake_transport.h"

#include <sanitizer/asan_interface.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c) ((c) ? (void)0 : abort())

enum { NCONN = 4 };

typedef struct fconn {
    fake_link link;      /* the transport; bytes not read yet wait in link.up */
    bool open;           /* the layer has it */
    bool reading;        /* false: the transport takes nothing (slow reader) */
    fake_bytes rx;       /* incomplete packet from the broker */
    /* The client's first packet until it is judged (hello), and its level
     * when it is a CONNECT that decodes (-1 not judged yet, 0 not one);
     * the level the broker's packets decode at, from its CONNACK (0
     * before it). */
    fake_bytes hello;
    int clevel;
    uint8_t level;
} fconn;

typedef struct fworld {
    broker *b;
    conn_server *cs;
    alloc_track at;
    uint64_t now;
    fconn c[NCONN];
} fworld;

typedef struct script {
    const uint8_t *p;
    size_t len, pos;
} script;

static uint8_t next_byte(script *s)
{
    return s->pos < s->len ? s->p[s->pos++] : 0;
}

/* The fake transport's read, leaving the rest of the buffer poisoned. */
static long poisoning_read(void *ctx, conn *c, uint8_t *buf, size_t cap)
{
    ASAN_UNPOISON_MEMORY_REGION(buf, cap);
    long n = fake_transport.read(ctx, c, buf, cap);
    if (n > 0)
        ASAN_POISON_MEMORY_REGION(buf + n, cap - (size_t)n);
    return n;
}

static conn_transport transport;

static void on_close(fake_link *l)
{
    ((fconn *)l->owner)->open = false;
}

/* The broker's level on fc from the CONNACK starting at p (n bytes held),
 * checked against the client's CONNECT; 0 while its header is incomplete. */
static uint8_t connack_level(const fconn *fc, const uint8_t *p, size_t n)
{
    if (n < 2)
        return 0;
    if (p[0] != (MQTT_CONNACK << 4))
        return MQTT_LEVEL_311; /* not a CONNACK: fails to decode below */
    uint8_t level = p[1] > 2 ? MQTT_LEVEL_5 : MQTT_LEVEL_311;
    if (fc->clevel >= MQTT_LEVEL_31)
        FUZZ_ASSERT((fc->clevel == MQTT_LEVEL_5) == (level == MQTT_LEVEL_5));
    return level;
}

/* Decode every whole packet the client holds; anything else is a bug.
 * A 3.1 client's packets decode under 3.1 rules, so try both levels
 * below 5. */
static void check_rx(fconn *fc)
{
    size_t pos = 0;
    fake_bytes_put(&fc->rx, fake_bytes_data(&fc->link.down), fc->link.down.len);
    fake_bytes_take(&fc->link.down, fc->link.down.len);
    while (pos < fc->rx.len) {
        const uint8_t *p = fake_bytes_data(&fc->rx) + pos;
        if (fc->level == 0)
            fc->level = connack_level(fc, p, fc->rx.len - pos);
        if (fc->level == 0)
            break;
        mqtt_packet pk;
        size_t used = 0;
        mqtt_err e = mqtt_decode(p, fc->rx.len - pos, MQTT_FROM_SERVER, fc->level, 0, &pk, &used);
        if (e != MQTT_OK && e != MQTT_NEED_MORE && fc->level != MQTT_LEVEL_5)
            e = mqtt_decode(p, fc->rx.len - pos, MQTT_FROM_SERVER, MQTT_LEVEL_31, 0, &pk,
                            &used);
        if (e == MQTT_NEED_MORE)
            break;
        FUZZ_ASSERT(e == MQTT_OK);
        pos += used;
    }
    fake_bytes_take(&fc->rx, fc->open ? pos : fc->rx.len);
}

/* One turn; whether anything moved or waits. */
static bool turn(fworld *w)
{
    size_t up[NCONN];
    bool open[NCONN], moved = conn_next_deadline(w->cs) == 0;
    for (int i = 0; i < NCONN; i++) {
        fconn *fc = &w->c[i];
        up[i] = fc->link.up.len;
        open[i] = fc->open;
        if (fc->reading)
            fc->link.room = SIZE_MAX;
        else if (fc->link.room == SIZE_MAX)
            fc->link.room = 0;
    }
    conn_turn_begin(w->cs, w->now);
    for (int i = 0; i < NCONN; i++) {
        fconn *fc = &w->c[i];
        if (fc->open && fc->link.want_read && fc->link.up.len > 0)
            (void)conn_readable(w->cs, &fc->link.c, w->now);
    }
    conn_turn_end(w->cs, w->now);
    for (int i = 0; i < NCONN; i++) {
        fconn *fc = &w->c[i];
        moved |= fc->link.up.len != up[i] || fc->open != open[i] || fc->link.down.len > 0 ||
                 (fc->open && fc->link.want_read && fc->link.up.len > 0);
        check_rx(fc);
    }
    return moved || conn_next_deadline(w->cs) == 0;
}

/* Turns until nothing moves, as a platform's loop would run them. */
static void drain(fworld *w)
{
    while (turn(w))
        ;
}

static void check_memory(fworld *w)
{
    broker_stats st;
    broker_get_stats(w->b, &st);
    FUZZ_ASSERT(st.memory_used == w->at.live_bytes);
}

static void configure(broker_config *cfg, uint8_t sel)
{
    memset(cfg, 0, sizeof *cfg);
    if (sel & 1) {
        cfg->limits = (broker_limits){
            .max_connections = 3,
            .max_packet_size = 256,
            .max_inflight = 2,
            .max_queued = 4,
            .max_queued_bytes = 256, /* >= max_packet_size, or the core lowers that */
            .max_out_bytes = 256,
            .max_inbound_qos2 = 2,
            .connect_timeout_ms = 2000,
            .max_retained = 4,
            .work_budget = 2,
            /* Small enough for scripts to reach: SUBACK 0x80, PUBLISH and
             * will topics that close the connection. */
            .max_subscriptions = 3,
            .max_topic_levels = 4,
            .max_topic_length = 32,
            /* One identity's sessions and queues (ident.c). */
            .max_sessions_per_identity = 2,
            .max_queued_bytes_per_identity = 256,
        };
    }
    cfg->limits.sys_interval_s = (sel & 2) ? 1 : UINT32_MAX;
    cfg->limits.session_expiry_s = (sel & 4) ? 5 : 0;
    cfg->allow_anonymous = !(sel & 8);
    cfg->version = "fuzz";
}

static void open_conn(fworld *w, fconn *fc, unsigned arg)
{
    fake_link_free(&fc->link);
    fake_link_init(&fc->link);
    fc->link.owner = fc;
    fc->link.on_close = on_close;
    fc->link.peer = "fuzz:1";
    fc->link.identity = (arg & 1) ? "fuzz-identity" : NULL;
    fc->link.is_operator = (arg & 2) != 0;
    fake_bytes_take(&fc->rx, fc->rx.len);
    fake_bytes_take(&fc->hello, fc->hello.len);
    fc->clevel = -1;
    fc->level = 0;
    fc->reading = true;
    fc->open = conn_open(w->cs, &fc->link.c, false, w->now);
}

/* The client's first packet: a CONNECT that decodes gives its level. */
static void judge_hello(fconn *fc, const uint8_t *p, size_t n)
{
    if (fc->clevel >= 0)
        return;
    fake_bytes_put(&fc->hello, p, n);
    mqtt_packet pk;
    size_t used = 0;
    mqtt_err e = mqtt_decode(fake_bytes_data(&fc->hello), fc->hello.len, MQTT_FROM_CLIENT, 0, 0,
                             &pk, &used);
    if (e == MQTT_NEED_MORE)
        return;
    fc->clevel = e == MQTT_OK && pk.type == MQTT_CONNECT ? pk.u.connect.level : 0;
    fake_bytes_take(&fc->hello, fc->hello.len);
}

static void feed(fconn *fc, script *s, size_t n)
{
    if (n > s->len - s->pos)
        n = s->len - s->pos;
    fake_bytes_put(&fc->link.up, s->p + s->pos, n);
    judge_hello(fc, s->p + s->pos, n);
    s->pos += n;
}

static void step(fworld *w, script *s)
{
    uint8_t op = next_byte(s);
    fconn *fc = &w->c[op & 3];
    unsigned kind = (op >> 2) & 7, arg = op >> 5;
    switch (kind) {
    case 0:
        if (!fc->open)
            open_conn(w, fc, arg);
        break;
    case 1:
        if (fc->open)
            conn_failed(w->cs, &fc->link.c, w->now);
        break;
    case 2:
        if (fc->open)
            feed(fc, s, next_byte(s));
        break;
    case 3: {
        size_t n = (size_t)next_byte(s) << 8;
        n |= next_byte(s);
        if (fc->open)
            feed(fc, s, n);
        break;
    }
    case 4:
        w->now += (uint64_t)next_byte(s) * (100u << arg);
        broker_tick(w->b, w->now);
        FUZZ_ASSERT(broker_next_deadline(w->b) > w->now);
        break;
    case 5:
        fc->reading = !fc->reading;
        break;
    case 6:
        w->at.fail_next = arg + 1;
        break;
    case 7: {
        size_t n = next_byte(s);
        if (fc->open && !fc->reading) {
            fc->link.room = n;
            (void)conn_writable(w->cs, &fc->link.c, w->now);
            fc->link.room = 0;
        }
        break;
    }
    }
    drain(w);
    check_memory(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    fworld w;
    memset(&w, 0, sizeof w);
    alloc_track_init(&w.at);
    broker_config cfg;
    configure(&cfg, data[0]);
    cfg.allocator = alloc_track_allocator(&w.at);
    w.now = 1000000;
    if (data[0] & 0x10)
        w.at.fail_at = (uint64_t)(data[0] >> 5) + 1;
    w.b = broker_create(&cfg, w.now);
    if (!w.b) {
        /* Refusing to start is fine; leaving memory behind is not. */
        FUZZ_ASSERT(w.at.failures == 1);
        FUZZ_ASSERT(w.at.live_bytes == 0 && w.at.live_blocks == 0);
        return 0;
    }
    w.at.fail_at = 0;
    check_memory(&w);
    /* The layer's own memory comes from malloc: the tracked allocator
     * accounts for the core's alone. */
    transport = fake_transport;
    transport.read = poisoning_read;
    conn_server_config cc;
    memset(&cc, 0, sizeof cc);
    cc.b = w.b;
    cc.io = &transport;
    /* Tiny limits: an input budget of two packets, so connections holding
     * unfinished input wait and, when time passes, are closed (ADR-032). */
    if (data[0] & 1)
        cc.max_input_bytes = 512;
    w.cs = conn_server_create(&cc);
    FUZZ_ASSERT(w.cs != NULL);

    script s = {data, size, 1};
    while (s.pos < s.len)
        step(&w, &s);

    w.at.fail_next = 0;
    for (int i = 0; i < NCONN; i++)
        if (w.c[i].open)
            conn_failed(w.cs, &w.c[i].link.c, w.now);
    drain(&w);
    check_memory(&w);
    conn_server_destroy(w.cs);
    broker_destroy(w.b);
    FUZZ_ASSERT(w.at.live_bytes == 0 && w.at.live_blocks == 0);
    for (int i = 0; i < NCONN; i++) {
        fake_link_free(&w.c[i].link);
        fake_bytes_free(&w.c[i].rx);
        fake_bytes_free(&w.c[i].hello);
    }
    return 0;
}
