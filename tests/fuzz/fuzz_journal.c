/*
 * fuzz_journal.c - libFuzzer target for the core's side of persistence
 * (src/broker/journal.h): the record reader and the restore calls, which
 * read what the store kept on disk, so they must survive any bytes.
 *
 * Input: a journal batch. journal_next walks it (every record in bounds,
 * the position only moving forward); each record is then replayed into a
 * fresh broker as the store would at start-up (retained, sessions,
 * subscriptions, messages, queue entries, inbound QoS 2 ids, wills,
 * with their MQTT 5.0 fields; half the inputs with a wall clock), in file
 * order, whether or not it makes sense. Then a client resumes the first
 * restored session and reads what the core sends. Checked: no crash or
 * invariant panic, every byte sent decodes, memory accounting exact, and
 * nothing left after broker_destroy.
 */
#include "broker/broker.h"
#include "broker/journal.h"
#include "mqtt/mqtt.h"
#include "sim/alloc_track.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c) ((c) ? (void)0 : abort())

static void restore_one(broker *b, const journal_rec *r)
{
    switch (r->type) {
    case J_RETAIN_SET:
        (void)broker_restore_retained(b, r->topic.p, r->topic.len, r->payload.p, r->payload.len,
                                      r->qos, r->props.p, r->props.len, r->expiry_at);
        break;
    case J_SESSION_PUT:
        (void)broker_restore_session(b, r->client_id.p, r->client_id.len, r->identity.p,
                                     r->identity.len, r->flags & 1, r->expiry_interval,
                                     r->expiry_at);
        break;
    case J_SUB_PUT:
        (void)broker_restore_sub(b, r->client_id.p, r->client_id.len, r->topic.p, r->topic.len,
                                 r->qos, r->options, r->sub_id);
        break;
    case J_MSG_PUT:
        (void)broker_restore_msg(b, r->msg_id, r->topic.p, r->topic.len, r->payload.p,
                                 r->payload.len, r->qos, r->flags & 1, r->props.p, r->props.len,
                                 r->expiry_at);
        break;
    case J_QUEUE_PUT:
    case J_QUEUE_STATE:
        (void)broker_restore_queued(b, r->client_id.p, r->client_id.len, r->seq, r->msg_id,
                                    r->qos, r->flags & 1, r->state, r->packet_id, r->sub_id,
                                    r->sub_ids.p, r->sub_ids.len);
        break;
    case J_INQOS2_PUT:
        (void)broker_restore_inqos2(b, r->client_id.p, r->client_id.len, r->packet_id);
        break;
    case J_WILL_PUT:
        (void)broker_restore_will(b, r->client_id.p, r->client_id.len, r->topic.p, r->topic.len,
                                  r->payload.p, r->payload.len, r->qos, r->flags & 1, r->props.p,
                                  r->props.len, r->expiry_at, r->fire_at);
        break;
    default:
        break;
    }
}

static void check_memory(broker *b, const alloc_track *at)
{
    broker_stats st;
    broker_get_stats(b, &st);
    FUZZ_ASSERT(st.memory_used == at->live_bytes);
}

/* Everything the core sends must decode as server packets. */
static void drain(broker *b, uint64_t now)
{
    broker_conn *bc;
    while ((bc = broker_next_dirty(b)) != NULL) {
        size_t len, pos = 0;
        const uint8_t *p = broker_out_peek(bc, &len);
        while (pos < len) {
            mqtt_packet pk;
            size_t used = 0;
            mqtt_err e = mqtt_decode(p + pos, len - pos, MQTT_FROM_SERVER, MQTT_LEVEL_311, 0,
                                     &pk, &used);
            FUZZ_ASSERT(e == MQTT_OK); /* the core hands out whole packets */
            pos += used;
        }
        broker_out_consume(b, bc, len);
        if (broker_wants_close(bc))
            broker_closed(b, bc, now);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Walk the batch alone first: the reader's own contract. */
    size_t pos = 0, records = 0;
    journal_rec r;
    const journal_rec *first_session = NULL;
    journal_rec session_rec;
    int rc;
    while ((rc = journal_next(data, size, &pos, &r)) == 1) {
        FUZZ_ASSERT(pos <= size);
        records++;
        if (r.type == J_SESSION_PUT && !first_session) {
            session_rec = r;
            first_session = &session_rec;
        }
    }
    FUZZ_ASSERT(rc == 0 || rc == -1);
    FUZZ_ASSERT(pos <= size);

    alloc_track at;
    alloc_track_init(&at);
    broker_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.allocator = alloc_track_allocator(&at);
    cfg.limits.sys_interval_s = UINT32_MAX;
    cfg.allow_anonymous = true;
    cfg.version = "fuzz";
    uint64_t now = 1000000;
    broker *b = broker_create(&cfg, now);
    FUZZ_ASSERT(b != NULL);
    /* Recorded wall-clock times read with and without a clock. */
    if (size & 1)
        broker_set_wall_clock(b, UINT64_C(1767225600000), now); /* 2026-01-01 */
    pos = 0;
    while (journal_next(data, size, &pos, &r) == 1) {
        restore_one(b, &r);
        check_memory(b, &at);
    }
    broker_restore_done(b);
    check_memory(b, &at);

    if (first_session && first_session->client_id.len <= 64 &&
        mqtt_utf8_valid(first_session->client_id.p, first_session->client_id.len)) {
        broker_conn_info info = {.peer = "fuzz:1"};
        broker_conn *c = broker_open(b, NULL, &info, now);
        if (c) {
            uint8_t buf[128];
            mqtt_connect cp = {.level = MQTT_LEVEL_311,
                               .clean_session = false,
                               .client_id = {first_session->client_id.p,
                                             first_session->client_id.len}};
            size_t n = mqtt_encode_connect(buf, sizeof buf, &cp);
            FUZZ_ASSERT(n > 0);
            (void)broker_input(b, c, buf, n, now);
            drain(b, now);
            check_memory(b, &at);
        }
    }
    broker_tick(b, now + 60000);
    drain(b, now + 60000);
    check_memory(b, &at);
    broker_destroy(b);
    FUZZ_ASSERT(at.live_bytes == 0 && at.live_blocks == 0);
    (void)records;
    return 0;
}
