/*
 * heaptrim.c - when the daemon gives freed heap memory back to the system
 * (see heaptrim.h for why). Pure: no clock, no allocator, only the
 * decision.
 */
#include "platform/posix/heaptrim.h"

void tern_heaptrim_init(tern_heaptrim *t, uint64_t now)
{
    t->activity = 0;
    t->changed_ms = now;
    t->trimmed_ms = now;
    t->pending = false;
}

void tern_heaptrim_note(tern_heaptrim *t, uint64_t activity, uint64_t now)
{
    if (activity == t->activity)
        return;
    t->activity = activity;
    t->changed_ms = now;
    t->pending = true;
}

uint64_t tern_heaptrim_deadline(const tern_heaptrim *t)
{
    uint64_t quiet, spaced;

    if (!t->pending)
        return UINT64_MAX;
    quiet = t->changed_ms + TERN_HEAPTRIM_QUIET_MS;
    spaced = t->trimmed_ms + TERN_HEAPTRIM_EVERY_MS;
    return quiet > spaced ? quiet : spaced;
}

bool tern_heaptrim_due(tern_heaptrim *t, bool idle_turn, uint64_t now)
{
    if (!idle_turn || now < tern_heaptrim_deadline(t))
        return false; /* also when nothing is pending: the deadline is UINT64_MAX */
    t->pending = false;
    t->trimmed_ms = now;
    return true;
}
