/*
 * test_broker_log.c - the core's log lines that a client can make it
 * repeat (one per message, packet or connection) are rate-limited per
 * kind (src/broker/log.c): a flood writes a bounded number of lines and
 * one line with the count of those suppressed; and lines that report a
 * message not delivered name the clients and the limit (issue 16 items
 * 7 and 8).
 */
#include "fake_client.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

typedef struct logcap {
    int lines;         /* every line */
    int matching;      /* lines containing `want` */
    const char *want;
    char last[512];    /* the last line containing `want` */
    char summary[2048]; /* every "suppressed" line, one after the other */
    int summaries;
} logcap;

static void capture(void *ctx, broker_log_level level, const char *msg)
{
    logcap *lc = ctx;
    (void)level;
    lc->lines++;
    if (lc->want && strstr(msg, lc->want)) {
        lc->matching++;
        snprintf(lc->last, sizeof lc->last, "%s", msg);
    }
    if (strstr(msg, "suppressed")) {
        size_t n = strlen(lc->summary);
        lc->summaries++;
        snprintf(lc->summary + n, sizeof lc->summary - n, "%s\n", msg);
    }
}

static void publish_many_retained(fworld *w, fclient *p, int n)
{
    char topic[32];
    for (int i = 0; i < n; i++) {
        snprintf(topic, sizeof topic, "flood/%d", i);
        fc_publish(w, p, topic, "x", 0, true, 0);
    }
}

TEST(a_flood_of_refused_retained_messages_logs_a_bounded_number_of_lines)
{
    broker_limits lim = {.max_retained = 1};
    fworld w;
    fw_init(&w, &lim);
    logcap lc = {.want = "delivered but not kept"};
    w.log_hook = capture;
    w.log_hook_ctx = &lc;
    fclient *p = fw_connect_as(&w, "flooder", true);
    lc.lines = 0;
    publish_many_retained(&w, p, 2000); /* the first is kept, 1999 refused */
    CHECK(lc.lines <= 12);
    CHECK_EQ(lc.matching, 10);
    CHECK(strstr(lc.last, "retained message on 'flood/") == lc.last);
    CHECK(strstr(lc.last, "' from client flooder delivered but not kept: ") != NULL);
    CHECK(strstr(lc.last, "limits.max_retained (1) reached") != NULL);
    CHECK_EQ(lc.summaries, 0);

    /* Another kind is not silenced by this flood. */
    lc.want = ": protocol error: ";
    lc.matching = 0;
    fclient *bad = fw_open(&w);
    static const uint8_t junk[] = {0x00, 0x00};
    fw_send(&w, bad, junk, sizeof junk);
    CHECK_EQ(lc.matching, 1);

    /* The count comes out when the window ends, with no further line to
     * carry it: a deadline of broker_tick. */
    CHECK(broker_next_deadline(w.b) <= w.now + 10000);
    fw_advance(&w, 10000);
    CHECK_EQ(lc.summaries, 1);
    CHECK(strcmp(lc.summary, "log: 1989 more 'retained message not kept' lines suppressed in 10 s "
                             "(at most 10 of a kind per 10 s)\n") == 0);

    /* A new window writes lines again (flood/0 is the one kept: replacing
     * it is allowed, 49 are refused). */
    lc.want = "delivered but not kept";
    lc.matching = 0;
    publish_many_retained(&w, p, 50);
    CHECK_EQ(lc.matching, 10);
    fw_free(&w);
    CHECK_EQ(lc.summaries, 2); /* the second window's count, at destroy */
    CHECK(strstr(lc.summary, "\nlog: 39 more 'retained message not kept' lines suppressed in 1 s") !=
          NULL);
}

TEST(a_flood_of_protocol_errors_logs_a_bounded_number_of_lines)
{
    fworld w;
    fw_init(&w, NULL);
    logcap lc = {.want = ": protocol error: "};
    w.log_hook = capture;
    w.log_hook_ctx = &lc;
    static const uint8_t junk[] = {0x00, 0x00};
    for (int i = 0; i < 60; i++) { /* a world holds 64 clients */
        fclient *c = fw_open(&w);
        fw_send(&w, c, junk, sizeof junk);
    }
    CHECK_EQ(lc.matching, 10);
    fw_advance(&w, 10000);
    /* Two kinds: the protocol errors, and the (debug) closes of
     * connections that never became clients. */
    CHECK_EQ(lc.summaries, 2);
    CHECK(strstr(lc.summary, "log: 50 more 'protocol error' lines") != NULL);
    CHECK(strstr(lc.summary, "log: 50 more 'connection closed before CONNECT was accepted'") !=
          NULL);
    fw_free(&w);
}

TEST(a_qos1_message_dropped_at_a_queue_bound_is_logged_with_both_clients_and_the_limit)
{
    broker_limits lim = {.max_queued = 2};
    fworld w;
    fw_init(&w, &lim);
    logcap lc = {.want = "not delivered"};
    w.log_hook = capture;
    w.log_hook_ctx = &lc;
    fclient *s = fw_connect_as(&w, "away", false);
    fc_subscribe(&w, s, 1, "t", 1);
    fc_disconnect(&w, s);
    fclient *p = fw_connect_as(&w, "pub", true);
    for (uint16_t i = 1; i <= 5; i++)
        fc_publish(&w, p, "t", "m", 1, false, i);
    CHECK_EQ(lc.matching, 3);
    CHECK(strcmp(lc.last, "client away: QoS 1 message on 't' from pub not delivered: its queue "
                          "holds limits.max_queued (2) messages") == 0);
    broker_stats st;
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.publish_dropped, 3);
    fw_free(&w);
}
