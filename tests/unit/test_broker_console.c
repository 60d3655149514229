/*
 * test_broker_console.c - the operator console in the broker core
 * (console.c, console_cmd.c, console_list.c) over the in-memory transport:
 * request parsing and refusals, each command, the platform ops, answers on
 * the Response Topic or the identity topic, bounded answers, counters.
 */
#include "broker/acl.h"
#include "broker/broker-t.h"
#include "broker/console.h"
#include "broker/session.h"
#include "fake_client.h"
#include "json/json.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REQ BROKER_CONSOLE_REQUEST_TOPIC

/* An answer decoded: its text (NUL-terminated) and the parsed value. */
typedef struct answer {
    char text[BROKER_CONSOLE_ANSWER_MAX + 1];
    jr_val v;
    bool found;
    mqtt_bytes corr; /* Correlation Data (views into a copy below) */
    uint8_t corr_buf[64];
    char topic[256];
} answer;

static answer ans; /* one at a time; large */

/* The next PUBLISH the client received, parsed as an answer. */
static bool next_answer(fclient *c)
{
    mqtt_packet p;
    memset(&ans, 0, sizeof ans);
    while (fc_next(c, &p)) {
        if (p.type != MQTT_PUBLISH)
            continue;
        if (p.u.publish.payload.len > BROKER_CONSOLE_ANSWER_MAX)
            return false;
        memcpy(ans.text, p.u.publish.payload.p, p.u.publish.payload.len);
        snprintf(ans.topic, sizeof ans.topic, "%.*s", (int)p.u.publish.topic.len,
                 (const char *)p.u.publish.topic.p);
        const mqtt_props *pr = fc_props_of(&p);
        if (pr->present & MQTT_PROP_BIT(MQTT_PROP_CORRELATION_DATA) &&
            pr->correlation_data.len <= sizeof ans.corr_buf) {
            memcpy(ans.corr_buf, pr->correlation_data.p, pr->correlation_data.len);
            ans.corr = (mqtt_bytes){ans.corr_buf, pr->correlation_data.len};
        }
        ans.found = jr_parse(ans.text, p.u.publish.payload.len, &ans.v, NULL, 0) == 0;
        return ans.found;
    }
    return false;
}

static bool ans_str(const char *key, const char *want)
{
    jr_val v;
    return jr_get(&ans.v, key, &v) == 0 && jr_string_is(&v, want);
}

static bool ans_ok(void)
{
    jr_val v;
    bool ok = false;
    return jr_get(&ans.v, "ok", &v) == 0 && jr_bool(&v, &ok) == 0 && ok;
}

static long long ans_u64(const char *key)
{
    jr_val v;
    uint64_t x;
    if (jr_get(&ans.v, key, &v) != 0 || jr_u64(&v, &x) != 0)
        return -1;
    return (long long)x;
}

static bool ans_error_has(const char *part)
{
    jr_val v;
    char buf[256];
    return jr_get(&ans.v, "error", &v) == 0 && jr_string(&v, buf, sizeof buf) >= 0 &&
           strstr(buf, part) != NULL;
}

/* An operator "ops" (3.1.1, client id "op") subscribed to its answers. */
static fclient *operator311(fworld *w)
{
    fclient *op = fw_open_as(w, "ops", true);
    fc_connect(w, op, "op", true, 0);
    fc_subscribe(w, op, 1, BROKER_CONSOLE_RESPONSE_PREFIX "ops", 1);
    fc_clear(op);
    return op;
}

/* Send a request at QoS 1 and read the answer. */
static bool ask(fworld *w, fclient *op, const char *json)
{
    fc_publish(w, op, REQ, json, 1, false, 7);
    return next_answer(op);
}

TEST(console_acl_lets_only_operators_write_only_the_request_topic)
{
    CHECK(broker_acl_check(NULL, "o", "c", true, REQ, strlen(REQ), BROKER_ACL_WRITE));
    CHECK(!broker_acl_check(NULL, "u", "c", false, REQ, strlen(REQ), BROKER_ACL_WRITE));
    CHECK(!broker_acl_check(NULL, "o", "c", true, "$SYS/console/requests", 21,
                            BROKER_ACL_WRITE));
    CHECK(!broker_acl_check(NULL, "o", "c", true, "$SYS/console/response/o", 23,
                            BROKER_ACL_WRITE));
}

TEST(console_status_is_answered_on_the_identity_topic_and_acknowledged)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *op = operator311(&w);
    fc_publish(&w, op, REQ, "{\"command\":\"status\"}", 1, false, 9);
    mqtt_packet p;
    bool acked = false;
    while (fc_next(op, &p))
        if (p.type == MQTT_PUBACK && p.u.ack.packet_id == 9)
            acked = true;
    CHECK(acked);
    op->rx_pos = 0;
    CHECK(next_answer(op));
    CHECK(strcmp(ans.topic, "$SYS/console/response/ops") == 0);
    CHECK(ans_str("command", "status"));
    CHECK(ans_ok());
    jr_val clients, connected;
    CHECK(jr_get(&ans.v, "clients", &clients) == 0);
    CHECK(jr_get(&clients, "connected", &connected) == 0);
    uint64_t n = 0;
    CHECK(jr_u64(&connected, &n) == 0);
    CHECK_EQ(n, 1);
    CHECK_EQ(w.b->console.requests, 1);
    CHECK_EQ(w.b->console.per_command[BK_CON_STATUS], 1);
    fw_free(&w);
}

TEST(console_request_reaches_no_subscriber_and_is_never_retained)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *op = operator311(&w);
    fclient *op2 = fw_open_as(&w, "ops2", true);
    fc_connect(&w, op2, "op2", true, 0);
    fc_subscribe(&w, op2, 1, "$SYS/console/request", 1);
    fc_clear(op2);
    fc_publish(&w, op, REQ, "{\"command\":\"status\"}", 1, true, 3);
    CHECK_EQ(fc_count_publish(op2), 0);
    CHECK(next_answer(op));
    uint64_t before = w.b->stats.retained_count;
    fc_subscribe(&w, op2, 2, "$SYS/console/request", 1);
    CHECK_EQ(fc_count_publish(op2), 0);
    CHECK_EQ(w.b->stats.retained_count, before);
    fw_free(&w);
}

/* A non-operator's request: acknowledged, not executed, not answered,
 * counted as any refused $SYS publish and as a refused console request. */
TEST(console_non_operator_is_refused_for_every_command)
{
    static const char *const reqs[] = {
        "{\"command\":\"status\"}",
        "{\"command\":\"clients\"}",
        "{\"command\":\"kick\",\"client\":\"victim\"}",
        "{\"command\":\"session-delete\",\"client\":\"victim\"}",
        "{\"command\":\"retained-list\"}",
        "{\"command\":\"retained-clear\",\"topic\":\"keep/me\"}",
        "{\"command\":\"config-show\"}",
        "{\"command\":\"backup-now\"}",
        "{\"command\":\"scrub-now\"}",
        "{\"command\":\"diag\"}",
        "{\"command\":\"log-level\",\"level\":\"debug\"}",
    };
    fworld w;
    fw_init(&w, NULL);
    fclient *watch = fw_open_as(&w, "ops", true);
    fc_connect(&w, watch, "watch", true, 0);
    fc_subscribe(&w, watch, 1, "$SYS/console/#", 1);
    fclient *victim = fw_open_as(&w, "v", false);
    fc_connect(&w, victim, "victim", false, 0);
    fclient *pub = fw_connect_as(&w, "pub", true);
    fc_publish(&w, pub, "keep/me", "x", 0, true, 0);
    fclient *user = fw_open_as(&w, "user", false);
    fc_connect(&w, user, "u", true, 0);
    fc_subscribe(&w, user, 1, "#", 1);
    fc_clear(watch);
    fc_clear(user);
    broker_log_level level = w.b->log_level;
    for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
        uint64_t denied = w.b->stats.acl_denied;
        fc_publish(&w, user, REQ, reqs[i], 1, false, (uint16_t)(i + 1));
        mqtt_packet p;
        CHECK(fc_next(user, &p));
        CHECK_EQ(p.type, MQTT_PUBACK);
        CHECK(!fc_next(user, &p));
        CHECK_EQ(w.b->stats.acl_denied, denied + 1);
        CHECK_EQ(fc_count_publish(watch), 0);
    }
    CHECK(!victim->closed);
    CHECK_EQ(w.b->stats.retained_count, 1);
    CHECK_EQ(w.b->log_level, level);
    CHECK_EQ(w.b->console.refused, 11);
    CHECK_EQ(w.b->console.requests, 0);
    fw_free(&w);
}

TEST(console_answer_goes_to_the_response_topic_with_its_correlation_data)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *op = fw_open_as(&w, "ops", true);
    fc_connect5(&w, op, "op5", true, 0, NULL);
    fc_subscribe5(&w, op, 1, "replies/ops", 1, NULL);
    fc_clear(op);
    fprops pp = {.len = 0};
    fp_str(&pp, MQTT_PROP_RESPONSE_TOPIC, "replies/ops");
    fp_str(&pp, MQTT_PROP_CORRELATION_DATA, "req-42");
    fc_publish5(&w, op, REQ, "{\"command\":\"status\"}", 0, false, 0, &pp);
    CHECK(next_answer(op));
    CHECK(strcmp(ans.topic, "replies/ops") == 0);
    CHECK(ans.corr.len == 6 && memcmp(ans.corr.p, "req-42", 6) == 0);
    CHECK(ans_ok());
    fw_free(&w);
}

TEST(console_response_topic_the_operator_may_not_write_falls_back_with_an_error)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *op = fw_open_as(&w, "ops", true);
    fc_connect5(&w, op, "op5", true, 0, NULL);
    fc_subscribe5(&w, op, 1, "$SYS/console/response/ops", 1, NULL);
    fc_clear(op);
    fprops pp = {.len = 0};
    fp_str(&pp, MQTT_PROP_RESPONSE_TOPIC, "$SYS/broker/uptime");
    broker_log_level level = w.b->log_level;
    fc_publish5(&w, op, REQ, "{\"command\":\"log-level\",\"level\":\"error\"}", 0, false, 0,
                &pp);
    CHECK(next_answer(op));
    CHECK(strcmp(ans.topic, "$SYS/console/response/ops") == 0);
    CHECK(!ans_ok());
    CHECK(ans_error_has("not writable"));
    CHECK(level != BROKER_LOG_ERROR);
    CHECK_EQ(w.b->log_level, level); /* not executed */
    fw_free(&w);
}

TEST(console_identity_topic_escapes_slash_plus_hash_and_percent)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *op = fw_open_as(&w, "a/b+c#d%e", true);
    fc_connect(&w, op, "op", true, 0);
    fc_subscribe(&w, op, 1, "$SYS/console/response/a%2Fb%2Bc%23d%25e", 0);
    fc_clear(op);
    CHECK(ask(&w, op, "{\"command\":\"status\"}"));
    CHECK(ans_ok());
    fw_free(&w);
}

TEST(console_bad_requests_get_clear_errors)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *op = operator311(&w);
    CHECK(ask(&w, op, "{\"command\":\"status\","));
    CHECK(!ans_ok());
    CHECK(ans_error_has("not JSON"));
    CHECK(ask(&w, op, "[1,2]"));
    CHECK(ans_error_has("not a JSON object"));
    CHECK(ask(&w, op, "{\"cmd\":\"status\"}"));
    CHECK(ans_error_has("no \"command\""));
    CHECK(ask(&w, op, "{\"command\":\"reboot\"}"));
    CHECK(ans_error_has("unknown command"));
    CHECK(ask(&w, op, "{\"command\":\"status\",\"verbose\":true}"));
    CHECK(ans_error_has("unknown argument \"verbose\""));
    CHECK(ask(&w, op, "{\"command\":\"kick\"}"));
    CHECK(ans_error_has("\"client\""));
    CHECK(ask(&w, op, "{\"command\":\"clients\",\"limit\":-1}"));
    CHECK(ans_error_has("\"limit\""));
    CHECK(ask(&w, op, "{\"command\":\"log-level\",\"level\":\"loud\"}"));
    CHECK(ans_error_has("\"level\""));
    /* Larger than BROKER_CONSOLE_REQUEST_MAX: refused before parsing. */
    size_t n = BROKER_CONSOLE_REQUEST_MAX + 64;
    char *big = malloc(n + 1);
    CHECK(big);
    int k = snprintf(big, n + 1, "{\"command\":\"status\",\"pad\":\"");
    memset(big + k, 'x', n - (size_t)k - 2);
    memcpy(big + n - 2, "\"}", 3);
    bool got = ask(&w, op, big);
    free(big);
    CHECK(got);
    CHECK(ans_error_has("larger than 16384"));
    CHECK_EQ(w.b->console.errors, 9);
    CHECK_EQ(w.b->console.requests, 9);
    fw_free(&w);
}

TEST(console_clients_lists_connections_with_their_details_and_filters)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *op = operator311(&w);
    fclient *d = fw_open_as(&w, "dev", false);
    fc_connect5(&w, d, "dev-1", true, 0, NULL);
    CHECK(ask(&w, op, "{\"command\":\"clients\"}"));
    CHECK(ans_ok());
    CHECK_EQ(ans_u64("matched"), 2);
    CHECK(ask(&w, op, "{\"command\":\"clients\",\"client\":\"dev-1\"}"));
    CHECK_EQ(ans_u64("matched"), 1);
    jr_val arr, e, v;
    size_t it = 0;
    CHECK(jr_get(&ans.v, "clients", &arr) == 0);
    CHECK(jr_next(&arr, &it, NULL, &e) == 1);
    CHECK(jr_get(&e, "identity", &v) == 0 && jr_string_is(&v, "dev"));
    CHECK(jr_get(&e, "protocol", &v) == 0 && jr_string_is(&v, "5.0"));
    CHECK(jr_get(&e, "connected_since_uptime_ms", &v) == 0);
    CHECK(jr_get(&e, "queued", &v) == 0);
    CHECK(jr_get(&e, "inflight", &v) == 0);
    CHECK(ask(&w, op, "{\"command\":\"clients\",\"identity\":\"ops\"}"));
    CHECK_EQ(ans_u64("matched"), 1);
    CHECK(ask(&w, op, "{\"command\":\"clients\",\"limit\":1}"));
    CHECK(jr_get(&ans.v, "more", &v) == 0 && v.type == JR_TRUE);
    fw_free(&w);
}

TEST(console_list_stops_at_the_clients_maximum_packet_size_and_says_more)
{
    fworld w;
    fw_init(&w, NULL);
    for (int i = 0; i < 40; i++) {
        char id[48];
        snprintf(id, sizeof id, "device-with-a-long-name-%02d", i);
        fw_connect_as(&w, id, true);
    }
    fclient *op = fw_open_as(&w, "ops", true);
    fprops cp = {.len = 0};
    fp_u32(&cp, MQTT_PROP_MAXIMUM_PACKET_SIZE, 2000);
    fc_connect5(&w, op, "op", true, 0, &cp);
    fc_subscribe5(&w, op, 1, "$SYS/console/response/ops", 1, NULL);
    fc_clear(op);
    fc_publish5(&w, op, REQ, "{\"command\":\"clients\"}", 1, false, 5, NULL);
    CHECK(next_answer(op));
    CHECK(ans_ok());
    CHECK(strlen(ans.text) < 2000);
    CHECK_EQ(ans_u64("matched"), 41);
    jr_val v;
    CHECK(jr_get(&ans.v, "more", &v) == 0 && v.type == JR_TRUE);
    fw_free(&w);
}

TEST(console_answer_too_large_for_the_client_is_replaced_by_an_error)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *op = fw_open_as(&w, "ops", true);
    fprops cp = {.len = 0};
    fp_u32(&cp, MQTT_PROP_MAXIMUM_PACKET_SIZE, 400);
    fc_connect5(&w, op, "op", true, 0, &cp);
    fc_subscribe5(&w, op, 1, "$SYS/console/response/ops", 1, NULL);
    fc_clear(op);
    fc_publish5(&w, op, REQ, "{\"command\":\"status\"}", 1, false, 6, NULL);
    CHECK(next_answer(op));
    CHECK(!ans_ok());
    CHECK(ans_error_has("answer larger than"));
    fw_free(&w);
}

TEST(console_kick_sends_a_5_client_disconnect_0x98_and_publishes_its_will)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *op = operator311(&w);
    fclient *watch = fw_connect_as(&w, "watch", true);
    fc_subscribe(&w, watch, 1, "wills/#", 0);
    fc_clear(watch);
    fclient *d = fw_open_as(&w, "dev", false);
    fc_connect5_will(&w, d, "dev5", true, 0, NULL, "wills/dev5", "gone", 0, false, NULL);
    fc_clear(d);
    CHECK(ask(&w, op, "{\"command\":\"kick\",\"client\":\"dev5\"}"));
    CHECK(ans_ok());
    mqtt_packet p;
    CHECK(fc_next(d, &p));
    CHECK_EQ(p.type, MQTT_DISCONNECT);
    CHECK_EQ(fc_reason_of(&p), MQTT_RC_ADMINISTRATIVE_ACTION);
    CHECK(d->closed);
    CHECK_EQ(fc_count_publish(watch), 1);
    CHECK(ask(&w, op, "{\"command\":\"kick\",\"client\":\"dev5\"}"));
    CHECK(ans_error_has("no such client"));
    fw_free(&w);
}

TEST(console_kick_closes_a_311_client_and_session_delete_option_removes_its_session)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *op = operator311(&w);
    fclient *d = fw_open_as(&w, "dev", false);
    fc_connect(&w, d, "dev3", false, 0);
    fc_clear(d);
    CHECK(ask(&w, op, "{\"command\":\"kick\",\"client\":\"dev3\",\"session\":\"delete\"}"));
    CHECK(ans_ok());
    mqtt_packet p;
    CHECK(!fc_next(d, &p)); /* 3.1.1: no DISCONNECT from a server */
    CHECK(d->closed);
    jr_val v;
    CHECK(jr_get(&ans.v, "session_deleted", &v) == 0 && v.type == JR_TRUE);
    CHECK(!bk_session_find(&w.b->sessions, (const uint8_t *)"dev3", 4));
    fw_free(&w);
}

TEST(console_operator_cannot_kick_or_delete_its_own_session)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *op = operator311(&w);
    CHECK(ask(&w, op, "{\"command\":\"kick\",\"client\":\"op\"}"));
    CHECK(ans_error_has("its own session"));
    CHECK(ask(&w, op, "{\"command\":\"session-delete\",\"client\":\"op\"}"));
    CHECK(ans_error_has("its own session"));
    CHECK(!op->closed);
    fc_publish(&w, op, REQ, "{\"command\":\"kick\",\"client\":\"op\"}", 2, false, 11);
    CHECK(next_answer(op));
    CHECK(!op->closed);
    fw_free(&w);
}

TEST(console_session_delete_removes_an_offline_persistent_session)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *op = operator311(&w);
    fclient *d = fw_connect_as(&w, "sleepy", false);
    fc_subscribe(&w, d, 1, "x/#", 1);
    fc_disconnect(&w, d);
    CHECK_EQ(w.b->sessions.offline_count, 1);
    CHECK(ask(&w, op, "{\"command\":\"session-delete\",\"client\":\"sleepy\"}"));
    CHECK(ans_ok());
    jr_val v;
    CHECK(jr_get(&ans.v, "was_connected", &v) == 0 && v.type == JR_FALSE);
    CHECK_EQ(w.b->sessions.offline_count, 0);
    CHECK(!bk_session_find(&w.b->sessions, (const uint8_t *)"sleepy", 6));
    CHECK(ask(&w, op, "{\"command\":\"session-delete\",\"client\":\"sleepy\"}"));
    CHECK(ans_error_has("no such session"));
    fw_free(&w);
}

TEST(console_retained_list_is_bounded_and_retained_clear_needs_confirm_for_wildcards)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *op = operator311(&w);
    fclient *pub = fw_connect_as(&w, "pub", true);
    for (int i = 0; i < 5; i++) {
        char t[32];
        snprintf(t, sizeof t, "r/%d", i);
        fc_publish(&w, pub, t, "hello", 1, true, (uint16_t)(i + 1));
    }
    fc_publish(&w, pub, "other", "x", 0, true, 0);
    CHECK(ask(&w, op, "{\"command\":\"retained-list\",\"filter\":\"r/#\",\"limit\":2}"));
    CHECK(ans_ok());
    CHECK_EQ(ans_u64("matched"), 5);
    jr_val v, arr, e;
    CHECK(jr_get(&ans.v, "more", &v) == 0 && v.type == JR_TRUE);
    CHECK(jr_get(&ans.v, "retained", &arr) == 0);
    size_t it = 0, count = 0;
    while (jr_next(&arr, &it, NULL, &e) == 1) {
        uint64_t bytes = 0;
        CHECK(jr_get(&e, "bytes", &v) == 0 && jr_u64(&v, &bytes) == 0);
        CHECK_EQ(bytes, 5);
        count++;
    }
    CHECK_EQ(count, 2);
    CHECK(ask(&w, op, "{\"command\":\"retained-clear\",\"filter\":\"r/+\"}"));
    CHECK(ans_error_has("confirm"));
    CHECK_EQ(w.b->stats.retained_count, 6);
    CHECK(ask(&w, op, "{\"command\":\"retained-clear\",\"topic\":\"other\"}"));
    CHECK(ans_ok());
    CHECK_EQ(ans_u64("cleared"), 1);
    CHECK(ask(&w, op, "{\"command\":\"retained-clear\",\"filter\":\"r/+\",\"confirm\":true}"));
    CHECK_EQ(ans_u64("cleared"), 5);
    CHECK_EQ(w.b->stats.retained_count, 0);
    fw_free(&w);
}

/* ---- platform ops ---- */

typedef struct fake_ops {
    int calls;
    broker_log_level level;
} fake_ops;

static int fake_config(void *ctx, jw *w, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    ((fake_ops *)ctx)->calls++;
    jw_str(w, "listen", "0.0.0.0:8883");
    return 0;
}

static int fake_backup_fails(void *ctx, jw *w, char *err, size_t errlen)
{
    (void)w;
    ((fake_ops *)ctx)->calls++;
    snprintf(err, errlen, "no store configured");
    return -1;
}

static int fake_level(void *ctx, broker_log_level level, jw *w, char *err, size_t errlen)
{
    (void)w;
    (void)err;
    (void)errlen;
    ((fake_ops *)ctx)->level = level;
    return 0;
}

TEST(console_platform_ops_answer_or_say_not_available)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *op = operator311(&w);
    CHECK(ask(&w, op, "{\"command\":\"config-show\"}"));
    CHECK(ans_error_has("not available on this platform"));
    fake_ops f = {0, BROKER_LOG_ERROR};
    broker_console_ops ops = {.ctx = &f,
                              .config_show = fake_config,
                              .backup_now = fake_backup_fails,
                              .log_level = fake_level};
    broker_set_console_ops(w.b, &ops);
    CHECK(ask(&w, op, "{\"command\":\"config-show\"}"));
    CHECK(ans_ok());
    CHECK(ans_str("listen", "0.0.0.0:8883"));
    CHECK(ask(&w, op, "{\"command\":\"backup-now\"}"));
    CHECK(ans_error_has("no store configured"));
    CHECK(ask(&w, op, "{\"command\":\"scrub-now\"}"));
    CHECK(ans_error_has("not available"));
    CHECK(ask(&w, op, "{\"command\":\"diag\"}"));
    CHECK(ans_error_has("not available"));
    CHECK_EQ(f.calls, 2);
    CHECK(ask(&w, op, "{\"command\":\"log-level\",\"level\":\"warn\"}"));
    CHECK(ans_ok());
    CHECK(ans_str("level", "warn"));
    CHECK_EQ(w.b->log_level, BROKER_LOG_WARN);
    CHECK_EQ(f.level, BROKER_LOG_WARN);
    fw_free(&w);
}

TEST(console_counters_are_published_on_sys)
{
    broker_limits lim = {.sys_interval_s = 1};
    fworld w;
    fw_init(&w, &lim);
    fclient *op = operator311(&w);
    CHECK(ask(&w, op, "{\"command\":\"status\"}"));
    CHECK(ask(&w, op, "{\"command\":\"nope\"}"));
    fc_subscribe(&w, op, 2, "$SYS/broker/console/#", 0);
    fw_advance(&w, 1100);
    mqtt_packet p;
    int seen = 0;
    while (fc_next(op, &p)) {
        if (p.type != MQTT_PUBLISH)
            continue;
        if (fc_bytes_is(p.u.publish.topic, "$SYS/broker/console/requests") &&
            fc_bytes_is(p.u.publish.payload, "2"))
            seen |= 1;
        if (fc_bytes_is(p.u.publish.topic, "$SYS/broker/console/errors") &&
            fc_bytes_is(p.u.publish.payload, "1"))
            seen |= 2;
        if (fc_bytes_is(p.u.publish.topic, "$SYS/broker/console/commands/status") &&
            fc_bytes_is(p.u.publish.payload, "1"))
            seen |= 4;
    }
    CHECK_EQ(seen, 7);
    fw_free(&w);
}

TEST(console_will_on_the_request_topic_is_refused)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *op = fw_open_as(&w, "ops", true);
    fc_connect_will(&w, op, "op", true, 0, REQ, "{\"command\":\"status\"}", 0, false);
    mqtt_packet p;
    CHECK(fc_next(op, &p));
    CHECK_EQ(p.type, MQTT_CONNACK);
    CHECK_EQ(fc_reason_of(&p), MQTT_CONNACK_NOT_AUTHORIZED);
    fw_free(&w);
}

/* Whatever the receiver's Maximum Packet Size (above the least an answer
 * needs), a list answer arrives, is whole JSON and is a list cut short
 * with "more": true, never the error for an answer too large: the room
 * kept to close a list is enough. */
TEST(console_list_answers_fit_every_maximum_packet_size)
{
    fworld w;
    fw_init(&w, NULL);
    for (int i = 0; i < 12; i++) {
        char id[48];
        snprintf(id, sizeof id, "client-%d-with-some-length", i);
        fw_connect_as(&w, id, true);
    }
    for (uint32_t max = 360; max < 1400; max += 23) { /* 46 connections: fworld holds 64 */
        fclient *op = fw_open_as(&w, "ops", true);
        fprops cp = {.len = 0};
        fp_u32(&cp, MQTT_PROP_MAXIMUM_PACKET_SIZE, max);
        fc_connect5(&w, op, "op", true, 0, &cp);
        fc_subscribe5(&w, op, 1, "$SYS/console/response/ops", 1, NULL);
        fc_clear(op);
        fc_publish5(&w, op, REQ, "{\"command\":\"clients\"}", 1, false, 5, NULL);
        CHECK(next_answer(op));
        jr_val v;
        CHECK(ans_ok());
        CHECK(jr_get(&ans.v, "more", &v) == 0 && v.type == JR_TRUE);
        fw_drop(&w, op);
    }
    fw_free(&w);
}
