/*
 * test_posix_heaptrim.c - when the daemon trims its heap
 * (src/platform/posix/heaptrim.c): once after activity stops, only on an
 * idle turn, never more often than TERN_HEAPTRIM_EVERY_MS.
 */
#include "test.h"

#include "platform/posix/heaptrim.h"

TEST(heaptrim_nothing_freed_means_no_trim_and_no_deadline)
{
    tern_heaptrim t;

    tern_heaptrim_init(&t, 1000);
    CHECK_EQ(tern_heaptrim_deadline(&t), UINT64_MAX);
    CHECK(!tern_heaptrim_due(&t, true, 100000));
    tern_heaptrim_note(&t, 0, 5000); /* unchanged counter */
    CHECK(!tern_heaptrim_due(&t, true, 100000));
}

TEST(heaptrim_trims_once_after_activity_has_been_quiet)
{
    tern_heaptrim t;

    tern_heaptrim_init(&t, 0);
    tern_heaptrim_note(&t, 3, 5000);
    tern_heaptrim_note(&t, 7, 5100); /* still handshaking */
    CHECK_EQ(tern_heaptrim_deadline(&t), 5100u + TERN_HEAPTRIM_QUIET_MS);
    CHECK(!tern_heaptrim_due(&t, true, 5100u + TERN_HEAPTRIM_QUIET_MS - 1));
    CHECK(tern_heaptrim_due(&t, true, 5100u + TERN_HEAPTRIM_QUIET_MS));
    /* done: nothing new, no second trim */
    CHECK_EQ(tern_heaptrim_deadline(&t), UINT64_MAX);
    CHECK(!tern_heaptrim_due(&t, true, 60000));
}

TEST(heaptrim_never_on_a_busy_turn)
{
    tern_heaptrim t;

    tern_heaptrim_init(&t, 0);
    tern_heaptrim_note(&t, 1, 2000);
    CHECK(!tern_heaptrim_due(&t, false, 9000)); /* events this turn: a flood */
    CHECK(tern_heaptrim_due(&t, true, 9001));
}

TEST(heaptrim_at_most_once_per_interval)
{
    tern_heaptrim t;

    tern_heaptrim_init(&t, 0);
    tern_heaptrim_note(&t, 1, 2000);
    CHECK(tern_heaptrim_due(&t, true, 2000u + TERN_HEAPTRIM_QUIET_MS));
    tern_heaptrim_note(&t, 2, 2000u + TERN_HEAPTRIM_QUIET_MS + 1);
    /* quiet again after QUIET_MS, but the last trim was less than EVERY_MS ago */
    CHECK_EQ(tern_heaptrim_deadline(&t), 2000u + TERN_HEAPTRIM_QUIET_MS + TERN_HEAPTRIM_EVERY_MS);
    CHECK(!tern_heaptrim_due(&t, true, 2000u + 2u * TERN_HEAPTRIM_QUIET_MS + 1u));
    CHECK(tern_heaptrim_due(&t, true, 2000u + TERN_HEAPTRIM_QUIET_MS + TERN_HEAPTRIM_EVERY_MS));
}
