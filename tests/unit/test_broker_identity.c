/*
 * test_broker_identity.c - the per-identity limits: persistent sessions of
 * one TLS identity (limits.max_sessions_per_identity: the one beyond is
 * refused with CONNACK 0x05, while other identities, clean sessions and
 * resumed sessions still connect, and restored sessions count) and the
 * payload bytes queued across its sessions (limits.
 * max_queued_bytes_per_identity: beyond it a message is dropped for the
 * session and counted, and memory stays bounded).
 */
#include "fake_client.h"
#include "model_store.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Connect a client of identity `who` (NULL: anonymous); commit what a
 * durable broker holds the CONNACK for. Returns the CONNACK's return code
 * (-1: none), with *present its session-present flag. */
static int connect_as(fworld *w, fclient **out, const char *who, const char *id, bool clean,
                      bool *present)
{
    fclient *c = fw_open_as(w, who, false);
    fc_connect(w, c, id, clean, 0);
    if (w->durable && c->rx_pos == c->inbox.len && w->commit) {
        w->commit(w);
        fw_drain(w);
    }
    *out = c;
    mqtt_packet pk;
    if (!fc_next_is(c, MQTT_CONNACK, &pk))
        return -1;
    if (present)
        *present = pk.u.connack.session_present;
    return pk.u.connack.return_code;
}

static uint64_t stat_refused(fworld *w)
{
    broker_stats st;
    broker_get_stats(w->b, &st);
    return st.sessions_refused;
}

TEST(identity_beyond_max_sessions_is_refused_0x05_others_still_connect)
{
    broker_limits lim = {.max_sessions_per_identity = 3};
    fworld w;
    fw_init(&w, &lim);
    fclient *c[3], *x;
    bool present = true;
    for (int i = 0; i < 3; i++) {
        char id[32];
        snprintf(id, sizeof id, "p%d", i);
        CHECK_EQ(connect_as(&w, &c[i], "dev", id, false, &present), 0);
        CHECK(!present);
    }
    fc_disconnect(&w, c[0]); /* offline sessions count as well */
    /* One more persistent session of "dev": refused, closed, counted. */
    CHECK_EQ(connect_as(&w, &x, "dev", "p3", false, &present), MQTT_CONNACK_NOT_AUTHORIZED);
    CHECK(x->closed);
    CHECK_EQ(stat_refused(&w), 1);
    /* Another identity, and anonymous clients, are not affected. */
    CHECK_EQ(connect_as(&w, &x, "other", "o0", false, &present), 0);
    CHECK_EQ(connect_as(&w, &x, NULL, "anon0", false, &present), 0);
    /* A clean session of "dev" connects. */
    fclient *cl;
    CHECK_EQ(connect_as(&w, &cl, "dev", "c0", true, &present), 0);
    /* ... and is not taken over by a refused persistent CONNECT of its id. */
    CHECK_EQ(connect_as(&w, &x, "dev", "c0", false, &present), MQTT_CONNACK_NOT_AUTHORIZED);
    CHECK(!cl->closed);
    CHECK_EQ(stat_refused(&w), 2);
    /* An existing session resumes, offline or taken over. */
    CHECK_EQ(connect_as(&w, &x, "dev", "p0", false, &present), 0);
    CHECK(present);
    CHECK_EQ(connect_as(&w, &x, "dev", "p1", false, &present), 0);
    CHECK(present);
    CHECK(c[1]->closed);
    /* Ending one (clean start) frees its place. */
    CHECK_EQ(connect_as(&w, &x, "dev", "p2", true, &present), 0);
    fc_disconnect(&w, x);
    CHECK_EQ(connect_as(&w, &x, "dev", "p3", false, &present), 0);
    CHECK(!present);
    CHECK_EQ(stat_refused(&w), 2);
    fw_free(&w);
}

static void commit_to_model(fworld *w)
{
    ms_commit_all(w->commit_ctx, w->b);
}

TEST(restored_sessions_count_toward_the_identity_limit_and_are_kept)
{
    broker_limits lim = {.max_sessions_per_identity = 2};
    mstore *ms = calloc(1, sizeof *ms);
    fworld w;
    fw_init_durable(&w, &lim);
    w.commit = commit_to_model;
    w.commit_ctx = ms;
    fclient *c;
    bool present = false;
    CHECK_EQ(connect_as(&w, &c, "dev", "a", false, &present), 0);
    CHECK_EQ(connect_as(&w, &c, "dev", "b", false, &present), 0);
    ms_commit_all(ms, w.b);
    /* Restart with a lower limit: both sessions are restored, none dropped. */
    w.lim.max_sessions_per_identity = 1;
    fw_restart(&w);
    CHECK(ms_load(ms, w.b));
    broker_stats st;
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.clients_total, 2);
    CHECK_EQ(connect_as(&w, &c, "dev", "new", false, &present), MQTT_CONNACK_NOT_AUTHORIZED);
    CHECK_EQ(connect_as(&w, &c, "dev", "a", false, &present), 0);
    CHECK(present);
    CHECK_EQ(connect_as(&w, &c, "dev", "b", false, &present), 0);
    CHECK(present);
    fw_free(&w);
    free(ms);
}

enum { NSESS = 10, NMSG = 20, PAYLOAD = 500 };

/* NSESS persistent sessions of `who`, each subscribed at QoS 1 to its own
 * topic t/<i> and then offline; every topic gets NMSG distinct messages
 * of PAYLOAD bytes. */
static void fill(fworld *w, const char *who, uint64_t *mem_before, uint64_t *mem_after)
{
    for (int i = 0; i < NSESS; i++) {
        char id[32], topic[32];
        snprintf(id, sizeof id, "%s-%d", who, i);
        snprintf(topic, sizeof topic, "t/%d", i);
        fclient *c;
        CHECK_EQ(connect_as(w, &c, who, id, false, NULL), 0);
        fc_subscribe(w, c, 1, topic, 1);
        fc_disconnect(w, c);
    }
    fclient *p;
    CHECK_EQ(connect_as(w, &p, "publisher", "pub", true, NULL), 0);
    broker_stats st;
    broker_get_stats(w->b, &st);
    *mem_before = st.memory_used;
    char payload[PAYLOAD + 1];
    for (int n = 0; n < NMSG; n++) {
        for (int i = 0; i < NSESS; i++) {
            char topic[32];
            snprintf(topic, sizeof topic, "t/%d", i);
            snprintf(payload, sizeof payload, "%0*d", PAYLOAD, n * NSESS + i);
            fc_publish(w, p, topic, payload, 1, false, (uint16_t)(1 + (n * NSESS + i) % 1000));
        }
        fc_clear(p);
    }
    broker_get_stats(w->b, &st);
    *mem_after = st.memory_used;
}

TEST(queued_bytes_across_an_identitys_sessions_are_bounded_and_drops_counted)
{
    /* Each session may queue 64 KiB; the identity 8 KiB in all: 16 of its
     * 200 messages of 500 bytes. */
    broker_limits lim = {.max_queued_bytes = 64u << 10,
                         .max_queued_bytes_per_identity = 8u << 10,
                         .max_packet_size = 4096};
    fworld w;
    fw_init(&w, &lim);
    uint64_t before, after;
    fill(&w, "dev", &before, &after);
    broker_stats st;
    broker_get_stats(w.b, &st);
    uint32_t kept = (8u << 10) / PAYLOAD;
    CHECK_EQ(st.publish_dropped, (uint64_t)(NSESS * NMSG) - kept);
    /* What the identity's sessions hold: well under the 100,000 payload
     * bytes the per-session bound alone allows. */
    CHECK(after - before < 24u << 10);
    /* Every session gets what was kept for it; together the budget. */
    int got = 0;
    for (int i = 0; i < NSESS; i++) {
        char id[32];
        snprintf(id, sizeof id, "dev-%d", i);
        fclient *c;
        bool present = false;
        CHECK_EQ(connect_as(&w, &c, "dev", id, false, &present), 0);
        CHECK(present);
        mqtt_packet pk;
        while (fc_next(c, &pk)) {
            if (pk.type != MQTT_PUBLISH)
                continue;
            got++;
            fc_ack(&w, c, MQTT_PUBACK, pk.u.publish.packet_id);
        }
        fc_disconnect(&w, c);
    }
    CHECK_EQ(got, (int)kept);
    /* Delivered and acknowledged: the budget is free again. */
    fclient *p;
    CHECK_EQ(connect_as(&w, &p, "publisher", "pub2", true, NULL), 0);
    fc_publish(&w, p, "t/0", "again", 1, false, 1);
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.publish_dropped, (uint64_t)(NSESS * NMSG) - kept);
    fw_free(&w);
}

TEST(without_the_identity_bound_the_same_sessions_hold_every_message)
{
    /* The control: a per-identity bound above what the sessions take. */
    broker_limits lim = {.max_queued_bytes = 64u << 10,
                         .max_queued_bytes_per_identity = 1u << 30,
                         .max_packet_size = 4096};
    fworld w;
    fw_init(&w, &lim);
    uint64_t before, after;
    fill(&w, "dev", &before, &after);
    broker_stats st;
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.publish_dropped, 0);
    CHECK(after - before > (uint64_t)NSESS * NMSG * PAYLOAD);
    fw_free(&w);
}

TEST(identity_records_go_with_their_last_session)
{
    fworld w;
    fw_init(&w, NULL);
    broker_stats st;
    broker_get_stats(w.b, &st);
    uint64_t base = st.memory_used;
    for (int i = 0; i < 40; i++) {
        char who[32];
        snprintf(who, sizeof who, "identity-%d", i);
        fclient *c;
        CHECK_EQ(connect_as(&w, &c, who, who, true, NULL), 0);
        fc_disconnect(&w, c);
    }
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.memory_used, base);
    fw_free(&w);
}
