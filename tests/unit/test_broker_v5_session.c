/*
 * test_broker_v5_session.c - the MQTT 5.0 connection and session
 * lifecycle of the broker core, driven by in-memory clients: CONNACK's
 * properties and refusals, assigned client ids, server keep alive,
 * Session Expiry Interval (CONNECT, DISCONNECT, expiry), wills (DISCONNECT
 * reasons, Will Delay Interval), the server's DISCONNECT reasons (takeover,
 * keep alive, protocol errors, shutdown) and AUTH; which 5.0 sessions
 * reach the store (modelled in memory: model_store.c).
 */
#include "fake_client.h"
#include "model_store.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

#define EXPECT_PACKET(c, pkt, t)                                                              \
    do {                                                                                      \
        CHECK(fc_next((c), &(pkt)));                                                          \
        CHECK_EQ((pkt).type, (t));                                                            \
    } while (0)

#define HAS(props, id) (((props)->present & MQTT_PROP_BIT(id)) != 0)

/* A 3.1.1 subscriber to filter at QoS 1, its SUBACK skipped. */
static fclient *listener(fworld *w, const char *id, const char *filter)
{
    fclient *s = fw_open(w);
    fc_connect(w, s, id, true, 0);
    fc_subscribe(w, s, 1, filter, 1);
    fc_clear(s);
    return s;
}

/* Connect at level 5 with a Session Expiry Interval (0: absent). */
static fclient *connect5(fworld *w, const char *id, bool clean, uint32_t expiry)
{
    fprops fp = {.len = 0};
    if (expiry)
        fp_u32(&fp, MQTT_PROP_SESSION_EXPIRY, expiry);
    fclient *c = fw_open(w);
    fc_connect5(w, c, id, clean, 30, &fp);
    return c;
}

/* Client "c" at level 5 with a Session Expiry Interval (0: none) and a
 * will on "will" ("gone", QoS 1) with a Will Delay Interval and, when not
 * 0, a Message Expiry Interval. */
static fclient *connect_delayed_will(fworld *w, uint32_t expiry, uint32_t delay,
                                     uint32_t msg_expiry)
{
    fprops wp = {.len = 0};
    fp_u32(&wp, MQTT_PROP_WILL_DELAY, delay);
    if (msg_expiry)
        fp_u32(&wp, MQTT_PROP_MESSAGE_EXPIRY, msg_expiry);
    fprops cp = {.len = 0};
    if (expiry)
        fp_u32(&cp, MQTT_PROP_SESSION_EXPIRY, expiry);
    fclient *c = fw_open(w);
    fc_connect5_will(w, c, "c", true, 0, &cp, "will", "gone", 1, false, &wp);
    return c;
}

TEST(v5_connack_carries_the_capability_properties)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *c = connect5(&w, "a", true, 0);
    mqtt_packet p;
    EXPECT_PACKET(c, p, MQTT_CONNACK);
    CHECK_EQ(p.u.connack.return_code, MQTT_RC_SUCCESS);
    CHECK(!p.u.connack.session_present);
    const mqtt_props *pr = &p.u.connack.props;
    CHECK(HAS(pr, MQTT_PROP_RECEIVE_MAXIMUM));
    CHECK_EQ(pr->receive_maximum, 1024);
    CHECK(HAS(pr, MQTT_PROP_MAXIMUM_PACKET_SIZE));
    CHECK_EQ(pr->maximum_packet_size, 1u << 20);
    CHECK(HAS(pr, MQTT_PROP_TOPIC_ALIAS_MAXIMUM));
    CHECK_EQ(pr->topic_alias_maximum, 10);
    CHECK(HAS(pr, MQTT_PROP_SHARED_SUB_AVAILABLE));
    CHECK_EQ(pr->shared_sub_available, 1);
    CHECK_EQ(pr->wildcard_sub_available, 1);
    CHECK_EQ(pr->sub_id_available, 1);
    /* QoS 2 and retain are available: said by their absence. */
    CHECK(!HAS(pr, MQTT_PROP_MAXIMUM_QOS));
    CHECK(!HAS(pr, MQTT_PROP_RETAIN_AVAILABLE));
    /* Nothing changed of what the client asked, nothing assigned. */
    CHECK(!HAS(pr, MQTT_PROP_SESSION_EXPIRY));
    CHECK(!HAS(pr, MQTT_PROP_SERVER_KEEP_ALIVE));
    CHECK(!HAS(pr, MQTT_PROP_ASSIGNED_CLIENT_ID));
    CHECK(!HAS(pr, MQTT_PROP_REASON_STRING));
    CHECK(!c->closed);
    fw_free(&w);
}

TEST(v5_connack_says_retain_and_shared_subscriptions_unavailable_when_switched_off)
{
    fworld w;
    fw_init(&w, NULL);
    broker_destroy(w.b);
    broker_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.limits.sys_interval_s = UINT32_MAX;
    cfg.limits.max_topic_alias = UINT32_MAX;
    cfg.allow_anonymous = true;
    cfg.retain_disabled = true;
    cfg.shared_subs_disabled = true;
    w.b = broker_create(&cfg, w.now);
    CHECK(w.b != NULL);
    fclient *c = connect5(&w, "a", true, 0);
    mqtt_packet p;
    EXPECT_PACKET(c, p, MQTT_CONNACK);
    const mqtt_props *pr = &p.u.connack.props;
    CHECK(HAS(pr, MQTT_PROP_RETAIN_AVAILABLE));
    CHECK_EQ(pr->retain_available, 0);
    CHECK_EQ(pr->shared_sub_available, 0);
    CHECK(!HAS(pr, MQTT_PROP_TOPIC_ALIAS_MAXIMUM)); /* no aliases: absent means 0 */

    /* A retained will where retain is unavailable [MQTT-3.2.2-13]. */
    fclient *d = fw_open(&w);
    fc_connect5_will(&w, d, "d", true, 0, NULL, "w/d", "x", 0, true, NULL);
    EXPECT_PACKET(d, p, MQTT_CONNACK);
    CHECK_EQ(p.u.connack.return_code, MQTT_RC_RETAIN_NOT_SUPPORTED);
    CHECK(d->closed);
    fw_free(&w);
}

TEST(v5_empty_client_id_is_assigned_and_its_session_may_persist)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *c = connect5(&w, "", false, 60);
    mqtt_packet p;
    EXPECT_PACKET(c, p, MQTT_CONNACK);
    CHECK_EQ(p.u.connack.return_code, MQTT_RC_SUCCESS);
    CHECK(!p.u.connack.session_present);
    CHECK(HAS(&p.u.connack.props, MQTT_PROP_ASSIGNED_CLIENT_ID));
    char id[64];
    mqtt_bytes a = p.u.connack.props.assigned_client_id;
    CHECK(a.len > 0 && a.len < sizeof id);
    memcpy(id, a.p, a.len);
    id[a.len] = '\0';
    fc_subscribe(&w, c, 1, "t", 1);
    fc_reason5(&w, c, MQTT_DISCONNECT, MQTT_RC_SUCCESS, NULL);
    CHECK(c->closed);

    fclient *again = connect5(&w, id, false, 60);
    EXPECT_PACKET(again, p, MQTT_CONNACK);
    CHECK(p.u.connack.session_present);
    CHECK(!HAS(&p.u.connack.props, MQTT_PROP_ASSIGNED_CLIENT_ID));
    fw_free(&w);
}

TEST(v5_keepalive_above_the_cap_is_lowered_told_and_enforced_with_0x8d)
{
    broker_limits lim = {.max_keepalive = 10};
    fworld w;
    fw_init(&w, &lim);
    fclient *s = listener(&w, "s", "will");
    fclient *c = fw_open(&w);
    fc_connect5_will(&w, c, "c", true, 100, NULL, "will", "gone", 0, false, NULL);
    mqtt_packet p;
    EXPECT_PACKET(c, p, MQTT_CONNACK);
    CHECK(HAS(&p.u.connack.props, MQTT_PROP_SERVER_KEEP_ALIVE));
    CHECK_EQ(p.u.connack.props.server_keep_alive, 10);
    fw_advance(&w, 14000); /* within one and a half periods of 10 s */
    CHECK(!c->closed);
    fw_advance(&w, 2000);
    CHECK(c->closed);
    EXPECT_PACKET(c, p, MQTT_DISCONNECT);
    CHECK_EQ(p.u.disconnect.reason, MQTT_RC_KEEP_ALIVE_TIMEOUT);
    EXPECT_PACKET(s, p, MQTT_PUBLISH); /* an abnormal end: the will goes */
    fw_free(&w);
}

TEST(v5_keepalive_zero_is_given_the_cap)
{
    broker_limits lim = {.max_keepalive = 20};
    fworld w;
    fw_init(&w, &lim);
    fclient *c = fw_open(&w);
    fc_connect5(&w, c, "c", true, 0, NULL);
    mqtt_packet p;
    EXPECT_PACKET(c, p, MQTT_CONNACK);
    CHECK_EQ(p.u.connack.props.server_keep_alive, 20);
    fw_advance(&w, 31000);
    CHECK(c->closed);
    fw_free(&w);
}

TEST(v311_keepalive_is_not_capped)
{
    broker_limits lim = {.max_keepalive = 10};
    fworld w;
    fw_init(&w, &lim);
    fclient *c = fw_open(&w);
    fc_connect(&w, c, "c", true, 100);
    fw_advance(&w, 20000);
    CHECK(!c->closed);
    mqtt_packet p;
    EXPECT_PACKET(c, p, MQTT_CONNACK);
    CHECK(!fc_next(c, &p));
    fw_free(&w);
}

TEST(v5_session_expiry_absent_ends_the_session_with_the_connection)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *c = connect5(&w, "a", false, 0);
    fc_subscribe(&w, c, 1, "t", 1);
    fw_drop(&w, c);
    c = connect5(&w, "a", false, 0);
    mqtt_packet p;
    EXPECT_PACKET(c, p, MQTT_CONNACK);
    CHECK(!p.u.connack.session_present);
    fw_free(&w);
}

TEST(v5_session_is_kept_for_its_expiry_interval_then_ends)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *c = connect5(&w, "a", false, 5);
    fc_subscribe(&w, c, 1, "t", 1);
    fw_drop(&w, c);
    fw_advance(&w, 3000);
    c = connect5(&w, "a", false, 5);
    mqtt_packet p;
    EXPECT_PACKET(c, p, MQTT_CONNACK);
    CHECK(p.u.connack.session_present); /* [MQTT-3.2.2-3] */
    fw_drop(&w, c);
    fw_advance(&w, 7000); /* the interval counts from the last disconnect */
    c = connect5(&w, "a", false, 5);
    EXPECT_PACKET(c, p, MQTT_CONNACK);
    CHECK(!p.u.connack.session_present);
    fw_free(&w);
}

TEST(v5_clean_start_discards_the_session)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *c = connect5(&w, "a", false, 100);
    fw_drop(&w, c);
    c = connect5(&w, "a", true, 100);
    mqtt_packet p;
    EXPECT_PACKET(c, p, MQTT_CONNACK);
    CHECK(!p.u.connack.session_present); /* [MQTT-3.2.2-2] */
    fw_free(&w);
}

TEST(v5_session_expiry_above_session_expiry_limit_is_lowered_and_told)
{
    broker_limits lim = {.session_expiry_s = 100};
    fworld w;
    fw_init(&w, &lim);
    fclient *c = connect5(&w, "a", false, UINT32_MAX);
    mqtt_packet p;
    EXPECT_PACKET(c, p, MQTT_CONNACK);
    CHECK(HAS(&p.u.connack.props, MQTT_PROP_SESSION_EXPIRY));
    CHECK_EQ(p.u.connack.props.session_expiry, 100);
    fw_drop(&w, c);
    fw_advance(&w, 102000);
    c = connect5(&w, "a", false, 50);
    EXPECT_PACKET(c, p, MQTT_CONNACK);
    CHECK(!p.u.connack.session_present);
    CHECK(!HAS(&p.u.connack.props, MQTT_PROP_SESSION_EXPIRY)); /* 50 is granted as asked */
    fw_free(&w);
}

TEST(v5_disconnect_cannot_set_an_expiry_after_connects_zero)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = listener(&w, "s", "will");
    fclient *c = fw_open(&w);
    fc_connect5_will(&w, c, "c", true, 0, NULL, "will", "gone", 0, false, NULL);
    fc_clear(c);
    fprops fp = {.len = 0};
    fp_u32(&fp, MQTT_PROP_SESSION_EXPIRY, 10);
    fc_reason5(&w, c, MQTT_DISCONNECT, MQTT_RC_SUCCESS, &fp);
    mqtt_packet p;
    EXPECT_PACKET(c, p, MQTT_DISCONNECT);
    CHECK_EQ(p.u.disconnect.reason, MQTT_RC_PROTOCOL_ERROR);
    CHECK(c->closed);
    EXPECT_PACKET(s, p, MQTT_PUBLISH); /* a protocol error: the will goes */
    fw_free(&w);
}

TEST(v5_disconnect_with_expiry_zero_ends_a_persistent_session)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *c = connect5(&w, "a", false, 100);
    fprops fp = {.len = 0};
    fp_u32(&fp, MQTT_PROP_SESSION_EXPIRY, 0);
    fc_reason5(&w, c, MQTT_DISCONNECT, MQTT_RC_SUCCESS, &fp);
    CHECK(c->closed);
    c = connect5(&w, "a", false, 100);
    mqtt_packet p;
    EXPECT_PACKET(c, p, MQTT_CONNACK);
    CHECK(!p.u.connack.session_present);
    fw_free(&w);
}

TEST(v5_disconnect_may_shorten_the_expiry)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *c = connect5(&w, "a", false, 1000);
    fprops fp = {.len = 0};
    fp_u32(&fp, MQTT_PROP_SESSION_EXPIRY, 2);
    fc_reason5(&w, c, MQTT_DISCONNECT, MQTT_RC_SUCCESS, &fp);
    fw_advance(&w, 4000);
    c = connect5(&w, "a", false, 1000);
    mqtt_packet p;
    EXPECT_PACKET(c, p, MQTT_CONNACK);
    CHECK(!p.u.connack.session_present);
    fw_free(&w);
}

TEST(v5_disconnect_reason_decides_the_will)
{
    /* 0x00 discards it [MQTT-3.14.4-3]; 0x04 asks for it; any other
     * reason is an abnormal end and publishes it [MQTT-3.1.2-8]. */
    static const struct {
        uint8_t reason;
        int wills;
    } cases[] = {
        {MQTT_RC_SUCCESS, 0},
        {MQTT_RC_DISCONNECT_WITH_WILL, 1},
        {MQTT_RC_UNSPECIFIED_ERROR, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fworld w;
        fw_init(&w, NULL);
        fclient *s = listener(&w, "s", "will");
        fclient *c = fw_open(&w);
        fc_connect5_will(&w, c, "c", true, 0, NULL, "will", "gone", 0, false, NULL);
        fc_reason5(&w, c, MQTT_DISCONNECT, cases[i].reason, NULL);
        CHECK(c->closed);
        CHECK_EQ(fc_count_publish(s), cases[i].wills);
        fw_free(&w);
    }
}

TEST(v5_takeover_tells_the_old_connection_0x8e)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *old = connect5(&w, "a", false, 100);
    fc_clear(old);
    fclient *c = connect5(&w, "a", false, 100);
    mqtt_packet p;
    EXPECT_PACKET(old, p, MQTT_DISCONNECT);
    CHECK_EQ(p.u.disconnect.reason, MQTT_RC_SESSION_TAKEN_OVER);
    CHECK(old->closed);
    EXPECT_PACKET(c, p, MQTT_CONNACK);
    CHECK(p.u.connack.session_present);
    fw_free(&w);
}

TEST(v311_takeover_sends_no_disconnect)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *old = fw_open(&w);
    fc_connect(&w, old, "a", false, 0);
    fc_clear(old);
    fclient *c = fw_open(&w);
    fc_connect(&w, c, "a", false, 0);
    mqtt_packet p;
    CHECK(old->closed);
    CHECK(!fc_next(old, &p));
    fw_free(&w);
}

TEST(v5_authentication_method_is_refused_with_0x8c)
{
    fworld w;
    fw_init(&w, NULL);
    fprops fp = {.len = 0};
    fp_str(&fp, MQTT_PROP_AUTH_METHOD, "SCRAM-SHA-1");
    fclient *c = fw_open(&w);
    fc_connect5(&w, c, "a", true, 0, &fp);
    mqtt_packet p;
    EXPECT_PACKET(c, p, MQTT_CONNACK);
    CHECK_EQ(p.u.connack.return_code, MQTT_RC_BAD_AUTHENTICATION_METHOD);
    CHECK(!p.u.connack.session_present);
    CHECK(c->closed);
    fw_free(&w);
}

TEST(v5_auth_packet_without_a_method_is_a_protocol_error)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *c = connect5(&w, "a", true, 0);
    fc_clear(c);
    fc_reason5(&w, c, MQTT_AUTH, MQTT_RC_RE_AUTHENTICATE, NULL);
    mqtt_packet p;
    EXPECT_PACKET(c, p, MQTT_DISCONNECT);
    CHECK_EQ(p.u.disconnect.reason, MQTT_RC_PROTOCOL_ERROR);
    CHECK(c->closed);
    fw_free(&w);
}

TEST(v5_second_connect_gets_disconnect_0x82)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *c = connect5(&w, "a", true, 0);
    fc_clear(c);
    fc_connect5(&w, c, "a", true, 0, NULL);
    mqtt_packet p;
    EXPECT_PACKET(c, p, MQTT_DISCONNECT);
    CHECK_EQ(p.u.disconnect.reason, MQTT_RC_PROTOCOL_ERROR);
    CHECK(c->closed);
    fw_free(&w);
}

TEST(v5_refusals_use_reason_codes_and_a_reason_string_unless_declined)
{
    fworld w;
    fw_init(&w, NULL);
    /* The id belongs to another identity's session: 0x85. */
    fclient *owner = fw_open_as(&w, "alice", false);
    fc_connect5(&w, owner, "dev", false, 0, NULL);
    fclient *c = fw_open_as(&w, "mallory", false);
    fc_connect5(&w, c, "dev", false, 0, NULL);
    mqtt_packet p;
    EXPECT_PACKET(c, p, MQTT_CONNACK);
    CHECK_EQ(p.u.connack.return_code, MQTT_RC_CLIENT_ID_NOT_VALID);
    CHECK(HAS(&p.u.connack.props, MQTT_PROP_REASON_STRING));
    CHECK(c->closed);
    /* The same with Request Problem Information 0: no Reason String. */
    fprops fp = {.len = 0};
    fp_u8(&fp, MQTT_PROP_REQUEST_PROBLEM_INFO, 0);
    c = fw_open_as(&w, "mallory", false);
    fc_connect5(&w, c, "dev", false, 0, &fp);
    EXPECT_PACKET(c, p, MQTT_CONNACK);
    CHECK_EQ(p.u.connack.return_code, MQTT_RC_CLIENT_ID_NOT_VALID);
    CHECK(!HAS(&p.u.connack.props, MQTT_PROP_REASON_STRING));
    fw_free(&w);
}

TEST(v5_malformed_connect_is_answered_with_its_reason_code_in_connack)
{
    fworld w;
    fw_init(&w, NULL);
    /* Session Expiry Interval twice: a protocol error (0x82). */
    const uint8_t pkt[] = {0x10, 23, 0, 4, 'M', 'Q', 'T', 'T', 5, 0x02, 0, 0,
                           10, 0x11, 0, 0, 0, 1, 0x11, 0, 0, 0, 2, 0, 1, 'a'};
    fclient *c = fw_open(&w);
    c->level = MQTT_LEVEL_5; /* to decode the answer */
    fw_send(&w, c, pkt, sizeof pkt);
    mqtt_packet p;
    EXPECT_PACKET(c, p, MQTT_CONNACK);
    CHECK_EQ(p.u.connack.return_code, MQTT_RC_PROTOCOL_ERROR);
    CHECK(c->closed);
    CHECK(!fc_next(c, &p)); /* no DISCONNECT: not after a refusing CONNACK */
    fw_free(&w);
}

TEST(v5_connect_above_max_packet_size_gets_connack_0x95)
{
    broker_limits lim = {.max_packet_size = 64};
    fworld w;
    fw_init(&w, &lim);
    fclient *c = fw_open(&w);
    fprops fp = {.len = 0};
    fp_user(&fp, "k", "a value long enough to take the CONNECT above 64 bytes ..........");
    fc_connect5(&w, c, "a", true, 0, &fp);
    mqtt_packet p;
    EXPECT_PACKET(c, p, MQTT_CONNACK);
    CHECK_EQ(p.u.connack.return_code, MQTT_RC_PACKET_TOO_LARGE);
    CHECK(c->closed);
    fw_free(&w);
}

TEST(v5_packet_above_max_packet_size_gets_disconnect_0x95)
{
    broker_limits lim = {.max_packet_size = 64};
    fworld w;
    fw_init(&w, &lim);
    fclient *c = connect5(&w, "a", true, 0);
    fc_clear(c);
    fc_publish5(&w, c, "t", "a payload that takes the PUBLISH above sixty-four bytes ......",
                0, false, 0, NULL);
    mqtt_packet p;
    EXPECT_PACKET(c, p, MQTT_DISCONNECT);
    CHECK_EQ(p.u.disconnect.reason, MQTT_RC_PACKET_TOO_LARGE);
    CHECK(c->closed);
    fw_free(&w);
}

TEST(v5_will_waits_for_its_delay)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = listener(&w, "s", "will");
    fclient *c = connect_delayed_will(&w, 100, 5, 0);
    fw_drop(&w, c);
    fw_advance(&w, 3000);
    CHECK_EQ(fc_count_publish(s), 0);
    fw_advance(&w, 4000);
    CHECK_EQ(fc_count_publish(s), 1);
    fw_free(&w);
}

TEST(v5_will_delay_is_cancelled_when_the_session_resumes)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = listener(&w, "s", "will");
    fclient *c = connect_delayed_will(&w, 100, 5, 0);
    fw_drop(&w, c);
    fw_advance(&w, 2000);
    c = connect5(&w, "c", false, 100); /* [MQTT-3.1.3-9] */
    fw_advance(&w, 10000);
    fw_drop(&w, c); /* this connection has no will: none may go, up to the end */
    fw_advance(&w, 101000);
    CHECK_EQ(fc_count_publish(s), 0);
    fw_free(&w);
}

TEST(v5_will_goes_when_the_session_ends_before_its_delay)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = listener(&w, "s", "will");
    fclient *c = connect_delayed_will(&w, 2, 60, 0);
    fw_drop(&w, c);
    fw_advance(&w, 1000);
    CHECK_EQ(fc_count_publish(s), 0);
    fw_advance(&w, 3000);
    CHECK_EQ(fc_count_publish(s), 1);
    fw_free(&w);
}

TEST(v5_will_with_delay_goes_at_once_when_the_session_ends_with_the_connection)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = listener(&w, "s", "will");
    fclient *c = connect_delayed_will(&w, 0, 60, 0);
    fw_drop(&w, c);
    CHECK_EQ(fc_count_publish(s), 1);
    fw_free(&w);
}

TEST(v5_clean_start_ends_the_old_session_and_sends_its_delayed_will)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = listener(&w, "s", "will");
    fclient *c = connect_delayed_will(&w, 100, 60, 0);
    fw_drop(&w, c);
    CHECK_EQ(fc_count_publish(s), 0);
    c = connect5(&w, "c", true, 100);
    CHECK_EQ(fc_count_publish(s), 1);
    fw_free(&w);
}

TEST(v5_will_with_a_message_expiry_shorter_than_its_delay_is_still_published)
{
    /* The will's Message Expiry Interval (2 s) is shorter than its delay
     * (5 s): it counts from the will's publication (bk_will_publish), so
     * the will reaches an offline persistent subscriber that comes back
     * within 2 s of it. Counted from the connect it would have expired
     * before it went out (once deliveries drop expired messages). */
    fworld w;
    fw_init(&w, NULL);
    fclient *sub = fw_open(&w);
    fc_connect(&w, sub, "sub", false, 0);
    fc_subscribe(&w, sub, 1, "will", 1);
    fw_drop(&w, sub);
    fclient *c = connect_delayed_will(&w, 100, 5, 2);
    fw_drop(&w, c);
    fw_advance(&w, 6500);
    sub = fw_open(&w);
    fc_connect(&w, sub, "sub", false, 0);
    mqtt_packet p;
    EXPECT_PACKET(sub, p, MQTT_CONNACK);
    EXPECT_PACKET(sub, p, MQTT_PUBLISH);
    CHECK(fc_payload_is(&p, "gone"));
    fw_free(&w);
}

TEST(v5_shutdown_tells_level_5_clients_0x8b_and_closes_everyone_without_wills)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = listener(&w, "s", "will");
    fclient *c5 = fw_open(&w);
    fc_connect5_will(&w, c5, "c5", true, 0, NULL, "will", "gone", 0, false, NULL);
    fc_clear(c5);
    broker_shutdown(w.b, w.now);
    fw_drain(&w);
    mqtt_packet p;
    EXPECT_PACKET(c5, p, MQTT_DISCONNECT);
    CHECK_EQ(p.u.disconnect.reason, MQTT_RC_SERVER_SHUTTING_DOWN);
    CHECK(c5->closed);
    CHECK(s->closed);
    CHECK(!fc_next(s, &p)); /* a 3.1.1 client: nothing, and no will */
    fw_free(&w);
}

/* ---- what reaches the store -------------------------------------------- */

TEST(v5_session_without_expiry_is_never_stored)
{
    mstore *ms = calloc(1, sizeof *ms);
    fworld w;
    fw_init_model_store(&w, ms);
    fclient *c = connect5(&w, "a", false, 0);
    fc_subscribe(&w, c, 1, "t", 1);
    ms_commit_all(ms, w.b);
    CHECK_EQ(ms_count(ms, 'S'), 0);
    CHECK_EQ(ms_count(ms, 'B'), 0);
    fw_free(&w);
    free(ms);
}

TEST(v5_disconnect_with_expiry_zero_deletes_the_stored_session)
{
    mstore *ms = calloc(1, sizeof *ms);
    fworld w;
    fw_init_model_store(&w, ms);
    fclient *c = connect5(&w, "a", false, 100);
    ms_commit_all(ms, w.b);
    fc_subscribe(&w, c, 1, "t", 1);
    ms_commit_all(ms, w.b);
    CHECK_EQ(ms_count(ms, 'S'), 1);
    CHECK_EQ(ms_count(ms, 'B'), 1);
    fprops fp = {.len = 0};
    fp_u32(&fp, MQTT_PROP_SESSION_EXPIRY, 0);
    fc_reason5(&w, c, MQTT_DISCONNECT, MQTT_RC_SUCCESS, &fp);
    ms_commit_all(ms, w.b);
    CHECK_EQ(ms_count(ms, 'S'), 0);
    CHECK_EQ(ms_count(ms, 'B'), 0);
    fw_free(&w);
    free(ms);
}

TEST(v5_resume_with_expiry_zero_deletes_the_stored_session_and_its_messages)
{
    mstore *ms = calloc(1, sizeof *ms);
    fworld w;
    fw_init_model_store(&w, ms);
    fclient *c = connect5(&w, "a", false, 100);
    ms_commit_all(ms, w.b);
    fc_subscribe(&w, c, 1, "t", 1);
    ms_commit_all(ms, w.b);
    fw_drop(&w, c);
    fclient *p = connect5(&w, "p", true, 0);
    fc_publish(&w, p, "t", "queued", 1, false, 1);
    ms_commit_all(ms, w.b);
    CHECK_EQ(ms_count(ms, 'Q'), 1);
    CHECK_EQ(ms_count(ms, 'M'), 1);
    /* The same session, now to end with its connection: off the disk at
     * once, its queued message too; it is still delivered on this one. */
    c = connect5(&w, "a", false, 0);
    ms_commit_all(ms, w.b);
    fw_drain(&w);
    CHECK_EQ(ms_count(ms, 'S'), 0);
    CHECK_EQ(ms_count(ms, 'Q'), 0);
    CHECK_EQ(ms_count(ms, 'M'), 0);
    mqtt_packet pk;
    EXPECT_PACKET(c, pk, MQTT_CONNACK);
    CHECK(pk.u.connack.session_present);
    EXPECT_PACKET(c, pk, MQTT_PUBLISH);
    CHECK(fc_payload_is(&pk, "queued"));
    fw_free(&w);
    free(ms);
}
