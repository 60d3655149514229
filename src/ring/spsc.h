/*
 * spsc.h - a bounded, lock-free single-producer/single-consumer ring of
 * pointers, for one core handing work to another (the unikernel's network
 * CPU to its storage CPU, a daemon worker thread to the core thread). Pure
 * C11 atomics, no allocation (the caller gives the slot array), no kernel
 * or libc dependency, so the kernel and the daemon share this one file.
 *
 * Fields are grouped by the side that writes them (xv6 style), each group
 * on its own cache line so the two cores do not bounce one line:
 *   producer line: head (written by the producer only), tail_seen (the
 *                  producer's private copy of tail, avoids reading the
 *                  consumer's line on every push);
 *   consumer line: tail (written by the consumer only), head_seen;
 *   shared, read-only after spsc_init: mask, slot (the array itself).
 * head and tail count forever (size_t wraps, mask picks the slot), so
 * head - tail is the fill level even across the wrap and full != empty.
 *
 * Memory ordering (the whole contract):
 *   push: write slot[head & mask] (plain store), then head = head + 1 with
 *         RELEASE: the slot's contents happen-before any acquire load that
 *         sees the new head.
 *   pop:  load head with ACQUIRE (pairs with push's release), then read the
 *         slot, then tail = tail + 1 with RELEASE: the read of the slot is
 *         finished before the producer can see the slot free.
 *   push's check for room loads tail with ACQUIRE (pairs with pop's
 *         release), so the producer never overwrites a slot the consumer
 *         is still reading.
 * Each side reads its own index relaxed (it is the only writer). Making
 * either acquire relaxed is a data race on the slot; the ThreadSanitizer
 * stress test (tests/tsan/ring_stress.c) reports it for pop's load of head
 * (tried once on purpose, see that file).
 */
#ifndef TERN_RING_SPSC_H
#define TERN_RING_SPSC_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>

enum { RING_CACHE_LINE = 64 };

struct spsc_ring {
    /* producer's line */
    alignas(RING_CACHE_LINE) _Atomic size_t head;
    size_t tail_seen;
    /* consumer's line */
    alignas(RING_CACHE_LINE) _Atomic size_t tail;
    size_t head_seen;
    /* read-only after spsc_init */
    alignas(RING_CACHE_LINE) size_t mask;
    void **slot;
};

/* Before either side runs: slots[] has cap entries, cap a power of two
 * >= 2. 0, or -1 if cap is not one (nothing is changed then). */
static inline int spsc_init(struct spsc_ring *r, void **slots, size_t cap)
{
    if (cap < 2 || (cap & (cap - 1)) != 0)
        return -1;
    atomic_init(&r->head, 0);
    atomic_init(&r->tail, 0);
    r->tail_seen = 0;
    r->head_seen = 0;
    r->mask = cap - 1;
    r->slot = slots;
    return 0;
}

/* Producer only. 1 if v was queued, 0 if the ring is full (nothing changed:
 * the caller keeps v and applies its own back-pressure). */
static inline int spsc_push(struct spsc_ring *r, void *v)
{
    size_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    if (h - r->tail_seen > r->mask) {
        r->tail_seen = atomic_load_explicit(&r->tail, memory_order_acquire);
        if (h - r->tail_seen > r->mask)
            return 0;
    }
    r->slot[h & r->mask] = v;
    atomic_store_explicit(&r->head, h + 1, memory_order_release);
    return 1;
}

/* Consumer only. 1 and *out, or 0 if the ring is empty. */
static inline int spsc_pop(struct spsc_ring *r, void **out)
{
    size_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    if (t == r->head_seen) {
        r->head_seen = atomic_load_explicit(&r->head, memory_order_acquire);
        if (t == r->head_seen)
            return 0;
    }
    *out = r->slot[t & r->mask];
    atomic_store_explicit(&r->tail, t + 1, memory_order_release);
    return 1;
}

#endif
