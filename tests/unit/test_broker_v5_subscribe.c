/*
 * test_broker_v5_subscribe.c - SUBSCRIBE and UNSUBSCRIBE at MQTT 5.0: the
 * SUBACK's and UNSUBACK's reason codes, the subscription options (No
 * Local, Retain As Published, Retain Handling), Subscription Identifiers
 * (kept, replaced, merged for overlapping subscriptions), and a shared
 * subscription with No Local refused as a protocol error.
 */
#include "broker/acl.h"
#include "broker/broker-t.h"
#include "broker/conn-t.h"
#include "broker/session.h"
#include "fake_client.h"
#include "test.h"

#include <string.h>

/* A level-5 client with a clean session, its CONNACK skipped. */
static fclient *connect5(fworld *w, const char *id, bool clean)
{
    fclient *c = fw_open(w);
    fc_connect5(w, c, id, clean, 0, NULL);
    mqtt_packet p;
    if (!fc_next_is(c, MQTT_CONNACK, &p))
        return NULL;
    return c;
}

/* The next packet is an (UN)SUBACK for id with these n codes. */
static bool codes_are(fclient *c, mqtt_type t, uint16_t id, const uint8_t *codes, uint32_t n)
{
    mqtt_packet p;
    if (!fc_next_is(c, t, &p))
        return false;
    const mqtt_list *l = t == MQTT_SUBACK ? &p.u.suback : &p.u.unsuback;
    if (l->packet_id != id || l->count != n)
        return false;
    size_t pos = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint8_t code;
        if (!mqtt_suback_next(l, &pos, &code) || code != codes[i])
            return false;
    }
    return true;
}

static bool suback1(fclient *c, uint16_t id, uint8_t code)
{
    return codes_are(c, MQTT_SUBACK, id, &code, 1);
}

static void sub5(fworld *w, fclient *c, uint16_t id, const char *f, uint8_t options,
                 uint32_t sub_id)
{
    fprops fp = {.len = 0};
    if (sub_id)
        fp_varint(&fp, MQTT_PROP_SUBSCRIPTION_ID, sub_id);
    fc_subscribe5(w, c, id, f, options, &fp);
}

/* The one PUBLISH pending for c (false when none, or more than one). */
static bool one_publish(fclient *c, mqtt_packet *out)
{
    mqtt_packet p;
    int n = 0;
    while (fc_next(c, &p))
        if (p.type == MQTT_PUBLISH && n++ == 0)
            *out = p;
    return n == 1;
}

TEST(v5_suback_grants_each_filter_its_qos)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *a = connect5(&w, "a", true);
    CHECK(a);
    sub5(&w, a, 1, "x/0", 0, 0);
    CHECK(suback1(a, 1, MQTT_RC_SUCCESS));
    sub5(&w, a, 2, "x/1", 1, 0);
    CHECK(suback1(a, 2, MQTT_RC_GRANTED_QOS_1));
    sub5(&w, a, 3, "x/2", 2, 0);
    CHECK(suback1(a, 3, MQTT_RC_GRANTED_QOS_2));
    fw_free(&w);
}

TEST(v5_suback_names_the_cause_of_a_refusal)
{
    char err[128];
    static const char rules[] = "topic read ok/#\n";
    broker_limits lim = {.max_subscriptions = 2};
    fworld w;
    fw_init(&w, &lim);
    broker_set_acl(w.b, broker_acl_parse(NULL, "acl", rules, strlen(rules), err, sizeof err));
    fclient *a = connect5(&w, "a", true);
    CHECK(a);
    sub5(&w, a, 1, "secret", 0, 0);
    CHECK(suback1(a, 1, MQTT_RC_NOT_AUTHORIZED));
    sub5(&w, a, 2, "ok/1", 1, 0);
    CHECK(suback1(a, 2, 1));
    sub5(&w, a, 3, "ok/2", 1, 0);
    CHECK(suback1(a, 3, 1));
    sub5(&w, a, 4, "ok/3", 1, 0);
    CHECK(suback1(a, 4, MQTT_RC_QUOTA_EXCEEDED));
    w.b->shared_subs_disabled = true;
    sub5(&w, a, 5, "$share/g/ok/1", 1, 0);
    CHECK(suback1(a, 5, MQTT_RC_SHARED_SUBS_NOT_SUPPORTED));
    fw_free(&w);
}

TEST(v5_unsuback_has_a_reason_code_per_filter)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *a = connect5(&w, "a", true);
    CHECK(a);
    sub5(&w, a, 1, "t", 0, 0);
    CHECK(suback1(a, 1, 0));
    fc_unsubscribe5(&w, a, 2, "t", NULL);
    uint8_t ok = MQTT_RC_SUCCESS, none = MQTT_RC_NO_SUBSCRIPTION_EXISTED;
    CHECK(codes_are(a, MQTT_UNSUBACK, 2, &ok, 1));
    fc_unsubscribe5(&w, a, 3, "t", NULL);
    CHECK(codes_are(a, MQTT_UNSUBACK, 3, &none, 1));
    CHECK_EQ(a->conn->sess->sub_count, 0);
    fw_free(&w);
}

TEST(v5_no_local_keeps_a_clients_own_messages_from_it)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *a = connect5(&w, "a", true);
    fclient *other = connect5(&w, "other", true);
    CHECK(a && other);
    sub5(&w, a, 1, "t", 1 | MQTT_SUBOPT_NO_LOCAL, 0);
    CHECK(suback1(a, 1, 1));
    fc_publish5(&w, a, "t", "own", 0, false, 0, NULL);
    CHECK_EQ(fc_count_publish(a), 0); /* [MQTT-3.8.3-3] */
    fc_publish5(&w, other, "t", "theirs", 0, false, 0, NULL);
    mqtt_packet p;
    CHECK(one_publish(a, &p));
    CHECK(fc_payload_is(&p, "theirs"));
    /* An overlapping subscription without No Local delivers its own
     * messages, at that subscription's QoS. */
    sub5(&w, a, 2, "#", 0, 0);
    CHECK(suback1(a, 2, 0));
    fc_publish5(&w, a, "t", "own", 1, false, 7, NULL);
    CHECK(one_publish(a, &p));
    CHECK(fc_payload_is(&p, "own"));
    CHECK_EQ(p.u.publish.qos, 0);
    fw_free(&w);
}

TEST(v5_retain_as_published_keeps_the_retain_flag)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *rap = connect5(&w, "rap", true);
    fclient *plain = connect5(&w, "plain", true);
    fclient *pub = connect5(&w, "pub", true);
    CHECK(rap && plain && pub);
    sub5(&w, rap, 1, "t", MQTT_SUBOPT_RETAIN_AS_PUBLISHED, 0);
    sub5(&w, plain, 1, "t", 0, 0);
    fc_clear(rap);
    fc_clear(plain);
    fc_publish5(&w, pub, "t", "r", 0, true, 0, NULL);
    mqtt_packet p;
    CHECK(one_publish(rap, &p));
    CHECK(p.u.publish.retain); /* [MQTT-3.3.1-13] */
    CHECK(one_publish(plain, &p));
    CHECK(!p.u.publish.retain); /* [MQTT-3.3.1-12] */
    /* Queued at QoS 1, the flag is kept as well. */
    sub5(&w, rap, 2, "u", 1 | MQTT_SUBOPT_RETAIN_AS_PUBLISHED, 0);
    fc_clear(rap);
    fc_publish5(&w, pub, "u", "r", 1, true, 3, NULL);
    CHECK(one_publish(rap, &p));
    CHECK(p.u.publish.retain);
    fw_free(&w);
}

TEST(v5_retain_handling_0_1_2)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *pub = connect5(&w, "pub", true);
    fclient *a = connect5(&w, "a", true);
    CHECK(pub && a);
    fc_publish5(&w, pub, "r", "kept", 0, true, 0, NULL);
    mqtt_packet p;
    /* 0: on every SUBSCRIBE [MQTT-3.3.1-9], with the retain flag. */
    sub5(&w, a, 1, "r", 0, 0);
    CHECK(suback1(a, 1, 0));
    CHECK(one_publish(a, &p));
    CHECK(p.u.publish.retain);
    sub5(&w, a, 2, "r", 0, 0);
    CHECK(suback1(a, 2, 0));
    CHECK(one_publish(a, &p));
    /* 1: only when the subscription is new [MQTT-3.3.1-10]. */
    uint8_t rh1 = 1u << MQTT_SUBOPT_RETAIN_HANDLING_SHIFT;
    sub5(&w, a, 3, "r", rh1, 0);
    CHECK(suback1(a, 3, 0));
    CHECK_EQ(fc_count_publish(a), 0);
    sub5(&w, a, 4, "+", rh1, 0);
    CHECK(suback1(a, 4, 0));
    CHECK(one_publish(a, &p));
    /* 2: never [MQTT-3.3.1-11]. */
    uint8_t rh2 = 2u << MQTT_SUBOPT_RETAIN_HANDLING_SHIFT;
    sub5(&w, a, 5, "#", rh2, 0);
    CHECK(suback1(a, 5, 0));
    CHECK_EQ(fc_count_publish(a), 0);
    fw_free(&w);
}

/* The identifiers of s's queue entry i, in ids; their count. */
static uint32_t entry_ids(const session *s, uint32_t i, uint32_t *ids, uint32_t cap)
{
    const qentry *e = bk_session_entry(s, i);
    uint32_t n = 0;
    if (e->sub_id && n < cap)
        ids[n++] = e->sub_id;
    if (e->sub_ids_more)
        for (uint32_t k = 0; k < e->sub_ids_more[0] && n < cap; k++)
            ids[n++] = e->sub_ids_more[1 + k];
    return n;
}

static bool has_id(const uint32_t *ids, uint32_t n, uint32_t id)
{
    for (uint32_t i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

TEST(v5_overlapping_subscriptions_give_one_copy_with_every_identifier)
{
    broker_limits lim = {.max_inflight = 1};
    fworld w;
    fw_init(&w, &lim);
    fclient *a = connect5(&w, "a", true);
    fclient *pub = connect5(&w, "pub", true);
    CHECK(a && pub);
    sub5(&w, a, 1, "s/+", 1, 7);
    sub5(&w, a, 2, "s/#", 0, 9);
    sub5(&w, a, 3, "s/x", 1, 0); /* no identifier: adds none */
    fc_clear(a);
    fc_publish5(&w, pub, "s/x", "m", 1, false, 1, NULL);
    const session *s = a->conn->sess;
    CHECK_EQ(s->q_count, 1); /* one copy [MQTT-3.3.4-2] */
    uint32_t ids[8];
    uint32_t n = entry_ids(s, 0, ids, 8);
    CHECK_EQ(n, 2); /* [MQTT-3.3.4-4] */
    CHECK(has_id(ids, n, 7));
    CHECK(has_id(ids, n, 9));
    CHECK_EQ(bk_session_entry(s, 0)->qos, 1);
    fw_free(&w);
}

TEST(v5_resubscribing_replaces_the_identifier_and_options)
{
    broker_limits lim = {.max_inflight = 1};
    fworld w;
    fw_init(&w, &lim);
    fclient *a = connect5(&w, "a", true);
    fclient *pub = connect5(&w, "pub", true);
    CHECK(a && pub);
    sub5(&w, a, 1, "t", 1 | MQTT_SUBOPT_NO_LOCAL, 5);
    sub5(&w, a, 2, "t", 1, 6); /* [MQTT-3.8.4-3] */
    fc_clear(a);
    fc_publish5(&w, a, "t", "own", 1, false, 1, NULL);
    const session *s = a->conn->sess;
    CHECK_EQ(s->q_count, 1); /* No Local is gone with the old options */
    /* The QoS is the sub's own; options keeps the bits above it (what the
     * store records and restore checks). */
    CHECK_EQ(s->subs->options, 0);
    CHECK_EQ(s->subs->qos, 1);
    CHECK_EQ(bk_session_entry(s, 0)->sub_id, 6);
    CHECK(bk_session_entry(s, 0)->sub_ids_more == NULL);
    /* A SUBSCRIBE without an identifier removes it. */
    sub5(&w, a, 3, "t", 1, 0);
    fc_publish5(&w, pub, "t", "m", 1, false, 2, NULL);
    CHECK_EQ(s->q_count, 2);
    CHECK_EQ(bk_session_entry(s, 1)->sub_id, 0);
    fw_free(&w);
}

TEST(v5_no_local_drops_its_identifier_from_the_publishers_copy)
{
    broker_limits lim = {.max_inflight = 1};
    fworld w;
    fw_init(&w, &lim);
    fclient *a = connect5(&w, "a", true);
    CHECK(a);
    sub5(&w, a, 1, "t", 1 | MQTT_SUBOPT_NO_LOCAL, 3);
    sub5(&w, a, 2, "#", 1, 4);
    fc_clear(a);
    fc_publish5(&w, a, "t", "own", 1, false, 1, NULL);
    const session *s = a->conn->sess;
    CHECK_EQ(s->q_count, 1);
    uint32_t ids[4];
    uint32_t n = entry_ids(s, 0, ids, 4);
    CHECK_EQ(n, 1);
    CHECK_EQ(ids[0], 4);
    fw_free(&w);
}

TEST(v5_retained_messages_on_subscribe_carry_its_identifier)
{
    broker_limits lim = {.max_inflight = 1};
    fworld w;
    fw_init(&w, &lim);
    fclient *pub = connect5(&w, "pub", true);
    fclient *a = connect5(&w, "a", true);
    CHECK(pub && a);
    fc_publish5(&w, pub, "r/1", "x", 1, true, 1, NULL);
    fc_publish5(&w, pub, "r/2", "y", 1, true, 2, NULL);
    sub5(&w, a, 1, "r/+", 1, 42);
    const session *s = a->conn->sess;
    CHECK_EQ(s->q_count, 2);
    CHECK_EQ(bk_session_entry(s, 0)->sub_id, 42);
    CHECK_EQ(bk_session_entry(s, 1)->sub_id, 42);
    fw_free(&w);
}

TEST(v5_shared_subscription_carries_the_members_identifier)
{
    broker_limits lim = {.max_inflight = 1};
    fworld w;
    fw_init(&w, &lim);
    fclient *a = connect5(&w, "a", true);
    fclient *pub = connect5(&w, "pub", true);
    CHECK(a && pub);
    sub5(&w, a, 1, "$share/g/t", 1, 11);
    CHECK(suback1(a, 1, 1));
    fc_publish5(&w, pub, "t", "m", 1, false, 1, NULL);
    const session *s = a->conn->sess;
    CHECK_EQ(s->q_count, 1);
    CHECK_EQ(bk_session_entry(s, 0)->sub_id, 11);
    fw_free(&w);
}

TEST(v5_no_local_on_a_shared_subscription_is_a_protocol_error)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *a = connect5(&w, "a", true);
    CHECK(a);
    sub5(&w, a, 1, "$share/g/t", MQTT_SUBOPT_NO_LOCAL, 0); /* [MQTT-3.8.3-4] */
    mqtt_packet p;
    CHECK(fc_next_is(a, MQTT_DISCONNECT, &p));
    CHECK_EQ(fc_reason_of(&p), MQTT_RC_PROTOCOL_ERROR);
    CHECK(a->closed);
    fw_free(&w);
}

TEST(v5_malformed_shared_filter_is_a_protocol_error)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *a = connect5(&w, "a", true);
    CHECK(a);
    /* A valid topic filter, but an empty share name [MQTT-4.8.2-1]. */
    sub5(&w, a, 1, "$share//t", 0, 0);
    mqtt_packet p;
    CHECK(fc_next_is(a, MQTT_DISCONNECT, &p));
    CHECK_EQ(fc_reason_of(&p), MQTT_RC_PROTOCOL_ERROR);
    CHECK(a->closed);
    fw_free(&w);
}

/* The Subscription Identifiers of a received PUBLISH, in ids. */
static uint32_t wire_ids(const mqtt_packet *p, uint32_t *ids, uint32_t cap)
{
    mqtt_prop pr;
    uint32_t n = 0;
    while (n < cap && fc_prop_find(fc_props_of(p), MQTT_PROP_SUBSCRIPTION_ID, n, &pr))
        ids[n++] = pr.value;
    return n;
}

TEST(v5_publish_on_the_wire_carries_every_matching_identifier)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *a = connect5(&w, "a", true);
    fclient *pub = connect5(&w, "pub", true);
    CHECK(a && pub);
    sub5(&w, a, 1, "s/+", 0, 7);
    sub5(&w, a, 2, "s/#", 1, 9);
    sub5(&w, a, 3, "z", 0, 0);
    fc_clear(a);
    mqtt_packet p;
    uint32_t ids[4];
    /* QoS 0: one copy with both [MQTT-3.3.4-4]. */
    fc_publish5(&w, pub, "s/x", "zero", 0, false, 0, NULL);
    CHECK(one_publish(a, &p));
    uint32_t n = wire_ids(&p, ids, 4);
    CHECK_EQ(n, 2);
    CHECK(has_id(ids, n, 7) && has_id(ids, n, 9));
    /* QoS 1 through the queue: the same. */
    fc_publish5(&w, pub, "s/x", "one", 1, false, 1, NULL);
    CHECK(one_publish(a, &p));
    CHECK_EQ(p.u.publish.qos, 1);
    n = wire_ids(&p, ids, 4);
    CHECK_EQ(n, 2);
    CHECK(has_id(ids, n, 7) && has_id(ids, n, 9));
    /* A subscription without an identifier: none on the wire. */
    fc_publish5(&w, pub, "z", "none", 0, false, 0, NULL);
    CHECK(one_publish(a, &p));
    CHECK_EQ(wire_ids(&p, ids, 4), 0);
    fw_free(&w);
}
