/*
 * heaptrim.h - when the daemon gives freed heap memory back to the system
 * (malloc_trim): once a burst of TLS handshakes or of closes is over, not
 * while the loop is busy. Only the decision lives here (pure, unit-tested:
 * tests/unit/test_posix_heaptrim.c); loop.c feeds it and calls
 * malloc_trim, and gives the pool's empty slabs back at the same moment
 * (pool.h).
 *
 * Why: a handshake allocates tens of kilobytes (wolfSSL's state, the
 * certificates being checked) and frees them when it ends, but the blocks
 * of the connections that were accepted meanwhile sit between them, so
 * glibc can neither trim the heap's top nor reuse all of it for small
 * blocks: the handshakes' high-water mark stayed in the process (~240
 * bytes per idle mutual-TLS connection at 2,000 connections).
 * malloc_trim(0) returns every whole free page inside the heap
 * (MADV_DONTNEED), which mallopt's thresholds cannot do (they only trim
 * the top) and which main.c deliberately keeps from happening on every
 * free (the flood's transient buffers).
 */
#ifndef TERN_POSIX_HEAPTRIM_H
#define TERN_POSIX_HEAPTRIM_H

#include <stdbool.h>
#include <stdint.h>

enum {
    /* Trim once nothing counted has happened for this long: a burst of
     * handshakes has gaps of a few milliseconds, a pause this long means
     * it ended. */
    TERN_HEAPTRIM_QUIET_MS = 500,
    /* And at most this often, whatever the activity. */
    TERN_HEAPTRIM_EVERY_MS = 1000,
};

typedef struct tern_heaptrim {
    uint64_t activity;   /* the counter last seen */
    uint64_t changed_ms; /* when it last changed */
    uint64_t trimmed_ms; /* when the last trim ran */
    bool pending;        /* it changed since the last trim */
} tern_heaptrim;

/* A fresh state at now (no trim pending: nothing freed yet). */
void tern_heaptrim_init(tern_heaptrim *t, uint64_t now);
/* The loop's activity counter (handshakes ended plus connections closed:
 * any value that changes when memory was freed in bulk), once a turn. */
void tern_heaptrim_note(tern_heaptrim *t, uint64_t activity, uint64_t now);
/* When a trim would be due, for the loop's epoll timeout; UINT64_MAX for
 * never (nothing pending). */
uint64_t tern_heaptrim_deadline(const tern_heaptrim *t);
/* Trim now? Only on a turn without events (idle: epoll's timeout ran out),
 * past the deadline. When true the caller trims; the state records it. */
bool tern_heaptrim_due(tern_heaptrim *t, bool idle_turn, uint64_t now);

#endif
