/*
 * mpsc.h - a bounded, lock-free multi-producer/single-consumer ring of
 * pointers: several network cores handing commits to the one storage core
 * (issue 18), or daemon workers to one core thread. Pure C11 atomics, no
 * allocation, shared by the kernel and the daemon like spsc.h.
 *
 * Each slot carries a sequence number (the bounded-queue scheme D. Vyukov
 * published), so producers claim slots with one compare-and-swap on head
 * and the consumer needs no atomic read-modify-write at all. With cap
 * slots, slot i's seq says whose turn it is:
 *   seq == pos        free for the producer that claims position pos;
 *   seq == pos + 1    filled, for the consumer at position pos;
 *   the consumer frees it for the next lap with seq = pos + cap.
 *
 * Ownership: head is written by every producer (CAS), tail only by the
 * consumer (plain, it is the only reader too), each slot's seq by whoever
 * currently owns the slot. head and tail sit on separate cache lines.
 *
 * Memory ordering:
 *   push: load seq ACQUIRE (pairs with the consumer's release that freed
 *         the slot: its read of the value is done); claim pos with a
 *         relaxed CAS on head (the CAS only hands out positions; the slot's
 *         seq carries the data's ordering); write the value; store
 *         seq = pos + 1 RELEASE.
 *   pop:  load seq ACQUIRE (pairs with push's release: the value is
 *         visible), read the value, store seq = pos + cap RELEASE.
 * A producer that claimed a slot but has not yet published it holds up the
 * consumer at that slot (pop says empty) until it does: bounded, since
 * the producer is between two stores.
 */
#ifndef TERN_RING_MPSC_H
#define TERN_RING_MPSC_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>

#include "ring/spsc.h" /* RING_CACHE_LINE */

struct mpsc_slot {
    _Atomic size_t seq;
    void *value;
};

struct mpsc_ring {
    /* every producer's (CAS) */
    alignas(RING_CACHE_LINE) _Atomic size_t head;
    /* the consumer's alone */
    alignas(RING_CACHE_LINE) size_t tail;
    /* read-only after mpsc_init */
    alignas(RING_CACHE_LINE) size_t mask;
    struct mpsc_slot *slot;
};

/* Before any side runs: slots[] has cap entries, cap a power of two >= 2.
 * 0, or -1 if cap is not one. */
static inline int mpsc_init(struct mpsc_ring *r, struct mpsc_slot *slots, size_t cap)
{
    if (cap < 2 || (cap & (cap - 1)) != 0)
        return -1;
    for (size_t i = 0; i < cap; i++) {
        atomic_init(&slots[i].seq, i);
        slots[i].value = NULL;
    }
    atomic_init(&r->head, 0);
    r->tail = 0;
    r->mask = cap - 1;
    r->slot = slots;
    return 0;
}

/* Any producer. 1 if v was queued, 0 if the ring is full. */
static inline int mpsc_push(struct mpsc_ring *r, void *v)
{
    size_t pos = atomic_load_explicit(&r->head, memory_order_relaxed);
    for (;;) {
        struct mpsc_slot *s = &r->slot[pos & r->mask];
        size_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
        if (seq == pos) {
            /* Free for pos: claim it (on failure pos holds the new head). */
            if (atomic_compare_exchange_weak_explicit(&r->head, &pos, pos + 1,
                                                      memory_order_relaxed,
                                                      memory_order_relaxed)) {
                s->value = v;
                atomic_store_explicit(&s->seq, pos + 1, memory_order_release);
                return 1;
            }
        } else if ((ptrdiff_t)(seq - pos) < 0) {
            return 0; /* still the previous lap's, unread: full */
        } else {
            /* Another producer took pos; catch up. */
            pos = atomic_load_explicit(&r->head, memory_order_relaxed);
        }
    }
}

/* The consumer only. 1 and *out, or 0 if nothing is ready. */
static inline int mpsc_pop(struct mpsc_ring *r, void **out)
{
    struct mpsc_slot *s = &r->slot[r->tail & r->mask];
    size_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
    if (seq != r->tail + 1)
        return 0;
    *out = s->value;
    atomic_store_explicit(&s->seq, r->tail + r->mask + 1, memory_order_release);
    r->tail++;
    return 1;
}

#endif
