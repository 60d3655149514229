/*
 * test_broker_packet_size.c - a PUBLISH the broker could not deliver under
 * its own bounds is refused at once, not acknowledged and lost (issue 16
 * item 7): limits.max_packet_size defaults to 1 MiB and is never above
 * max_queued_bytes (the core lowers it, with a warning), and a packet above
 * it closes the connection as soon as its fixed header shows its size -
 * counted, and logged with the client and the sizes.
 */
#include "fake_client.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

typedef struct lines {
    char all[65536];
    int n;
} lines;

static void keep(void *ctx, broker_log_level level, const char *msg)
{
    lines *l = ctx;
    size_t used = strlen(l->all);
    (void)level;
    snprintf(l->all + used, sizeof l->all - used, "%s\n", msg);
    l->n++;
}

/* The fixed header of a QoS 1 PUBLISH whose Remaining Length is rl. */
static size_t publish_header(uint8_t *out, uint32_t rl)
{
    size_t n = 0;
    out[n++] = 0x32;
    do {
        uint8_t byte = rl % 128;
        rl /= 128;
        out[n++] = (uint8_t)(byte | (rl ? 0x80 : 0));
    } while (rl);
    return n;
}

TEST(a_100_mb_qos1_publish_is_refused_at_its_header_counted_and_logged)
{
    lines *log = calloc(1, sizeof *log);
    fworld w;
    fw_init_logged(&w, NULL, keep, log); /* default limits */
    fclient *s = fw_connect_as(&w, "sub", true);
    fc_subscribe(&w, s, 1, "big/#", 1);
    fc_clear(s);
    fclient *p = fw_connect_as(&w, "big", true);
    broker_stats before;
    broker_get_stats(w.b, &before);

    /* The header of a 100,000,000-byte PUBLISH and the first bytes of its
     * body: the broker does not wait for (or buffer) the rest. */
    uint8_t buf[64];
    size_t n = publish_header(buf, 100000000u);
    memset(buf + n, 'x', sizeof buf - n);
    fw_send(&w, p, buf, sizeof buf);
    CHECK(p->closed);
    mqtt_packet pk;
    CHECK(!fc_next(p, &pk)); /* no PUBACK: closing is the refusal */
    CHECK(!fc_next(s, &pk));
    CHECK(!s->closed);

    broker_stats after;
    broker_get_stats(w.b, &after);
    CHECK_EQ(after.packets_too_large, before.packets_too_large + 1);
    CHECK_EQ(after.protocol_errors, before.protocol_errors);
    CHECK_EQ(after.retained_count, 0);
    CHECK(after.memory_used < before.memory_used + 65536);
    CHECK(strstr(log->all, "client big: PUBLISH of 100000005 bytes refused: above "
                           "limits.max_packet_size (1048576); connection closed\n") != NULL);
    fw_free(&w);
    free(log);
}

TEST(a_packet_size_above_the_queue_bound_is_lowered_to_it_with_a_warning)
{
    lines *log = calloc(1, sizeof *log);
    broker_limits lim = {.max_packet_size = 4096, .max_queued_bytes = 1024};
    fworld w;
    fw_init_logged(&w, &lim, keep, log);
    CHECK(strstr(log->all, "limits.max_packet_size (4096) is above limits.max_queued_bytes "
                           "(1024): lowered to 1024") != NULL);
    fclient *s = fw_connect_as(&w, "sub", false);
    fc_subscribe(&w, s, 1, "t", 1);
    fc_clear(s);
    fclient *p = fw_connect_as(&w, "pub", true);
    mqtt_packet pk;

    /* The largest message that fits is delivered... */
    char payload[1100];
    memset(payload, 'a', sizeof payload);
    payload[1024 - 8] = '\0'; /* a 1,024-byte packet */
    fc_publish(&w, p, "t", payload, 1, false, 1);
    CHECK(fc_next_is(p, MQTT_PUBACK, &pk));
    CHECK(fc_next_is(s, MQTT_PUBLISH, &pk));
    CHECK_EQ(pk.u.publish.payload.len, 1024 - 8);
    fc_ack(&w, s, MQTT_PUBACK, pk.u.publish.packet_id);

    /* ...one byte more is refused, not acknowledged and lost. */
    memset(payload, 'b', sizeof payload);
    payload[1024 - 7] = '\0';
    fc_publish(&w, p, "t", payload, 1, false, 2);
    CHECK(p->closed);
    CHECK(!fc_next(p, &pk));
    CHECK(!fc_next(s, &pk));
    broker_stats st;
    broker_get_stats(w.b, &st);
    CHECK_EQ(st.packets_too_large, 1);
    CHECK(strstr(log->all, "client pub: PUBLISH of 1025 bytes refused: above "
                           "limits.max_packet_size (1024)") != NULL);
    fw_free(&w);
    free(log);
}
