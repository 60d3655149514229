/*
 * fuzz_core.c - libFuzzer target for the whole broker core (src/broker/ with
 * the codec), driven the way a platform drives it, over up to four fake
 * connections.
 *
 * The input is a small script. Byte 0 picks the configuration (bit 0 tiny
 * limits, work budget, subscriptions and topic limits included, 1 $SYS, 2 session expiry, 3 no anonymous access) and, with bit 4,
 * makes allocation number (bits 5-7) + 1 inside broker_create fail. Then each step is an op
 * byte: bits 0-1 the connection, bits 2-4 the kind, bits 5-7 an argument:
 *   0 open     1 drop (abrupt close)     2 bytes: next byte is a length
 *   3 bytes: next two bytes are a length  4 time passes: next byte * (100 << arg) ms
 *   5 toggle whether the client reads its output (slow reader, back-pressure)
 *   6 fail the next arg+1 allocations     7 read only next-byte bytes of output
 * After every step all output is drained like a platform would.
 *
 * Checked after every step, beyond sanitizers and the core's own ALWAYS():
 *   - every byte the broker sends decodes as a server packet;
 *   - the core's memory_used equals what its allocator actually holds;
 * and at the end, after broker_destroy, nothing is left allocated.
 */
#include "broker/broker.h"
#include "mqtt/mqtt.h"
#include "sim/alloc_track.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c) ((c) ? (void)0 : abort())

enum { NCONN = 4 };

typedef struct fconn {
    broker_conn *conn;
    bool reading;
    uint8_t level;       /* level used to decode what the broker sends */
    uint8_t rx[8192];    /* incomplete packet from the broker */
    size_t rx_len;
} fconn;

typedef struct fworld {
    broker *b;
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

/* Decode every whole packet the client holds; anything else is a core bug.
 * A 3.1 client's packets decode under 3.1 rules, so try both levels. */
static void check_rx(fconn *fc)
{
    size_t pos = 0;
    for (;;) {
        mqtt_packet p;
        size_t used = 0;
        mqtt_err e = mqtt_decode(fc->rx + pos, fc->rx_len - pos, MQTT_FROM_SERVER,
                                 MQTT_LEVEL_311, 0, &p, &used);
        if (e != MQTT_OK && e != MQTT_NEED_MORE)
            e = mqtt_decode(fc->rx + pos, fc->rx_len - pos, MQTT_FROM_SERVER, MQTT_LEVEL_31, 0,
                            &p, &used);
        if (e == MQTT_NEED_MORE)
            break;
        FUZZ_ASSERT(e == MQTT_OK);
        pos += used;
    }
    memmove(fc->rx, fc->rx + pos, fc->rx_len - pos);
    fc->rx_len -= pos;
}

/* Take up to `max` bytes of c's output into the client. */
static void take_output(fworld *w, fconn *fc, size_t max)
{
    size_t len;
    const uint8_t *p = broker_out_peek(fc->conn, &len);
    FUZZ_ASSERT(len == broker_out_pending(fc->conn));
    while (len > 0 && max > 0) {
        size_t n = len < max ? len : max;
        size_t room = sizeof fc->rx - fc->rx_len;
        if (n > room)
            n = room;
        FUZZ_ASSERT(n > 0); /* no server packet here is larger than rx */
        memcpy(fc->rx + fc->rx_len, p, n);
        fc->rx_len += n;
        broker_out_consume(w->b, fc->conn, n);
        check_rx(fc);
        max -= n;
        p = broker_out_peek(fc->conn, &len);
    }
}

static void close_conn(fworld *w, fconn *fc)
{
    broker_closed(w->b, fc->conn, w->now);
    fc->conn = NULL;
    fc->rx_len = 0;
}

static void drain(fworld *w)
{
    broker_conn *bc;
    while ((bc = broker_next_dirty(w->b)) != NULL) {
        fconn *fc = broker_conn_ctx(bc);
        FUZZ_ASSERT(fc && fc->conn == bc);
        if (fc->reading)
            take_output(w, fc, SIZE_MAX);
        if (broker_wants_close(bc) && (broker_out_pending(bc) == 0 || !fc->reading))
            close_conn(w, fc);
    }
}

static void check_memory(fworld *w)
{
    broker_stats st;
    broker_get_stats(w->b, &st);
    FUZZ_ASSERT(st.memory_used == w->at.live_bytes);
}

static void feed(fworld *w, fconn *fc, script *s, size_t n)
{
    if (n > s->len - s->pos)
        n = s->len - s->pos;
    const uint8_t *p = s->p + s->pos;
    s->pos += n;
    size_t off = 0;
    /* Copy so ASan catches reads past what was handed over. */
    uint8_t *buf = malloc(n ? n : 1);
    FUZZ_ASSERT(buf != NULL);
    memcpy(buf, p, n);
    while (fc->conn && off < n) {
        size_t used = broker_input(w->b, fc->conn, buf + off, n - off, w->now);
        FUZZ_ASSERT(used <= n - off);
        off += used;
        drain(w);
        /* 0 taken: paused by back-pressure (retry never: the script goes
         * on), or a SUBSCRIBE worked through in slices, which the platform
         * must call again for (broker.h). */
        if (used == 0 && (!fc->conn || broker_input_paused(fc->conn)))
            break;
    }
    free(buf);
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
            .max_queued_bytes = 64,
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
        };
    }
    cfg->limits.sys_interval_s = (sel & 2) ? 1 : UINT32_MAX;
    cfg->limits.session_expiry_s = (sel & 4) ? 5 : 0;
    cfg->allow_anonymous = !(sel & 8);
    cfg->version = "fuzz";
}

static void step(fworld *w, script *s)
{
    uint8_t op = next_byte(s);
    fconn *fc = &w->c[op & 3];
    unsigned kind = (op >> 2) & 7, arg = op >> 5;
    switch (kind) {
    case 0:
        if (!fc->conn) {
            broker_conn_info info = {
                .peer = "fuzz:1",
                .identity = (arg & 1) ? "fuzz-identity" : NULL,
                .is_operator = (arg & 2) != 0,
            };
            fc->rx_len = 0;
            fc->reading = true;
            fc->conn = broker_open(w->b, fc, &info, w->now);
        }
        break;
    case 1:
        if (fc->conn)
            close_conn(w, fc);
        break;
    case 2:
        if (fc->conn)
            feed(w, fc, s, next_byte(s));
        break;
    case 3: {
        size_t n = (size_t)next_byte(s) << 8;
        n |= next_byte(s);
        if (fc->conn)
            feed(w, fc, s, n);
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
        if (fc->conn && !fc->reading)
            take_output(w, fc, n);
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

    script s = {data, size, 1};
    while (s.pos < s.len)
        step(&w, &s);

    w.at.fail_next = 0;
    for (int i = 0; i < NCONN; i++)
        if (w.c[i].conn)
            close_conn(&w, &w.c[i]);
    drain(&w);
    check_memory(&w);
    broker_destroy(w.b);
    FUZZ_ASSERT(w.at.live_bytes == 0 && w.at.live_blocks == 0);
    return 0;
}
