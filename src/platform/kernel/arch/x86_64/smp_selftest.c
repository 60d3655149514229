/*
 * smp_selftest.c - the shared heap and console under two CPUs (see
 * smp_selftest.h). CPU 0 raises `go`, waits until CPU 1 (woken by its
 * timer tick in the parked loop) says it started, then both run the same
 * mix at once: allocations of every small class and some large ones, each
 * filled with a pattern naming its CPU and checked before it is freed, and
 * a console line every few rounds. CPU 0 then waits for CPU 1's result and
 * checks the heap's counters came back to where they were.
 */
#include "arch/x86_64/smp_selftest.h"

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/smp.h"
#include "clock.h"
#include "console.h"
#include "mm/kmalloc.h"

#include <stdatomic.h>
#include <stdint.h>

#ifdef TERN_TEST_HOOKS

enum {
    ROUNDS = 20000,     /* allocations and frees per CPU */
    WINDOW = 32,        /* objects each CPU keeps live */
    LINE_EVERY = 1000,  /* rounds between two console lines */
    WAIT_MS = 30000,    /* for CPU 1 to start and finish, generous for TCG */
};

/* 0: idle; 1: CPU 0 asks; then CPU 1 sets started, and result = 1 + its
 * error count when done. Only CPUs 0 and 1 touch them. */
static _Atomic int go, started, result;

/* Both CPUs at once: the number of broken objects found. */
static unsigned hammer(unsigned cpu)
{
    uint8_t *live[WINDOW] = {0};
    size_t len[WINDOW] = {0};
    unsigned bad = 0;
    uint64_t x = 0x9E3779B97F4A7C15ull * (cpu + 1);
    for (unsigned r = 0; r < ROUNDS; r++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        unsigned k = (unsigned)(x % WINDOW);
        uint8_t tag = (uint8_t)(0x40 + cpu);
        if (live[k]) {
            for (size_t i = 0; i < len[k]; i++)
                bad += live[k][i] != tag;
            kfree(live[k]);
            live[k] = NULL;
        } else {
            len[k] = (x >> 24) % 50 == 0 ? 5000 + (size_t)((x >> 32) % 3000)
                                         : 1 + (size_t)((x >> 32) % 2048);
            live[k] = kmalloc(len[k]);
            if (!live[k]) {
                bad++;
                continue;
            }
            for (size_t i = 0; i < len[k]; i++)
                live[k][i] = tag;
        }
        if (r % LINE_EVERY == 0)
            kprintf("tern: smptest: CPU %u round %u of %u: a whole line from one CPU, "
                    "never mixed with the other's\n", cpu, r, ROUNDS);
    }
    for (unsigned k = 0; k < WINDOW; k++)
        kfree(live[k]);
    return bad;
}

void smp_selftest_ap(const struct percpu *c)
{
    if (c->id != 1 || atomic_load_explicit(&go, memory_order_acquire) != 1 ||
        atomic_load_explicit(&started, memory_order_relaxed))
        return;
    atomic_store_explicit(&started, 1, memory_order_release);
    unsigned bad = hammer(1);
    atomic_store_explicit(&result, (int)bad + 1, memory_order_release);
}

static int wait_for(_Atomic int *flag, uint64_t until_ns)
{
    while (!atomic_load_explicit(flag, memory_order_acquire))
        if (clock_mono_ns() > until_ns)
            return 0;
        else
            cpu_relax();
    return 1;
}

void smp_selftest_boot(int asked)
{
    if (!asked)
        return;
    if (smp_online() < 2) {
        kprintf("tern: smptest: needs two CPUs, %u online: not run\n", smp_online());
        return;
    }
    struct kmalloc_stats before, after;
    kmalloc_get_stats(&before);
    uint64_t until = clock_mono_ns() + (uint64_t)WAIT_MS * 1000000;
    atomic_store_explicit(&go, 1, memory_order_release);
    if (!wait_for(&started, until)) {
        kprintf("tern: smptest: FAIL: CPU 1 did not start the test\n");
        return;
    }
    unsigned bad0 = hammer(0);
    if (!wait_for(&result, until)) {
        kprintf("tern: smptest: FAIL: CPU 1 did not finish within %u ms\n", WAIT_MS);
        return;
    }
    unsigned bad1 = (unsigned)(atomic_load(&result) - 1);
    kmalloc_get_stats(&after);
    if (bad0 || bad1 || after.allocations != before.allocations ||
        after.bytes_in_use != before.bytes_in_use)
        kprintf("tern: smptest: FAIL: broken objects CPU 0 %u, CPU 1 %u; live allocations "
                "%zu before, %zu after\n", bad0, bad1, before.allocations, after.allocations);
    else
        kprintf("tern: smptest: heap and console shared by CPUs 0 and 1: %u allocations "
                "each, every object intact, the heap's counters back where they were\n",
                ROUNDS / 2);
}

#endif
