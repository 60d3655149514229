/*
 * test_broker_shared.c - shared subscriptions `$share/GROUP/FILTER`
 * (MQTT 5.0 section 4.8.2, also offered to 3.1.1 clients): each message to
 * one member of a group, members taking turns and skipped while their
 * window is full, a departing member's unfinished messages given to the
 * others, no retained messages on a shared subscribe, the ACL asked about
 * the FILTER, malformed and disabled shared filters refused.
 */
#include "broker/broker-t.h"
#include "broker/conn-t.h"
#include "broker/session.h"
#include "broker/acl.h"
#include "fake_client.h"
#include "model_store.h"
#include "test.h"

#include <stdlib.h>

#include <string.h>

/* The next packet is a SUBACK for id whose first code is code. */
static bool suback_is(fclient *c, uint16_t id, int code)
{
    mqtt_packet p;
    return fc_next_is(c, MQTT_SUBACK, &p) && p.u.suback.packet_id == id &&
           fc_reason_of(&p) == code;
}

/* Count the PUBLISHes pending for c, acknowledging QoS 1 ones. */
static int take_acked(fworld *w, fclient *c)
{
    mqtt_packet p;
    int n = 0;
    uint16_t ids[256];
    while (fc_next(c, &p)) {
        if (p.type != MQTT_PUBLISH)
            continue;
        if (p.u.publish.qos == 1 && n < 256)
            ids[n] = p.u.publish.packet_id;
        n++;
    }
    for (int i = 0; i < n && i < 256; i++)
        if (ids[i])
            fc_ack(w, c, MQTT_PUBACK, ids[i]);
    return n;
}

TEST(shared_group_gives_each_message_to_one_member_in_turn)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *a = fw_connect_as(&w, "a", true);
    fclient *b = fw_connect_as(&w, "b", true);
    fclient *plain = fw_connect_as(&w, "plain", true);
    fclient *pub = fw_connect_as(&w, "pub", true);
    fc_subscribe(&w, a, 1, "$share/g/s/+", 0);
    fc_subscribe(&w, b, 1, "$share/g/s/+", 0);
    fc_subscribe(&w, plain, 1, "s/#", 0);
    CHECK(suback_is(a, 1, 0));
    CHECK(suback_is(b, 1, 0));
    CHECK(suback_is(plain, 1, 0));
    for (int i = 0; i < 10; i++)
        fc_publish(&w, pub, "s/x", "m", 0, false, 0);
    int na = fc_count_publish(a), nb = fc_count_publish(b);
    /* Every message to one member, alternating; the plain subscriber gets
     * all, and the topic is the message's, not the $share filter. */
    CHECK_EQ(na + nb, 10);
    CHECK_EQ(na, 5);
    CHECK_EQ(nb, 5);
    CHECK_EQ(fc_count_publish(plain), 10);
    fw_free(&w);
}

TEST(shared_groups_of_other_names_each_get_a_copy)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *a = fw_connect_as(&w, "a", true);
    fclient *b = fw_connect_as(&w, "b", true);
    fclient *pub = fw_connect_as(&w, "pub", true);
    fc_subscribe(&w, a, 1, "$share/one/t", 0);
    fc_subscribe(&w, b, 1, "$share/two/t", 0);
    fc_clear(a);
    fc_clear(b);
    fc_publish(&w, pub, "t", "m", 0, false, 0);
    CHECK_EQ(fc_count_publish(a), 1);
    CHECK_EQ(fc_count_publish(b), 1);
    fw_free(&w);
}

TEST(shared_member_with_full_window_is_skipped)
{
    broker_limits lim = {.max_inflight = 2};
    fworld w;
    fw_init(&w, &lim);
    fclient *a = fw_connect_as(&w, "a", true);
    fclient *b = fw_connect_as(&w, "b", true);
    fclient *pub = fw_connect_as(&w, "pub", true);
    fc_subscribe(&w, a, 1, "$share/g/q", 1);
    fc_subscribe(&w, b, 1, "$share/g/q", 1);
    fc_clear(a);
    fc_clear(b);
    fc_clear(pub);
    /* b acknowledges everything, a nothing: once a's window (2) is full
     * every further message goes to b. */
    int na = 0, nb = 0;
    for (int i = 0; i < 10; i++) {
        fc_publish(&w, pub, "q", "m", 1, false, (uint16_t)(i + 1));
        na += fc_count_publish(a);
        nb += take_acked(&w, b);
    }
    CHECK_EQ(na, 2);
    CHECK_EQ(nb, 8);
    fw_free(&w);
}

TEST(shared_all_members_full_goes_to_the_least_loaded)
{
    broker_limits lim = {.max_inflight = 1};
    fworld w;
    fw_init(&w, &lim);
    fclient *a = fw_connect_as(&w, "a", true);
    fclient *b = fw_connect_as(&w, "b", true);
    fclient *pub = fw_connect_as(&w, "pub", true);
    fc_subscribe(&w, a, 1, "$share/g/q", 1);
    fc_subscribe(&w, b, 1, "$share/g/q", 1);
    for (int i = 0; i < 6; i++)
        fc_publish(&w, pub, "q", "m", 1, false, (uint16_t)(i + 1));
    /* Neither acknowledges: the queues grow evenly. */
    const broker_conn *ca = a->conn, *cb = b->conn;
    CHECK(ca && cb);
    CHECK_EQ(ca->sess->q_count, 3);
    CHECK_EQ(cb->sess->q_count, 3);
    fw_free(&w);
}

TEST(shared_departed_member_messages_go_to_the_others)
{
    broker_limits lim = {.max_inflight = 4};
    fworld w;
    fw_init(&w, &lim);
    fclient *a = fw_connect_as(&w, "a", true);
    fclient *b = fw_connect_as(&w, "b", true);
    fclient *pub = fw_connect_as(&w, "pub", true);
    fc_subscribe(&w, a, 1, "$share/g/q", 1);
    fc_subscribe(&w, b, 1, "$share/g/q", 1);
    fc_clear(a);
    fc_clear(b);
    /* b leaves the picture for a while (a reader that stopped): a gets
     * messages it never acknowledges. */
    for (int i = 0; i < 6; i++)
        fc_publish(&w, pub, "q", "m", 1, false, (uint16_t)(i + 1));
    int na = fc_count_publish(a);
    int nb = take_acked(&w, b);
    CHECK_EQ(na + nb, 6);
    CHECK(na > 0);
    /* a's clean session ends with na messages unacknowledged: each goes
     * to b, the member left [MQTT-4.8.2-3 ff.]. */
    fw_drop(&w, a);
    CHECK_EQ(take_acked(&w, b), na);
    fw_free(&w);
}

TEST(shared_unsubscribed_member_keeps_sent_and_gives_up_queued)
{
    broker_limits lim = {.max_inflight = 1};
    fworld w;
    fw_init(&w, &lim);
    fclient *a = fw_connect_as(&w, "a", true);
    fclient *b = fw_connect_as(&w, "b", true);
    fclient *pub = fw_connect_as(&w, "pub", true);
    fc_subscribe(&w, a, 1, "$share/g/q", 1);
    fc_subscribe(&w, b, 1, "$share/g/q", 1);
    fc_clear(a);
    fc_clear(b);
    for (int i = 0; i < 6; i++)
        fc_publish(&w, pub, "q", "m", 1, false, (uint16_t)(i + 1));
    /* Nobody acknowledges: 1 sent and 2 queued each. */
    CHECK_EQ(a->conn->sess->q_count, 3);
    CHECK_EQ(b->conn->sess->q_count, 3);
    CHECK_EQ(fc_count_publish(a), 1);
    fc_unsubscribe(&w, a, 9, "$share/g/q");
    mqtt_packet p;
    CHECK(fc_next_is(a, MQTT_UNSUBACK, &p));
    /* a keeps the one it was sent, to finish [MQTT-3.10.4-3]; its two
     * queued went to b. */
    CHECK_EQ(a->conn->sess->q_count, 1);
    CHECK_EQ(b->conn->sess->q_count, 5);
    fw_free(&w);
}

TEST(shared_subscribe_sends_no_retained_messages)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *pub = fw_connect_as(&w, "pub", true);
    fc_publish(&w, pub, "r/1", "kept", 1, true, 1);
    fclient *a = fw_connect_as(&w, "a", true);
    fc_subscribe(&w, a, 1, "$share/g/r/#", 1);
    CHECK(suback_is(a, 1, 1));
    CHECK_EQ(fc_count_publish(a), 0);
    /* A new message still reaches it, without the retain flag. */
    fc_publish(&w, pub, "r/1", "new", 0, true, 0);
    mqtt_packet p;
    CHECK(fc_next_is(a, MQTT_PUBLISH, &p));
    CHECK(fc_payload_is(&p, "new"));
    CHECK(!p.u.publish.retain);
    fw_free(&w);
}

TEST(shared_malformed_filter_is_refused_for_311)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *a = fw_connect_as(&w, "a", true);
    /* An empty GROUP, a wildcard in it, nothing after it: malformed
     * [MQTT-4.8.2-1] [MQTT-4.8.2-2]. 3.1.1 has only 0x80. */
    fc_subscribe(&w, a, 1, "$share//t", 0);
    CHECK(suback_is(a, 1, 0x80));
    fc_subscribe(&w, a, 2, "$share/+/t", 0);
    CHECK(suback_is(a, 2, 0x80));
    fc_subscribe(&w, a, 3, "$share/g", 0);
    CHECK(suback_is(a, 3, 0x80));
    CHECK_EQ(a->conn->sess->sub_count, 0);
    fw_free(&w);
}

TEST(shared_subscriptions_disabled_refuses_them)
{
    fworld w;
    fw_init(&w, NULL);
    w.b->shared_subs_disabled = true;
    fclient *a = fw_connect_as(&w, "a", true);
    fc_subscribe(&w, a, 1, "$share/g/t", 0);
    CHECK(suback_is(a, 1, 0x80));
    fc_subscribe(&w, a, 2, "t", 0);
    CHECK(suback_is(a, 2, 0));
    fw_free(&w);
}

TEST(shared_acl_governs_the_filter_inside_share)
{
    char err[128];
    static const char rules[] = "topic read allowed/#\n";
    broker_acl *acl = broker_acl_parse(NULL, "acl", rules, strlen(rules), err, sizeof err);
    CHECK(acl != NULL);
    fworld w;
    fw_init(&w, NULL);
    broker_set_acl(w.b, acl);
    fclient *a = fw_connect_as(&w, "a", true);
    fc_subscribe(&w, a, 1, "$share/g/allowed/x", 0);
    CHECK(suback_is(a, 1, 0));
    fc_subscribe(&w, a, 2, "$share/g/other", 0);
    CHECK(suback_is(a, 2, 0x80));
    /* $SYS stays for operators, shared or not. */
    fc_subscribe(&w, a, 3, "$share/g/$SYS/#", 0);
    CHECK(suback_is(a, 3, 0x80));
    fw_free(&w);
}

TEST(shared_acl_reload_removes_a_member_its_rules_no_longer_allow)
{
    char err[128];
    static const char open[] = "topic read #\n";
    static const char closed[] = "topic read other/#\n";
    fworld w;
    fw_init(&w, NULL);
    broker_set_acl(w.b, broker_acl_parse(NULL, "acl", open, strlen(open), err, sizeof err));
    fclient *a = fw_connect_as(&w, "a", true);
    fclient *b = fw_connect_as(&w, "b", true);
    fclient *pub = fw_connect_as(&w, "pub", true);
    fc_subscribe(&w, a, 1, "$share/g/t", 0);
    CHECK(suback_is(a, 1, 0));
    broker_set_acl(w.b, broker_acl_parse(NULL, "acl", closed, strlen(closed), err, sizeof err));
    CHECK_EQ(a->conn->sess->sub_count, 0);
    fc_subscribe(&w, b, 1, "$share/g/t", 0);
    CHECK(suback_is(b, 1, 0x80));
    fc_publish(&w, pub, "t", "m", 0, false, 0);
    CHECK_EQ(fc_count_publish(a), 0);
    fw_free(&w);
}

TEST(shared_and_plain_subscription_of_one_session_give_two_copies)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *a = fw_connect_as(&w, "a", true);
    fclient *pub = fw_connect_as(&w, "pub", true);
    fc_subscribe(&w, a, 1, "$share/g/t", 0);
    fc_subscribe(&w, a, 2, "t", 0);
    fc_clear(a);
    fc_publish(&w, pub, "t", "m", 0, false, 0);
    CHECK_EQ(fc_count_publish(a), 2);
    /* Unsubscribing the shared one leaves the plain one. */
    fc_unsubscribe(&w, a, 3, "$share/g/t");
    fc_clear(a);
    fc_publish(&w, pub, "t", "m", 0, false, 0);
    CHECK_EQ(fc_count_publish(a), 1);
    CHECK_EQ(w.b->stats.subscriptions_count, 1);
    fw_free(&w);
}

TEST(shared_last_member_leaving_frees_the_group_and_node)
{
    fworld w;
    fw_init(&w, NULL);
    size_t nodes = w.b->tree.node_count;
    fclient *a = fw_connect_as(&w, "a", true);
    fc_subscribe(&w, a, 1, "$share/g/x/y", 0);
    CHECK(w.b->tree.node_count > nodes);
    fc_unsubscribe(&w, a, 2, "$share/g/x/y");
    CHECK_EQ(w.b->tree.node_count, nodes);
    fw_free(&w);
}

static void commit_to_model(fworld *w)
{
    ms_commit_all(w->commit_ctx, w->b);
}

TEST(shared_subscription_of_a_persistent_session_survives_a_restart)
{
    mstore *ms = calloc(1, sizeof *ms);
    CHECK(ms);
    fworld w;
    fw_init_durable(&w, NULL);
    w.commit = commit_to_model;
    w.commit_ctx = ms;
    fclient *a = fw_connect_as(&w, "a", false);
    fc_subscribe(&w, a, 1, "$share/g/t", 1);
    ms_commit_all(ms, w.b);
    fw_drain(&w);
    CHECK(suback_is(a, 1, 1));
    CHECK_EQ(ms_count(ms, 'B'), 1);
    fw_restart(&w);
    CHECK(ms_load(ms, w.b));
    /* The store kept the whole `$share/g/t`: back as a member of g on t
     * (a plain filter `$share/g/t` would not match topic t). */
    fclient *a2 = fw_open(&w);
    fc_connect(&w, a2, "a", false, 0);
    mqtt_packet p;
    CHECK(fc_next_is(a2, MQTT_CONNACK, &p));
    CHECK(p.u.connack.session_present);
    fclient *pub = fw_connect_as(&w, "pub", true);
    fc_publish(&w, pub, "t", "m", 0, false, 0);
    CHECK(fc_next_is(a2, MQTT_PUBLISH, &p));
    CHECK(fc_payload_is(&p, "m"));
    fc_unsubscribe(&w, a2, 2, "$share/g/t");
    ms_commit_all(ms, w.b);
    fw_drain(&w);
    CHECK(fc_next_is(a2, MQTT_UNSUBACK, &p));
    CHECK_EQ(ms_count(ms, 'B'), 0); /* its row, keyed by the whole filter, is gone */
    fw_free(&w);
    free(ms);
}

TEST(shared_unsubscribe_moves_queued_rows_of_a_persistent_member_to_another)
{
    broker_limits lim = {.max_inflight = 1};
    mstore *ms = calloc(1, sizeof *ms);
    CHECK(ms);
    fworld w;
    fw_init_durable(&w, &lim);
    w.commit = commit_to_model;
    w.commit_ctx = ms;
    fclient *a = fw_connect_as(&w, "a", false);
    fclient *b = fw_connect_as(&w, "b", false);
    fclient *pub = fw_connect_as(&w, "pub", true);
    fc_subscribe(&w, a, 1, "$share/g/q", 1);
    fc_subscribe(&w, b, 1, "$share/g/q", 1);
    for (int i = 0; i < 6; i++)
        fc_publish(&w, pub, "q", "m", 1, false, (uint16_t)(i + 1));
    ms_commit_all(ms, w.b);
    fw_drain(&w);
    CHECK_EQ(ms_count(ms, 'Q'), 6); /* 3 each: 1 sent, 2 queued */
    fc_unsubscribe(&w, a, 9, "$share/g/q");
    ms_commit_all(ms, w.b);
    fw_drain(&w);
    /* a's queued two are b's now, on disk too; a keeps its sent one. */
    CHECK_EQ(ms_count(ms, 'Q'), 6);
    CHECK_EQ(a->conn->sess->q_count, 1);
    CHECK_EQ(b->conn->sess->q_count, 5);
    fw_restart(&w);
    CHECK(ms_load(ms, w.b));
    broker_stats st;
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.subscriptions_count, 1);
    CHECK_EQ(bk_session_find(&w.b->sessions, (const uint8_t *)"b", 1)->q_count, 5);
    CHECK_EQ(bk_session_find(&w.b->sessions, (const uint8_t *)"a", 1)->q_count, 1);
    fw_free(&w);
    free(ms);
}

TEST(shared_turns_go_on_among_the_members_left)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *m[3];
    static const char *ids[3] = {"m0", "m1", "m2"};
    for (int i = 0; i < 3; i++) {
        m[i] = fw_connect_as(&w, ids[i], true);
        fc_subscribe(&w, m[i], 1, "$share/g/t", 0);
        fc_clear(m[i]);
    }
    fclient *pub = fw_connect_as(&w, "pub", true);
    fc_publish(&w, pub, "t", "m", 0, false, 0);
    /* Whoever's turn it is next leaves; the other two alternate. */
    fc_unsubscribe(&w, m[1], 2, "$share/g/t");
    fc_unsubscribe(&w, m[2], 2, "$share/g/t");
    fc_subscribe(&w, m[2], 3, "$share/g/t", 0);
    for (int i = 0; i < 3; i++)
        fc_clear(m[i]);
    for (int i = 0; i < 8; i++)
        fc_publish(&w, pub, "t", "m", 0, false, 0);
    CHECK_EQ(fc_count_publish(m[0]), 4);
    CHECK_EQ(fc_count_publish(m[1]), 0);
    CHECK_EQ(fc_count_publish(m[2]), 4);
    fw_free(&w);
}

TEST(shared_qos2_message_sent_to_a_departed_member_goes_to_no_one_else)
{
    broker_limits lim = {.max_inflight = 4};
    fworld w;
    fw_init(&w, &lim);
    fclient *a = fw_connect_as(&w, "a", true);
    fclient *pub = fw_connect_as(&w, "pub", true);
    fc_subscribe(&w, a, 1, "$share/g/q", 2);
    fc_clear(a);
    fc_publish(&w, pub, "q", "two", 2, false, 1);
    fc_publish(&w, pub, "q", "one", 1, false, 2);
    CHECK_EQ(fc_count_publish(a), 2);
    fclient *b = fw_connect_as(&w, "b", true);
    fc_subscribe(&w, b, 1, "$share/g/q", 2);
    fc_clear(b);
    /* a ends with both unacknowledged: the QoS 1 one goes to b, the QoS 2
     * one, which a may have taken, to no one [MQTT-4.8.2-5]. */
    fw_drop(&w, a);
    mqtt_packet p;
    CHECK(fc_next_is(b, MQTT_PUBLISH, &p));
    CHECK(fc_payload_is(&p, "one"));
    CHECK(!fc_next(b, &p));
    fw_free(&w);
}
