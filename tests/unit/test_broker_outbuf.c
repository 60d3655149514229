/*
 * test_broker_outbuf.c - output buffers: a drained buffer is kept in the
 * broker's small pool and reused by the next turn's output (fan-out costs
 * no allocation per subscriber per turn), and the pool is emptied once it
 * goes unused, so an idle broker holds no buffers.
 */
#include "fake_client.h"
#include "test.h"

static uint64_t mem(fworld *w)
{
    broker_stats st;
    broker_get_stats(w->b, &st);
    return st.memory_used;
}

TEST(drained_output_buffer_is_reused_and_released_after_a_second_idle)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = fw_connect_as(&w, "sub", true);
    fc_subscribe(&w, s, 1, "t", 0);
    fclient *p = fw_connect_as(&w, "pub", true);
    fw_advance(&w, 1500); /* the CONNACK/SUBACK buffers leave the pool */
    fc_clear(s);
    uint64_t idle = mem(&w);

    fc_publish(&w, p, "t", "one", 0, false, 0);
    mqtt_packet pk;
    CHECK(fc_next_is(s, MQTT_PUBLISH, &pk));
    uint64_t after_one = mem(&w);
    CHECK(after_one >= idle + 4096); /* the drained buffer is pooled */

    for (int i = 0; i < 10; i++)
        fc_publish(&w, p, "t", "again", 0, false, 0);
    CHECK_EQ(fc_count_publish(s), 10);
    CHECK_EQ(mem(&w), after_one); /* reused, nothing more allocated */

    fw_advance(&w, 1500);
    CHECK(mem(&w) <= after_one - 4096); /* emptied when unused */
    fw_free(&w);
}

TEST(output_pool_is_emptied_when_the_last_connection_closes)
{
    fworld w;
    fw_init(&w, NULL);
    fclient *s = fw_connect_as(&w, "sub", true);
    fc_subscribe(&w, s, 1, "t", 0);
    fw_drain(&w);
    uint64_t with_pool = mem(&w);
    fw_drop(&w, s);
    uint64_t closed = mem(&w);
    CHECK(closed + 4096 <= with_pool);
    fw_advance(&w, 1500);
    CHECK_EQ(mem(&w), closed); /* nothing was left pooled to release */
    fw_free(&w);
}

TEST(idle_broker_without_sys_wakes_to_release_its_output_pool)
{
    /* With $SYS off nothing else wakes an idle broker: the pool's release
     * must be a deadline of its own, or the platform never ticks. */
    fworld w;
    fw_init(&w, NULL);
    fclient *s = fw_connect_as(&w, "sub", true);
    fc_subscribe(&w, s, 1, "t", 0);
    fw_drain(&w);
    CHECK(mem(&w) > 0);
    uint64_t d = broker_next_deadline(w.b);
    CHECK(d != UINT64_MAX && d <= w.now + 1000);
    uint64_t before = mem(&w);
    w.now = d;
    broker_tick(w.b, w.now);
    CHECK(mem(&w) + 4096 <= before);
    CHECK_EQ(broker_next_deadline(w.b), UINT64_MAX);
    fw_free(&w);
}
