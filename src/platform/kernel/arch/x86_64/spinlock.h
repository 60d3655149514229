/*
 * spinlock.h - a ticket spinlock for state that more than one CPU touches
 * (issue 18, ADR-063): the console, the kernel heap, the frame allocator.
 * Plain C11 atomics and the x86 pause hint, nothing kernel-only, so the
 * host's ThreadSanitizer stress test (tests/tsan/spin_stress.c) runs this
 * very code.
 *
 * Why tickets rather than a test-and-set flag: CPUs get the lock in the
 * order they asked for it, so the network CPU cannot be starved by the
 * storage CPU's stream of SQLite allocations (or the other way round);
 * with two or three contenders the cost of everyone spinning on one line
 * is nothing to weigh against that.
 *
 * Memory ordering (the whole argument):
 * - spin_lock takes a ticket with a relaxed fetch_add on next: the ticket
 *   only orders the waiters, it publishes nothing.
 * - It then waits until owner equals its ticket, reading owner with
 *   acquire: that read synchronizes with the release store in the
 *   previous holder's spin_unlock, so every write made inside the
 *   previous critical section happens before everything in this one.
 * - spin_unlock reads owner relaxed (only the holder writes it) and
 *   stores owner + 1 with release: nothing inside the section can move
 *   past it.
 * - spin_trylock takes the lock only when no one waits (owner == next),
 *   with a compare-and-swap on next whose success is acquire (it reads
 *   the owner value the last unlock released, through the same location
 *   order) - owner is read acquire first, so the edge is there either way.
 * Made relaxed on purpose once (the acquire load of owner in spin_lock):
 * the ThreadSanitizer stress test reported a data race on the guarded
 * counters and failed.
 *
 * Counters (issue 18: count contention rather than guess at it): every
 * lock counts its acquisitions, the contended ones (the first look at
 * owner was not our ticket), the pause iterations spent waiting and the
 * TSC ticks those waits took. They are plain fields written only by the
 * holder, after its acquire and before its release, so the lock itself
 * guards them and they cost one increment per acquisition on the
 * uncontended path (the TSC is read only by a waiter). spin_stats_read
 * copies them under the lock.
 *
 * Not reentrant; a holder must not be interrupted by code that takes the
 * same lock (the console's lock is taken with interrupts off for that
 * reason: see console.c). Counters wrap at 2^32 tickets, harmlessly: only
 * equality is compared, and fewer than 2^32 CPUs wait at once.
 */
#ifndef TERN_ARCH_SPINLOCK_H
#define TERN_ARCH_SPINLOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* What a waiter does between looks at owner. In the kernel a holder is
 * never preempted (interrupt handlers only set flags), so a waiter
 * pauses; the host's stress tests run threads that the OS does preempt,
 * where a waiter spinning out its time slice behind a descheduled holder
 * turns a second's test into minutes, so they define it as sched_yield(). */
#ifndef SPIN_RELAX
#define SPIN_RELAX() __builtin_ia32_pause()
#endif

/* What a lock has counted since it was made (see the top). */
struct spin_stats {
    uint64_t taken;      /* acquisitions: spin_lock, and spin_trylock's successes */
    uint64_t contended;  /* spin_lock calls that found the lock held */
    uint64_t spins;      /* pause iterations those calls waited */
    uint64_t wait_ticks; /* TSC ticks those calls waited */
};

struct spinlock {
    _Atomic uint32_t next;  /* the next ticket to hand out */
    _Atomic uint32_t owner; /* the ticket now allowed in */
    struct spin_stats st;   /* written by the holder only */
};

#define SPINLOCK_INIT {0}

static inline void spin_lock(struct spinlock *l)
{
    uint32_t me = atomic_fetch_add_explicit(&l->next, 1, memory_order_relaxed);
    if (atomic_load_explicit(&l->owner, memory_order_acquire) != me) {
        uint64_t t0 = __builtin_ia32_rdtsc(), n = 0;
        do {
            SPIN_RELAX();
            n++;
        } while (atomic_load_explicit(&l->owner, memory_order_acquire) != me);
        l->st.contended++;
        l->st.spins += n;
        l->st.wait_ticks += __builtin_ia32_rdtsc() - t0;
    }
    l->st.taken++;
}

static inline bool spin_trylock(struct spinlock *l)
{
    uint32_t o = atomic_load_explicit(&l->owner, memory_order_acquire);
    uint32_t expected = o;
    bool got = atomic_compare_exchange_strong_explicit(&l->next, &expected, o + 1,
                                                       memory_order_acquire, memory_order_relaxed);
    if (got)
        l->st.taken++;
    return got;
}

static inline void spin_unlock(struct spinlock *l)
{
    uint32_t o = atomic_load_explicit(&l->owner, memory_order_relaxed);
    atomic_store_explicit(&l->owner, o + 1, memory_order_release);
}

/* A copy of l's counters, taken under l (it counts as one acquisition). */
static inline void spin_stats_read(struct spinlock *l, struct spin_stats *out)
{
    spin_lock(l);
    *out = l->st;
    spin_unlock(l);
}

/* Held by someone (for checks, not for deciding whether to take it). */
static inline bool spin_is_locked(struct spinlock *l)
{
    return atomic_load_explicit(&l->owner, memory_order_relaxed) !=
           atomic_load_explicit(&l->next, memory_order_relaxed);
}

#endif
