/*
 * selftest_halloc.c - test builds only: the hardened heap (mm/kmalloc.c)
 * under QEMU (tests/kernel/test_halloc.py, tern.test=NAME). The three
 * faults must each end in the heap's fatal report; the bench prints a
 * figure for docs/PERFORMANCE.md.
 *
 *   heap-uaf        a write into a freed 64-byte object, caught by the
 *                   allocation that hands the block out again.
 *   heap-dfree      a 32-byte object freed twice.
 *   heap-link       a freed 128-byte object's free-list link overwritten
 *                   with a plain pointer to a live object (what an
 *                   overflow from the object below would plant), caught
 *                   when the list is followed.
 *   heap-bench      BENCH_PAIRS alloc/free pairs of broker-like sizes with
 *                   a window of live objects, timed; prints ns per pair.
 */
#include "selftest.h"

#include "clock.h"
#include "console.h"
#include "mm/kmalloc.h"
#include "panic.h"

#include <stdint.h>
#include <string.h>

#ifdef TERN_TEST_HOOKS

enum {
    BENCH_PAIRS = 100000,
    BENCH_WINDOW = 64,           /* live objects kept while churning */
    REUSE_TRIES = 4096,          /* allocations until the freed block returns */
};

/* Allocate objects of `size` until the heap hands out `target` again (it
 * should halt on the way, when it does). The others stay allocated: the
 * machine is about to stop. */
static void allocate_until(void *target, size_t size)
{
    for (int i = 0; i < REUSE_TRIES; i++)
        if (kmalloc(size) == target)
            return;
}

static void heap_uaf(void)
{
    volatile uint8_t *p = kmalloc(64);
    kfree((void *)p);
    p[20] = 1; /* the use after free */
    allocate_until((void *)p, 64);
    panic("selftest heap-uaf: the write after free was not caught");
}

static void heap_dfree(void)
{
    void *p = kmalloc(32);
    kfree(p);
    kfree(p);
    panic("selftest heap-dfree: the double free was not caught");
}

static void heap_link(void)
{
    void *live = kmalloc(128);
    volatile uint64_t *p = kmalloc(128);
    kfree((void *)p);
    p[0] = (uint64_t)(uintptr_t)live; /* a plain pointer where the link was */
    allocate_until((void *)p, 128);
    allocate_until(live, 128); /* were the planted pointer followed */
    panic("selftest heap-link: the corrupted free-list pointer was not caught");
}

/* Sizes the broker allocates often: small session and subscription
 * records, topic strings, packet buffers, a TLS record. */
static const uint16_t bench_sizes[] = {24, 48, 64, 96, 200, 512, 1100, 1500, 2048};

static void heap_bench(void)
{
    void *live[BENCH_WINDOW] = {0};
    size_t n = sizeof bench_sizes / sizeof bench_sizes[0];
    uint64_t t0 = clock_mono_ns();
    for (uint32_t i = 0; i < BENCH_PAIRS; i++) {
        uint32_t slot = (i * 7u) % BENCH_WINDOW;
        kfree(live[slot]);
        live[slot] = kmalloc(bench_sizes[(i * 5u + i / 3u) % n]);
        if (!live[slot])
            panic("selftest heap-bench: allocation failed");
        ((volatile uint8_t *)live[slot])[0] = (uint8_t)i;
    }
    uint64_t ns = clock_mono_ns() - t0;
    for (int i = 0; i < BENCH_WINDOW; i++)
        kfree(live[i]);
    kprintf("selftest heap-bench: %u alloc/free pairs in %llu ms, %llu ns per pair\n",
            (unsigned)BENCH_PAIRS, (unsigned long long)(ns / 1000000),
            (unsigned long long)(ns / BENCH_PAIRS));
    kprintf("selftest heap-bench: ok\n");
}

int selftest_halloc(const char *name)
{
    if (!strcmp(name, "heap-uaf"))
        heap_uaf();
    else if (!strcmp(name, "heap-dfree"))
        heap_dfree();
    else if (!strcmp(name, "heap-link"))
        heap_link();
    else if (!strcmp(name, "heap-bench"))
        heap_bench();
    else
        return 0;
    return 1;
}

#endif
