/*
 * test_broker_acl.c - access control: the acl_file parser, the matching
 * order documented in src/broker/acl.h, and the broker applying it to
 * SUBSCRIBE, PUBLISH, delivery, wills and $SYS.
 */
#include "broker/acl.h"
#include "broker/journal.h"
#include "fake_client.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

static broker_acl *parse(const char *text, char *err, size_t errsz)
{
    return broker_acl_parse(NULL, "acl", text, strlen(text), err, errsz);
}

static bool may(const broker_acl *acl, const char *id, const char *cid, const char *topic,
                broker_acl_access a)
{
    return broker_acl_check(acl, id, cid, false, topic, strlen(topic), a);
}

TEST(acl_parser_rejects_unknown_keyword_with_line)
{
    char err[128];
    broker_acl *a = parse("topic read a/#\n\nallow x\n", err, sizeof err);
    CHECK(a == NULL);
    CHECK(strstr(err, "acl:3:") != NULL);
    CHECK(strstr(err, "allow") != NULL);
}

TEST(acl_parser_rejects_invalid_filter)
{
    char err[128];
    CHECK(parse("topic read a/#/b\n", err, sizeof err) == NULL);
    CHECK(strstr(err, "acl:1:") != NULL);
    CHECK(parse("user bob\ntopic\n", err, sizeof err) == NULL);
    CHECK(strstr(err, "acl:2:") != NULL);
}

TEST(acl_general_rules_apply_to_everyone_and_unlisted_topics_are_denied)
{
    char err[128];
    broker_acl *a = parse("# comment\ntopic read public/#\ntopic write in/+\n", err, sizeof err);
    CHECK(a != NULL);
    CHECK(may(a, NULL, "c", "public/x", BROKER_ACL_READ));
    CHECK(!may(a, NULL, "c", "public/x", BROKER_ACL_WRITE));
    CHECK(may(a, "bob", "c", "in/1", BROKER_ACL_WRITE));
    CHECK(!may(a, "bob", "c", "other", BROKER_ACL_READ));
    broker_acl_free(a);
}

TEST(acl_user_section_and_deny_takes_precedence)
{
    char err[128];
    broker_acl *a = parse("user alice\ntopic alice/#\ntopic deny alice/secret\n"
                          "user bob\ntopic read alice/#\n",
                          err, sizeof err);
    CHECK(a != NULL);
    CHECK(may(a, "alice", "c", "alice/x", BROKER_ACL_WRITE));
    CHECK(!may(a, "alice", "c", "alice/secret", BROKER_ACL_READ));
    CHECK(!may(a, "alice", "c", "alice/secret", BROKER_ACL_WRITE));
    CHECK(may(a, "bob", "c", "alice/x", BROKER_ACL_READ));
    CHECK(!may(a, "bob", "c", "alice/x", BROKER_ACL_WRITE));
    CHECK(!may(a, NULL, "c", "alice/x", BROKER_ACL_READ));
    /* A filter is readable when an allow rule covers all of it. */
    CHECK(may(a, "alice", "c", "alice/+/temp", BROKER_ACL_READ));
    CHECK(!may(a, "alice", "c", "#", BROKER_ACL_READ));
    /* alice/# is readable, but partly denied: deliveries are checked. */
    CHECK(may(a, "alice", "c", "alice/#", BROKER_ACL_READ));
    broker_acl_free(a);
}

TEST(acl_patterns_substitute_client_id_and_identity)
{
    char err[128];
    broker_acl *a = parse("pattern readwrite devices/%u/%c/#\npattern read status/%c\n", err,
                          sizeof err);
    CHECK(a != NULL);
    CHECK(may(a, "alice", "d1", "devices/alice/d1/temp", BROKER_ACL_WRITE));
    CHECK(!may(a, "alice", "d1", "devices/alice/d2/temp", BROKER_ACL_WRITE));
    CHECK(!may(a, "bob", "d1", "devices/alice/d1/temp", BROKER_ACL_WRITE));
    /* %u never applies to anonymous clients; %c does. */
    CHECK(!may(a, NULL, "d1", "devices//d1/x", BROKER_ACL_WRITE));
    CHECK(may(a, NULL, "d1", "status/d1", BROKER_ACL_READ));
    /* A client id with a wildcard or separator cannot widen a pattern. */
    CHECK(!may(a, "alice", "+", "devices/alice/x/y", BROKER_ACL_WRITE));
    CHECK(!may(a, "alice", "a/b", "devices/alice/a/b/y", BROKER_ACL_WRITE));
    broker_acl_free(a);
}

TEST(acl_pattern_with_an_unknown_substitution_is_refused_with_file_line_and_sequence)
{
    /* %x used to be kept as text: a rule that silently matched nothing. */
    char err[256];
    CHECK(parse("topic read a/#\npattern read devices/%x/#\n", err, sizeof err) == NULL);
    CHECK(strstr(err, "acl:2:") == err);
    CHECK(strstr(err, "'%x'") != NULL);
    CHECK(strstr(err, "devices/%x/#") != NULL);
    CHECK(parse("pattern write a/%C\n", err, sizeof err) == NULL);
    CHECK(strstr(err, "acl:1:") == err && strstr(err, "'%C'") != NULL);
    CHECK(parse("\n\npattern deny a/b%\n", err, sizeof err) == NULL);
    CHECK(strstr(err, "acl:3:") == err && strstr(err, "at the end") != NULL);
    /* In topic lines '%' is an ordinary character, as in Mosquitto. */
    broker_acl *a = parse("topic read a/%x\n", err, sizeof err);
    CHECK(a != NULL);
    CHECK(may(a, "u", "c", "a/%x", BROKER_ACL_READ));
    broker_acl_free(a);
}

TEST(acl_pattern_double_percent_is_a_literal_percent)
{
    char err[128];
    broker_acl *a = parse("pattern read 100%%/%u/%%c\n", err, sizeof err);
    CHECK(a != NULL);
    CHECK(may(a, "bob", "d1", "100%/bob/%c", BROKER_ACL_READ));
    CHECK(!may(a, "bob", "d1", "100%/bob/d1", BROKER_ACL_READ));
    CHECK(!may(a, NULL, "d1", "100%//%c", BROKER_ACL_READ)); /* %u: never anonymous */
    broker_acl_free(a);
    /* "%%u" is the text "%u", not the identity: anonymous clients match. */
    a = parse("pattern read x/%%u\n", err, sizeof err);
    CHECK(a != NULL);
    CHECK(may(a, NULL, "d1", "x/%u", BROKER_ACL_READ));
    broker_acl_free(a);
}

TEST(acl_sys_is_read_only_and_for_operators)
{
    CHECK(!broker_acl_check(NULL, "x", "c", false, "$SYS/broker/uptime", 18, BROKER_ACL_READ));
    CHECK(broker_acl_check(NULL, "x", "c", true, "$SYS/broker/uptime", 18, BROKER_ACL_READ));
    CHECK(!broker_acl_check(NULL, "x", "c", true, "$SYS/broker/uptime", 18, BROKER_ACL_WRITE));
    CHECK(broker_acl_check(NULL, NULL, "c", false, "$SYSTEM/x", 9, BROKER_ACL_WRITE));
    CHECK(broker_acl_check(NULL, NULL, "c", false, "any/thing", 9, BROKER_ACL_WRITE));
}

TEST(non_operator_gets_0x80_for_sys_and_operator_receives_it)
{
    broker_limits lim = {.sys_interval_s = 1};
    fworld w;
    fw_init(&w, &lim);
    fclient *user = fw_open_as(&w, "user", false);
    fc_connect(&w, user, "u", true, 0);
    fclient *op = fw_open_as(&w, "ops", true);
    fc_connect(&w, op, "o", true, 0);
    fc_clear(user);
    fc_clear(op);
    fc_subscribe(&w, user, 1, "$SYS/#", 0);
    fc_subscribe(&w, op, 1, "$SYS/#", 0);
    fw_advance(&w, 1100);
    mqtt_packet pk;
    CHECK(fc_next(user, &pk));
    CHECK_EQ(pk.type, MQTT_SUBACK);
    size_t pos = 0;
    uint8_t code = 0;
    CHECK(mqtt_suback_next(&pk.u.suback, &pos, &code));
    CHECK_EQ(code, 0x80);
    CHECK(!fc_next(user, &pk));
    CHECK(fc_next(op, &pk));
    CHECK_EQ(pk.type, MQTT_SUBACK);
    CHECK(fc_count_publish(op) > 5);
    fw_free(&w);
}

static void install(fworld *w, const char *text)
{
    char err[128];
    broker_acl *a = parse(text, err, sizeof err);
    if (!a)
        fprintf(stderr, "acl: %s\n", err);
    broker_set_acl(w->b, a);
}

TEST(denied_publish_is_acknowledged_but_not_delivered_and_counted)
{
    fworld w;
    fw_init(&w, NULL);
    install(&w, "topic read #\nuser writer\ntopic write data/#\n");
    fclient *s = fw_open_as(&w, "reader", false);
    fc_connect(&w, s, "s", true, 0);
    fc_subscribe(&w, s, 1, "data/#", 1);
    fc_clear(s);
    fclient *bad = fw_open_as(&w, "intruder", false);
    fc_connect(&w, bad, "i", true, 0);
    fc_clear(bad);
    fc_publish(&w, bad, "data/x", "no", 1, false, 5);
    mqtt_packet pk;
    CHECK(fc_next(bad, &pk));
    CHECK_EQ(pk.type, MQTT_PUBACK);
    CHECK(!fc_next(s, &pk));
    fclient *good = fw_open_as(&w, "writer", false);
    fc_connect(&w, good, "g", true, 0);
    fc_publish(&w, good, "data/x", "yes", 1, false, 5);
    CHECK(fc_next(s, &pk));
    CHECK_EQ(pk.type, MQTT_PUBLISH);
    broker_stats st;
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.acl_denied, 1);
    fw_free(&w);
}

TEST(deny_rule_inside_a_readable_filter_filters_deliveries_and_retained)
{
    fworld w;
    fw_init(&w, NULL);
    install(&w, "user alice\ntopic alice/#\ntopic deny alice/secret\n"
                "user root\ntopic #\n");
    fclient *root = fw_open_as(&w, "root", false);
    fc_connect(&w, root, "r", true, 0);
    fc_publish(&w, root, "alice/secret", "s", 0, true, 0);
    fc_publish(&w, root, "alice/open", "o", 0, true, 0);
    fclient *a = fw_open_as(&w, "alice", false);
    fc_connect(&w, a, "a", true, 0);
    fc_clear(a);
    fc_subscribe(&w, a, 1, "alice/#", 0);
    mqtt_packet pk;
    CHECK(fc_next(a, &pk));
    CHECK_EQ(pk.type, MQTT_SUBACK);
    CHECK(fc_next(a, &pk)); /* the retained alice/open, not alice/secret */
    CHECK_EQ(pk.type, MQTT_PUBLISH);
    CHECK_EQ(pk.u.publish.topic.len, 10);
    CHECK(!fc_next(a, &pk));
    fc_publish(&w, root, "alice/secret", "s2", 0, false, 0);
    CHECK(!fc_next(a, &pk));
    fc_publish(&w, root, "alice/other", "o2", 0, false, 0);
    CHECK(fc_next(a, &pk));
    fw_free(&w);
}

TEST(client_id_of_another_identity_is_rejected)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *a = fw_open_as(&w, "alice", false);
    fc_connect(&w, a, "shared", false, 0);
    fclient *b = fw_open_as(&w, "bob", false);
    fc_connect(&w, b, "shared", false, 0);
    mqtt_packet pk;
    CHECK(fc_next(b, &pk));
    CHECK_EQ(pk.type, MQTT_CONNACK);
    CHECK_EQ(pk.u.connack.return_code, 2);
    CHECK(b->closed);
    CHECK(!a->closed);
    fw_free(&w);
}

TEST(new_acl_removes_subscriptions_it_no_longer_allows)
{
    fworld w;
    fw_init(&w, NULL);
    install(&w, "topic read a/#\ntopic write a/#\n");
    fclient *s = fw_open_as(&w, "x", false);
    fc_connect(&w, s, "s", true, 0);
    fc_subscribe(&w, s, 1, "a/b", 0);
    fc_clear(s);
    install(&w, "topic write a/#\n");
    fclient *p = fw_open_as(&w, "y", false);
    fc_connect(&w, p, "p", true, 0);
    fc_publish(&w, p, "a/b", "m", 0, false, 0);
    mqtt_packet pk;
    CHECK(!fc_next(s, &pk));
    broker_stats st;
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.subscriptions_count, 0);
    fw_free(&w);
}

TEST(will_to_a_denied_topic_refuses_the_connect)
{
    fworld w;
    fw_init(&w, NULL);
    install(&w, "topic write ok/#\n");
    fclient *a = fw_open_as(&w, "x", false);
    fc_connect_will(&w, a, "a", true, 0, "forbidden", "w", 0, false);
    mqtt_packet pk;
    CHECK(fc_next(a, &pk));
    CHECK_EQ(pk.u.connack.return_code, 5);
    CHECK(a->closed);
    fw_free(&w);
}

TEST(new_acl_applies_to_a_topic_just_routed)
{
    /* The core keeps the last topic's match result (tree.c): a new ACL that
     * changes which deliveries need a per-message check must not be
     * bypassed by it. */
    fworld w;
    fw_init(&w, NULL);
    install(&w, "user alice\ntopic alice/#\nuser root\ntopic #\n");
    fclient *root = fw_open_as(&w, "root", false);
    fc_connect(&w, root, "r", true, 0);
    fclient *a = fw_open_as(&w, "alice", false);
    fc_connect(&w, a, "a", true, 0);
    fc_subscribe(&w, a, 1, "alice/#", 0);
    fc_clear(a);
    mqtt_packet pk;
    fc_publish(&w, root, "alice/secret", "before", 0, false, 0);
    CHECK(fc_next(a, &pk));
    CHECK_EQ(pk.type, MQTT_PUBLISH);
    install(&w, "user alice\ntopic alice/#\ntopic deny alice/secret\nuser root\ntopic #\n");
    fc_publish(&w, root, "alice/secret", "after", 0, false, 0);
    CHECK(!fc_next(a, &pk));
    fc_publish(&w, root, "alice/open", "open", 0, false, 0);
    CHECK(fc_next(a, &pk));
    fw_free(&w);
}

/* Subscription records in the batches a durable broker hands out. */
typedef struct sub_records {
    int puts, dels, empty; /* empty: records with an empty filter */
    size_t longest_put;
    bool malformed;
} sub_records;

/* Take and commit every pending batch, counting its subscription records:
 * the test's store is the journal's record stream itself. */
static void commit_counting_subs(fworld *w, sub_records *r)
{
    broker_store_batch batch;
    while (broker_store_take(w->b, &batch)) {
        size_t pos = 0;
        journal_rec rec;
        int rc;
        while ((rc = journal_next(batch.data, batch.len, &pos, &rec)) == 1) {
            if (rec.type != J_SUB_PUT && rec.type != J_SUB_DEL)
                continue;
            if (rec.topic.len == 0)
                r->empty++;
            if (rec.type == J_SUB_DEL) {
                r->dels++;
            } else {
                r->puts++;
                if (rec.topic.len > r->longest_put)
                    r->longest_put = rec.topic.len;
            }
        }
        if (rc != 0)
            r->malformed = true;
        broker_store_done(w->b, batch.seq, true);
    }
    fw_drain(w);
}

TEST(same_acl_again_keeps_a_2000_byte_filter_in_memory_and_in_the_journal)
{
    /* A reload (SIGHUP) re-checks every filter; one longer than a fixed
     * rendering buffer used to read as "denied": dropped from memory and
     * journalled as the delete of an empty filter, which the store could
     * not match, so memory and disk disagreed. */
    enum { FILTER_LEN = 2000 };
    const char *acl = "topic readwrite long/#\n";
    char *filter = malloc(FILTER_LEN + 1);
    char *topic = malloc(FILTER_LEN + 1);
    CHECK(filter && topic);
    memcpy(filter, "long/", 5);
    memset(filter + 5, 'x', FILTER_LEN - 7);
    memcpy(filter + FILTER_LEN - 2, "/+", 3);
    memcpy(topic, filter, FILTER_LEN);
    topic[FILTER_LEN - 1] = 't';
    topic[FILTER_LEN] = '\0';
    CHECK_EQ(strlen(filter), FILTER_LEN);

    fworld w;
    fw_init_durable(&w, NULL);
    install(&w, acl);
    fclient *s = fw_connect_as(&w, "long-sub", false);
    fc_subscribe(&w, s, 1, filter, 1);
    sub_records before = {0};
    commit_counting_subs(&w, &before);
    mqtt_packet pk;
    CHECK(fc_next_is(s, MQTT_SUBACK, &pk));
    CHECK_EQ(before.puts, 1);
    CHECK_EQ(before.longest_put, FILTER_LEN);

    install(&w, acl); /* the same rules again */
    sub_records after = {0};
    commit_counting_subs(&w, &after);
    CHECK(!after.malformed);
    CHECK_EQ(after.dels, 0);
    CHECK_EQ(after.empty, 0);
    broker_stats st;
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.subscriptions_count, 1);

    fclient *p = fw_connect_as(&w, "pub", true);
    fc_publish(&w, p, topic, "still here", 0, false, 0);
    CHECK(fc_next_is(s, MQTT_PUBLISH, &pk));
    CHECK_EQ(pk.u.publish.topic.len, FILTER_LEN);
    CHECK(fc_payload_is(&pk, "still here"));
    fw_free(&w);
    free(filter);
    free(topic);
}
