/*
 * alloc_track.h - a broker_allocator for tests that drive the core: it keeps
 * its own count of the bytes the core holds (to cross-check the core's
 * memory_used accounting), counts allocation calls, and can make chosen
 * calls fail (fault injection through the core's allocator seam).
 *
 * Shared by the fuzz_core target, the simulator and the allocation-failure
 * loop. All state lives in the struct the caller owns.
 */
#ifndef TERN_TEST_ALLOC_TRACK_H
#define TERN_TEST_ALLOC_TRACK_H

#include "broker/broker.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct alloc_track {
    uint64_t live_bytes;   /* bytes the core asked for and has not freed */
    uint64_t live_blocks;
    uint64_t calls;        /* alloc + realloc calls so far */
    uint64_t fail_at;      /* fail the call whose number (1-based) is this; 0 = never */
    uint32_t fail_burst;   /* ... and this many calls after it too */
    uint32_t fail_next;    /* fail this many upcoming calls (fuzzer-driven) */
    uint64_t failures;     /* calls made to fail */
} alloc_track;

void alloc_track_init(alloc_track *t);
/* The allocator to put in broker_config; ctx points at t. */
broker_allocator alloc_track_allocator(alloc_track *t);

#endif
