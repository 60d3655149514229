/*
 * test_conn_drain.c - the QoS 0 bound in time (src/conn/drain.c): a
 * reader that keeps up is never bounded; a backed-up one is bounded to
 * what it takes in CONN_QOS0_WAIT_MS at the rate measured over a window,
 * never below CONN_QOS0_OUT_MIN, and the bound ends when its output drains.
 */
#include "conn/drain.h"
#include "conn/tunables.h"
#include "test.h"

TEST(drain_reader_that_keeps_up_is_never_bounded)
{
    conn_drain d = {0};
    for (uint64_t t = 0; t < 1000; t += 10) {
        conn_drain_wrote(&d, 100000);
        CHECK_EQ(conn_drain_update(&d, 0, t), 0);
    }
}

TEST(drain_backed_up_output_is_bounded_to_the_wait_at_the_measured_rate)
{
    conn_drain d = {0};
    CHECK_EQ(conn_drain_update(&d, 5000, 1000), 0); /* backed up from here */
    /* 1,000,000 bytes taken in one window: 10 MB/s. */
    for (uint64_t t = 1010; t < 1000 + CONN_DRAIN_WINDOW_MS; t += 10) {
        conn_drain_wrote(&d, 1000000 / (CONN_DRAIN_WINDOW_MS / 10));
        CHECK_EQ(conn_drain_update(&d, 5000, t), 0); /* no full window yet */
    }
    conn_drain_wrote(&d, 1000000 / (CONN_DRAIN_WINDOW_MS / 10));
    uint32_t bound = conn_drain_update(&d, 5000, 1000 + CONN_DRAIN_WINDOW_MS);
    CHECK_EQ(bound, (uint32_t)(1000000ull * CONN_QOS0_WAIT_MS / CONN_DRAIN_WINDOW_MS));
    /* The next window measures afresh: half the rate, half the bound. */
    conn_drain_wrote(&d, 500000);
    CHECK_EQ(conn_drain_update(&d, 5000, 1000 + 2 * CONN_DRAIN_WINDOW_MS),
             (uint32_t)(500000ull * CONN_QOS0_WAIT_MS / CONN_DRAIN_WINDOW_MS));
}

TEST(drain_bound_never_goes_below_the_floor)
{
    conn_drain d = {0};
    (void)conn_drain_update(&d, 5000, 0);
    conn_drain_wrote(&d, 10); /* nearly stalled */
    CHECK_EQ(conn_drain_update(&d, 5000, 10 * CONN_DRAIN_WINDOW_MS), CONN_QOS0_OUT_MIN);
}

TEST(drain_bound_ends_when_the_output_drains)
{
    conn_drain d = {0};
    (void)conn_drain_update(&d, 5000, 0);
    conn_drain_wrote(&d, 1000);
    CHECK(conn_drain_update(&d, 5000, CONN_DRAIN_WINDOW_MS) != 0);
    CHECK_EQ(conn_drain_update(&d, 0, CONN_DRAIN_WINDOW_MS + 1), 0);
    /* Backed up again: no bound until a new window is measured, and bytes
     * written while it was not backed up do not count. */
    conn_drain_wrote(&d, 99999999);
    CHECK_EQ(conn_drain_update(&d, 5000, 2 * CONN_DRAIN_WINDOW_MS), 0);
    conn_drain_wrote(&d, 1000000);
    CHECK_EQ(conn_drain_update(&d, 5000, 3 * CONN_DRAIN_WINDOW_MS),
             (uint32_t)(1000000ull * CONN_QOS0_WAIT_MS / CONN_DRAIN_WINDOW_MS));
}
