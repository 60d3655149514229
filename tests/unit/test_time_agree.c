/*
 * test_time_agree.c - the time vote (time/agree.c): agreeing sources give
 * their median; one liar among three is outvoted however far it lies;
 * silent sources count against a majority; a split vote, a step beyond
 * max_step and absurd samples are refused with the reason.
 */
#include "test.h"

#include "time/agree.h"

static time_sample at(int64_t offset_ms)
{
    return (time_sample){.offset_ms = offset_ms, .delay_ms = 20};
}

TEST(time_agree_three_agreeing_sources_give_their_median)
{
    time_sample s[3] = {at(300000), at(300400), at(299800)};
    time_agreement a;

    CHECK_EQ(time_agree(s, 3, 3, 1000000, &a), TIME_AGREED);
    CHECK_EQ(a.offset_ms, 300000);
    CHECK_EQ(a.agreeing, 3);
    CHECK_EQ(a.answered, 3);
    CHECK(strcmp(a.reason, "agreed") == 0);
}

TEST(time_agree_one_liar_among_three_is_outvoted)
{
    static const int64_t lies[] = {-5000000000LL, -3600000, 1200, 86400000, INT64_MAX / 8};

    for (size_t i = 0; i < sizeof lies / sizeof lies[0]; i++) {
        time_sample s[3] = {at(lies[i]), at(120), at(-80)};
        time_agreement a;

        CHECK_EQ(time_agree(s, 3, 3, 1000000, &a), TIME_AGREED);
        CHECK_EQ(a.agreeing, 2);
        CHECK(a.offset_ms >= -80 && a.offset_ms <= 120);
    }
}

TEST(time_agree_needs_a_majority_of_configured_sources)
{
    time_sample s[3] = {at(10), at(20), at(5000)};
    time_agreement a;

    /* One answer of three configured: no majority, however good it is. */
    CHECK_EQ(time_agree(s, 1, 3, 0, &a), TIME_NO_MAJORITY);
    CHECK(strstr(a.reason, "too few sources answered") != NULL);
    /* Two of four agree: not a strict majority. */
    CHECK_EQ(time_agree(s, 3, 4, 0, &a), TIME_NO_MAJORITY);
    CHECK_EQ(a.agreeing, 2);
    CHECK(strstr(a.reason, "within 1 s of their median") != NULL);
    /* Two of three agree: enough. */
    CHECK_EQ(time_agree(s, 3, 3, 0, &a), TIME_AGREED);
    /* Two answers of two configured, 1.5 s apart: each is within 1 s of
     * the median between them only if the gap is at most 2 s... */
    time_sample two[2] = {at(0), at(1500)};
    CHECK_EQ(time_agree(two, 2, 2, 0, &a), TIME_AGREED);
    CHECK_EQ(a.offset_ms, 750);
    /* ... and not beyond. */
    two[1] = at(2500);
    CHECK_EQ(time_agree(two, 2, 2, 0, &a), TIME_NO_MAJORITY);
}

TEST(time_agree_three_disagreeing_sources_give_no_agreement)
{
    time_sample s[3] = {at(-10000), at(0), at(10000)};
    time_agreement a;

    CHECK_EQ(time_agree(s, 3, 3, 0, &a), TIME_NO_MAJORITY);
    CHECK_EQ(a.agreeing, 1);
    CHECK_EQ(a.answered, 3);
}

TEST(time_agree_refuses_a_step_beyond_the_maximum)
{
    time_sample s[3] = {at(2000000), at(2000100), at(1999900)};
    time_agreement a;

    CHECK_EQ(time_agree(s, 3, 3, 1000000, &a), TIME_STEP_REFUSED);
    CHECK_EQ(a.offset_ms, 2000000);
    CHECK(strstr(a.reason, "time.max_step") != NULL);
    /* Backwards too. */
    for (int i = 0; i < 3; i++)
        s[i].offset_ms = -s[i].offset_ms;
    CHECK_EQ(time_agree(s, 3, 3, 1000000, &a), TIME_STEP_REFUSED);
    /* At the maximum exactly: allowed; no maximum (0): allowed. */
    CHECK_EQ(time_agree(s, 3, 3, 2000000, &a), TIME_AGREED);
    CHECK_EQ(time_agree(s, 3, 3, 0, &a), TIME_AGREED);
}

TEST(time_agree_slow_or_absurd_samples_do_not_vote)
{
    time_sample s[3] = {at(0), at(100), at(50)};
    time_agreement a;

    s[1].delay_ms = TIME_MAX_DELAY_MS + 1;
    s[2].delay_ms = -1;
    CHECK_EQ(time_agree(s, 3, 3, 0, &a), TIME_NO_MAJORITY);
    CHECK_EQ(a.answered, 1);
    s[1] = at(INT64_MIN);
    s[2] = at(INT64_MAX);
    CHECK_EQ(time_agree(s, 3, 3, 0, &a), TIME_NO_MAJORITY);
    CHECK_EQ(a.answered, 1);
}

TEST(time_agree_no_sources_or_more_samples_than_sources)
{
    time_sample s[TIME_MAX_SOURCES + 2];
    time_agreement a;

    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
        s[i] = at(7);
    CHECK_EQ(time_agree(s, 0, 0, 0, &a), TIME_NO_MAJORITY);
    CHECK(strstr(a.reason, "no time sources") != NULL);
    /* Extra samples beyond the configured count are ignored, and the count
     * is capped: no read or write past TIME_MAX_SOURCES (ASan). */
    CHECK_EQ(time_agree(s, sizeof s / sizeof s[0], 2, 0, &a), TIME_AGREED);
    CHECK_EQ(a.answered, 2);
    CHECK_EQ(time_agree(s, sizeof s / sizeof s[0], TIME_MAX_SOURCES + 2, 0, &a), TIME_AGREED);
    CHECK_EQ(a.answered, TIME_MAX_SOURCES);
}
